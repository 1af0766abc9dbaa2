"""The daemon as a service: loopback HTTP (/metrics, /gate, /healthz), the CLI against it,
systemd notify + watchdog, config errors and SIGHUP reload."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from shadowd.daemon import systemd_notify as notify
from tests.helpers import Pusher, daemon_command, datagrams, make_daemon, make_frame, wait_until


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_metrics_scrape_parses_and_carries_the_verdict(ipc_endpoint, db_path):
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start(jobs=False)
    try:
        push = Pusher(ipc_endpoint)
        for i in range(1, 151):
            push.send(make_frame(i, n=8))
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 150)
        daemon.writer.flush()
        decision = daemon.evaluate_gate()
        assert decision["verdict"] == "INCONCLUSIVE"  # no platform configured: fail closed
        status, body = _get(daemon.http.url + "/metrics")
        assert status == 200
        fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
        verdict = {s.labels["verdict"]: s.value for s in fams["shadowd_gate_verdict"].samples}
        assert verdict == {"GO": 0.0, "NO_GO": 0.0, "INCONCLUSIVE": 1.0}
        rows = [s for s in fams["shadowd_request_rows_ingested"].samples if s.name.endswith("_total")]
        assert rows[0].value == 150 * 8
        status, body = _get(daemon.http.url + "/gate")
        assert status == 200 and json.loads(body)["verdict"] == "INCONCLUSIVE"
        cli = subprocess.run(
            [sys.executable, "-m", "shadowd.cli", "gate", "--daemon", daemon.http.url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cli.returncode == 2, cli.stderr
        rep = subprocess.run(
            # The frames are dated 2025-11-24 ~16:00 UTC; the daemon's default window is the
            # last hour, so name theirs (with a space: the query must be URL-encoded).
            [
                *(sys.executable, "-m", "shadowd.cli", "report", "--daemon", daemon.http.url, "--json"),
                *("--since", "2025-11-24 15:00", "--until", "2025-11-24 17:00"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert rep.returncode == 0, rep.stderr
        assert json.loads(rep.stdout)["steps"] == 150
        status, body = _get(daemon.http.url + "/healthz")
        assert json.loads(body)["rows_ingested"] == 1200
    finally:
        daemon.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notify_socket() -> tuple[socket.socket, str]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = os.path.join(tempfile.mkdtemp(prefix="shd-n-"), "notify")
    sock.bind(path)
    sock.settimeout(0.05)
    return sock, path


def test_service_sends_ready_and_watchdog(tmp_path):
    sock, path = _notify_socket()
    d = tempfile.mkdtemp(prefix="shd-")
    env = {**os.environ, "NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"}
    proc = subprocess.Popen(
        daemon_command(f"ipc://{d}/t.sock", str(tmp_path / "s.duckdb")),
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        got = datagrams(sock, 20.0)
        assert "READY=1" in "\n".join(got)
        assert any("WATCHDOG=1" in m for m in got)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_no_watchdog_ping_while_ingest_is_wedged(ipc_endpoint, db_path, monkeypatch):
    sock, path = _notify_socket()
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.stall_s = 0.5
    daemon.start(http=False, jobs=False)
    dog = notify.Watchdog(daemon.healthy, interval_s=0.1).start()
    release = threading.Event()
    try:
        assert any("WATCHDOG=1" in m for m in datagrams(sock, 1.0))
        daemon.receiver.consume = lambda frames: release.wait(30)  # the ingest thread hangs
        push = Pusher(ipc_endpoint)
        push.send(make_frame(1))
        push.close()
        time.sleep(1.0)  # past the stall threshold
        datagrams(sock, 0.2)
        assert not any("WATCHDOG=1" in m for m in datagrams(sock, 1.5))
        release.set()  # unwedged: pings resume
        assert wait_until(lambda: any("WATCHDOG=1" in m for m in datagrams(sock, 0.3)), timeout=10)
    finally:
        release.set()
        dog.stop()
        daemon.stop()


def test_invalid_config_exits_2_naming_the_key(tmp_path):
    cfg = tmp_path / "shadowd.toml"
    cfg.write_text(f'db = "{tmp_path}/x.duckdb"\nstate_file = "{tmp_path}/g.json"\n[gate]\nintervall_s = 5\n')
    out = subprocess.run(
        [sys.executable, "-m", "shadowd.cli", "run", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "gate.intervall_s" in out.stderr and "interval_s" in out.stderr
    assert not (tmp_path / "x.duckdb").exists()  # nothing started


def test_sighup_with_a_broken_file_keeps_the_running_config(tmp_path):
    d = tempfile.mkdtemp(prefix="shd-")
    cfg = tmp_path / "shadowd.toml"
    good = (
        f'listen = "ipc://{d}/t.sock"\ndb = "{tmp_path}/x.duckdb"\nstate_file = "{tmp_path}/g.json"\n'
        f'http = "127.0.0.1:{_free_port()}"\n[gate]\ninterval_s = 30\n'
    )
    cfg.write_text(good)
    proc = subprocess.Popen(
        [sys.executable, "-m", "shadowd.cli", "run", "--config", str(cfg)], stderr=subprocess.PIPE, text=True
    )
    try:
        assert wait_until(lambda: os.path.exists(f"{d}/t.sock"), timeout=60)
        cfg.write_text(good + "[gate.policy]\nconsecutive_passes = 'three'\n")
        proc.send_signal(signal.SIGHUP)
        time.sleep(2.0)
        assert proc.poll() is None  # still running
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "keeping the running config" in err and "consecutive_passes" in err


def test_reload_with_new_alert_sinks_uses_the_new_sink(ipc_endpoint, db_path):
    """A revoked webhook stops being used on reload: alerts go to the new sink only, and what
    was firing is carried over to it."""
    import dataclasses

    from alerts import catalog
    from tests.alerts.alert_http_stub import StubServer

    with StubServer() as old_hook, StubServer() as new_hook:
        daemon = make_daemon(
            ipc_endpoint, db_path, alerts={"sinks": {"hook": {"type": "webhook", "url": old_hook.url}}}
        )
        daemon.start(http=False, jobs=False)
        try:
            daemon.notifier.fire(catalog.tap_silent(seconds_since_last_frame=120.0))
            old_hook.wait_for(1)
            new_cfg = dataclasses.replace(
                daemon.config, alerts={"sinks": {"hook": {"type": "webhook", "url": new_hook.url}}}
            )
            daemon.apply_config(new_cfg)
            assert daemon.rules.notifier is daemon.notifier  # the alert rules fire into the new one
            daemon.rules.notifier.fire(catalog.calibration_missing(platform="p"))
            got = new_hook.wait_for(2)
        finally:
            daemon.stop()
    names = sorted(r.json["name"] for r in got if r.json["status"] == "firing")
    assert names == sorted([catalog.TAP_SILENT, catalog.CALIBRATION_MISSING]), got
    assert len(old_hook.received) == 1


def test_database_files_are_0640_and_extensions_never_autoload(ipc_endpoint, tmp_path):
    """Under a loose umask (022) the daemon still creates its database 0640, tightens one made
    0644 by hand, and DuckDB never installs or loads an extension on its own."""
    old = os.umask(0o022)
    try:
        made_by_hand = tmp_path / "by-hand.duckdb"
        import duckdb

        duckdb.connect(str(made_by_hand)).close()
        os.chmod(made_by_hand, 0o644)
        for db, endpoint in ((tmp_path / "new.duckdb", ipc_endpoint), (made_by_hand, ipc_endpoint + "2")):
            daemon = make_daemon(endpoint, str(db))
            daemon.start(http=False, jobs=False)
            try:
                cur = daemon.writer.cursor()
                settings = cur.execute(
                    "SELECT current_setting('autoload_known_extensions'), "
                    "current_setting('autoinstall_known_extensions')"
                ).fetchone()
            finally:
                daemon.stop()
            assert os.stat(db).st_mode & 0o777 == 0o640, oct(os.stat(db).st_mode)
            assert settings == (False, False)
    finally:
        os.umask(old)


def test_a_batch_counts_as_observed_only_after_every_observer_saw_it(ipc_endpoint, db_path):
    """``steps_observed`` (what the demo waits for before each gate evaluation) moves after the
    observers (calibration, drift, stats) ran on a batch; ``steps_ingested`` before them.  Waiting
    on the latter let a gate evaluation run before the calibrator had seen the window's last
    steps, so the same demo calibrated by one evaluation or the next."""
    daemon = make_daemon(ipc_endpoint, db_path)
    seen: list[tuple[int, int, int]] = []
    daemon.pipeline.observers.append(
        lambda cols: seen.append(
            (cols.num_steps, daemon.pipeline.steps_ingested, daemon.pipeline.steps_observed)
        )
    )
    daemon.start(jobs=False)
    try:
        push = Pusher(ipc_endpoint)
        for i in range(1, 41):
            push.send(make_frame(i, n=4))
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 40)
    finally:
        daemon.stop()
    assert sum(n for n, _, _ in seen) == 40
    for n, ingested, observed in seen:  # while observing a batch: stored, not yet observed
        assert observed == ingested - n
