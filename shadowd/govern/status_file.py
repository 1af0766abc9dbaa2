"""The governor's counters, published for the daemon: a small JSON file beside the gate state file.

The governor runs inside the engine, which the daemon cannot ask; so it writes what an operator
needs to see from outside (the counter it charges now and why, how often it switched and to
what, steps charged, errors) to ``SHADOWD_GOVERN_STATUS`` (default ``governor.json`` in the state
file's directory), and the daemon serves it on ``/metrics`` (:mod:`shadowd.daemon.governor_status`).

The file is replaced atomically (temp file + rename) at most once per ``interval_s``, from the
step that finds it due, so its cost per step is one clock read.  A failed write is counted
(``write_errors``) and logged once; the engine never sees it.  No tenant names, prompts or
request ids go into it.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("shadowd.govern")
SCHEMA = "shadowd.governor-status/v1"


class StatusFile:
    def __init__(self, path: str, *, interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.path = path
        self.interval_s = interval_s
        self.clock = clock
        self._next = float("-inf")
        self.writes = 0
        self.write_errors = 0

    def due(self) -> bool:
        return self.clock() >= self._next

    def write(self, status: dict[str, Any]) -> None:
        """Replace the file with ``status`` (plus schema, pid, wall time); never raises."""
        self._next = self.clock() + self.interval_s
        body = {"schema": SCHEMA, "pid": os.getpid(), "written_at": time.time(), **status}
        directory = os.path.dirname(self.path) or "."
        try:
            fd, tmp = tempfile.mkstemp(prefix=".governor-", dir=directory)
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(body, f)
                os.chmod(tmp, 0o644)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
            self.writes += 1
        except Exception as exc:
            self.write_errors += 1
            if self.write_errors == 1:
                log.warning("shadowd governor: cannot write status file %s: %s", self.path, exc)
