"""Scheduled jobs on real DuckDB files while the daemon ingests: retention over two busy weeks
never stalls storage past the watchdog's bound, and a partition that cannot be exported holds
back neither the other partitions nor pruning, and raises an alert when the job keeps failing."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time

import duckdb

from alerts import catalog
from benchmarks.retention_cost import busy_database
from shadowd.daemon import status as status_module
from shadowd.daemon.config import ExportConfig, RetentionConfig
from storage.retention import utcnow
from tests.alerts.alert_http_stub import StubServer
from tests.helpers import Pusher, make_daemon, make_frame, wait_until


def test_retention_over_14_busy_days_never_trips_the_watchdog(ipc_endpoint, db_path, monkeypatch):
    """14 days of rows (CI-sized rate), a week of them pruned, while frames keep arriving: the
    daemon's health (what the watchdog pings on) holds at every sample, with the storage stall
    bound cut to 1 s, and every frame sent meanwhile is stored."""
    rows = busy_database(db_path, days=14, steps_per_s=0.25, requests_per_step=8, end=utcnow())
    stall_s = 1.0
    monkeypatch.setattr(status_module, "WRITER_STALL_S", stall_s)
    daemon = make_daemon(ipc_endpoint, db_path, retention=RetentionConfig(raw_days=7, chunk_rows=100_000))
    daemon.writer_stall_s = stall_s
    daemon.start(http=False, jobs=False)
    unhealthy: list[str] = []
    done = threading.Event()
    push = Pusher(ipc_endpoint)
    sent = 0

    def ingest_and_watch() -> None:
        nonlocal sent
        while not done.is_set():
            sent += 1
            push.send(make_frame(sent, n=16, engine="live"))
            if (reason := daemon.status().unhealthy_reason()) is not None:
                unhealthy.append(reason)
            time.sleep(0.01)

    watcher = threading.Thread(target=ingest_and_watch)
    try:
        time.sleep(0.2)
        watcher.start()
        t0 = time.monotonic()
        result = daemon.run_job_now("retention")
        took = time.monotonic() - t0
        done.set()
        watcher.join()
        assert wait_until(lambda: daemon.pipeline.steps_observed == sent, timeout=20)
        daemon.writer.flush()
        stored = (
            daemon.writer.cursor()
            .execute("SELECT count(*) FROM steps WHERE engine_id = 'live'")
            .fetchone()[0]
        )
    finally:
        done.set()
        push.close()
        daemon.stop()
    print(f"retention over {rows['step_requests']:,} request rows: {took:.1f} s")
    assert unhealthy == [], f"unhealthy during retention: {unhealthy[:3]}"
    assert stored == sent
    assert result is not None and result.requests_deleted > rows["step_requests"] // 3
    assert result.chunks > 10


def _insert_days(con: duckdb.DuckDBPyConnection, engine: str, days_ago: list[int]) -> None:
    now = utcnow()
    for i, d in enumerate(days_ago):
        ts = (now - dt.timedelta(days=d)).replace(hour=10, minute=0, second=0, microsecond=0)
        con.execute(
            "INSERT INTO steps (engine_id, run_id, step_seq, ts, kind, num_requests, prefill_tokens, "
            "decode_tokens, dropped_frames_total) VALUES (?, 'r', ?, ?, 'decode', 1, 0, 1, 0)",
            [engine, i, ts],
        )
        con.execute(
            "INSERT INTO step_requests (engine_id, run_id, step_seq, req_id, tenant, phase, new_tokens, "
            "context_tokens, prompt_tokens, spec_tokens, llmvisor_ms) "
            "VALUES (?, 'r', ?, 'q', 'acme', 'decode', 1, 10, 5, 0, 1.0)",
            [engine, i],
        )


def test_unwritable_export_partition_holds_back_only_itself_and_alerts(ipc_endpoint, db_path, tmp_path):
    export_dir = tmp_path / "export"
    (export_dir / "step_requests").mkdir(parents=True)
    (export_dir / "step_requests" / "engine_id=e1").write_text("not a directory")  # e1 cannot be written
    with StubServer() as hook:
        daemon = make_daemon(
            ipc_endpoint,
            db_path,
            export=ExportConfig(dir=str(export_dir)),
            alerts={"sinks": {"hook": {"type": "webhook", "url": hook.url}}},
        )
        daemon.start(http=False, jobs=False)
        try:
            daemon.writer.submit(
                lambda con: [_insert_days(con, e, [20, 19, 18]) for e in ("e0", "e1")]
            ).result()
            for _ in range(3):
                assert daemon.run_job_now("export") is None  # failed, reported
            retained = daemon.run_job_now("retention")
            left = daemon.writer.cursor().execute("SELECT DISTINCT engine_id FROM steps").fetchall()
            got = hook.wait_for(1)
        finally:
            daemon.stop()
    assert daemon.job_errors == 3
    assert sorted(p.parent.name for p in (export_dir / "steps").glob("*/day=*")) == ["engine_id=e0"] * 3
    assert retained.steps_deleted == 3 and left == [("e1",)]
    firing = [r.json for r in got if r.json["status"] == "firing"]
    assert firing and firing[0]["name"] == catalog.JOB_FAILING and firing[0]["labels"]["job"] == "export"
    assert "engine 'e1'" in firing[0]["details"]["error"]


def test_job_failing_alert_resolves_after_a_success(ipc_endpoint, db_path):
    daemon = make_daemon(ipc_endpoint, db_path)
    for _ in range(3):
        daemon.count_job_error("export", OSError("disk full"))
    assert [a.name for a in daemon.notifier.active()] == [catalog.JOB_FAILING]
    daemon.count_job_success("export")
    assert daemon.notifier.active() == []
    daemon.notifier.close()
    assert dataclasses.is_dataclass(daemon.config)


def test_ingest_stays_live_while_a_long_job_holds_the_writer(ipc_endpoint, db_path):
    """While a writer job runs, each hand-over waits (bounded) for room and then drops, counted;
    a burst of such hand-overs is the receive loop working, not a wedge: the watchdog must not
    see the ingest loop as silent."""
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.stall_s = 2.0  # each hand-over waits at most 1 s (pipeline.APPEND_WAIT_S)
    daemon.start(http=False, jobs=False)
    push = Pusher(ipc_endpoint)
    silent: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            reason = daemon.status().unhealthy_reason() or ""
            if reason.startswith("ingest"):
                silent.append(reason)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    try:
        held = daemon.writer.submit(lambda con: time.sleep(8.0), "hold")
        watcher.start()
        for seq in range(1, 6001):  # ~3x the writer's queue bound in request rows
            push.send(make_frame(seq, n=64))
        assert wait_until(lambda: daemon.receiver.frames_received == 6000, timeout=60)
        held.result(30)
    finally:
        done.set()
        watcher.join()
        push.close()
        daemon.stop()
    assert daemon.writer.stats.rows_dropped > 0  # the writer really was full
    assert silent == [], silent[:3]


def test_run_soon_brings_a_job_forward_and_never_raises():
    """A new model in force asks for its stability test now, not at the next hourly slot."""
    from shadowd.daemon.jobs import run_soon, start_jobs

    ran = threading.Event()
    sched = start_jobs({"stability": (3600.0, ran.set)}, on_error=lambda name, exc: None)
    try:
        run_soon(sched, "stability")
        assert ran.wait(10), "the job did not run after run_soon"
        run_soon(sched, "no-such-job")  # ignored
    finally:
        sched.shutdown(wait=False)
    run_soon(sched, "stability")  # a stopped scheduler: ignored
    run_soon(None, "stability")
