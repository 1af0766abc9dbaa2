"""Hostile clients: what anyone who can send a request, reach the tap socket or the HTTP port
can do to the daemon, and the bound on each.

Each test names the failure it guards against; each fails on the code before issue 14.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import socket
import string
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import duckdb
import msgspec
import numpy as np
import pytest

from shadowd.daemon.config import Config, ConfigError, Platform, TenantsConfig
from shadowd.tap.frame import FRAME_VERSION, encode_frame
from tests.helpers import (
    Pusher,
    make_daemon,
    make_frame,
    start_daemon_process,
    stop_daemon_process,
    wait_until,
)

PLATFORM = Platform(
    gpu="H100-SXM", model="llama-3.1-8b", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="FLASH_ATTN"
)


def _get(url: str, headers: dict[str, str] | None = None, timeout: float = 10.0) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _random_labels(n: int, seed: int) -> list[str]:
    """Labels a client might send: random, long, unicode, mathtext-like."""
    rng = np.random.default_rng(seed)
    alphabet = list(string.ascii_letters + string.digits + "$_-./\\é日")
    return [
        "".join(rng.choice(alphabet, size=int(rng.integers(1, 56)))) + f"-{i}"  # distinct, <= 60
        for i in range(n)
    ]


def _tenant_samples(metrics: str, family: str) -> list[str]:
    return [line for line in metrics.splitlines() if line.startswith(family + "{")]


# -- 1. client-chosen tenants ------------------------------------------------------------------
@pytest.mark.usefixtures("vllm")
def test_random_tenant_labels_through_the_real_tap_are_folded(monkeypatch, ipc_endpoint, db_path, llama_dir):
    """10,000 requests with random ``vllm_xargs.tenant`` labels through the real vLLM scheduler and
    the tap: stored, /metrics and in-memory tenants stay bounded, the gate's new-tenant check
    does not move, and the folded rows are counted."""
    from shadowd.attribution.synthetic_steps import synthetic_batch
    from shadowd.daemon.calibrator import calibrate
    from shadowd.sim.driver import EngineDriver
    from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler
    from tests.workloads import Req

    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    allowed = ("chat", "code", "longdoc")  # the calibration's tenants, what the operator lists
    daemon = make_daemon(
        ipc_endpoint,
        db_path,
        calibration=dataclasses.replace(Config.default().calibration, platform=PLATFORM),
        tenants=TenantsConfig(allow=allowed, max_distinct=64),
    )
    daemon.start(jobs=False)
    try:
        daemon.install_calibration(cal)
        daemon.writer.flush()
        check = lambda d: next(c for c in d["checks"] if c["name"] == "coverage.new_tenants")  # noqa: E731
        before = check(daemon.evaluate_gate())

        monkeypatch.setenv("SHADOWD_TAP", ipc_endpoint)
        monkeypatch.setenv("SHADOWD_ENGINE_ID", "hostile-engine")
        monkeypatch.setenv("SHADOWD_TAP_HWM", "100000")
        monkeypatch.setenv("SHADOWD_TENANT_KEY", "tenant")  # the gateway's key; a client forges it
        sched = build_scheduler(
            SchedulerSpec(model_dir=llama_dir, num_blocks=4000, max_num_batched_tokens=2048, max_num_seqs=128)
        )
        driver = EngineDriver(sched, lambda st: 4.0 + 0.02 * float(st.new_tokens.sum()), vocab_size=128256)
        labels = _random_labels(10_000, seed=3)
        reqs = [Req(i * 1e-4, labels[i] if i % 10 else "chat", 16, 2) for i in range(10_000)]
        time.sleep(0.2)  # let the PUSH socket connect
        n = driver.run(reqs, max_steps=100_000)
        assert wait_until(lambda: daemon.pipeline.steps_observed == n, timeout=60)
        assert sched.shadowd_tap.dropped_total == 0
        daemon.writer.flush()

        con = daemon.writer.cursor()
        tenants = {
            t: (rows, reqs)
            for t, rows, reqs in con.execute(
                "SELECT tenant, count(*), count(DISTINCT req_id) FROM step_requests GROUP BY tenant"
            ).fetchall()
        }
        assert set(tenants) == {"chat", "other"}, sorted(tenants)[:5]
        assert tenants["chat"][1] == 1000 and tenants["other"][1] == 9000  # every request stored
        forged_rows = tenants["other"][0]
        # Folded and counted: each forged request's step rows, and its one lifecycle record.
        assert daemon.tenants.folded["not_allowed"] == forged_rows + 9000
        assert set(daemon.stats.tenant_seconds) <= {"chat", "other"}  # in-memory state bounded
        _, body = _get(daemon.http.url + "/metrics")
        metrics = body.decode()
        assert len(_tenant_samples(metrics, "shadowd_tenant_attributed_seconds_total")) <= 2
        assert (
            f'shadowd_tenant_rows_folded_total{{reason="not_allowed"}} {float(forged_rows + 9000)}' in metrics
        )
        assert daemon.drift.state()["envelope"]["new_tenants"] == []
        after = check(daemon.evaluate_gate())
        # Before any attributed traffic the share of new tenants is not known yet (inconclusive,
        # never a pass); after 10,000 forged labels it is a pass at zero: all were folded.
        assert before["status"] in ("pass", "inconclusive") and before["status"] != "fail", before
        assert after["status"] == "pass" and after["value"] == 0.0, (before, after)
    finally:
        daemon.stop()


def test_tenant_cap_bounds_what_is_stored_and_exported_to_metrics(ipc_endpoint, db_path):
    """No allowlist: the first ``max_distinct`` labels are admitted, the other 9,990 folded."""
    daemon = make_daemon(ipc_endpoint, db_path, tenants=TenantsConfig(max_distinct=10))
    daemon.start(jobs=False)
    try:
        labels = _random_labels(10_000, seed=4)
        push = Pusher(ipc_endpoint)
        for i in range(100):
            f = make_frame(i + 1, n=100)
            push.send(msgspec.structs.replace(f, tenants=labels[i * 100 : (i + 1) * 100]))
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 100)
        daemon.writer.flush()
        stored = (
            daemon.writer.cursor().execute("SELECT count(DISTINCT tenant) FROM step_requests").fetchone()[0]
        )
        assert stored == 11  # ten admitted + other
        assert daemon.tenants.distinct == 10 and daemon.tenants.folded["over_cap"] == 9_990
        _, body = _get(daemon.http.url + "/metrics")
        assert "shadowd_tenants_admitted 10.0" in body.decode()
    finally:
        daemon.stop()


def test_tenant_sources_are_off_unless_configured():
    from types import SimpleNamespace as NS

    from shadowd.tap.config import TapConfig
    from shadowd.tap.tenant import TenantResolver

    forged = NS(
        sampling_params=NS(extra_args={"tenant": "victim"}),
        lora_request=NS(lora_name="adapter"),
        request_id="acme:1",
    )
    cfg = TapConfig.from_env(env={"SHADOWD_TAP": "ipc:///x"})
    resolver = TenantResolver(cfg.tenant_key, cfg.tenant_prefix_sep, cfg.tenant_lora)
    assert resolver.resolve(forged) == "unknown"
    cfg = TapConfig.from_env(env={"SHADOWD_TENANT_PREFIX_SEP": ":"})
    assert TenantResolver(cfg.tenant_key, cfg.tenant_prefix_sep, cfg.tenant_lora).resolve(forged) == "acme"
    cfg = TapConfig.from_env(env={"SHADOWD_TENANT_LORA": "1"})
    assert TenantResolver(cfg.tenant_key, cfg.tenant_prefix_sep, cfg.tenant_lora).resolve(forged) == "adapter"


# -- 2. forged and oversized frames ---------------------------------------------------------------
def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _steps_ingested(url: str) -> float:
    try:
        _, body = _get(url + "/metrics")
    except urllib.error.URLError:  # not listening yet
        return -1.0
    for line in body.decode().splitlines():
        if line.startswith("shadowd_steps_ingested_total "):
            return float(line.split()[1])
    return -1.0


INGEST_BOUND_S = 2.0  # a good frame sent right after the hostile ones is ingested within this


def test_forged_and_malformed_frames_bound_memory_and_do_not_stall_ingest(ipc_endpoint, db_path):
    """The daemon as its own process (so its peak RSS is its own): an 8 MiB message of empty
    arrays (once: 578 MiB and a 3.9 s GIL hold), one of 8 M-row columns, and a stream of 2,000
    malformed frames.  Peak RSS grows by less than 64 MiB; a good frame sent right after them
    is stored within ``INGEST_BOUND_S``."""
    port = _free_port()
    proc = start_daemon_process(ipc_endpoint, db_path, "--http", f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_until(lambda: _steps_ingested(url) == 0.0, timeout=60)
        push = Pusher(ipc_endpoint)
        push.send(make_frame(1))
        assert wait_until(lambda: _steps_ingested(url) == 1.0)
        base = _vm_hwm_kib(proc.pid)

        n = (8 << 20) - 16
        push.send(b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n)  # a "batch" of 8 M empty frames
        rows = 900_000  # 8 one-byte columns: just under the 8 MiB message limit
        huge = [0] * rows
        cols = ([""] * rows, [""] * rows, huge, huge, huge, huge, [False] * rows, huge)
        push.send(msgspec.msgpack.encode([FRAME_VERSION, "e0", "run1", 2, 0, 0, 0, 0, 0, 0, *cols]))
        rng = np.random.default_rng(0)
        good = encode_frame(make_frame(3))
        for i in range(2000):  # truncated, wrong arity, wrong version, junk
            kind = i % 4
            if kind == 0:
                push.send(good[: int(rng.integers(1, len(good)))])
            elif kind == 1:
                push.send(bytes([0x90 | int(rng.integers(1, 16))]) + good[1:])
            elif kind == 2:
                push.send(msgspec.msgpack.encode([FRAME_VERSION + 1, "e0"]))
            else:
                push.send(rng.bytes(int(rng.integers(1, 4096))))
        for seq in range(4, 14):  # distinct (engine, run)s: the forged-run flood
            push.send(make_frame(1, run=f"forged-{seq}"))
        t0 = time.monotonic()
        push.send(make_frame(2, run="run1"))
        assert wait_until(lambda: _steps_ingested(url) >= 12.0, timeout=30, interval=0.01)
        took = time.monotonic() - t0
        grown_mib = (_vm_hwm_kib(proc.pid) - base) / 1024
        push.close()
        print(f"peak RSS grew {grown_mib:.1f} MiB; good frame after the flood ingested in {took:.2f} s")
        assert grown_mib < 64
        assert took < INGEST_BOUND_S
    finally:
        assert stop_daemon_process(proc) == 0


def test_run_tracking_is_bounded():
    from shadowd.daemon.receiver import RunTracker

    tracker = RunTracker(max_runs=100)
    for i in range(10_000):
        tracker.observe(make_frame(1, run=f"forged-{i}"))
    tracker.observe(make_frame(1, run="real"))
    assert len(tracker.runs()) == 100 and ("e0", "real") in tracker.runs()
    assert tracker.observe(make_frame(5, run="real")) == 3  # the live run still counts its gaps


def test_frame_length_limits_reject_before_building():
    from shadowd.tap.frame import MAX_ROWS, decode_message

    f = make_frame(1, n=1)
    long_label = msgspec.structs.replace(f, tenants=["x" * 65])  # the tap cuts labels to 64
    too_many = msgspec.structs.replace(f, req_ids=f.req_ids * (MAX_ROWS + 1))
    for bad in (long_label, too_many):
        frames, errors = decode_message(msgspec.msgpack.encode(bad))
        assert not frames and len(errors) == 1 and "length" in str(errors[0])
    long_id = msgspec.structs.replace(f, req_ids=["x" * 5000])  # a client's choice: kept
    assert decode_message(msgspec.msgpack.encode(long_id))[0] == [long_id]
    frames, errors = decode_message(msgspec.msgpack.encode([FRAME_VERSION + 4, "e"]))
    assert f"unsupported frame version {FRAME_VERSION + 4}" in str(errors[0])


# -- 3. trusted wall clock ------------------------------------------------------------------------
def test_future_dated_frame_moves_neither_freshness_nor_windows(ipc_endpoint, db_path):
    from shadowd.daemon.gate_evidence import drop_rate

    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start(http=False, jobs=False)
    try:
        now_ns = time.time_ns()
        push = Pusher(ipc_endpoint)
        for i in range(1, 101):
            f = make_frame(i)
            push.send(msgspec.structs.replace(f, wall_ns=now_ns - (100 - i) * 10**7))
        year = 365 * 86400 * 10**9
        push.send(msgspec.structs.replace(make_frame(101), wall_ns=now_ns + year))  # forged or bad clock
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 101)
        daemon.writer.flush()
        con = daemon.writer.cursor()
        newest = con.execute("SELECT epoch(max(ts)) FROM steps").fetchone()[0]
        assert newest <= time.time() + 1, "a future-dated step was stored as such"
        # The window anchored at max(ts) still holds the real steps.
        in_window = con.execute(
            "SELECT count(*) FROM steps WHERE ts >= (SELECT max(ts) FROM steps) - INTERVAL 60 SECOND"
        ).fetchone()[0]
        assert in_window == 101
        assert drop_rate(con, 60.0) == 0.0
        assert daemon.status().faults.get("clock") == 1
    finally:
        daemon.stop()


# -- 4. CLI overrides ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("override", "why"),
    [
        ({"http": "0.0.0.0:9477"}, "not a loopback address"),
        ({"listen": "tcp://0.0.0.0:5557"}, "not loopback"),
        ({"http": "[::]:9477"}, "not a loopback address"),
        ({"http": "nonsense"}, "not HOST:PORT"),
    ],
)
def test_cli_overrides_get_the_config_files_endpoint_checks(override, why, tmp_path):
    from shadowd.daemon.runner import config_for_run

    ok = {"listen": f"ipc://{tmp_path}/t.sock", "db": str(tmp_path / "s.duckdb"), "http": "127.0.0.1:9477"}
    assert config_for_run(None, **ok).http == "127.0.0.1:9477"
    with pytest.raises(ConfigError, match=why):
        config_for_run(None, **{**ok, **override})


def test_cli_refuses_a_non_loopback_http_override(tmp_path):
    out = subprocess.run(
        [
            *(sys.executable, "-m", "shadowd.cli", "run", "--db", str(tmp_path / "s.duckdb")),
            *("--listen", f"ipc://{tmp_path}/t.sock", "--http", "0.0.0.0:9477"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "not a loopback address" in out.stderr


def test_ipv6_loopback_http_address_serves(ipc_endpoint, db_path):
    from shadowd.daemon.config import parse_config

    cfg = parse_config({"http": "[::1]:0"}, check_paths=False)  # what validation accepts must work
    daemon = make_daemon(ipc_endpoint, db_path, http=cfg.http)
    daemon.start(jobs=False)
    try:
        assert daemon.http.url.startswith("http://[::1]:")
        status, body = _get(daemon.http.url + "/gate")
        assert status == 200 and json.loads(body)["verdict"] == "INCONCLUSIVE"
    finally:
        daemon.stop()


# -- 6. HTTP server limits ------------------------------------------------------------------------
def _count_closed(socks: list[socket.socket], wait_s: float) -> int:
    """How many of ``socks`` the server has closed (EOF or reset), waiting up to ``wait_s``."""
    sel = selectors.DefaultSelector()
    for sock in socks:
        sel.register(sock, selectors.EVENT_READ)
    closed, deadline = 0, time.monotonic() + wait_s
    while closed < len(socks) and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.2):
            try:
                data = key.fileobj.recv(1)
            except ConnectionResetError:
                data = b""
            if data == b"":
                closed += 1
                sel.unregister(key.fileobj)
    sel.close()
    return closed


def test_500_idle_connections_leave_gate_answering_and_are_closed(ipc_endpoint, db_path):
    daemon = make_daemon(ipc_endpoint, db_path, api=dataclasses.replace(Config.default().api, timeout_s=2.0))
    daemon.start(jobs=False)
    threads_before = threading.active_count()
    url = urllib.parse.urlsplit(daemon.http.url)
    host, port = url.hostname, url.port
    idle = []
    try:
        for _ in range(500):
            s = socket.create_connection((host, port), timeout=5)
            s.sendall(b"GET /gate HTTP/1.1\r\n")  # a head that never ends (slowloris)
            idle.append(s)
        t0 = time.monotonic()
        status, body = _get(daemon.http.url + "/gate", timeout=5)
        assert status == 200 and json.loads(body)["verdict"] == "INCONCLUSIVE"
        print(f"/gate answered in {time.monotonic() - t0:.3f} s beside 500 idle connections")
        assert threading.active_count() <= threads_before + daemon.config.api.workers
        closed = _count_closed(idle, wait_s=daemon.config.api.timeout_s + 3.0)
        assert closed == 500, f"{closed} of 500 idle connections closed after the timeout"
    finally:
        for s in idle:
            s.close()
        daemon.stop()


def test_host_header_must_be_an_address_or_localhost(ipc_endpoint, db_path):
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not read the API."""
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start(jobs=False)
    try:
        url = daemon.http.url + "/gate"
        assert _get(url, {"Host": "evil.example:9477"})[0] == 421
        assert _get(url, {"Host": "localhost:9477"})[0] == 200
        assert _get(url)[0] == 200
        _, body = _get(daemon.http.url + "/metrics")
        assert 'shadowd_http_refused_total{reason="host"} 1.0' in body.decode()
    finally:
        daemon.stop()


def test_one_report_at_a_time(ipc_endpoint, db_path):
    from shadowd.daemon.routes import ReportLimits, daemon_routes

    release, entered = threading.Event(), threading.Event()

    def slow_cursor():
        entered.set()
        release.wait(10)
        raise RuntimeError("stop here")

    routes = daemon_routes(lambda: None, lambda: None, slow_cursor, ReportLimits())

    def first_report():
        try:
            routes["/report"]({})
        except RuntimeError:
            pass

    first = threading.Thread(target=first_report)
    first.start()
    assert entered.wait(5)
    status, _, body = routes["/report.html"]({})
    assert status == 503 and b"another report" in body
    release.set()
    first.join(5)
    with pytest.raises(RuntimeError):  # the lock was released: the next report runs
        routes["/report.html"]({})


def test_report_window_is_bounded():
    from shadowd.daemon.routes import ReportLimits, daemon_routes

    routes = daemon_routes(lambda: None, lambda: None, duckdb.connect, ReportLimits(3600, 86400))
    status, _, body = routes["/report"]({"since": "2020-01-01", "until": "2021-01-01"})
    assert status == 400 and b"max_window_s" in body
    assert routes["/report"]({"since": "yesterday"})[0] == 400
    assert routes["/report"]({"steps": "999999999999"})[0] == 400


# -- smaller items --------------------------------------------------------------------------------
def test_ipc_path_that_is_not_a_socket_is_left_alone(tmp_path):
    from shadowd.daemon.receiver import FrameReceiver

    victim = tmp_path / "important.db"
    victim.write_text("data")
    with pytest.raises(OSError, match="not a socket"):
        FrameReceiver(f"ipc://{victim}", lambda frames: None)
    assert victim.read_text() == "data"


def test_request_ids_hashed_with_a_host_key(ipc_endpoint, db_path):
    daemon = make_daemon(
        ipc_endpoint, db_path, privacy=dataclasses.replace(Config.default().privacy, hash_request_ids=True)
    )
    daemon.start(http=False, jobs=False)
    try:
        push = Pusher(ipc_endpoint)
        for i in range(1, 4):
            push.send(make_frame(i, n=3))  # q0, q1, q2 in every step
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 3)
        daemon.writer.flush()
        ids = [r[0] for r in daemon.writer.cursor().execute("SELECT req_id FROM step_requests").fetchall()]
    finally:
        daemon.stop()
    assert len(ids) == 9 and len(set(ids)) == 3  # same request, same hash
    assert not {"q0", "q1", "q2"} & set(ids) and all(len(i) == 24 for i in ids)
    key = Path(f"{db_path}.request-id.key")
    assert key.stat().st_mode & 0o777 == 0o600
    from shadowd.daemon.request_ids import RequestIdHasher

    assert RequestIdHasher(key.read_bytes()).hash("q0") in ids
    assert RequestIdHasher(os.urandom(32)).hash("q0") not in ids  # another host's key


def test_storage_error_text_is_redacted_in_the_alert_and_status(db_path):
    from storage.writer import Writer

    w = Writer(db_path)
    w.start()
    try:
        job = w.submit(lambda con: con.execute("SELECT CAST('user-42@example.com' AS INTEGER)"))
        with pytest.raises(duckdb.Error):
            job.result()
        assert wait_until(lambda: w.stats.errors > 0, timeout=10)
        assert "user-42" not in (w.stats.last_error or "") and "Conversion" in w.stats.last_error
    finally:
        w.close()


def test_rejected_alert_urls_are_not_echoed():
    from alerts.config import ConfigError as AlertConfigError
    from alerts.config import validate

    secret = "hooks.slack.com/services/T0/B0/s3cr3t-token"
    with pytest.raises(AlertConfigError) as exc:
        validate({"sinks": {"ops": {"type": "slack", "webhook_url": secret}}})
    assert "s3cr3t" not in str(exc.value) and "hooks.slack.com" in str(exc.value)


def test_tenants_admitted_before_a_restart_are_admitted_first(ipc_endpoint, db_path):
    """After a restart the cap is filled from the stored roll-ups, largest first, so a burst of
    invented labels at start-up cannot take the places of the host's real tenants."""
    from storage.schema import migrate

    con = duckdb.connect(db_path)
    migrate(con)
    con.execute(
        """INSERT INTO tenant_minutes (minute, engine_id, tenant, llmvisor_measured_ms)
           VALUES (now(), 'e0', 'small', 1.0), (now(), 'e0', 'big', 900.0), (now(), 'e0', 'mid', 50.0)"""
    )
    con.close()
    daemon = make_daemon(ipc_endpoint, db_path, tenants=TenantsConfig(max_distinct=2))
    daemon.start(http=False, jobs=False)
    try:
        push = Pusher(ipc_endpoint)
        push.send(msgspec.structs.replace(make_frame(1, n=3), tenants=["forged", "mid", "big"]))
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 1)
        daemon.writer.flush()
        rows = daemon.writer.cursor().execute("SELECT tenant FROM step_requests ORDER BY req_id").fetchall()
        assert [r[0] for r in rows] == ["other", "mid", "big"]
    finally:
        daemon.stop()
