"""Database error text made safe for the journal, /healthz and the StorageErrors alert.

DuckDB messages quote the values they failed on (a duplicate key, a string it could not
convert, a file path), and those values can be request ids, tenant labels or paths; an alert
carries them off the host.  What an operator needs is the kind of error and where: quoted
text is replaced and the message cut short.

>>> redact_error('Constraint Error: Duplicate key "req_id: user-42@example.com" violates primary key')
'Constraint Error: Duplicate key "…" violates primary key'
>>> redact_error("IO Error: Could not write file '/var/lib/shadowd/x.duckdb.wal': No space left on device")
"IO Error: Could not write file '…': No space left on device"
"""

from __future__ import annotations

import re

MAX_ERROR_CHARS = 300
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


def redact_error(text: str) -> str:
    """``text`` with quoted values replaced by an ellipsis, on one line, at most 300 characters."""
    one_line = " ".join(str(text).split())
    out = _QUOTED.sub(lambda m: m.group(0)[0] + "…" + m.group(0)[0], one_line)
    return out if len(out) <= MAX_ERROR_CHARS else out[: MAX_ERROR_CHARS - 1] + "…"
