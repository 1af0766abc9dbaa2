"""The daemon's scheduled jobs (APScheduler 3, background thread, UTC).

Every job coalesces missed runs into one and never overlaps itself; an
exception in a job is logged and counted, never fatal.  Retention and export
run on the writer thread (they write); the others read through cursors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from apscheduler.events import EVENT_JOB_ERROR
from apscheduler.schedulers.background import BackgroundScheduler

if TYPE_CHECKING:
    from shadowd.daemon.service import Daemon

log = logging.getLogger("shadowd.daemon.jobs")
HEALTH_INTERVAL_S = 10.0


def _jobs(d: Daemon) -> dict[str, tuple[float, Callable[[], Any]]]:
    c = d.config
    jobs: dict[str, tuple[float, Callable[[], Any]]] = {
        "gate": (c.gate.interval_s, d.evaluate_gate),
        "stability": (c.stability.interval_s, d.run_stability),
        "health": (HEALTH_INTERVAL_S, d.health_tick),
        "retention": (c.retention.interval_s, lambda: run_retention(d)),
    }
    if c.export.dir:
        jobs["export"] = (c.export.interval_s, lambda: run_export(d))
    return jobs


def run_retention(d: Daemon) -> Any:
    """Roll up, then prune raw rows (never rows the Parquet export has not taken yet)."""
    from storage.export import first_unexported
    from storage.retention import apply_retention

    r, export_dir = d.config.retention, d.config.export.dir
    return d.writer.submit(
        lambda con: apply_retention(
            con,
            raw_days=r.raw_days,
            rollup_days=r.rollup_days,
            protect_since=first_unexported(con, export_dir) if export_dir else None,
        )
    ).result()


def run_export(d: Daemon) -> Any:
    """Export complete days to Parquet; reads through a cursor, so ingest is not held up."""
    from storage.export import export_parquet

    return export_parquet(d.writer.cursor(), d.config.export.dir)


def start_jobs(d: Daemon) -> BackgroundScheduler:
    sched = BackgroundScheduler(
        timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60}
    )

    def on_error(event: Any) -> None:
        d.job_errors += 1
        log.error("job %s failed: %s", event.job_id, event.exception)

    sched.add_listener(on_error, EVENT_JOB_ERROR)
    for name, (interval, fn) in _jobs(d).items():
        sched.add_job(fn, "interval", seconds=interval, id=name, name=name)
    sched.start()
    return sched


def reschedule(d: Daemon) -> None:
    for name, (interval, fn) in _jobs(d).items():
        if d.jobs.get_job(name) is None:
            d.jobs.add_job(fn, "interval", seconds=interval, id=name, name=name)
        else:
            d.jobs.reschedule_job(name, trigger="interval", seconds=interval)
