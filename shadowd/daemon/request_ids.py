"""Request ids replaced by keyed hashes before storage and export (``[privacy] hash_request_ids``).

Request ids are chosen by clients or gateways and may carry meaning (a user id, a session);
the daemon needs them only to tell rows of one request from another's.  A keyed BLAKE2b
hash keeps that (same id, same hash, on this host) and cannot be reversed or matched
across hosts without the key, which is created once per host (mode 0600) beside the
database unless configured.  Hashing is per distinct id in a batch, not per row.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

import numpy as np

from shadowd.steps.columns import StepColumns

KEY_BYTES = 32
DIGEST_BYTES = 12  # 96 bits: collisions negligible at any realistic request count


def host_key(path: str | os.PathLike) -> bytes:
    """The hashing key stored at ``path``, created (0600, never overwritten) if missing."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = p.read_bytes()
        if len(key) != KEY_BYTES:
            raise ValueError(
                f"{p}: request-id key must be {KEY_BYTES} bytes, found {len(key)}; "
                "restore it, or delete it to start a new key (old hashes then stop matching)"
            ) from None
        return key
    key = secrets.token_bytes(KEY_BYTES)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
        f.flush()
        os.fsync(f.fileno())
    return key


class RequestIdHasher:
    """Replaces a batch's request-id column by keyed hashes (a pipeline preparation step)."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def hash(self, request_id: str) -> str:
        return hashlib.blake2b(request_id.encode(), key=self._key, digest_size=DIGEST_BYTES).hexdigest()

    def __call__(self, cols: StepColumns) -> None:
        ids = cols.requests["req_id"]
        table = {r: self.hash(r) for r in dict.fromkeys(ids.tolist())}
        hashed = np.empty(len(ids), dtype=object)
        hashed[:] = list(map(table.__getitem__, ids.tolist()))
        cols.requests["req_id"] = hashed
        cols.batch.req_id = hashed
        if cols.ended is not None:
            ended = cols.ended["req_id"].tolist()
            cols.ended["req_id"] = np.array([table.get(r) or self.hash(r) for r in ended], dtype=object)
