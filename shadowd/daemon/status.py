"""One snapshot of the daemon's health, built in one place and read by everything that reports it.

``/healthz``, ``/metrics``, the systemd watchdog and the health job all judge the same facts; when
each reached into the daemon's parts (``receiver.faults``, ``pipeline.rows_ingested``) they could
disagree about whether the daemon was healthy.  ``Daemon.status()`` builds a :class:`DaemonStatus`;
readers take it as plain data and never see the parts.

Storage is judged by its output, not its queue: rows waiting while no flush has succeeded for
``writer_stall_s`` is unhealthy (a database that fails every write looks idle to a queue-depth
check), unless a job on the writer thread (retention) is running and still reporting progress.

>>> s = DaemonStatus(at_s=100.0, ingest_alive=True, seconds_since_ingest_loop=0.5, stall_s=10.0,
...                  writer_queue_depth=0, seconds_since_writer_flush=1.0, jobs_running=True)
>>> s.healthy, s.unhealthy_reason()
(True, None)
>>> DaemonStatus(at_s=100.0, ingest_alive=True, seconds_since_ingest_loop=12.0, stall_s=10.0,
...              writer_queue_depth=0, seconds_since_writer_flush=1.0,
...              jobs_running=True).unhealthy_reason()
'ingest loop silent for 12 s'
>>> stuck = dict(at_s=100.0, ingest_alive=True, seconds_since_ingest_loop=0.5, stall_s=10.0,
...              writer_queue_depth=0, writer_rows_waiting=5000, seconds_since_writer_flush=45.0,
...              jobs_running=True)
>>> DaemonStatus(**stuck).unhealthy_reason()
'storage: 5000 rows waiting, no flush for 45 s'
>>> DaemonStatus(**stuck, writer_job="retention", seconds_since_job_progress=2.0).healthy
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

WRITER_STALL_S = 30.0  # rows waiting with no flush (and no job progress) this long = wedged storage


@dataclass(frozen=True)
class DaemonStatus:
    """What the daemon is doing right now; every field is a value, not a handle."""

    at_s: float
    ingest_alive: bool
    seconds_since_ingest_loop: float | None
    stall_s: float
    writer_queue_depth: int
    seconds_since_writer_flush: float | None
    jobs_running: bool
    writer_rows_waiting: int = 0
    writer_stall_s: float = WRITER_STALL_S
    writer_job: str | None = None  # running on the writer thread now (e.g. "retention")
    seconds_since_job_progress: float | None = None
    storage_reopens: int = 0
    steps_ingested: int = 0
    rows_ingested: int = 0
    frames_received: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    tap_dropped_frames: int = 0
    tap_counters: dict[str, int] = field(default_factory=dict)  # TapCounters, summed over runs
    seconds_since_last_frame: float | None = None
    storage_errors: int = 0
    last_storage_error: str | None = None
    storage_rows_dropped: int = 0
    job_errors: int = 0
    calibration_state: str = "no platform"
    model_version: str | None = None
    model_age_s: float | None = None
    uptime_s: float = 0.0

    def unhealthy_reason(self) -> str | None:
        """Why the watchdog should stop pinging, or None while ingest, storage and jobs progress."""
        if not self.ingest_alive:
            return "ingest thread not running"
        silent = self.seconds_since_ingest_loop
        if silent is None or silent >= self.stall_s:
            return f"ingest loop silent for {silent:.0f} s" if silent is not None else "ingest not started"
        if reason := self._storage_stalled():
            return reason
        if not self.jobs_running:
            return "job scheduler stopped"
        return None

    def _storage_stalled(self) -> str | None:
        stalled = self.seconds_since_writer_flush
        waiting = self.writer_rows_waiting or self.writer_queue_depth
        if not waiting or (stalled is not None and stalled < self.writer_stall_s):
            return None
        job = self.seconds_since_job_progress
        if self.writer_job is not None and job is not None and job < self.writer_stall_s:
            return None  # a long job holds the writer and is still making progress
        what = (
            f"{self.writer_rows_waiting} rows waiting"
            if self.writer_rows_waiting
            else (f"writer queue {self.writer_queue_depth} deep")
        )
        why = f"{what}, no flush for {stalled or 0:.0f} s"
        if self.writer_job is not None:
            why += f"; job {self.writer_job} silent for {job or 0:.0f} s"
        return "storage: " + why

    @property
    def healthy(self) -> bool:
        return self.unhealthy_reason() is None

    @property
    def calibrated(self) -> bool:
        return self.model_version is not None

    def to_dict(self) -> dict[str, Any]:
        """The ``/healthz`` body."""
        return {**asdict(self), "healthy": self.healthy, "reason": self.unhealthy_reason()}
