"""The daemon's scheduled jobs (APScheduler 3, background thread, UTC).

Every job coalesces missed runs into one and never overlaps itself; an
exception in a job is counted and handed to ``on_error``, never fatal.  Retention
and export run on the writer thread (they write); the others read through cursors.
The service builds the job table (``daemon_jobs``); this module knows nothing of
the service itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apscheduler.events import EVENT_JOB_ERROR
from apscheduler.schedulers.background import BackgroundScheduler

from shadowd.daemon.config import Config
from storage.writer import Writer

HEALTH_INTERVAL_S = 10.0
JobTable = dict[str, tuple[float, Callable[[], Any]]]


def daemon_jobs(
    config: Config,
    writer: Writer,
    evaluate_gate: Callable[[], Any],
    run_stability: Callable[[], Any],
    health_tick: Callable[[], Any],
) -> JobTable:
    """name -> (interval in seconds, callable) for everything the daemon runs on a schedule."""
    jobs: JobTable = {
        "gate": (config.gate.interval_s, evaluate_gate),
        "stability": (config.stability.interval_s, run_stability),
        "health": (HEALTH_INTERVAL_S, health_tick),
        "retention": (config.retention.interval_s, lambda: run_retention(config, writer)),
    }
    if config.export.dir:
        jobs["export"] = (config.export.interval_s, lambda: run_export(config, writer))
    return jobs


def run_retention(config: Config, writer: Writer) -> Any:
    """Roll up, then prune raw rows (never rows the Parquet export has not taken yet)."""
    from storage.export import first_unexported
    from storage.retention import apply_retention, utcnow
    from storage.service_rollup import retire_requests

    r, export_dir = config.retention, config.export.dir

    def retain(con: Any) -> Any:
        protect = first_unexported(con, export_dir) if export_dir else None
        result = apply_retention(con, raw_days=r.raw_days, rollup_days=r.rollup_days, protect_since=protect)
        retire_requests(
            con, raw_days=r.raw_days, rollup_days=r.rollup_days, now=utcnow(), protect_since=protect
        )
        return result

    return writer.submit(retain).result()


def run_export(config: Config, writer: Writer) -> Any:
    """Export complete days to Parquet; reads through a cursor, so ingest is not held up."""
    from storage.export import export_parquet

    return export_parquet(writer.cursor(), config.export.dir)


def start_jobs(jobs: JobTable, on_error: Callable[[str, BaseException], None]) -> BackgroundScheduler:
    sched = BackgroundScheduler(
        timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60}
    )
    sched.add_listener(lambda event: on_error(event.job_id, event.exception), EVENT_JOB_ERROR)
    for name, (interval, fn) in jobs.items():
        sched.add_job(fn, "interval", seconds=interval, id=name, name=name)
    sched.start()
    return sched


def reschedule(sched: BackgroundScheduler, jobs: JobTable) -> None:
    """Apply new intervals (and add jobs a reload enabled, e.g. export)."""
    for name, (interval, fn) in jobs.items():
        if sched.get_job(name) is None:
            sched.add_job(fn, "interval", seconds=interval, id=name, name=name)
        else:
            sched.reschedule_job(name, trigger="interval", seconds=interval)
