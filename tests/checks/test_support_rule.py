"""Design r45: a detection whose shift lasts mostly on steps beyond the compositions the
calibration window held is unsupported, not an alarm.

The detectors judge steps up to the domain's margin beyond what calibration saw.  There the
piecewise-linear model extrapolates, and its error grows with the distance: a load burst that
holds the batch beyond the window's range for a few hundred steps moves the residual as
lastingly as a slower engine does.  Drift and that error cannot be told apart there, so the
gate is told to recalibrate (INCONCLUSIVE), not paged.  A slower engine on the compositions the
window held is still an alarm.
"""

from __future__ import annotations

import numpy as np

import checks
from checks.drift_calibration import DriftCalibration
from checks.residual_drift import DriftMonitor
from tests.helpers import calibrate_synthetic

STD = 0.02


def _calibration(support: bool) -> DriftCalibration:
    """A decode class calibrated on batches of 8-24 (domain up to 36 with the 0.5 margin)."""
    return DriftCalibration(
        step_class="decode",
        mean=0.0,
        std=STD,
        ph_threshold=15.0,
        adwin_delta=0.0,
        ph_delta=0.5,
        allowance=0.02,
        detrend_steps=100,
        confirm_steps=200,
        detector_names=("page_hinkley",),
        domain={"batch_size": (8 / 1.5, 24 * 1.5)},
        support={"batch_size": (8.0, 24.0)} if support else {},
    )


def _run(cal: DriftCalibration, size: np.ndarray, resid: np.ndarray) -> tuple[list, DriftMonitor]:
    mon = DriftMonitor({"decode": cal})
    n = len(size)
    events = mon.update_many(
        np.arange(n), ["decode"] * n, resid, np.arange(n) * 0.02, features={"batch_size": size}
    )
    return [e for e in events if e.detector == "page_hinkley"], mon


def _burst(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """3,000 steps inside the window's range, then 1,500 at batches of 28-36 where the model's
    error grows by 0.6 % per request beyond 24 (extrapolation, not drift), then back."""
    rng = np.random.default_rng(seed)
    size = np.r_[rng.integers(8, 25, 3000), rng.integers(28, 37, 1500), rng.integers(8, 25, 1500)]
    resid = rng.normal(0.0, STD, len(size)) + 0.006 * np.clip(size - 24, 0, None)
    return size.astype(float), resid


def test_a_burst_beyond_the_window_is_unsupported_not_an_alarm():
    size, resid = _burst(3)
    in_burst = lambda events: [e for e in events if 3000 <= e.details["detected_step_seq"] < 4500]  # noqa: E731
    before, _ = _run(_calibration(support=False), size, resid)
    assert in_burst(before), "without r45 the burst's extrapolation error is confirmed as drift"
    events, mon = _run(_calibration(support=True), size, resid)
    assert in_burst(events) == []
    assert mon.state()["classes"]["decode"]["confirmation"]["unsupported_beyond"] >= 1
    assert all(e.details["beyond_support"] <= 0.5 for e in events)


def test_r45_judges_the_fall_after_a_burst_as_before():
    """r45 reads only the confirmation window's steps: as the burst ends, the residual falls back
    below the baseline the burst pulled up, on steps inside the window's range, and that fall is
    judged as without r45 (a known limit: ``DESIGN`` in benchmarks/gate_designs.py)."""
    size, resid = _burst(3)
    after = lambda events: [  # noqa: E731
        (e.details["detected_step_seq"], e.details["direction"])
        for e in events
        if e.details["detected_step_seq"] >= 4500
    ]
    fall = after(_run(_calibration(support=True), size, resid)[0])
    assert fall and fall[0][1] == "down"
    assert fall == after(_run(_calibration(support=False), size, resid)[0])


def test_a_slower_engine_inside_the_window_is_still_an_alarm():
    rng = np.random.default_rng(4)
    size = rng.integers(8, 25, 6000).astype(float)
    resid = rng.normal(0.0, STD, 6000)
    resid[4000:] = 1.06 * (1 + resid[4000:]) - 1  # 6 % slower from step 4000
    events, mon = _run(_calibration(support=True), size, resid)
    assert events and 4000 <= events[0].details["detected_step_seq"] < 4500
    assert events[0].details["beyond_support"] < 0.5
    assert mon.unsupported() == {}


def test_a_slower_engine_whose_batches_grow_past_the_window_is_unsupported():
    """The price of r45: where a slowdown grows the batch beyond the window's range for most of
    the confirmation, it is unsupported too (INCONCLUSIVE, recalibrate), not an alarm."""
    rng = np.random.default_rng(5)
    size = np.r_[rng.integers(8, 25, 4000), rng.integers(26, 36, 2000)].astype(float)
    resid = rng.normal(0.0, STD, 6000)
    resid[4000:] = 1.08 * (1 + resid[4000:]) - 1
    events, mon = _run(_calibration(support=True), size, resid)
    assert events == [] and mon.unsupported()["decode"]["beyond"] > 0.5


def test_support_round_trips_and_old_bodies_read_back_without_it():
    cal = _calibration(support=True)
    back = DriftCalibration.from_dict(cal.to_dict())
    assert back == cal and back.support == {"batch_size": (8.0, 24.0)}
    old = cal.to_dict()
    del old["support"]
    assert DriftCalibration.from_dict(old).support == {}
    assert DriftCalibration.from_dict(old).confirmation().support is False


def test_the_daemon_stores_the_window_range_only_when_asked():
    # r45's range is the whole window's (design r48, withdrawn, took the fit part's:
    # tests/daemon/test_support_from_fit.py; design r49 takes it only where the held-out part
    # validated the model beyond the fitted steps: tests/daemon/test_validated_support.py).
    on = calibrate_synthetic(support_unsupported=True, support_from_fit=False, validated_support=False)
    r49 = calibrate_synthetic(support_unsupported=True)
    off = calibrate_synthetic(support_unsupported=False)
    for cls, cal in on.drift.items():
        assert set(cal.support) == set(checks.SUPPORT_FEATURES) < set(cal.domain)  # no KV tokens
        for name, (lo, hi) in cal.support.items():
            d_lo, d_hi = cal.domain[name]
            # the domain is the same quantiles widened by the margin (0.5): 1.5x beyond
            assert np.isclose(d_hi, 1.5 * hi) and np.isclose(d_lo, lo / 1.5)
            lo49, hi49 = r49.drift[cls].support[name]  # the window's range or the fitted steps'
            assert (lo49, hi49) == (lo, hi) or d_lo < lo49 <= hi49 < d_hi
        assert off.drift[cls].support == {}
