"""The governor's switches, seen from outside the engine: a real governed vLLM scheduler reads the
daemon's gate state file, switches between attributed and VTC charging, writes its status file
beside it, and a running daemon serves the counters on ``/metrics``."""

from __future__ import annotations

import time
import urllib.request

import pytest

from shadowd.daemon.gatekeeper import published_model, write_state_file
from shadowd.govern.config import GovernConfig
from tests.govern.test_vllm import COEF, KEY, _engine, _governed
from tests.helpers import make_daemon
from tests.workloads import mixed_trace_requests

pytestmark = pytest.mark.usefixtures("vllm")


def _metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        lines = r.read().decode().splitlines()
    return {k: float(v) for k, _, v in (x.rpartition(" ") for x in lines if x.startswith("shadowd_governor"))}


def _publish(path: str, verdict: str) -> None:
    now = time.time()
    decision = {"verdict": verdict, "valid_until": now + 600, "evaluated_at": now}
    write_state_file(path, {**decision, "model": published_model("m1", KEY, COEF, "equal", now, 3600.0)})


def test_switches_reach_the_daemons_metrics(llama_dir, ipc_endpoint, db_path):
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start(jobs=False)
    try:
        state = daemon.config.state_file
        cfg = GovernConfig(mode="on", state_file=state, platform_key=KEY, poll_interval_s=0.0)
        sched, driver = _engine(llama_dir, _governed(cfg))
        gov = sched.shadowd_governor
        gov.status_file.interval_s = 0.0  # every step (the engine's default: at most once a second)
        assert _metrics(daemon.http.url)["shadowd_governor_status_unreadable_total"] == 0.0
        _publish(state, "GO")
        driver.run(mixed_trace_requests(30, seed=3), max_steps=60)
        _publish(state, "NO_GO")
        driver.run(max_steps=120)
        gov.status_file.flush()  # the writer thread's next look, now
        with open(state.rsplit("/", 1)[0] + "/governor-bad.json", "w") as f:
            f.write('{"charging": "attributed", "switches": {"go": -1}}')
        m = _metrics(daemon.http.url)
        eng = 'engine="governor"'
        assert m[f'shadowd_governor_switches_total{{{eng},reason="go"}}'] == gov.switches["go"] == 1
        assert m[f'shadowd_governor_switches_total{{{eng},reason="not_go:NO_GO"}}'] == 1
        assert m[f'shadowd_governor_charging{{{eng},unit="vtc"}}'] == 1.0
        assert m[f'shadowd_governor_charging{{{eng},unit="attributed"}}'] == 0.0
        charged = {
            u: m[f'shadowd_governor_steps_charged_total{{{eng},unit="{u}"}}'] for u in ("attributed", "vtc")
        }
        assert charged["attributed"] >= 40 and charged["vtc"] >= 40
        assert sum(charged.values()) == sum(gov.steps_charged.values())
        assert m[f"shadowd_governor_errors_total{{{eng}}}"] == 0.0
        assert m[f"shadowd_governor_charge_thread{{{eng}}}"] == 0.0  # built in code: inline
        assert 0.0 <= m[f"shadowd_governor_status_age_seconds{{{eng}}}"] < 60.0
        assert m["shadowd_governor_status_unreadable_total"] == 1.0  # the bad file: skipped, counted
        assert not any('engine="governor-bad"' in k for k in m)
    finally:
        daemon.stop()


def test_a_governor_whose_charge_thread_stops_says_so(tmp_path, monkeypatch):
    from shadowd.daemon.governor_status import GovernorFiles
    from shadowd.govern import charge_thread
    from shadowd.govern.governor import Governor

    monkeypatch.setattr(charge_thread, "WAIT_S", 0.05)
    cfg = GovernConfig(mode="on", state_file=str(tmp_path / "gate.json"), platform_key=KEY, charge="thread")
    gov = Governor(cfg, {})
    gov.status_file.write(gov.published())
    (status,) = GovernorFiles(str(tmp_path)).read()
    assert status.charged_on == "thread" and status.errors == 0
    gov.charger._jobs.put(charge_thread._STOP)  # the thread ends
    gov.charger._thread.join(timeout=5)
    gov.charger.submit(None)  # a step handed over that it will never answer
    gov.queue.owed = True
    gov.collect()
    gov.status_file.write(gov.published())
    (status,) = GovernorFiles(str(tmp_path)).read()
    assert status.charged_on == "inline" and status.errors == 1
    with open(tmp_path / "governor-odd.json", "w") as f:  # a value out of bounds: the file is skipped
        f.write(_status_file_text(charged_on="elsewhere"))
    files = GovernorFiles(str(tmp_path))
    assert [s.engine for s in files.read()] == ["governor"] and files.unreadable == 1
    gov.close()


def _status_file_text(**fields) -> str:
    import json

    doc = {"charging": "vtc", "switches": {}, "steps_charged": {}, "errors": 0, "written_at": time.time()}
    return json.dumps({**doc, **fields})
