"""Contract tests for what keeps the residual detectors quiet on a healthy engine whose model bias
moves with batch composition: the wander allowance, the composition domain, the slow baseline.

The scenario test at the bottom is the regression for issue 4's long-run false alarms: residuals
whose mean wanders by ~1 % of latency every few hundred steps (as LLMVisor's does on bursty traffic)
fire Page-Hinkley calibrated the old way (allowance half of 2 %, running mean since reset) and stay
quiet calibrated the new way, which still catches an 8 % slowdown within tens of steps.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import checks
from checks import DriftCalibration, DriftMonitor


# -- checks.wander ---------------------------------------------------------------------------------
def test_block_spread_grows_with_wander_and_its_bound_with_fewer_blocks():
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.02, 4000)
    slow = np.repeat(rng.normal(0, 0.008, 40), 100)
    flat, wand = checks.block_spread(noise), checks.block_spread(noise + slow)
    assert flat.sd < 0.004 < wand.sd
    few = checks.block_spread((noise + slow)[:400])  # 4 blocks: a looser bound
    assert few.n_blocks == 4 and few.upper / few.sd > wand.upper / wand.sd


def test_block_spread_shortens_blocks_for_short_series_and_refuses_tiny_ones():
    s = checks.block_spread(np.random.default_rng(0).normal(size=150), block=100)
    assert s.block == 50 and s.n_blocks == 3
    with pytest.raises(ValueError, match="too few"):
        checks.block_spread(np.ones(15))


def test_allowance_has_a_floor_of_half_min_shift():
    tight = checks.BlockSpread(block=100, n_blocks=20, sd=0.001, upper=0.0013, level=0.9)
    loose = dataclasses.replace(tight, sd=0.006, upper=0.008)
    assert checks.allowance(tight, min_shift=0.02) == 0.01
    assert checks.allowance(loose, min_shift=0.02, k=2.5) == pytest.approx(0.02)


# -- checks.domain and DriftCalibration.in_domain ---------------------------------------------------
def test_feature_domain_widens_quantiles_by_the_margin():
    d = checks.feature_domain({"batch_size": np.arange(1, 101)}, quantiles=(0.0, 1.0), margin=1.0)
    assert d["batch_size"] == (0.5, 200.0)
    with pytest.raises(ValueError, match="batch_size"):
        checks.feature_domain({"batch_size": np.array([np.nan])})


def test_monitor_skips_and_counts_steps_outside_the_domain():
    cal = DriftCalibration(
        step_class="decode",
        mean=0.0,
        std=0.02,
        ph_threshold=8.0,
        adwin_delta=1e-6,
        domain={"batch_size": (10, 100)},
    )
    mon = DriftMonitor({"decode": cal})
    n = 600
    r = np.r_[np.zeros(300), np.full(300, 0.2)]  # a 20 % jump ...
    size = np.r_[np.full(300, 50.0), np.full(300, 500.0)]  # ... only on batches never calibrated
    events = mon.update_many(np.arange(n), ["decode"] * n, r, np.zeros(n), {"batch_size": size})
    assert events == [] and mon.counts()["decode"]["out_of_domain"] == 300
    assert mon.counts()["decode"]["steps"] == 300
    # Without features (an old caller) every step is judged, and the jump is caught.
    mon2 = DriftMonitor({"decode": cal})
    assert mon2.update_many(np.arange(n), ["decode"] * n, r, np.zeros(n))


def test_calibration_round_trips_domain_allowance_and_baseline():
    cal = DriftCalibration(
        step_class="mixed",
        mean=0.001,
        std=0.02,
        ph_threshold=12.0,
        adwin_delta=0.01,
        allowance=0.013,
        detrend_steps=200,
        domain={"batch_size": (5.0, 300.0), "kv_tokens": (1e4, 9e5)},
    )
    back = DriftCalibration.from_dict(cal.to_dict())
    assert back == cal and back.domain["kv_tokens"] == (1e4, 9e5)
    old = {k: v for k, v in cal.to_dict().items() if k not in ("allowance", "detrend_steps", "domain")}
    legacy = DriftCalibration.from_dict(old)  # stored before these fields existed
    assert legacy.allowance == 0.0 and legacy.detrend_steps == 0 and legacy.domain == {}


# -- checks.detrend --------------------------------------------------------------------------------
def test_streaming_and_vectorised_baselines_agree_across_batches():
    z = np.random.default_rng(3).normal(size=1000) + np.linspace(0, 2, 1000)
    one = checks.Detrend(200)
    streamed = np.array([one.update(float(x)) for x in z])
    many = checks.Detrend(200)
    batched = np.concatenate([many.update_many(z[i : i + 137]) for i in range(0, 1000, 137)])
    assert np.allclose(streamed, batched) and one.baseline == pytest.approx(many.baseline)
    assert checks.Detrend(0).update(1.5) == 1.5


def test_rows_of_a_2d_array_are_independent_runs():
    z = np.vstack([np.ones(50), np.zeros(50)])
    y, _ = checks.detrend(z, 10)
    assert np.allclose(y[1], 0) and y[0, 0] == 1.0 and y[0, -1] < 0.01


def test_a_step_change_passes_a_slow_drift_is_absorbed():
    step = np.r_[np.zeros(500), np.full(100, 3.0)]
    ramp = np.linspace(0, 3.0, 600)
    ys, _ = checks.detrend(step, 200)
    yr, _ = checks.detrend(ramp, 200)
    assert ys[500:540].mean() > 2.7  # first 40 steps after the change: ~whole
    assert abs(yr[-100:].mean()) < 1.1  # a 3σ change spread over 600 steps: ~1σ


# -- calibrate_class with a second noise model -----------------------------------------------------
def test_the_more_conservative_noise_model_sets_the_threshold():
    rng = np.random.default_rng(5)
    held = rng.normal(0, 0.02, 600)
    persistent = checks.synthetic_residuals(2000, 0.02, seed=6, ar=0.6)
    kw = dict(target_rate=1e-4, n_steps=60_000, adwin_n_steps=60_000, seed=1)
    only = checks.calibrate_class(held, "decode", **kw)
    both = checks.calibrate_class(held, "decode", noise=persistent, **kw)
    assert both.ph_threshold > only.ph_threshold
    assert both.estimates["page_hinkley"]["source"] == "noise"
    assert both.std == only.std  # scale still from the held-out residuals


# -- the scenario: wander, old calibration vs new ------------------------------------------------------
def _wandering(n: int, seed: int) -> np.ndarray:
    """2 % noise plus a bias that moves by ~1 % of latency every ~300 steps, smoothly."""
    rng = np.random.default_rng(seed)
    knots = rng.normal(0, 0.009, n // 300 + 2)
    bias = np.interp(np.arange(n), np.arange(len(knots)) * 300, knots)
    return bias + rng.normal(0, 0.02, n)


def _page_hinkley_alarms(cal: DriftCalibration, r: np.ndarray) -> list[int]:
    mon = DriftMonitor({"mixed": dataclasses.replace(cal, detector_names=("page_hinkley",))})
    return [e.step_seq for e in mon.update_many(np.arange(len(r)), ["mixed"] * len(r), r, np.zeros(len(r)))]


def test_wandering_bias_fires_the_old_calibration_not_the_new_one_and_8pct_is_still_caught():
    window, later = _wandering(2000, 10), _wandering(30_000, 11)
    held = window[1400:]
    kw = dict(
        target_rate=1e-4, n_steps=100_000, adwin_n_steps=20_000, seed=0, detector_names=("page_hinkley",)
    )
    old = checks.calibrate_class(held, "mixed", ph_delta=0.02 / (2 * held.std()), **kw)
    spread = checks.block_spread(window, block=100)
    new = checks.calibrate_class(
        held, "mixed", allowance=checks.allowance(spread, 0.02, 2.5), detrend_steps=200, noise=window, **kw
    )
    assert len(_page_hinkley_alarms(old, later)) >= 3
    assert _page_hinkley_alarms(new, later) == []
    slowed = later[:3000].copy()
    slowed[2000:] = (1 + slowed[2000:]) * 1.08 - 1
    first = [s for s in _page_hinkley_alarms(new, slowed) if s >= 2000]
    assert first and first[0] - 2000 < 60


def test_recent_judged_fraction_follows_traffic_in_and_out_of_the_domain():
    cal = DriftCalibration(
        step_class="decode",
        mean=0.0,
        std=0.02,
        ph_threshold=50.0,
        adwin_delta=1e-9,
        domain={"batch_size": (10, 100)},
    )
    mon = DriftMonitor({"decode": cal}, recent_steps=200)
    n = 1000

    def feed(size: float) -> float:
        mon.update_many(
            np.arange(n), ["decode"] * n, np.zeros(n), np.zeros(n), {"batch_size": np.full(n, size)}
        )
        return mon.judged_fraction()["decode"]

    assert feed(50) == pytest.approx(1.0)
    assert feed(500) < 0.01  # a load the calibration never saw
    assert feed(50) > 0.99  # and back
    assert mon.state()["classes"]["decode"]["recent_judged_fraction"] > 0.99


def test_gate_drift_check_names_the_blind_classes():
    from checks.evidence import Evidence
    from checks.rules import drift

    ev = Evidence(drift_blind={"decode": "93% of its recent steps are outside ..."})
    (res,) = drift(ev, checks.GatePolicy(), 0.0)
    assert res.status == "inconclusive" and res.missing and "decode: 93%" in res.reason
    (ok,) = drift(Evidence(unresolved_drift_events=0), checks.GatePolicy(), 0.0)
    assert ok.status == "pass"
