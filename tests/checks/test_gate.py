"""The gate: fail closed, N consecutive passes, any fail → NO_GO, hysteresis, policy parsing."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.decision import EXIT_ERROR, effective_verdict, exit_code
from checks.evidence import Evidence
from checks.gate import Gate
from checks.policy import STEP_CLASSES, GatePolicy
from checks.rules import evaluate_checks

KEY = "h200/llama-3.1-8b/bf16/tp1/pp1/vllm-0.33.0/flash-attn"


def good(now: float) -> dict:
    """Evidence that passes every default check at time ``now``."""
    return {
        "accuracy": {
            c: {
                "steps": 10_000,
                "p50": 0.01,
                "p90": 0.04,
                "p99": 0.09,
                "baseline_p90": 0.12,
                "baseline_p99": 0.3,
            }
            for c in STEP_CLASSES
        },
        "shadow_duration_s": 4 * 3600.0,
        "tenants_seen": 4,
        "max_context_seen": 16_384,
        "unresolved_drift_events": 0,
        "stability": {"llmvisor": {"effect": 0.03, "ci_low": 0.02, "ci_high": 0.04, "computed_at": now - 60}},
        "calibrated_platform_key": KEY,
        "running_platform_key": KEY,
        "tap_drop_rate": 0.0,
        "last_step_ts": now - 1.0,
        "extrapolated_fraction": 0.001,
        "new_tenants": 0,
        "new_tenant_share": 0.0,
    }


def with_(ev: dict, path: str, value) -> dict:
    ev = copy.deepcopy(ev)
    *head, last = path.split(".")
    node = ev
    for k in head:
        node = node[k]
    node[last] = value
    return ev


def run(gate: Gate, evidences: list[dict], t0: float = 1000.0, dt: float = 60.0) -> list[str]:
    return [
        gate.evaluate(ev(t0 + i * dt) if callable(ev) else ev, t0 + i * dt).verdict
        for i, ev in enumerate(evidences)
    ]


def test_good_evidence_passes_every_check():
    checks = evaluate_checks(Evidence.from_dict(good(100.0)), GatePolicy(), 100.0)
    assert [c for c in checks if c.status != "pass"] == []
    assert len({c.name for c in checks}) == len(checks)


def test_go_only_after_n_consecutive_passes():
    gate = Gate(GatePolicy(consecutive_passes=3))
    assert run(gate, [good] * 4) == ["INCONCLUSIVE", "INCONCLUSIVE", "GO", "GO"]
    d = gate.evaluate(good(1240.0), 1240.0)
    assert d.consecutive_passes == 5 and d.required_passes == 3 and d.exit_code == 0


@pytest.mark.parametrize(
    "path,value,name",
    [
        ("unresolved_drift_events", 1, "drift"),
        ("accuracy.mixed.p99", 0.5, "accuracy.mixed.p99"),
        ("stability.llmvisor", {"effect": 0.3, "ci_low": 0.25, "ci_high": 0.35}, "stability"),
        ("tap_drop_rate", 0.2, "drop_rate"),
        ("running_platform_key", "a100/llama-3.1-8b/bf16/tp1/pp1/vllm-0.33.0/flash-attn", "platform"),
    ],
)
def test_any_failing_check_drops_go_at_once(path, value, name):
    gate = Gate(GatePolicy(consecutive_passes=2))
    assert run(gate, [good] * 3) == ["INCONCLUSIVE", "GO", "GO"]
    d = gate.evaluate(with_(good(5000.0), path, value), 5000.0)
    assert d.verdict == "NO_GO" and d.exit_code == 1 and d.consecutive_passes == 0
    failed = [c for c in d.checks if c.status == "fail"]
    assert [c.name for c in failed] == [name]
    assert name in d.reason


@pytest.mark.parametrize(
    "path,value,name,way_out",
    [
        ("extrapolated_fraction", 0.4, "coverage.extrapolation", "recalibrate"),
        ("new_tenant_share", 0.4, "coverage.new_tenants", "recalibrate"),
        ("shadow_duration_s", 60.0, "evidence.duration", "wait"),
        ("accuracy.decode.steps", 10, "evidence.steps.decode", "wait"),
    ],
)
def test_unqualified_traffic_is_inconclusive_with_a_way_out_never_a_page(path, value, name, way_out):
    gate = Gate(GatePolicy(consecutive_passes=1))
    verdicts = run(gate, [lambda now: with_(good(now), path, value)] * 4)
    assert verdicts == ["INCONCLUSIVE"] * 4
    d = gate.evaluate(with_(good(9000.0), path, value), 9000.0)
    (check,) = [c for c in d.checks if c.name == name]
    assert check.status == "inconclusive" and way_out in check.reason
    assert not [c for c in d.checks if c.status == "fail"]


def test_advantage_over_tokens_is_reported_not_judged():
    ev = with_(good(0.0), "accuracy.decode.baseline_p90", 0.041)  # tokens nearly as good as the model
    gate = Gate(GatePolicy(consecutive_passes=1))
    d = gate.evaluate(ev, 0.0)
    assert d.verdict == "GO" and not [c for c in d.checks if c.name.startswith("advantage")]
    adv = d.details["advantage"]["decode"]
    assert adv["ratio"] == pytest.approx(0.041 / 0.04) and adv["below_reference"]
    assert not d.details["advantage"]["mixed"]["below_reference"]


def test_a_newcomer_with_a_small_share_of_recent_time_does_not_block_go():
    ev = with_(with_(good(0.0), "new_tenants", 1), "new_tenant_share", 0.01)
    d = Gate(GatePolicy(consecutive_passes=1)).evaluate(ev, 0.0)
    assert d.verdict == "GO"


def test_a_class_calibration_barely_held_is_inconclusive_not_a_page():
    bad = with_(good(0.0), "accuracy.decode.p90", 0.5)
    assert Gate(GatePolicy()).evaluate(bad, 0.0).verdict == "NO_GO"
    held = with_(bad, "barely_held", {"decode": "the calibration window held 12 decode steps (< 300)"})
    d = Gate(GatePolicy()).evaluate(held, 0.0)
    check = next(c for c in d.checks if c.name == "accuracy.decode.p90")
    assert d.verdict == "INCONCLUSIVE" and check.status == "inconclusive"
    assert "12 decode steps" in check.reason and "recalibrate" in check.reason
    assert d.details["not_vouched"] == {"decode": "the calibration window held 12 decode steps (< 300)"}
    assert Gate(GatePolicy()).evaluate(bad, 0.0).details["not_vouched"] == {}
    # only a failure is excused: the other classes are still judged and may page
    both = with_(held, "accuracy.mixed.p99", 0.9)
    assert Gate(GatePolicy()).evaluate(both, 0.0).verdict == "NO_GO"


def test_drift_names_the_detectors_it_relies_on_when_one_is_uncalibratable():
    ev = with_(good(0.0), "drift_partial", {"decode": "page_hinkley only (adwin: no delta reaches 1e-05)"})
    d = Gate(GatePolicy(consecutive_passes=1)).evaluate(ev, 0.0)
    (check,) = [c for c in d.checks if c.name == "drift"]
    assert d.verdict == "GO" and "page_hinkley only" in check.reason
    blind = with_(with_(good(0.0), "unresolved_drift_events", None), "drift_blind", {"decode": "x"})
    (check,) = [c for c in Gate().evaluate(blind, 0.0).checks if c.name == "drift"]
    assert check.status == "inconclusive" and "recalibrate" in check.reason


def test_dull_detectors_hold_drift_inconclusive_but_an_event_still_pages():
    """Design r19: detectors that would not raise a 5 % slowdown in time make their silence no
    evidence (INCONCLUSIVE, with the way out), while an unresolved event still fails the check."""
    why = {"decode": "a 5% slowdown raised not within 1200 judged steps (budget 300)"}
    ev = with_(good(0.0), "drift_dull", why)
    d = Gate(GatePolicy(consecutive_passes=1)).evaluate(ev, 0.0)
    (check,) = [c for c in d.checks if c.name == "drift"]
    assert d.verdict == "INCONCLUSIVE" and check.status == "inconclusive"
    assert "not within 1200" in check.reason and "recalibrate" in check.reason
    paged = Gate().evaluate(with_(ev, "unresolved_drift_events", 1), 0.0)
    assert paged.verdict == "NO_GO" and "drift" in paged.reason


def test_platform_mismatch_names_both_keys():
    d = Gate().evaluate(with_(good(0.0), "running_platform_key", "a100/other"), 0.0)
    assert d.verdict == "NO_GO"
    assert "a100/other" in d.reason and KEY in d.reason


@pytest.mark.parametrize(
    "mutate",
    [
        lambda ev, now: {},  # nothing at all
        lambda ev, now: with_(ev, "running_platform_key", None),  # unknown platform
        lambda ev, now: with_(ev, "calibrated_platform_key", None),
        lambda ev, now: with_(ev, "last_step_ts", now - 3600.0),  # stale data
        lambda ev, now: with_(ev, "last_step_ts", None),
        lambda ev, now: with_(ev, "tap_drop_rate", None),
        lambda ev, now: with_(ev, "unresolved_drift_events", None),  # drift never evaluated
        lambda ev, now: with_(ev, "stability", {}),
        lambda ev, now: with_(ev, "accuracy", {}),
        lambda ev, now: with_(ev, "accuracy.prefill.steps", 10),  # evidence too thin
        lambda ev, now: with_(ev, "shadow_duration_s", 60.0),
        lambda ev, now: with_(ev, "max_context_seen", 512),
        lambda ev, now: with_(ev, "new_tenant_share", 0.4),  # unvalidated tenants carry the load
        lambda ev, now: with_(ev, "new_tenant_share", None),
        lambda ev, now: with_(ev, "extrapolated_fraction", 0.4),  # beyond the calibrated envelope
    ],
    ids=[
        "empty",
        "running-key",
        "calibrated-key",
        "stale",
        "no-steps",
        "drop-rate",
        "drift",
        "stability",
        "accuracy",
        "steps",
        "duration",
        "context",
        "new-tenants",
        "new-tenant-share-missing",
        "extrapolation",
    ],
)
def test_fail_closed_missing_or_stale_evidence_never_goes(mutate):
    gate = Gate(GatePolicy(consecutive_passes=1))
    verdicts = run(gate, [lambda now: mutate(good(now), now)] * 10)
    assert "GO" not in verdicts


@pytest.mark.parametrize(
    "mutate",
    [
        lambda ev, now: with_(ev, "last_step_ts", now - 3600.0),
        lambda ev, now: with_(ev, "running_platform_key", None),
        lambda ev, now: with_(ev, "stability", {}),
        lambda ev, now: with_(ev, "unresolved_drift_events", None),
    ],
    ids=["stale", "unknown-platform", "stability-missing", "drift-missing"],
)
def test_missing_or_critical_evidence_drops_go_without_grace(mutate):
    gate = Gate(GatePolicy(consecutive_passes=2, inconclusive_grace=3))
    assert run(gate, [good] * 2)[-1] == "GO"
    d = gate.evaluate(mutate(good(9000.0), 9000.0), 9000.0)
    assert d.verdict == "INCONCLUSIVE" and d.exit_code == 2 and d.consecutive_passes == 0


def test_go_tolerates_a_short_undecided_stretch_then_drops():
    straddle = {"effect": 0.09, "ci_low": 0.08, "ci_high": 0.11}
    gate = Gate(GatePolicy(consecutive_passes=2, inconclusive_grace=1))
    undecided = lambda now: with_(good(now), "stability.llmvisor", straddle)  # noqa: E731
    assert run(gate, [good, good, undecided, good, undecided, undecided, good, good]) == [
        "INCONCLUSIVE",
        "GO",
        "GO",
        "GO",
        "GO",
        "INCONCLUSIVE",
        "INCONCLUSIVE",
        "GO",
    ]


def test_no_go_is_held_until_n_consecutive_passes():
    bad = lambda now: with_(good(now), "unresolved_drift_events", 2)  # noqa: E731
    thin = lambda now: with_(good(now), "shadow_duration_s", 10.0)  # noqa: E731
    gate = Gate(GatePolicy(consecutive_passes=3))
    assert run(gate, [bad, good, good, thin, good, good, bad, good, good, good]) == [
        "NO_GO",
        "NO_GO",
        "NO_GO",
        "NO_GO",
        "NO_GO",
        "NO_GO",
        "NO_GO",
        "NO_GO",
        "NO_GO",
        "GO",
    ]


def test_flapping_evidence_never_reaches_go():
    bad = lambda now: with_(good(now), "accuracy.decode.p90", 0.5)  # noqa: E731
    gate = Gate(GatePolicy(consecutive_passes=3))
    assert "GO" not in run(gate, [good, good, bad] * 6)


def test_passes_closer_than_the_minimum_interval_do_not_count():
    gate = Gate(GatePolicy(consecutive_passes=3, min_pass_interval_s=60.0))
    verdicts = run(gate, [good] * 7, dt=20.0)  # passes counted at 0, 60 and 120 s
    assert verdicts == ["INCONCLUSIVE"] * 6 + ["GO"]


def test_a_gap_longer_than_the_decision_ttl_restarts_the_pass_count():
    gate = Gate(GatePolicy(consecutive_passes=2, decision_ttl_s=300.0))
    assert run(gate, [good] * 2)[-1] == "GO"
    d = gate.evaluate(good(10_000.0), 10_000.0)
    assert d.verdict == "INCONCLUSIVE" and d.consecutive_passes == 1


def test_state_round_trips_through_a_dict():
    gate = Gate(GatePolicy(consecutive_passes=2))
    run(gate, [good] * 2)
    state = json.loads(json.dumps(gate.state_dict()))
    restored = Gate(GatePolicy(consecutive_passes=2), state=state)
    assert restored.evaluate(good(1120.0), 1120.0).verdict == "GO"


def test_decision_serialises_and_expires():
    d = Gate().evaluate(good(50.0), 50.0)
    out = json.loads(json.dumps(d.to_dict()))
    assert out["verdict"] == "INCONCLUSIVE" and out["exit_code"] == 2
    assert out["counts"]["fail"] == 0 and len(out["checks"]) == len(d.checks)
    assert {"name", "status", "value", "threshold", "reason"} <= set(out["checks"][0])
    go = {**out, "verdict": "GO"}
    assert effective_verdict(go, now=out["valid_until"]) == "GO"
    assert effective_verdict(go, now=out["valid_until"] + 1) == "INCONCLUSIVE"
    assert effective_verdict({"verdict": "GO"}, now=0.0) == "INCONCLUSIVE"


def test_exit_codes():
    assert [exit_code(v) for v in ("GO", "NO_GO", "INCONCLUSIVE", "bogus")] == [0, 1, 2, EXIT_ERROR]


def test_accuracy_is_not_judged_before_the_minimum_steps():
    ev = with_(with_(good(0.0), "accuracy.decode.steps", 100), "accuracy.decode.p99", 0.9)
    by_name = {c.name: c for c in evaluate_checks(Evidence.from_dict(ev), GatePolicy(), 0.0)}
    assert by_name["accuracy.decode.p99"].status == "inconclusive"
    assert by_name["evidence.steps.decode"].status == "inconclusive"


def test_a_broken_rule_is_inconclusive_never_pass(monkeypatch):
    import checks.rules as rules

    def boom(ev, pol, now):
        raise RuntimeError("bad column")

    monkeypatch.setattr(rules, "RULES", rules.RULES + (boom,))
    gate = Gate(GatePolicy(consecutive_passes=1))
    d = gate.evaluate(good(0.0), 0.0)
    assert d.verdict == "INCONCLUSIVE" and "bad column" in d.reason


def test_stale_stability_result_is_missing_evidence():
    ev = with_(good(10_000.0), "stability.llmvisor.computed_at", 0.0)
    by_name = {c.name: c for c in evaluate_checks(Evidence.from_dict(ev), GatePolicy(), 10_000.0)}
    assert by_name["stability"].status == "inconclusive" and by_name["stability"].missing


def test_demo_scaling_reaches_go_on_short_evidence_and_says_so():
    short = with_(with_(good(0.0), "shadow_duration_s", 40.0), "accuracy.decode.steps", 60)
    policy = GatePolicy(consecutive_passes=1)
    assert Gate(policy).evaluate(short, 0.0).verdict == "INCONCLUSIVE"
    scaled = policy.scaled(0.01)
    d = Gate(scaled).evaluate(short, 0.0)
    assert d.verdict == "GO" and d.policy_scale == 0.01
    assert "scaled by 0.01" in d.details["scale"] and "36 s" in d.details["scale"]
    assert GatePolicy().describe_scale() == "evidence minimums at full scale"


# -- policy parsing -------------------------------------------------------------------------


def test_policy_from_dict_merges_per_class_overrides_and_round_trips():
    p = GatePolicy.from_dict(
        {
            "max_p99_error": {"prefill": 0.4},
            "min_steps": {"mixed": 10},
            "required_step_classes": ["decode", "mixed"],
            "max_drop_rate": "0.01",
        }
    )
    assert p.max_p99_error == {"prefill": 0.4, "decode": 0.25, "mixed": 0.30}
    assert p.min_steps["mixed"] == 10 and p.required_step_classes == ("decode", "mixed")
    assert p.max_drop_rate == 0.01
    assert GatePolicy.from_dict(json.loads(json.dumps(p.to_dict()))) == p


@pytest.mark.parametrize(
    "data,message",
    [
        (
            {"consecutive_pases": 3},
            "unknown gate policy key 'consecutive_pases' (did you mean 'consecutive_passes'?)",
        ),
        ({"zzz": 1}, "unknown gate policy key 'zzz'; known keys:"),
        ({"max_p90_error": {"decoding": 0.1}}, "unknown step class 'decoding'"),
        ({"max_p90_error": 0.1}, "max_p90_error must be a mapping"),
        ({"consecutive_passes": 2.5}, "consecutive_passes must be an integer"),
        ({"consecutive_passes": 0}, "consecutive_passes must be ≥ 1"),
        ({"required_step_classes": ["prefil"]}, "unknown step class 'prefil'"),
    ],
)
def test_policy_from_dict_rejects_bad_input_naming_the_key(data, message):
    with pytest.raises(ValueError) as err:
        GatePolicy.from_dict(data)
    assert message in str(err.value)


def test_evidence_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match="'p95'"):
        Evidence.from_dict({"accuracy": {"decode": {"steps": 1, "p95": 0.1}}})


# -- property: whatever the sequence, the gate's invariants hold ----------------------------

MUTATIONS = [
    ("ok", lambda ev, now: ev),
    ("fail", lambda ev, now: with_(ev, "unresolved_drift_events", 3)),
    ("fail", lambda ev, now: with_(ev, "accuracy.prefill.p90", 0.9)),
    ("missing", lambda ev, now: with_(ev, "running_platform_key", None)),
    ("missing", lambda ev, now: with_(ev, "last_step_ts", now - 1e5)),
    ("missing", lambda ev, now: with_(ev, "stability", {})),
    (
        "undecided",
        lambda ev, now: with_(ev, "stability.llmvisor", {"effect": 0.1, "ci_low": 0.05, "ci_high": 0.15}),
    ),
]


@settings(max_examples=60, deadline=None, database=None)
@given(
    seq=st.lists(st.sampled_from(range(len(MUTATIONS))), min_size=1, max_size=25),
    need=st.integers(1, 4),
    grace=st.integers(0, 2),
)
def test_gate_invariants(seq, need, grace):
    gate = Gate(GatePolicy(consecutive_passes=need, inconclusive_grace=grace))
    history = []
    for i, m in enumerate(seq):
        kind, mutate = MUTATIONS[m]
        now = 1000.0 + 60.0 * i
        d = gate.evaluate(mutate(good(now), now), now)
        history.append(kind)
        if kind == "fail":
            assert d.verdict == "NO_GO"
        if kind == "missing":
            assert d.verdict != "GO"
        if d.verdict == "GO":
            # the last `need` rounds that were not tolerated-undecided were all passes
            decisive = [k for k in history if k != "undecided"]
            assert decisive[-need:] == ["ok"] * need
            trailing_undecided = 0
            for k in reversed(history):
                if k != "undecided":
                    break
                trailing_undecided += 1
            assert trailing_undecided <= grace


def test_stability_is_judged_against_the_calibration_windows_own_effect():
    """A nonlinear engine's Shapley shares depend on batch-mates too: what counts is growth over
    the effect the validated model showed at calibration, not the engine's physics. Under one
    model that growth comes from the traffic alone, so it is INCONCLUSIVE with the way out (design
    r6); an effect with no calibration baseline to compare with still pages."""
    physics = {"effect": 0.46, "ci_low": 0.45, "ci_high": 0.48, "baseline": 0.44}
    grown = {**physics, "effect": 0.62, "ci_low": 0.60, "ci_high": 0.64}
    by = lambda st: {c.name: c for c in evaluate_checks(Evidence.from_dict(st), GatePolicy(), 0.0)}  # noqa: E731
    ok = by(with_(good(0.0), "stability.llmvisor", physics))["stability"]
    assert ok.status == "pass" and "calibration window" in ok.reason
    bad = by(with_(good(0.0), "stability.llmvisor", grown))["stability"]
    assert bad.status == "inconclusive" and bad.value == pytest.approx(0.16)
    assert "re-fit" in bad.reason and "calibrate" in bad.reason and not bad.missing
    absolute = {k: v for k, v in physics.items() if k != "baseline"}
    assert by(with_(good(0.0), "stability.llmvisor", absolute))["stability"].status == "fail"


def test_a_drift_page_names_the_on_calls_next_step():
    """Drift events stay unresolved until a calibration resolves them: the page says how."""
    (check,) = [
        c
        for c in evaluate_checks(
            Evidence.from_dict(with_(good(0.0), "unresolved_drift_events", 2)), GatePolicy(), 0.0
        )
        if c.name == "drift"
    ]
    assert check.status == "fail" and check.value == 2
    assert "unresolved drift events 2 > 0" in check.reason
    assert "check the engine" in check.reason and "shadowd calibrate" in check.reason


def test_an_unresolved_event_pages_even_where_a_class_is_blind():
    """Design r31: a class may be blind (its residual shifted where strata could not judge it)
    and then slow down for real; the event that raises is evidence and pages, where before r31
    the blindness hid it (INCONCLUSIVE).  Blind without an event stays INCONCLUSIVE."""
    blind = with_(with_(good(0.0), "unresolved_drift_events", 0), "drift_blind", {"decode": "x"})
    (check,) = [c for c in Gate().evaluate(blind, 0.0).checks if c.name == "drift"]
    assert check.status == "inconclusive" and check.missing
    paged = Gate().evaluate(with_(blind, "unresolved_drift_events", 1), 0.0)
    (check,) = [c for c in paged.checks if c.name == "drift"]
    assert paged.verdict == "NO_GO" and check.status == "fail" and "check the engine" in check.reason
