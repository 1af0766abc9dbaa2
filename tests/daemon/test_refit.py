"""The daemon re-fits on traffic that left its calibration, and refuses when the engine changed.

Real daemon, real DuckDB, frames over the tap socket. A model is calibrated on small batches;
traffic then runs at batches up to eight times bigger. On the same engine the gate sees steps
beyond the envelope, the guard (``checks.refit_guard``) finds the model still within its accuracy
limits and its residual unmoved where calibration saw such batches, and a new content-hashed
version is installed with its lineage and reason stored. The same traffic on an engine 15 %
slower is refused, and the model in force stays.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest
from prometheus_client import generate_latest

import checks
from checks import GatePolicy
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon import refit as refit_module
from shadowd.daemon.calibrator import CalibrationSettings, calibrate
from shadowd.daemon.config import Config, Platform
from shadowd.daemon.gate_evidence import class_accuracy
from shadowd.daemon.metrics import registry_for
from shadowd.daemon.refit import class_errors, inside_envelope
from shadowd.daemon.service import Daemon
from tests.helpers import Pusher, daemon_config, frames_from_batch, log_of_decode_steps, wait_until

PLATFORM = Platform(
    gpu="H100-SXM", model="llama-3.1-8b", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="FLASH_ATTN"
)


def run(
    ipc_endpoint: str,
    db_path: str,
    latency_scale: float,
    rename: dict[str, str] | None = None,
    renamed_slowdown: float = 1.0,
    beyond_ms_per_request: float = 0.0,
    listed: tuple[str, ...] = (),
    newcomer_steps: int = 0,
    window_steps: int | None = None,
    steps: int = 3000,
    traffic_seqs: int = 256,
    **overrides: Any,
) -> tuple[Daemon, str, dict]:
    settings = CalibrationSettings(expected_tenants=listed)  # [calibration] tenants, as below
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key(), settings)
    if window_steps is not None:  # a re-fit is due once half this many steps are scored (r29)
        cal.window_steps = window_steps
    config = daemon_config(
        ipc_endpoint,
        db_path,
        calibration=dataclasses.replace(Config.default().calibration, platform=PLATFORM, tenants=listed),
        **overrides,
    )
    daemon = Daemon(config, run_job=lambda fn: fn())  # the re-fit runs inline: the test sees its end
    daemon.start(http=False, jobs=False)
    daemon.install_calibration(cal)
    push = Pusher(ipc_endpoint)
    traffic = synthetic_batch(steps=steps, seed=22, max_seqs=traffic_seqs)
    for old, new in (rename or {}).items():  # tenants the calibration never saw
        hit = traffic.tenant == old
        traffic.tenant = np.where(hit, new, traffic.tenant)
        traffic.latency_ms[np.unique(traffic.req_step[hit])] *= renamed_slowdown  # their steps only
    if newcomer_steps:  # the code tenant's rows of the last steps only, under a new name
        hit = (traffic.tenant == "code") & (traffic.req_step >= traffic.num_steps - newcomer_steps)
        traffic.tenant = np.where(hit, "newcomer", traffic.tenant)
    # A regime the model extrapolates into badly: beyond its envelope each request costs more.
    beyond = ~inside_envelope(traffic, cal.envelope)
    traffic.latency_ms += beyond_ms_per_request * traffic.batch_size() * beyond
    for frame in frames_from_batch(traffic, latency_scale=latency_scale):
        push.send(frame)
    assert push.close_when(lambda: daemon.pipeline.steps_observed == steps, timeout=60)
    daemon.writer.flush()
    return daemon, cal.model.version, daemon.evaluate_gate()


def _last_refit(daemon: Daemon) -> refit_module.RefitRecord:
    """The last re-fit considered (an envelope extension, design r43, may be tried after it)."""
    return [r for r in daemon.refit.history if r.kind == "refit"][-1]


def _started_daemon(ipc_endpoint: str, db_path: str) -> Daemon:
    """A daemon on the default calibration settings, its re-fits run inline, no HTTP, no jobs."""
    config = daemon_config(
        ipc_endpoint,
        db_path,
        calibration=dataclasses.replace(Config.default().calibration, platform=PLATFORM),
    )
    daemon = Daemon(config, run_job=lambda fn: fn())  # the re-fit runs inline: the test sees its end
    daemon.start(http=False, jobs=False)
    return daemon


def test_traffic_beyond_the_envelope_on_a_healthy_engine_is_refitted(ipc_endpoint, db_path):
    daemon, parent, decision = run(ipc_endpoint, db_path, 1.0)
    try:
        assert decision["evidence"]["extrapolated_fraction"] > 0.05
        assert daemon.refit.counts == {"installed": 1, "refused": 0}, daemon.refit.history
        new = daemon.calibration
        assert new.model.version != parent and new.lineage == (parent,)
        assert new.reason.startswith("re-fit:") and "beyond the calibrated envelope" in new.reason
        assert new.envelope.max_batch_size > 100  # the new window's batches are inside it now
        daemon.writer.flush()
        body = json.loads(
            daemon.writer.cursor()
            .execute("SELECT body FROM model_versions WHERE version = ?", [new.model.version])
            .fetchone()[0]
        )
        assert body["calibration"]["lineage"] == [parent] and body["calibration"]["reason"] == new.reason
        scrape = generate_latest(registry_for(daemon.metric_sources())).decode()
        assert 'shadowd_model_refits_total{outcome="installed"} 1.0' in scrape
        # The gate's evidence keeps the steps the parent scored (none scored by the new one yet),
        # those inside the parent's envelope (design r17): as many as its monitor counted inside.
        after = daemon.evaluate_gate()
        assert after["model"]["version"] == new.model.version
        inside = 3000 - round(decision["evidence"]["extrapolated_fraction"] * 3000)
        assert sum(a["steps"] for a in after["evidence"]["accuracy"].values()) == inside
        # A stability result under the parent is no evidence for the new model (its baseline is
        # the new window's): missing until the next test, which runs under the new model.
        daemon.stability = {
            "llmvisor": {"effect": 0.5, "ci_low": 0.4, "ci_high": 0.6},
            "model_version": parent,
        }
        assert daemon.facts().stability is None
        daemon.run_stability(now=1.0e9)  # the demo stamps its simulated clock, which the gate reads
        assert daemon.stability["model_version"] == new.model.version
        assert daemon.stability["computed_at"] == 1.0e9
        assert (
            daemon.facts().stability["llmvisor"]["baseline"] == new.stability_baseline["llmvisor"]["effect"]
        )
        # How many steps over how long, and the window's most, reach the gate: a CI straddling
        # its limit then says how long it takes to settle (checks/rules.py, _stability_wait).
        carried = daemon.facts().stability["llmvisor"]
        assert carried["steps"] == daemon.stability["steps"] > 1000 and carried["max_steps"] == 20_000
        assert carried["span_s"] > 0
    finally:
        daemon.stop()


def test_a_new_regime_the_model_extrapolates_into_badly_is_refitted(ipc_endpoint, db_path):
    """Design r13: beyond the calibrated envelope each request of a step costs 0.05 ms more than
    the model in force extrapolates (a regime it cannot speak for, one a re-fit can), the steps
    inside are as calibrated.  The guard judges the model's accuracy on the steps inside only, so
    the re-fit is installed; judged on every step, as before r13, the model misses its decode
    limits and the re-fit was refused."""
    daemon, parent, decision = run(ipc_endpoint, db_path, 1.0, beyond_ms_per_request=0.05)
    try:
        assert decision["evidence"]["extrapolated_fraction"] > 0.05
        assert not [c["name"] for c in decision["checks"] if c["status"] == "fail"], decision["checks"]
        assert daemon.refit.counts == {"installed": 1, "refused": 0}, daemon.refit.history
        why = daemon.calibration.reason
        assert "window steps beyond the envelope" in why and "with those beyond" not in why, why
        assert daemon.calibration.lineage == (parent,)
        # Design r17: once the re-fit is in force, the parent's steps count only inside the
        # parent's own envelope; its extrapolation, judged on every step, would page.
        daemon.writer.flush()
        after = daemon.evaluate_gate()
        assert not [c["name"] for c in after["checks"] if c["status"] == "fail"], after["checks"]
        con = daemon.writer.cursor()
        versions = [parent, daemon.calibration.model.version]
        every = class_accuracy(con, versions, 1e12)["decode"]
        own = class_accuracy(con, versions, 1e12, current=versions[1])["decode"]
        assert every["p90"] > GatePolicy().max_p90_error["decode"] >= own["p90"]
        assert after["evidence"]["accuracy"]["decode"]["steps"] == own["steps"] < every["steps"]
    finally:
        daemon.stop()


def test_a_new_regime_is_judged_on_the_steps_inside_the_envelope_only():
    """The evidence behind the test above, without a daemon: on every step the model in force
    misses the decode limit (p90 > 0.1), on the steps inside its envelope it does not."""
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    traffic = synthetic_batch(steps=3000, seed=22, max_seqs=256)
    inside = inside_envelope(traffic, cal.envelope)
    traffic.latency_ms += 0.05 * traffic.batch_size() * ~inside
    assert 0.05 < 1 - inside.mean() < 0.95
    limit = GatePolicy().max_p90_error["decode"]
    assert class_errors(traffic, cal)["decode"].p90 > limit
    judged = class_errors(traffic, cal, inside, min_steps=300)["decode"]
    assert (
        judged.p90 < limit
        and not judged.with_beyond
        and judged.steps == int((inside & (traffic.kind == 1)).sum())
    )
    # A class with too few steps inside is judged on all of them (its extrapolation must hold).
    every = class_errors(traffic, cal, inside, min_steps=10**6)["decode"]
    assert every.with_beyond and every.p90 > limit


def test_a_refit_that_would_leave_a_watched_class_blind_is_refused(ipc_endpoint, db_path):
    """Design r8: the same healthy traffic, but the daemon's drift settings (a false-alarm target
    its short simulation cannot show) let no detector calibrate on the new window.  The model in
    force, whose detectors watch those classes, stays."""
    blind = dataclasses.replace(Config.default().drift, target_false_alarm_rate=1e-9, sim_steps=10_000)
    daemon, parent, _ = run(ipc_endpoint, db_path, 1.0, drift=blind)
    try:
        assert daemon.refit.counts == {"installed": 0, "refused": 1}, daemon.refit.history
        why = _last_refit(daemon).why
        assert "could not calibrate drift detectors for" in why and "design r8" in why, why
        assert daemon.calibration.model.version == parent and daemon.calibration.drift
    finally:
        daemon.stop()


def test_a_refit_may_leave_unwatched_a_class_too_rare_in_its_window_to_be_required():
    """Design r35: H31/H32-swing-30k's re-fits in the light half of a swing were refused under
    r8 (mixed steps too few in the window to calibrate its detectors), leaving a model whose
    decode steps had left their compositions, and the gate INCONCLUSIVE, to the run's end.  A
    class carrying under ``cover_class_share`` of the window is not one the gate requires, so
    losing its detectors no longer refuses the re-fit; a class the window still carries does."""
    from shadowd.daemon.refit import newly_unwatched, rare_classes
    from shadowd.steps.batch import KIND_NAMES

    key = PLATFORM.as_key()
    parent = calibrate(synthetic_batch(steps=3000, seed=31), key)
    window = synthetic_batch(steps=3000, seed=32)
    mixed = window.kind == KIND_NAMES.index("mixed")
    keep = ~mixed | (np.random.default_rng(0).random(window.num_steps) < 0.05)
    new = calibrate(window.select_steps(keep), key)
    assert "mixed" in parent.drift and "mixed" not in new.drift and "decode" in new.drift, new.unwatched
    settings = CalibrationSettings()
    assert "mixed" in rare_classes(new, settings) and "decode" not in rare_classes(new, settings)
    assert newly_unwatched(parent, new, rare_classes(new, settings)) == ""
    r8 = newly_unwatched(
        parent, new, rare_classes(new, dataclasses.replace(settings, refit_unwatch_rare=False))
    )
    assert "could not calibrate drift detectors for mixed" in r8 and "design r8" in r8
    # A class the window carries stays r8's: its lost detectors still refuse the re-fit.
    assert "decode" in newly_unwatched(
        parent, dataclasses.replace(new, drift={}), rare_classes(new, settings)
    )


def test_a_go_held_through_an_inconclusive_round_is_looked_at_for_a_refit():
    """Design r36: the gate held GO through one inconclusive round (traffic beyond the envelope)
    and a re-fit is started then, one evaluation before the gate would leave GO; a GO with
    every check passing, or the setting off (r35), leaves the model alone."""
    import duckdb

    from shadowd.daemon.refit import RegimeRefit

    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    con = duckdb.connect()
    con.execute("CREATE TABLE steps (model_version VARCHAR, latency_ms DOUBLE)")
    con.executemany("INSERT INTO steps VALUES (?, 1.0)", [[cal.model.version]] * cal.window_steps)

    def started(settings: CalibrationSettings, decision: dict) -> int:
        jobs: list = []
        refit = RegimeRefit(
            current=lambda: cal,
            cursor=lambda: con,
            install=lambda new: None,
            policy=GatePolicy,
            settings=lambda: settings,
            platform_key=PLATFORM.as_key,
            run_job=jobs.append,
        )
        refit.consider(decision)
        return len(jobs)

    beyond = {"extrapolated_fraction": 0.5}
    held = {"verdict": "GO", "checks": [{"status": "pass"}, {"status": "inconclusive"}], "evidence": beyond}
    clean = {"verdict": "GO", "checks": [{"status": "pass"}], "evidence": beyond}
    assert started(CalibrationSettings(), held) == 1
    assert started(CalibrationSettings(refit_in_grace=False), held) == 0
    assert started(CalibrationSettings(), clean) == 0
    assert started(CalibrationSettings(), {**held, "verdict": "INCONCLUSIVE"}) == 1


def test_a_refit_whose_detectors_would_not_raise_a_slowdown_is_refused(ipc_endpoint, db_path, monkeypatch):
    """Design r15: the same healthy traffic, but the re-fit's window gives its Page-Hinkley
    thresholds ten times the size (as a window whose residual wanders does: held-out 14's
    F14-step5 under r14).  Its detectors would not raise a 5 % slowdown the model in force's
    raise at once, so the re-fit is refused and the model in force keeps watching."""
    real = refit_module.calibrate

    def wandering_window(*args: Any, **kwargs: Any) -> Any:
        cal = real(*args, **kwargs)
        cal.drift = {
            c: dataclasses.replace(d, ph_threshold=10 * d.ph_threshold) for c, d in cal.drift.items()
        }
        return cal

    monkeypatch.setattr(refit_module, "calibrate", wandering_window)
    daemon, parent, _ = run(ipc_endpoint, db_path, 1.0)
    try:
        assert daemon.refit.counts == {"installed": 0, "refused": 1}, daemon.refit.history
        why = _last_refit(daemon).why
        assert "would not raise a 5% slowdown within 300 judged steps" in why and "design r15" in why, why
        assert daemon.calibration.model.version == parent
    finally:
        daemon.stop()


def test_a_refit_that_would_take_in_an_unseen_tenant_is_refused(ipc_endpoint, db_path):
    """Design r9: the same healthy traffic, but one tenant's requests now come under a name the
    calibration never saw (held-out 9's F9-tenant installed such a re-fit).  The newcomer's share
    keeps the gate INCONCLUSIVE, and the model in force stays until an operator recalibrates."""
    daemon, parent, decision = run(ipc_endpoint, db_path, 1.0, rename={"code": "newcomer"})
    try:
        assert decision["evidence"]["new_tenant_share"] > 0.05, decision["evidence"]
        assert daemon.refit.counts == {"installed": 0, "refused": 1}, daemon.refit.history
        why = _last_refit(daemon).why
        assert "never saw carry" in why and "design r9" in why, why
        assert daemon.calibration.model.version == parent
        assert daemon.evaluate_gate()["verdict"] == "INCONCLUSIVE"
    finally:
        daemon.stop()


def test_a_listed_tenant_the_calibration_missed_is_no_newcomer(ipc_endpoint, db_path):
    """Design r14: the same renamed tenant as above, but the operator listed it in
    ``[calibration] tenants`` (the warm-up window missed it).  It is declared traffic: not a
    newcomer to the coverage check, and the re-fit on the traffic beyond the envelope is installed
    with it (an unlisted name is refused: the test above)."""
    daemon, parent, decision = run(ipc_endpoint, db_path, 1.0, rename={"code": "batch"}, listed=("batch",))
    try:
        assert not decision["evidence"].get("new_tenant_share"), decision["evidence"]
        status = {c["name"]: c["status"] for c in decision["checks"]}
        assert status["coverage.new_tenants"] == "pass", decision["checks"]
        assert daemon.refit.counts == {"installed": 1, "refused": 0}, daemon.refit.history
        assert "batch" in daemon.calibration.envelope.tenants
    finally:
        daemon.stop()


def test_a_refit_does_not_take_in_a_newcomer_below_the_limit(ipc_endpoint, db_path):
    """Design r16: a newcomer with a small share (the code tenant's rows of the last 60 steps,
    renamed: design r27 judges the share over the last 1,000 attributed steps, so a newcomer
    that went quiet carries none) does not stop the re-fit (r9), but the re-fit keeps its
    parent's tenants, so the newcomer is still new to the gate afterwards (held-out 14's F14-tenant under r15: a
    re-fit took the new heavy tenant in while it carried under 5 %, and the fault run ended GO)."""
    daemon, parent, decision = run(ipc_endpoint, db_path, 1.0, newcomer_steps=60)
    try:
        assert 0 < decision["evidence"]["new_tenant_share"] <= 0.05, decision["evidence"]
        assert daemon.refit.counts == {"installed": 1, "refused": 0}, daemon.refit.history
        new = daemon.calibration
        assert new.model.version != parent and "newcomer" not in new.envelope.tenants
        assert new.envelope.tenants == {"chat", "code", "longdoc"}  # what the drift watch checks against
    finally:
        daemon.stop()


# Evidence minimums a 3000-step test reaches, so accuracy is judged (pass or fail), not waited for.
SMALL_EVIDENCE = dataclasses.replace(Config.default().gate, policy=GatePolicy().scaled(0.05))


def test_accuracy_on_an_unseen_tenants_steps_is_left_to_the_coverage_check(ipc_endpoint, db_path):
    """Design r10: the steps carrying an unseen tenant run 40 % slower than the model predicts
    (its traffic is what calibration never held).  While the newcomer carries more than the
    new-tenant limit, those steps are the coverage check's: INCONCLUSIVE (recalibrate with it),
    no page; the rest of the traffic is still judged (here it is few steps: at these batch sizes
    most steps carry one of the newcomer's requests).  Design r22: the residual drift detectors
    leave those steps out too; under r21, whose detectors start at the calibration's level, they
    raised drift on them and the gate paged."""
    daemon, parent, decision = run(
        ipc_endpoint, db_path, 1.0, rename={"code": "newcomer"}, renamed_slowdown=1.4, gate=SMALL_EVIDENCE
    )
    try:
        assert decision["evidence"]["new_tenant_share"] > 0.05
        assert decision["verdict"] == "INCONCLUSIVE", decision["reason"]
        status = {c["name"]: c["status"] for c in decision["checks"]}
        assert status["coverage.new_tenants"] == "inconclusive"
        assert not [n for n, st in status.items() if st == "fail"], status
        assert status["accuracy.decode.p90"] in ("pass", "inconclusive")  # few steps without it
        con = daemon.writer.cursor()
        every = class_accuracy(con, parent, 1e12)["all"]["steps"]
        judged = class_accuracy(con, parent, 1e12, ["newcomer"])["all"]["steps"]
        assert 0 < judged < every
    finally:
        daemon.stop()


def test_the_same_slowdown_on_steps_of_tenants_calibration_saw_pages(ipc_endpoint, db_path):
    """The control: the accuracy checks fail (evidence that attribution is wrong now)."""
    daemon, _, decision = run(
        ipc_endpoint, db_path, 1.0, rename={"code": "code"}, renamed_slowdown=1.4, gate=SMALL_EVIDENCE
    )
    try:
        failed = [c["name"] for c in decision["checks"] if c["status"] == "fail"]
        assert "accuracy.decode.p90" in failed, decision["checks"]
    finally:
        daemon.stop()


@pytest.mark.parametrize("scale", [1.15])
def test_the_same_traffic_on_a_slower_engine_is_not_refitted(ipc_endpoint, db_path, scale):
    daemon, parent, decision = run(ipc_endpoint, db_path, scale)
    try:
        assert decision["verdict"] != "GO"
        assert daemon.refit.counts == {"installed": 0, "refused": 1}, daemon.refit.history
        assert daemon.calibration.model.version == parent
        why = _last_refit(daemon).why
        daemon.evaluate_gate()  # the same window again: not tried again
        assert daemon.refit.counts == {"installed": 0, "refused": 1}, daemon.refit.history
        assert (
            "failing" in why
            or "unresolved drift" in why
            or "misses its accuracy limits" in why
            or "moved" in why
        ), why
    finally:
        daemon.stop()


@pytest.mark.parametrize("slower", [1.0, 1.03])
def test_a_slowdown_inside_the_window_is_not_refitted_where_no_detector_can_see(
    ipc_endpoint, db_path, slower
):
    """Every step beyond the calibrated batch sizes (the detectors are blind, no step anchors the
    residual), and the engine 3 % slower from the window's middle on: within the accuracy limits,
    so only the re-fit's own time invariance can refuse it, and does. The same traffic on an
    unchanged engine is re-fitted (the refusal is the slowdown's doing)."""
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    daemon = _started_daemon(ipc_endpoint, db_path)
    try:
        daemon.install_calibration(cal)
        big = synthetic_batch(steps=3000, seed=23, requests_per_step=200)
        first = big.select_steps(np.arange(3000) < 1500)
        second = big.select_steps(np.arange(3000) >= 1500)
        t1 = 10**9 + int(sum(int(x * 1e6) for x in first.latency_ms))
        push = Pusher(ipc_endpoint)
        for frame in frames_from_batch(first) + frames_from_batch(
            second, start_seq=1501, latency_scale=slower, t0=t1
        ):
            push.send(frame)
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 3000, timeout=60)
        daemon.writer.flush()
        decision = daemon.evaluate_gate()
        assert decision["evidence"]["drift_blind"], decision["evidence"]
        why = _last_refit(daemon).why
        if slower == 1.0:
            assert daemon.refit.counts == {"installed": 1, "refused": 0}, why
            return
        assert daemon.refit.counts == {"installed": 0, "refused": 1}, daemon.refit.history
        assert "level moves" in why and "drift, not a new regime" in why, why
        assert daemon.calibration.model.version == cal.model.version
    finally:
        daemon.stop()


def test_design_r42_the_refit_looks_for_a_change_at_one_moment_within_cuda_graphs(monkeypatch):
    """Withdrawn (held-out 42: DESIGN in benchmarks/gate_designs.py), so off by default; on, it
    hands each class's residual, with the CUDA graph each of its steps ran at, to
    ``checks.largest_level_shift_within`` (its cases: tests/checks)."""
    assert not CalibrationSettings().stratified_level_shift
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    batch = synthetic_batch(steps=2000, seed=24, max_seqs=64)
    seen: list[np.ndarray] = []
    real = checks.largest_level_shift_within
    monkeypatch.setattr(
        checks, "largest_level_shift_within", lambda r, k, m, **kw: seen.append(k) or real(r, k, m, **kw)
    )
    pooled = refit_module.level_shifts(batch, cal, 0.04)
    assert not seen
    within = refit_module.level_shifts(batch, cal, 0.04, within_strata=True)
    assert len(seen) == len(cal.drift) and set(within) == set(pooled)
    graphs = checks.graph_size(batch.batch_size())
    for cls, keys in zip(cal.drift, seen):
        mine = batch.kind == refit_module.KIND_NAMES.index(cls)
        assert np.array_equal(keys, graphs[mine]) and len(np.unique(keys)) > 2, cls


def test_design_r46_the_refit_takes_the_within_graph_shift_less_its_noise(monkeypatch):
    """Withdrawn after held-out 48 (DESIGN in benchmarks/gate_designs.py), so off by default; on,
    each class's residual goes to ``largest_level_shift_within`` with the CUDA graphs and
    ``LEVEL_SHIFT_Z``."""
    assert not CalibrationSettings().level_shift_lower_bound
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    batch = synthetic_batch(steps=2000, seed=24, max_seqs=64)
    seen: list[float] = []
    real = checks.largest_level_shift_within
    monkeypatch.setattr(
        checks,
        "largest_level_shift_within",
        lambda r, k, m, **kw: seen.append(kw["z"]) or real(r, k, m, **kw),
    )
    shifts = refit_module.level_shifts(batch, cal, 0.04, lower_bound=True)
    assert seen == [checks.LEVEL_SHIFT_Z] * len(cal.drift) and set(shifts) == set(cal.drift)
    refit_module.level_shifts(batch, cal, 0.04)
    assert len(seen) == len(cal.drift)  # the design in force measures it pooled


def test_a_refit_refused_where_no_graph_spans_the_moment_says_it_cannot_tell(monkeypatch):
    """In every mode: a level shift at a moment no CUDA graph spans is named confounded, and
    check 5's refusal then says the window cannot tell drift from a new regime."""
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    batch = synthetic_batch(steps=2000, seed=24, max_seqs=64)
    for kw in ({}, {"lower_bound": True}):
        assert not any(s.confounded for s in refit_module.level_shifts(batch, cal, 0.04, **kw).values())
    monkeypatch.setattr(checks, "strata_span", lambda r, k, at: False)  # a mix that moved once
    for kw in ({}, {"lower_bound": True}):
        shifts = refit_module.level_shifts(batch, cal, 0.04, **kw)
        assert all(s.confounded for s in shifts.values()), kw
    moved = {cls: dataclasses.replace(s, shift=s.allowance + 0.01) for cls, s in shifts.items()}
    ok, why = checks.time_invariant(moved)
    assert not ok and "cannot tell drift from a new regime" in why, why


def test_refit_off_in_config_leaves_the_model_alone(ipc_endpoint, db_path):
    cfg = dataclasses.replace(Config.default().calibration, platform=PLATFORM, refit=False)
    daemon = Daemon(daemon_config(ipc_endpoint, db_path, calibration=cfg), run_job=lambda fn: fn())
    assert not daemon.refit.enabled
    daemon.refit.consider({"verdict": "INCONCLUSIVE", "evidence": {"extrapolated_fraction": 0.5}})
    assert daemon.refit.history == [] and daemon.refit.state == "idle"


def test_a_refit_comes_after_half_a_window_and_judges_only_the_steps_scored_since_install(
    ipc_endpoint, db_path
):
    """Design r29: the model in force may be re-fitted once it has scored half a calibration
    window (before r29, a whole one), and the guard judges it on the window's steps it scored out
    of sample.  Here the window's first 1,400 steps ran before the model was installed (no model
    scored them) and the last 1,600 after it, beyond its envelope: the re-fit is installed, and
    the decode steps the guard judged are those of the 1,600 inside the envelope, none earlier."""
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    assert cal.window_steps == 3000
    daemon = _started_daemon(ipc_endpoint, db_path)
    try:
        push = Pusher(ipc_endpoint)
        before = synthetic_batch(steps=1400, seed=23, max_seqs=32)
        frames = frames_from_batch(before)
        for frame in frames:
            push.send(frame)
        assert wait_until(lambda: daemon.pipeline.steps_observed == 1400, timeout=60)
        daemon.writer.flush()
        daemon.install_calibration(cal)
        after = synthetic_batch(steps=1600, seed=22, max_seqs=256)
        for frame in frames_from_batch(after, start_seq=1401, t0=frames[-1].t_done + 1000):
            push.send(frame)
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 3000, timeout=60)
        daemon.writer.flush()
        decision = daemon.evaluate_gate()
        assert decision["evidence"]["extrapolated_fraction"] > 0.05
        assert daemon.refit.counts == {"installed": 1, "refused": 0}, daemon.refit.history
        inside = inside_envelope(after, cal.envelope)
        judged = int((inside & (after.kind == 1)).sum())
        assert f"within limits on decode {judged}," in daemon.calibration.reason, daemon.calibration.reason
        assert _last_refit(daemon).steps == 3000  # fitted on a whole window's worth
    finally:
        daemon.stop()


def test_no_refit_before_half_a_window_is_scored(ipc_endpoint, db_path):
    """The same traffic, 1,400 steps of it after the install: fewer than half the window, so
    the gate stays INCONCLUSIVE and no re-fit is tried."""
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    daemon = _started_daemon(ipc_endpoint, db_path)
    try:
        daemon.install_calibration(cal)
        push = Pusher(ipc_endpoint)
        for frame in frames_from_batch(synthetic_batch(steps=1400, seed=22, max_seqs=256)):
            push.send(frame)
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 1400, timeout=60)
        daemon.writer.flush()
        decision = daemon.evaluate_gate()
        assert decision["evidence"]["extrapolated_fraction"] > 0.05
        assert daemon.refit.history == [] and daemon.calibration.model.version == cal.model.version
    finally:
        daemon.stop()


def test_traffic_beyond_the_envelope_the_model_in_force_predicts_widens_its_envelope(ipc_endpoint, db_path):
    """Design r43: healthy traffic at batches up to four times the calibration's (the model's
    residual there within its allowance of the calibration's), and no re-fit due yet (half a
    window of 20,000 steps not scored: r29).  The model in force predicts the steps beyond its
    envelope within the limits and without a bias, so its envelope widens over them: the same
    version, the same drift detectors (their state kept), the body stored with the new envelope;
    the envelope monitor counts afresh, and more of that traffic is inside."""
    daemon, parent, decision = run(
        ipc_endpoint, db_path, 1.0, window_steps=20_000, steps=5000, traffic_seqs=128
    )
    try:
        assert decision["evidence"]["extrapolated_fraction"] > 0.05
        assert daemon.refit.counts == {"installed": 0, "refused": 0}, daemon.refit.history
        assert daemon.refit.extensions == {"extended": 1, "not_extended": 0}, daemon.refit.history
        record = daemon.refit.history[-1]
        assert record.kind == "extension" and record.version == record.parent == parent
        cal = daemon.calibration
        assert cal.model.version == parent and cal.lineage == ()
        assert cal.reason.startswith("envelope extended (design r43): decode "), cal.reason
        assert cal.envelope.max_batch_size > 64  # the traffic's batches are inside it now
        daemon.writer.flush()
        body = json.loads(
            daemon.writer.cursor()
            .execute("SELECT body FROM model_versions WHERE version = ?", [parent])
            .fetchone()[0]
        )
        assert body["envelope"]["max_batch_size"] == cal.envelope.max_batch_size
        monitor = daemon.drift.monitor
        assert daemon.drift.envelope.steps == 0  # counting afresh
        scrape = generate_latest(registry_for(daemon.metric_sources())).decode()
        assert 'shadowd_model_refits_total{outcome="extended"} 1.0' in scrape
        push = Pusher(ipc_endpoint)
        for frame in frames_from_batch(synthetic_batch(steps=1000, seed=23, max_seqs=128), start_seq=5001):
            push.send(frame)
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 6000, timeout=60)
        daemon.writer.flush()
        after = daemon.evaluate_gate()
        assert after["evidence"]["extrapolated_fraction"] <= 0.05, after["evidence"]
        assert {c["name"]: c["status"] for c in after["checks"]}["coverage.extrapolation"] == "pass"
        assert daemon.drift.monitor is monitor and daemon.calibration.model.version == parent
        # Validated there, not fitted there: a re-fit is still asked for, and once one is due (a
        # window of 3,000 steps, half of it scored) and allowed, it re-identifies the coefficients.
        assert after["verdict"] != "GO" or any(c["status"] != "pass" for c in after["checks"])
        daemon.calibration.window_steps = 3000
        daemon.evaluate_gate()
        assert daemon.refit.counts == {"installed": 1, "refused": 0}, daemon.refit.history
        refitted = daemon.calibration
        assert refitted.model.version != parent and refitted.lineage == (parent,) and not refitted.extended
        assert "extended over steps the model was not fitted on (design r43)" in refitted.reason
    finally:
        daemon.stop()


def test_a_refit_the_guard_refuses_is_not_followed_by_an_extension(ipc_endpoint, db_path):
    """Design r43 widens the envelope where a re-fit was refused for the re-fitted model's own
    reasons, never where the guard found the model in force or the engine in question: here an
    engine 15 % slower, whose re-fit is due (the default window) and refused by the guard."""
    daemon, parent, decision = run(ipc_endpoint, db_path, 1.15)
    try:
        assert decision["evidence"]["extrapolated_fraction"] > 0.05
        assert daemon.refit.counts == {"installed": 0, "refused": 1}, daemon.refit.history
        assert daemon.refit.extensions == {"extended": 0, "not_extended": 0}, daemon.refit.history
        assert daemon.calibration.model.version == parent and not daemon.calibration.extended
    finally:
        daemon.stop()


@pytest.mark.parametrize(
    ("scale", "beyond_ms", "why"),
    [
        (1.0, 0.05, "beyond the envelope"),  # the model extrapolates badly there
        (1.15, 0.0, "gate checks failing"),  # a slower engine: it misses everywhere, and pages
    ],
)
def test_traffic_beyond_the_envelope_the_model_misses_leaves_its_envelope(
    ipc_endpoint, db_path, scale, beyond_ms, why
):
    """Design r43's guard: where the model in force is off beyond its envelope (a bias there, or
    an engine slower everywhere), the envelope stays, the steps stay beyond it, and the refusal
    says why."""
    daemon, parent, decision = run(
        ipc_endpoint, db_path, scale, beyond_ms_per_request=beyond_ms, window_steps=20_000
    )
    try:
        assert decision["evidence"]["extrapolated_fraction"] > 0.05
        assert daemon.refit.extensions == {"extended": 0, "not_extended": 1}, daemon.refit.history
        assert why in daemon.refit.history[-1].why, daemon.refit.history[-1].why
        assert daemon.calibration.envelope.max_batch_size < 100 and daemon.calibration.model.version == parent
    finally:
        daemon.stop()


def test_the_envelope_widens_only_over_the_steps_beyond_it():
    """``WorkloadEnvelope.covering`` with the envelope's own margin: every step given lies inside
    the result, limits no step passes stay, decode-only limits move only with decode steps."""
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    traffic = synthetic_batch(steps=3000, seed=22, max_seqs=256)
    beyond = ~inside_envelope(traffic, cal.envelope)
    out = traffic.select_steps(beyond)
    sizes = out.batch_size()
    env = cal.envelope.covering(
        max_context=out.max_reach(sizes),
        batch_size=sizes,
        tokens=out.per_step_sum(out.new_tokens.astype(np.float64)),
        decode=out.kind == 1,
        kv_tokens=out.per_step_sum(out.context_tokens.astype(np.float64)),
        margin=0.5,
    )
    assert inside_envelope(out, env).all()
    assert env.max_batch_size == pytest.approx(sizes.max() * 1.5)
    assert env.min_batch_size == cal.envelope.min_batch_size  # nothing below the floor
    assert inside_envelope(traffic, env).sum() > inside_envelope(traffic, cal.envelope).sum()


def test_a_refits_window_is_cut_to_max_window_rows():
    """``[calibration] max_window_rows`` bounds a re-fit's window too: the most recent steps whose
    request rows fit, never more than the calibration's own window (no limit by default)."""
    from shadowd.daemon.refit import RegimeRefit

    cal = calibrate(synthetic_batch(steps=600, seed=3, max_seqs=16), PLATFORM.as_key())
    con = log_of_decode_steps(2 * cal.window_steps)

    def window(rows: int | None) -> int | None:
        refit = RegimeRefit(
            current=lambda: cal,
            cursor=lambda: con,
            install=lambda new: None,
            policy=GatePolicy,
            settings=lambda: CalibrationSettings(max_window_rows=rows),
            platform_key=PLATFORM.as_key,
            run_job=lambda fn: None,
        )
        w = refit._window(con, cal, "re-fit").last_steps
        assert refit.window_bound.cuts() == {"rows": int(w < cal.window_steps), "memory": 0}
        return w

    assert cal.window_steps > 250
    assert window(None) == cal.window_steps == window(10**9)
    assert window(10_000) == 250  # 40 rows a step
