"""An evidence minimum not yet met says how long the wait is (``checks.rules``): at the rate the
steps came in so far, or that the gate's evidence window never holds the minimum at that rate,
where waiting does not help.  The operator's way out, made concrete."""

from __future__ import annotations

import re

import numpy as np
import pytest

from checks import Gate, GatePolicy
from checks.evidence import ClassAccuracy, Evidence

POLICY = GatePolicy(min_steps={"prefill": 0, "decode": 750, "mixed": 0}, min_duration_s=600.0)


def _check(ev: Evidence, name: str):
    d = Gate(POLICY).evaluate(ev, now=0.0)
    (c,) = [c for c in d.checks if c.name == name]
    return c


def _decode(steps: int, span_s: float, window_s: float | None = 3600.0) -> Evidence:
    return Evidence(
        accuracy={"decode": ClassAccuracy(steps=steps, p90=0.03, p99=0.06)},
        shadow_duration_s=span_s,
        evidence_window_s=window_s,
    )


def _seconds(reason: str) -> float:
    return float(re.search(r"about (\d+) s more", reason).group(1))


def test_the_wait_is_the_minimum_at_the_rate_so_far():
    c = _check(_decode(500, 300.0), "evidence.steps.decode")
    assert c.status == "inconclusive" and "wait for more shadow traffic" in c.reason
    assert _seconds(c.reason) == pytest.approx(150.0, abs=1)  # 750 steps at 5/3 a second: 450 s
    # Waiting that long at the same rate meets the minimum: the estimate was the way out.
    assert _check(_decode(750, 450.0), "evidence.steps.decode").status == "pass"


def test_a_slower_class_waits_longer():
    fast = _seconds(_check(_decode(600, 300.0), "evidence.steps.decode").reason)
    slow = _seconds(_check(_decode(150, 300.0), "evidence.steps.decode").reason)
    assert slow > 10 * fast


@pytest.mark.parametrize(("span_s", "held"), [(7200.0, 100), (3000.0, 120)])
def test_a_window_that_never_holds_the_minimum_says_waiting_does_not_help(span_s, held):
    """Spanned already (7200 s of traffic, a 3600 s window: its 100 steps are the window's), or
    too short for the rate (3000 s of traffic brought 100 steps: 120 in a full window): no wait
    names a time."""
    c = _check(_decode(100, span_s), "evidence.steps.decode")
    assert c.status == "inconclusive" and f"holds {held} at the rate so far, never 750" in c.reason
    assert "busier traffic" in c.reason
    assert "about" not in c.reason


def test_without_a_rate_the_plain_way_out():
    for ev in (_decode(0, 300.0), _decode(10, 0.0), Evidence(shadow_duration_s=None)):
        c = _check(ev, "evidence.steps.decode")
        assert c.status == "inconclusive" and "s more" not in c.reason
    assert "wait for more shadow traffic" in _check(_decode(0, 300.0), "evidence.steps.decode").reason


def test_the_duration_minimum_names_the_seconds_left():
    c = _check(_decode(800, 200.0), "evidence.duration")
    assert c.status == "inconclusive" and "wait 400 s more" in c.reason
    assert _check(_decode(800, 600.0), "evidence.duration").status == "pass"


def test_evidence_round_trips_its_window():
    ev = _decode(500, 300.0)
    assert Evidence.from_dict(ev.to_dict()) == ev


# -- share stability: a CI that straddles its limit says how long it takes to settle -------------


def _stability(lo: float, hi: float, steps: int = 2000, span_s: float = 100.0, cap: int = 20000) -> Evidence:
    res = {
        "ci_low": lo,
        "ci_high": hi,
        "effect": (lo + hi) / 2,
        "steps": steps,
        "span_s": span_s,
        "max_steps": cap,
    }
    return Evidence(stability={POLICY.stability_split: res})


def test_a_straddling_stability_ci_says_how_many_steps_settle_it_and_how_long():
    """Centre 0.08, half-width 0.04 against 0.1: four times the steps (the CI narrows as one
    over the root of the steps) at 20 steps a second: 300 s more."""
    ev = _stability(0.04, 0.12)
    c = _check(ev, "stability")
    assert c.status == "inconclusive" and "straddles 0.1: more data needed" in c.reason
    assert "estimate (0.080), 4.0x the steps settle it" in c.reason
    assert _seconds(c.reason) == pytest.approx(300.0, abs=1)
    assert Gate(POLICY).evaluate(ev, now=0.0).details["evidence_wait_s"]["stability"] == pytest.approx(300.0)


def test_a_window_too_short_to_settle_it_says_waiting_does_not_help():
    assert (
        "4.0x the steps would settle it, more than its window of 5000 steps holds"
        in _check(_stability(0.04, 0.12, cap=5000), "stability").reason
    )
    assert (
        "(0.100), on the limit, no number of steps settles it"
        in _check(_stability(0.06, 0.14), "stability").reason
    )
    for ev in (_stability(0.04, 0.12, cap=5000), _stability(0.06, 0.14)):  # too few steps; centre on 0.1
        c = _check(ev, "stability")
        assert "waiting is unlikely to help" in c.reason and "about" not in c.reason
        assert Gate(POLICY).evaluate(ev, now=0.0).details["evidence_wait_s"]["stability"] is None


def test_only_a_straddling_ci_waits_and_an_old_result_gives_no_time():
    assert (
        "stability" not in Gate(POLICY).evaluate(_stability(0.01, 0.05), now=0.0).details["evidence_wait_s"]
    )
    old = Evidence(stability={POLICY.stability_split: {"ci_low": 0.04, "ci_high": 0.12, "effect": 0.08}})
    c = _check(old, "stability")
    assert c.reason.endswith("more data needed")  # stored before steps and span were: no time named


def test_the_bootstrap_ci_narrows_as_one_over_the_root_of_the_steps():
    """The wait's premise, on the real composition effect (``checks.composition_effect``, a cluster
    bootstrap over steps): four times the steps of the same traffic halve the CI's half-width."""
    from checks import composition_effect, shape_buckets

    def half_width(steps: int) -> float:
        rng = np.random.default_rng(7)
        n = steps * 8
        batch = rng.integers(1, 64, n)
        ctx = rng.integers(100, 4000, n)
        share = (0.02 + 1e-5 * ctx) * (1 + 0.1 * np.log1p(batch)) * rng.lognormal(0, 0.3, n)
        r = composition_effect(
            shape_buckets(np.full(n, "decode"), np.ones(n), ctx),
            share,
            {"batch_size": batch},
            own={"context": ctx},
            groups=np.arange(n) // 8,
            n_boot=200,
        )
        return (r["ci_high"] - r["ci_low"]) / 2

    ratio = half_width(250) / half_width(1000)
    assert 1.6 < ratio < 2.5, ratio
