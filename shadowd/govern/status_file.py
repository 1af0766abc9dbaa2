"""The governor's counters, published for the daemon: a small JSON file beside the gate state file.

The governor runs inside the engine, which the daemon cannot ask; so it writes what an operator
needs to see from outside (the counter it charges now and why, how often it switched and to
what, steps charged, errors) to ``SHADOWD_GOVERN_STATUS`` (default ``governor.json`` in the state
file's directory), and the daemon serves it on ``/metrics`` (:mod:`shadowd.daemon.governor_status`).

The engine thread never touches the file: at most once per ``interval_s`` it hands a snapshot
over (``publish``: one attribute assignment), and a writer thread replaces the file atomically
(temp file + rename) with the newest snapshot.  A write costs a few file-system calls, far more
than a step's charge; made in the engine thread it was a visible part of the governor's cost per
step (``benchmarks/govern_cost.py``) and a stall of the step that found it due.  The engine never
signals the writer (that would cost it a lock): the writer looks for a new snapshot every
``interval_s``.  It holds the status file weakly and ends when the governor is gone.  A failed
write is counted (``write_errors``) and logged once; the engine never sees it.  No tenant names,
prompts or request ids go into it.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

log = logging.getLogger("shadowd.govern")
SCHEMA = "shadowd.governor-status/v1"
MIN_POLL_S = 0.05  # the writer's shortest wait, whatever ``interval_s`` is set to


class StatusFile:
    def __init__(
        self,
        path: str,
        *,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        self.path = path
        self.interval_s = interval_s
        self.clock = clock
        self._next = float("-inf")
        self._latest: dict[str, Any] | None = None  # handed over, not yet written
        self._lock = threading.Lock()  # one writer at a time (the thread, or ``flush``)
        self._background = background
        self._writer: _Writer | None = None
        self.writes = 0
        self.write_errors = 0

    def due(self) -> bool:
        return self.clock() >= self._next

    def publish(self, status: dict[str, Any]) -> None:
        """Engine thread: hand ``status`` over to be written; never blocks on the file system."""
        self._next = self.clock() + self.interval_s
        self._latest = status
        if self._writer is None:
            if not self._background:
                self.flush()
                return
            self._start_writer()

    def _start_writer(self) -> None:
        try:
            self._writer = _Writer(self)
            self._writer.start()
        except RuntimeError as exc:  # no thread to be had: write in this thread from now on
            self._background = False
            self._writer = None
            log.warning("shadowd governor: status file written in the engine thread: %s", exc)
            self.flush()

    def flush(self) -> None:
        """Write the newest snapshot now, if one is waiting (the writer thread; tests; shutdown)."""
        with self._lock:
            status, self._latest = self._latest, None
            if status is not None:
                self.write(status)

    def close(self) -> None:
        """Write what is waiting and stop the writer thread."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.stop()
        self.flush()

    def write(self, status: dict[str, Any]) -> None:
        """Replace the file with ``status`` (plus schema, pid, wall time); never raises."""
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


class _Writer(threading.Thread):
    """Writes the status file's newest snapshot every ``interval_s`` (at least ``MIN_POLL_S``)."""

    def __init__(self, status_file: StatusFile) -> None:
        super().__init__(name="shadowd-governor-status", daemon=True)
        self._status_file = weakref.ref(status_file)
        self._stopping = threading.Event()

    def run(self) -> None:
        wait = MIN_POLL_S
        while not self._stopping.wait(wait):
            sf = self._status_file()
            if sf is None:
                return
            try:
                sf.flush()
            except Exception as exc:  # a bug guard: the thread outlives any one write
                sf.write_errors += 1
                log.warning("shadowd governor: status writer: %r", exc)
            wait = max(sf.interval_s, MIN_POLL_S)
            del sf

    def stop(self) -> None:
        self._stopping.set()
        if self is not threading.current_thread():
            self.join(timeout=5.0)
