"""Design r43's guard (``checks.envelope_extension``): each way it refuses, waits or allows."""

from __future__ import annotations

import pytest

from checks import BeyondClass, GatePolicy, extension_decision

GOOD = BeyondClass(steps=400, p90=0.04, p99=0.06, shift=0.005, allowance=0.02)


def decide(beyond, **kw):
    return extension_decision(beyond, GatePolicy(), min_steps=150, **kw)


def test_a_validated_class_widens_and_the_reason_names_what_it_was_judged_on():
    ok, why = decide({"decode": GOOD, "mixed": BeyondClass(200, 0.12, 0.2, 0.01, 0.02)})
    assert ok is True
    assert why.startswith("decode 400 steps beyond the envelope") and "mixed 200 steps" in why


@pytest.mark.parametrize(
    ("beyond", "said"),
    [
        ({"decode": BeyondClass(400, 0.11, 0.2, 0.0, 0.02)}, "p90 0.110 (limit 0.1)"),
        ({"decode": BeyondClass(400, 0.05, 0.26, 0.0, 0.02)}, "p99 0.260 (limit 0.25)"),
        ({"decode": BeyondClass(400, 0.05, 0.1, 0.021, 0.02)}, "residual mean beyond the envelope 0.021"),
        ({"decode": BeyondClass(400, 0.05, 0.1, None, None)}, "no calibrated residual mean"),
        ({"decode": GOOD, "mixed": BeyondClass(300, 0.2, 0.25, 0.0, 0.02)}, "mixed: beyond the envelope p90"),
    ],
)
def test_a_class_the_model_is_off_on_beyond_its_envelope_keeps_the_envelope(beyond, said):
    ok, why = decide(beyond)
    assert ok is False and said in why, why


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"failing_checks": ("accuracy.decode.p90",)}, "gate checks failing (accuracy.decode.p90)"),
        ({"unresolved_drift": 2}, "2 unresolved drift events"),
        ({"new_tenant_share": 0.2}, "tenants calibration never saw carry 20.0%"),
    ],
)
def test_evidence_that_the_engine_changed_refuses_as_it_refuses_a_refit(kw, said):
    ok, why = decide({"decode": GOOD}, **kw)
    assert ok is False and said in why, why


def test_too_few_steps_beyond_waits_rather_than_refuses():
    assert decide({"decode": GOOD, "mixed": BeyondClass(149, 0.01, 0.01, 0.0, 0.02)}) == (
        None,
        "mixed: 149 steps beyond the envelope, fewer than 150 to judge",
    )
    assert decide({})[0] is None
    assert decide({"decode": GOOD}, new_tenant_share=0.05)[0] is True  # at the limit, not beyond
