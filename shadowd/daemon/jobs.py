"""The daemon's scheduled jobs (APScheduler 3, background thread, UTC).

Every job coalesces missed runs into one and never overlaps itself; an
exception in a job is handed to ``on_error`` (a success to ``on_success``), never fatal.
Retention runs on the writer thread, one writer job per chunk (ingest flushes in between and the
watchdog sees each chunk as progress); export reads through a cursor and writes files.
The service builds the job table (``daemon_jobs``); this module knows nothing of
the service itself.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

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


class ExportFailed(RuntimeError):
    """Some partitions could not be exported (the others were)."""


def run_retention(config: Config, writer: Writer) -> Any:
    """Roll up, then prune raw rows (never rows of partitions the Parquet export has not taken),
    in chunks, each a job on the writer thread; then retire ended requests into their histograms."""
    from storage.export import unexported_partitions
    from storage.retention import run_retention as retain
    from storage.retention import utcnow
    from storage.service_rollup import retire_requests

    r, export_dir = config.retention, config.export.dir
    keep = (lambda con: unexported_partitions(con, export_dir)) if export_dir else ()
    result = retain(
        lambda fn: writer.submit(fn, "retention").result(),
        raw_days=r.raw_days,
        rollup_days=r.rollup_days,
        keep_partitions=keep,
        chunk_rows=r.chunk_rows,
    )
    writer.submit(
        lambda con: retire_requests(con, raw_days=r.raw_days, rollup_days=r.rollup_days, now=utcnow()),
        "retention",
    ).result()
    return result


def run_export(config: Config, writer: Writer) -> Any:
    """Export complete days to Parquet; reads through a cursor, so ingest is not held up.
    Raises (after writing every partition it can) when some partitions failed."""
    from storage.export import export_parquet

    result = export_parquet(writer.cursor(), config.export.dir)
    if result.failed:
        engine, day, error = result.failed[0]
        raise ExportFailed(
            f"{len(result.failed)} of {len(result.failed) + len(result.partitions)} partitions not "
            f"exported (first: engine {engine!r} day {day}: {error})"
        )
    return result


OnError = Callable[[str, BaseException], None]
OnSuccess = Callable[[str], None]


def reporting(
    name: str, fn: Callable[[], Any], on_error: OnError, on_success: OnSuccess
) -> Callable[[], Any]:
    """``fn`` that reports how it ended (what the scheduler runs, and a test's direct call)."""

    def run() -> Any:
        try:
            out = fn()
        except Exception as exc:
            on_error(name, exc)
            return None
        on_success(name)
        return out

    return run


def start_jobs(
    jobs: JobTable, on_error: OnError, on_success: OnSuccess = lambda name: None
) -> BackgroundScheduler:
    sched = BackgroundScheduler(
        timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60}
    )
    for name, (interval, fn) in jobs.items():
        sched.add_job(
            reporting(name, fn, on_error, on_success), "interval", seconds=interval, id=name, name=name
        )
    sched.start()
    return sched


def reschedule(
    sched: BackgroundScheduler, jobs: JobTable, on_error: OnError, on_success: OnSuccess = lambda name: None
) -> None:
    """Apply new intervals (and add jobs a reload enabled, e.g. export)."""
    for name, (interval, fn) in jobs.items():
        if sched.get_job(name) is None:
            sched.add_job(
                reporting(name, fn, on_error, on_success), "interval", seconds=interval, id=name, name=name
            )
        else:
            sched.reschedule_job(name, trigger="interval", seconds=interval)


def run_soon(sched: BackgroundScheduler | None, name: str) -> None:
    """Bring job ``name``'s next run forward to now (its interval is unchanged). Never raises:
    a job that cannot be moved runs at its next interval anyway."""
    if sched is None or not getattr(sched, "running", False):
        return
    try:
        sched.modify_job(name, next_run_time=datetime.now(UTC))
    except Exception:  # no such job (e.g. jobs not started) or the scheduler is shutting down
        pass
