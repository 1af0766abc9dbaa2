"""Faults a serving host really has: the daemon killed, the disk full, the wall clock jumping.

* ``kill -9`` of the daemon mid-ingest: the database opens cleanly after the restart, what is
  stored is a consistent prefix (every stored step has all its request rows), and at most the
  last flush interval is lost (measured: frames sent before the kill minus steps stored, at a
  random moment of the writer's 0.5 s flush cycle; the bound is the flush interval plus the
  receiver's 50 ms batching plus 150 ms for the flush's own duration and scheduling on a loaded
  host: 280 frames at 400 frames/s; each run prints its figure, see docs/benchmarks.md).
* ``kill -9`` while a real vLLM scheduler with the tap keeps stepping: no exception, no step
  slowed down, frames dropped and counted; after a restart every step is stored, counted as
  dropped by the tap, or counted as a gap by the daemon (lost with the killed process).
* Disk full (a 3 MB tmpfs, mounted by the test, needs root; skipped otherwise): the daemon keeps
  receiving, counts the storage fault (``writer.stats.errors``, ``last_error``), raises the
  storage alert, still evaluates the gate, and stores everything once space returns.
* Wall-clock jumps of hours backwards and forwards with steady monotonic stamps: latencies stay
  exact, never negative or absurd.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest
import zmq

from alerts import catalog
from shadowd.tap.frame import encode_frame
from tests.helpers import Pusher, daemon_command, make_daemon, make_frame, wait_until

FLUSH_INTERVAL_S = 0.5  # Daemon's writer flush interval (shadowd.daemon.service.Daemon default)
BATCH_INTERVAL_S = 0.05  # FrameReceiver's hand-over interval
FLUSH_SLACK_S = 0.15  # a flush's own duration, and a loaded 2-core host's scheduling


def _spawn_daemon(endpoint: str, db_path: str, log_path: str) -> subprocess.Popen:
    """``shadowd run`` in its own process (logs to a file: a full pipe must not stall it)."""
    log = open(log_path, "a")
    proc = subprocess.Popen(
        daemon_command(endpoint, db_path),
        stdout=log,
        stderr=log,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    sock = Path(endpoint[len("ipc://") :])
    if (
        not wait_until(lambda: sock.exists() or proc.poll() is not None, timeout=60)
        or proc.poll() is not None
    ):
        proc.kill()
        raise RuntimeError(f"daemon did not start: {Path(log_path).read_text()[-2000:]}")
    return proc


def _kill9(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)


def test_kill9_mid_ingest_loses_at_most_one_flush_interval(ipc_endpoint, db_path, tmp_path):
    rate, n_req = 400, 32
    proc = _spawn_daemon(ipc_endpoint, db_path, str(tmp_path / "daemon.log"))
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.LINGER, 0)  # frames not yet handed to the daemon die with the test
    sock.connect(ipc_endpoint)
    stop, sent = threading.Event(), [0]

    def sender() -> None:
        t0 = time.monotonic()
        while not stop.is_set():
            seq = sent[0] + 1
            sock.send(encode_frame(make_frame(seq, n=n_req, run="killed-run")))
            sent[0] = seq
            delay = t0 + seq / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    thread = threading.Thread(target=sender)
    try:
        time.sleep(0.3)
        thread.start()
        time.sleep(2.0 + random.random() * FLUSH_INTERVAL_S)  # mid-ingest, anywhere in a flush cycle
        stop.set()
        thread.join()
        _kill9(proc)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        sock.close()
        ctx.term()
    assert proc.returncode == -signal.SIGKILL

    # The file opens cleanly (read-only, and by a restarted daemon, which migrates it).
    con = duckdb.connect(db_path, read_only=True)
    steps = [r[0] for r in con.execute("SELECT step_seq FROM steps ORDER BY step_seq").fetchall()]
    rows = con.execute("SELECT count(*) FROM step_requests").fetchone()[0]
    con.close()
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start(http=False, jobs=False)
    daemon.stop()
    con = duckdb.connect(db_path, read_only=True)
    orphans = con.execute(
        "SELECT count(*) FROM step_requests ANTI JOIN steps USING (engine_id, run_id, step_seq)"
    ).fetchone()[0]
    con.close()

    lost = sent[0] - len(steps)
    bound = int(rate * (FLUSH_INTERVAL_S + BATCH_INTERVAL_S + FLUSH_SLACK_S))
    print(
        f"kill -9 after {sent[0]} frames at {rate}/s: {len(steps)} stored, {lost} lost "
        f"({lost / rate * 1000:.0f} ms of frames; bound {bound})"
    )
    assert len(steps) > 0
    assert steps == list(range(1, len(steps) + 1))  # a prefix, no holes
    assert rows == len(steps) * n_req  # no step without its rows
    assert orphans == 0  # no rows without their step
    assert lost <= bound


@pytest.mark.usefixtures("vllm")
def test_engine_keeps_stepping_through_daemon_kill9(monkeypatch, ipc_endpoint, db_path, llama_dir, tmp_path):
    from shadowd.sim.driver import EngineDriver
    from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler
    from tests.workloads import mixed_trace_requests

    proc = _spawn_daemon(ipc_endpoint, db_path, str(tmp_path / "daemon.log"))
    monkeypatch.setenv("SHADOWD_TAP", ipc_endpoint)
    monkeypatch.setenv("SHADOWD_ENGINE_ID", "kill9-engine")
    monkeypatch.setenv("SHADOWD_TENANT_KEY", "tenant")
    sched = build_scheduler(
        SchedulerSpec(
            model_dir=llama_dir,
            num_blocks=4000,
            max_num_batched_tokens=1024,
            max_num_seqs=64,
            max_model_len=16384,
        )
    )
    driver = EngineDriver(sched, lambda st: 4.0 + 0.02 * float(st.new_tokens.sum()), vocab_size=128256)
    tap = sched.shadowd_tap
    stamps: list[float] = []
    kill_at = 400
    dropped_at_kill = [0]

    def on_step(n: int) -> None:
        stamps.append(time.perf_counter())
        if n == kill_at:
            _kill9(proc)
            dropped_at_kill[0] = tap.dropped_total

    time.sleep(0.3)
    try:
        # 300 steps the daemon stores (a run the database knows), then the kill mid-stream:
        # steps 301..400 are in the daemon's queues or unflushed buffers when it dies.
        driver.run(mixed_trace_requests(per_tenant=80, seed=8), max_steps=300)
        time.sleep(2 * FLUSH_INTERVAL_S + 0.5)
        first = driver.run(max_steps=kill_at + 400, on_step=on_step)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL and first >= kill_at + 400
    step_s = np.diff(stamps)
    k = kill_at - 300  # index of the kill in stamps
    before, after = np.median(step_s[5 : k - 1]), np.median(step_s[k + 5 :])
    print(
        f"engine step wall time: median {before * 1e3:.3f} ms before the kill, {after * 1e3:.3f} ms "
        f"after, max after {step_s[k:].max() * 1e3:.1f} ms; tap dropped {tap.dropped_total} "
        f"({tap.dropped_total - dropped_at_kill[0]} after the kill)"
    )
    assert tap.dropped_total - dropped_at_kill[0] >= 300  # the dead daemon's frames: counted
    assert after < 2 * before + 0.5e-3  # no slowdown
    assert step_s[k:].max() < 0.25  # never blocked

    daemon = make_daemon(ipc_endpoint, db_path)  # restarted on the same file
    daemon.start(http=False, jobs=False)
    time.sleep(0.3)
    total = driver.run(max_steps=first + 200)
    assert wait_until(lambda: daemon.receiver.frames_received > 0)
    time.sleep(0.5)
    daemon.stop()
    con = duckdb.connect(db_path, read_only=True)
    stored, dropped = con.execute("SELECT count(*), max(dropped_frames_total) FROM steps").fetchone()
    con.close()
    gap = daemon.receiver.faults["gap"]
    print(f"{total} steps: {stored} stored, {dropped} dropped by the tap, {gap} lost with the killed daemon")
    assert stored + dropped + gap == total


def _mount_tmpfs(size: str) -> str:
    if os.geteuid() != 0:
        pytest.skip("disk-full test mounts a small tmpfs: needs root")
    mnt = tempfile.mkdtemp(prefix="shd-full-")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    return mnt


def test_disk_full_daemon_survives_reports_and_recovers(ipc_endpoint, tmp_path):
    """A real ENOSPC from a 3 MB tmpfs; space returns by remounting it larger."""
    mnt = _mount_tmpfs("3m")
    db_path = os.path.join(mnt, "shadowd.duckdb")
    daemon = make_daemon(ipc_endpoint, db_path, state_file=str(tmp_path / "gate.json"))
    push = None
    try:
        daemon.start(http=False, jobs=False)
        push = Pusher(ipc_endpoint)
        w, rx, seq = daemon.writer, daemon.receiver, 0
        deadline = time.monotonic() + 30
        while w.stats.errors == 0 and time.monotonic() < deadline:
            for _ in range(100):
                seq += 1
                push.send(make_frame(seq, n=64))
            time.sleep(0.1)
        assert w.stats.errors > 0, "the disk never filled"
        assert "No space left on device" in (w.stats.last_error or "")
        full_at = seq
        for _ in range(300):  # still receiving while the disk is full
            seq += 1
            push.send(make_frame(seq, n=64))
        assert wait_until(lambda: rx.frames_received == seq)
        assert wait_until(lambda: w.stats.errors >= 3, timeout=10)  # it keeps retrying
        assert rx.alive
        daemon.health_tick()  # alerts keep running: the fault is raised
        assert catalog.STORAGE_ERRORS in [a.name for a in daemon.notifier.active()]
        decision = daemon.evaluate_gate()  # checks keep running (fail closed)
        assert decision["verdict"] != "GO"
        errors = w.stats.errors

        subprocess.run(["mount", "-o", "remount,size=64m", mnt], check=True)
        assert wait_until(lambda: w.stats.rows_written.get("steps", 0) == seq, timeout=30)
        print(
            f"disk full after ~{full_at} steps; {w.stats.errors} failed flushes "
            f"({errors} before space returned); all {seq} steps stored after it did"
        )
        daemon.health_tick()
        daemon.health_tick()  # no new errors: the alert resolves
        assert catalog.STORAGE_ERRORS not in [a.name for a in daemon.notifier.active()]
    finally:
        if push is not None:
            push.close()
        daemon.stop()
        try:
            con = duckdb.connect(db_path, read_only=True)
            stored = con.execute("SELECT count(*), count(DISTINCT step_seq) FROM steps").fetchone()
            rows = con.execute("SELECT count(*) FROM step_requests").fetchone()[0]
            con.close()
        finally:
            subprocess.run(["umount", "-l", mnt], check=False)
    assert stored == (seq, seq) and rows == seq * 64


def test_wall_clock_jumps_do_not_bend_latencies(ipc_endpoint, db_path):
    """wall_ns jumps 3 h back, then 5 h forward; monotonic stamps advance 5 ms per step."""
    from shadowd.steps.columns import frames_to_columns

    step_ns, hour = 5_000_000, 3600 * 10**9
    frames = []
    for seq in range(1, 301):
        f = make_frame(seq, n=4, step_ns=step_ns)
        jump = -3 * hour if 100 < seq <= 200 else (5 * hour if seq > 200 else 0)
        frames.append(
            f.__class__(
                *[getattr(f, k) for k in f.__struct_fields__[:8]],
                f.wall_ns + jump,
                *[getattr(f, k) for k in f.__struct_fields__[9:]],
            )
        )
    lat = frames_to_columns(frames).steps["latency_ms"]
    np.testing.assert_allclose(lat, 5.0)

    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start(http=False, jobs=False)
    push = Pusher(ipc_endpoint)
    try:
        for f in frames:
            push.send(f)
        assert wait_until(lambda: daemon.receiver.frames_received == len(frames))
    finally:
        push.close()
        daemon.stop()
    con = duckdb.connect(db_path, read_only=True)
    got = con.execute(
        "SELECT min(latency_ms), max(latency_ms), count(*) FILTER (WHERE latency_ms IS NULL), "
        "max(ts) - min(ts) FROM steps"
    ).fetchone()
    con.close()
    assert got[0] == pytest.approx(5.0) and got[1] == pytest.approx(5.0) and got[2] == 0
    assert got[3].total_seconds() > 4 * 3600  # the wall clock did jump; latencies did not


def test_fatal_duckdb_error_reopens_and_never_looks_healthy_storing_nothing(ipc_endpoint, db_path):
    """A real fatal error: the file may not grow (``RLIMIT_FSIZE``), so DuckDB's checkpoint after
    a commit fails and invalidates the database instance.  While it lasts the daemon is unhealthy
    (rows wait, nothing is stored); once writes work again the writer reopens the file and every
    step is stored."""
    import resource

    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.writer_stall_s = 1.0
    push = None
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a core dump
    try:
        daemon.start(http=False, jobs=False)
        push = Pusher(ipc_endpoint)
        w, seq = daemon.writer, 0
        for _ in range(50):
            seq += 1
            push.send(make_frame(seq, n=16))
        assert wait_until(lambda: w.stats.rows_written.get("steps", 0) == seq)
        w.submit(lambda con: con.execute("SET wal_autocheckpoint = '1KB'")).result(10)
        resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(db_path), limits[1]))
        unhealthy_seen = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and unhealthy_seen is None:
            for _ in range(20):
                seq += 1
                push.send(make_frame(seq, n=16))
            time.sleep(0.1)
            status = daemon.status()
            if not status.healthy:
                unhealthy_seen = status
        assert unhealthy_seen is not None, "healthy while storing nothing"
        assert (unhealthy_seen.unhealthy_reason() or "").startswith("storage:")
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        assert wait_until(
            lambda: (
                w.submit(lambda con: con.execute("SELECT count(*) FROM steps").fetchone()[0]).result(10)
                == seq
            ),
            timeout=30,
            interval=0.5,
        ), f"stored {w.stats.rows_written.get('steps')} of {seq} steps after the fault cleared"
        assert w.stats.reopens >= 1
        assert wait_until(lambda: daemon.status().healthy, timeout=10)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, old_handler)
        if push is not None:
            push.close()
        daemon.stop()
    con = duckdb.connect(db_path, read_only=True)
    stored = con.execute("SELECT count(*), count(DISTINCT step_seq) FROM steps").fetchone()
    rows = con.execute("SELECT count(*) FROM step_requests").fetchone()[0]
    con.close()
    assert stored == (seq, seq) and rows == seq * 16
