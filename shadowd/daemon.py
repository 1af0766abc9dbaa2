"""The shadowd daemon: wires the receiver, the pipeline, the writer and the jobs.

Lifecycle: ``start()`` opens the database (migrating it), binds the tap socket
and starts the threads; ``stop()`` stops receiving, drains every frame already
queued, flushes the writer and closes the database.  ``serve()`` runs until
SIGTERM/SIGINT and returns the exit code.
"""
from __future__ import annotations

import logging
import signal
import threading
from typing import Callable

from shadowd.ingest import FrameReceiver
from shadowd.pipeline import IngestPipeline
from storage.queries import known_runs
from storage.schema import migrate
from storage.writer import Writer

log = logging.getLogger("shadowd.daemon")


class Daemon:
    """One shadowd instance: one database, one tap socket."""

    def __init__(self, listen: str, db_path: str, *, flush_interval_s: float = 0.5) -> None:
        self.listen = listen
        self.db_path = db_path
        self.writer = Writer(db_path, setup=migrate, flush_interval_s=flush_interval_s)
        self.pipeline = IngestPipeline(self.writer)
        self.receiver: FrameReceiver | None = None
        self._stopped = threading.Event()
        self._on_stop: list[Callable[[], None]] = []

    def start(self) -> None:
        self.writer.start()
        known = self.writer.submit(known_runs).result()
        self.receiver = FrameReceiver(self.listen, self.pipeline, known_runs=known)
        self.receiver.start()
        log.info("shadowd listening on %s, storing to %s", self.listen, self.db_path)

    def on_stop(self, fn: Callable[[], None]) -> None:
        self._on_stop.append(fn)

    def stop(self) -> None:
        """Drain queued frames, flush, close. Idempotent."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        for fn in reversed(self._on_stop):
            try:
                fn()
            except Exception:
                log.exception("shutdown hook failed")
        if self.receiver is not None:
            self.receiver.stop(drain=True)
        self.writer.close()
        log.info("shadowd stopped: %d steps, %d request rows ingested",
                 self.pipeline.steps_ingested, self.pipeline.rows_ingested)

    def serve(self) -> int:
        """Run until SIGTERM or SIGINT; returns the process exit code."""
        wake = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: wake.set())
        self.start()
        while not wake.wait(1.0):
            pass
        self.stop()
        return 0
