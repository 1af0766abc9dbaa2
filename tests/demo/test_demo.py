"""``shadowd demo`` scenarios on the reference engine (real kernel tables, real scheduler, real daemon).

Each scenario is one demo run shared by the assertions about it.  Runs are kept to
~2,000 steps (the default demo: 4,000) so the suite stays in CI's budget; the gate's
evidence minimums scale with the run (and the demo says so).  The stationary assertions
run on the default demo itself, and the governor's fallback on the slowdown run.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shadowd.demo.scenario import run_demo
from shadowd.demo.spec import DemoSpec
from shadowd.paths import data_dir

pytestmark = pytest.mark.usefixtures("vllm")
RESIDUAL = {"page_hinkley", "adwin", "coefficient"}
H100 = str(data_dir() / "kernels/aiconfigurator-vllm-0.14.0/h100_sxm")
A100 = str(data_dir() / "kernels/aiconfigurator-vllm-0.14.0/a100_sxm")


def _demo(tmp_path_factory, name: str, **kw):
    db = str(tmp_path_factory.mktemp(name) / "demo.duckdb")
    return run_demo(DemoSpec.build(db_path=db, **kw)), db


def _gate_exit(db: str) -> int:
    return subprocess.run(
        [sys.executable, "-m", "shadowd.cli", "gate", "--db", db], capture_output=True, text=True
    ).returncode


@pytest.fixture(scope="module")
def stationary(tmp_path_factory):
    """The default ``shadowd demo`` (built-in profile, 4,000 steps, nothing injected)."""
    return _demo(tmp_path_factory, "stationary")


@pytest.fixture(scope="module")
def slowdown(tmp_path_factory):
    """An 8 % kernel slowdown at step 1,600, admission by the governor (``--govern``)."""
    return _demo(
        tmp_path_factory,
        "slowdown",
        platform=H100,
        steps=2400,
        seed=2,
        injects=("slowdown:0.08@1600",),
        govern=True,
    )


def test_stationary_run_goes_go_without_drift(stationary):
    result, db = stationary
    assert result["verdict"] == "GO", result["reason"]
    assert not [e for e in result["drift_events"] if e["detector"] in RESIDUAL]
    assert result["frames_dropped"] == 0
    assert "scaled" in result["policy_note"]
    assert _gate_exit(db) == 0


def test_the_default_demo_stays_go_to_its_end(stationary):
    """The default ``shadowd demo`` once went GO and then NO_GO on a Page-Hinkley alarm near step
    3,600 with nothing injected: the model's residual mean wanders with batch composition by more
    than a fixed 1 % allowance.  Regression for issue 4."""
    result, _ = stationary
    assert result["steps"] >= 3990
    assert not [e for e in result["drift_events"] if e["detector"] in RESIDUAL], result["drift_events"]
    assert result["verdict"] == "GO", result["reason"]
    went_go = [i for i, d in enumerate(result["gate_history"]) if d["verdict"] == "GO"]
    assert went_go and all(d["verdict"] == "GO" for d in result["gate_history"][went_go[0] :])


def test_summary_is_readable(stationary):
    from shadowd.demo.summary import render_summary

    text = render_summary(stationary[0])
    assert "verdict: GO" in text and "LLMVisor p50/p90/p99" in text and "scaled" in text
    all_row = next(ln for ln in text.splitlines() if ln.strip().startswith("all "))
    assert "n/a" not in all_row, all_row  # both models' p50/p90/p99 are computed


def test_demo_json_has_the_documented_keys(stationary):
    result, _ = stationary
    for key in ("steps", "requests", "tenants", "accuracy", "drift_events", "verdict", "checks", "backlog"):
        assert key in result
    backlog = result["backlog"]
    assert backlog["peak_waiting"] >= backlog["waiting_at_end"] >= 0 and backlog["peak_waiting_tokens"] >= 0
    assert len(result["tenants"]) == 3
    assert result["accuracy"]["all"]["llmvisor"]["p90"] < result["accuracy"]["all"]["token_baseline"]["p90"]


def test_slowdown_is_detected_within_500_steps_and_gate_says_no_go(slowdown):
    result, db = slowdown
    hits = [e["step_seq"] for e in result["drift_events"] if e["detector"] in RESIDUAL]
    assert hits and 1600 <= min(hits) <= 2100, hits
    assert not [s for s in hits if s < 1600], "false alarm before the slowdown"
    assert result["verdict"] == "NO_GO"
    assert _gate_exit(db) == 1


def test_an_armed_slowdown_lands_on_a_go_gate_and_is_judged_from_there(tmp_path_factory):
    """``--inject ...@go:STEP`` (held-out 32's protocol): the fault fires at the first GO from
    STEP on, so the row is a test, and the matrix measures its delays from where it fired."""
    from benchmarks.gate_document import outcome
    from benchmarks.gate_matrix import summarise
    from benchmarks.gate_scenarios import Scenario
    from shadowd.demo.summary import render_summary

    inject = "step-slowdown:0.08@go:1200"
    result, _ = _demo(tmp_path_factory, "armed", platform=H100, steps=2600, seed=4, injects=(inject,))
    (fired,) = result["injections"]
    assert fired["armed_at"] == 1200 and fired["step"] >= 1200 and not result["injections_unfired"]
    before = [h for h in result["gate_history"] if h["step"] < fired["step"]]
    assert before and before[-1]["verdict"] == "GO", result["gate_history"]
    assert f"at step {fired['step']} (armed from step 1200" in render_summary(result)
    s = Scenario(
        "armed", "development", "fault", "8 %", H100, "llama-3.1-8b", 1, (), 2600, 4, injects=(inject,)
    )
    row = summarise(s, {**result, "wall_seconds": 0.0})
    assert row["fault_at"] == fired["step"] and not row["fault_unfired"]
    assert row["drift_delay_steps"] is not None and row["drift_delay_steps"] <= 500, row["drift_events"]
    assert outcome({**row, "scenario": {**row["scenario"], "fault_step": 1200}}) == (True, "")


def test_alarm_study_sees_the_slowdown_persist_after_its_alarm(slowdown):
    """benchmarks/alarm_study.py on a stored run: the first alarm after an 8 % slowdown is
    followed by a residual shift of about 8 %, which is what a real fault looks like there."""
    from benchmarks.alarm_study import calibration_bias, load, study

    _, db = slowdown
    data = load(db)
    res = study(data, recent=50, before=200, every=25)
    alarms = [a for c in res["classes"].values() for a in c["alarms"] if 1600 <= a["step_seq"] <= 2100]
    assert alarms, res
    first = min(alarms, key=lambda a: a["step_seq"])
    assert 0.05 < first["after"] < 0.11, first
    # Against a composition-matched baseline (each batch-size bucket's calibration-window mean
    # off) a whole-step slowdown still shows whole: it moves every bucket.
    bias = calibration_bias(db)
    assert bias and any(bias.values())
    debiased = study({**data, "bias": bias}, recent=50, before=200, every=25)
    (same,) = [
        a for c in debiased["classes"].values() for a in c["alarms"] if a["step_seq"] == first["step_seq"]
    ]
    assert debiased["calibration_bias_removed"] and 0.05 < same["after"] < 0.11, same
    for c in res["classes"].values():
        if c["judged_steps"] > 500:
            assert c["positions"] > 0 and c["mean_by_batch"]
            assert sum(b["steps"] for b in c["mean_by_batch"]) <= c["judged_steps"]


def test_platform_swap_is_not_go_and_names_the_platform(tmp_path_factory):
    result, _ = _demo(
        tmp_path_factory, "platform", platform=H100, steps=1800, seed=3, injects=(f"platform:{A100}@1200",)
    )
    assert result["verdict"] != "GO"
    assert "platform" in result["reason"]
    failing = {c["name"] for c in result["checks"] if c["status"] != "pass"}
    assert "platform" in failing


def test_new_long_context_tenant_is_not_go(tmp_path_factory):
    result, _ = _demo(
        tmp_path_factory,
        "tenant",
        platform=H100,
        steps=1800,
        seed=4,
        tenants=("chat=synthetic:chat:18", "code=synthetic:code:8"),
        injects=("tenant:docs=synthetic:longdoc:2@1200",),
    )
    assert result["verdict"] != "GO"
    coverage = {c["name"]: c["status"] for c in result["checks"] if c["name"].startswith("coverage")}
    assert coverage and set(coverage.values()) & {"fail", "inconclusive"}, coverage
    assert "docs" in result["tenants"]


def test_real_traces_through_the_cli(tmp_path):
    """The CLI path end to end on real traces: Azure code and chat, Mooncake conversations."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "shadowd.cli",
            "demo",
            "--platform",
            H100,
            "--steps",
            "1200",
            "--tenant",
            "code=azure-code:6",
            "--tenant",
            "chat=azure-conv:10",
            "--tenant",
            "docs=mooncake-conversation:0.6",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for noise in ("_opaque_base", "vllm._C", "No CUDA runtime"):  # engine import chatter is silenced
        assert noise not in out.stderr, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["tenants"] == ["chat", "code", "docs"]
    assert result["steps"] >= 1190 and result["model_version"]
    assert result["accuracy"]["all"]["steps"] > 300


def test_an_engine_that_cannot_keep_up_stops_with_the_reason_not_the_oom_killer():
    """Offered load far beyond the engine: the run stops at the first chunk over the bound, with
    a one-line reason, rather than growing until the kernel kills it (H48-swing-long)."""
    out = subprocess.run(
        [sys.executable, "-m", "shadowd.cli", "demo", "--steps", "2000", "--tenant", "a=synthetic:chat:80"]
        + ["--max-waiting-tokens", "5000", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 1 and not out.stdout
    assert (
        "Error: the offered load outgrew the engine" in out.stderr
        and "over --max-waiting-tokens 5000" in out.stderr
    )
    assert "Traceback" not in out.stderr


def test_stability_ranks_splits_on_reference_engine_traffic(stationary):
    """On the demo's stored traffic: a deliberately composition-dependent split fails the
    gate's stability bound, and the token split depends on batch-mates more than LLMVisor."""
    import duckdb

    from shadowd.daemon.calibrator import calibration_from_body
    from shadowd.daemon.stability import stability_of
    from shadowd.steps.log_reader import Window, load_batch

    result, db = stationary
    con = duckdb.connect(db, read_only=True)
    body = con.execute("SELECT body FROM model_versions").fetchone()[0]
    batch = load_batch(con, Window(last_steps=1200))
    con.close()
    att = calibration_from_body(body).model.attribute(batch)
    # Deliberately composition-dependent: every request pays an equal slice of the measured step,
    # so a decode's charge rises with the prompt chunks it happens to share the step with.
    deliberate = (batch.latency_ms / batch.batch_size())[batch.req_step]
    rep = stability_of(batch, att, extra={"deliberate": deliberate}, n_boot=100)
    limit = 0.10  # GatePolicy default
    assert rep["deliberate"]["ci_low"] > limit
    assert rep["llmvisor"]["ci_high"] <= limit
    assert rep["token_baseline"]["effect"] > rep["llmvisor"]["effect"]
    assert rep["differences"]["token_baseline - llmvisor"]["ci_low"] > 0


def test_requests_table_holds_the_service_each_request_received(stationary):
    """The tap's lifecycle section reaches the ``requests`` table: one row per ended request, times
    in order, tenants as in the step rows, and the report shows service beside cost."""
    import duckdb

    from shadowd.reports.model import collect, to_json

    result, db = stationary
    con = duckdb.connect(db, read_only=True)
    try:
        n, dup, bad_order, reasons, tenants = con.execute(
            """SELECT count(*), count(*) - count(DISTINCT (run_id, req_id)),
                      count(*) FILTER (NOT (queue_ms <= ttft_ms AND ttft_ms <= e2e_ms)),
                      list(DISTINCT finish_reason), list(DISTINCT tenant)
               FROM requests"""
        ).fetchone()
        step_tenants = {t for (t,) in con.execute("SELECT DISTINCT tenant FROM step_requests").fetchall()}
        first_steps_exist = con.execute(
            """SELECT count(*) FROM requests r WHERE first_step_seq IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM step_requests s WHERE s.run_id = r.run_id AND s.req_id = r.req_id
                   AND s.step_seq = r.first_step_seq)"""
        ).fetchone()[0]
        service = to_json(collect(con))["service"]
    finally:
        con.close()
    assert n > 100 and dup == 0 and bad_order == 0, (n, dup, bad_order)
    assert set(reasons) <= {"stop", "length", "abort"} and set(tenants) <= step_tenants
    assert first_steps_exist == 0  # the first scheduled step named is one that holds the request
    assert {s["tenant"] for s in service} == set(tenants)
    assert all(s["ttft_p50_ms"] is not None and s["ttft_p50_ms"] > 0 for s in service)


def test_governed_admission_follows_the_gate_and_falls_back_within_one_evaluation(slowdown):
    """``--govern``: the governor reads the state file the demo's daemon writes.  Every stretch of
    steps after a GO verdict is charged attributed GPU time; every stretch after any other verdict
    (no file yet, INCONCLUSIVE, NO_GO after the injected slowdown) is charged VTC tokens.  A step
    already scheduled when the verdict changed keeps the old charge, hence the two-step allowance."""
    result, _ = slowdown
    gov = result["governor"]
    verdict_at = {h["step"]: h["verdict"] for h in result["gate_history"]}
    windows = gov["windows"]
    followed = []
    for before, window in zip(windows, windows[1:]):
        verdict = verdict_at.get(before["until_step"])  # the decision this stretch ran under
        want, other = ("attributed", "vtc") if verdict == "GO" else ("vtc", "attributed")
        assert window["charged"][other] <= 2, (verdict, window)
        followed.append((verdict, want))
    assert ("GO", "attributed") in followed, "the gate never said GO: nothing to fall back from"
    went_go = followed.index(("GO", "attributed"))
    assert ("NO_GO", "vtc") in followed[went_go:], "the slowdown did not take the gate out of GO"
    assert gov["switches"].get("go", 0) >= 1 and gov["switches"].get("not_go:NO_GO", 0) >= 1
    assert gov["errors"] == 0 and result["verdict"] == "NO_GO"
