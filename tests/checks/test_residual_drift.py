"""Calibration honesty, detection delay, and the DriftMonitor's bookkeeping."""

from __future__ import annotations

import json

import numpy as np
import pytest
from river import drift

from checks.drift_calibration import DriftCalibration
from checks.page_hinkley import PageHinkleyDetector
from checks.resample import ar_sieve_bootstrap, stationary_bootstrap
from checks.residual_drift import DriftMonitor, relative_residual
from checks.threshold_search import (
    alarm_count,
    calibrate_class,
    measure_detection_delay,
    measure_false_alarm_rate,
    page_hinkley_paths,
    synthetic_residuals,
)

NOISE_STD = 0.03  # as in conftest.unit_calibration


def test_vectorised_page_hinkley_matches_river():
    z = np.random.default_rng(5).standard_normal(3000)
    ours = page_hinkley_paths(z, delta=0.25, min_instances=100)[0]
    ph = drift.PageHinkley(min_instances=100, delta=0.25, threshold=1e9, alpha=1.0)
    ref = []
    for x in z:
        ph.update(x)
        ref.append(max(ph._sum_increase - ph._min_increase, ph._max_decrease - ph._sum_decrease))
    assert np.all(np.isneginf(ours[:99]))
    np.testing.assert_allclose(ours[99:], np.array(ref)[99:], atol=1e-9)
    h = float(np.quantile(ours[99:], 0.99))  # a threshold that fires somewhere in this run
    det = PageHinkleyDetector(threshold=h, delta=0.25)
    first_river = next(i for i, x in enumerate(z.tolist()) if det.update(x))
    assert first_river == int(np.argmax(ours > h))


def test_calibrated_rate_holds_on_fresh_stationary_data(unit_calibration):
    fresh = synthetic_residuals(400_000, noise_std=NOISE_STD, seed=99)
    out = measure_false_alarm_rate(fresh, unit_calibration)
    assert out["steps"] == 400_000
    for name in ("page_hinkley", "adwin"):
        # target 1e-5/step: expect ≤ 4 here; allow Poisson noise, not a 3x miss
        assert out[name]["alarms"] <= 10, out[name]
    json.dumps(out)


def test_serial_correlation_raises_thresholds_and_the_rate_still_holds():
    iid = synthetic_residuals(5000, NOISE_STD, seed=1)
    ar = synthetic_residuals(5000, NOISE_STD, seed=1, ar=0.5)
    kw = dict(target_rate=1e-4, n_steps=600_000, detector_names=("page_hinkley",), seed=1)
    cal_iid, cal_ar = calibrate_class(iid, "decode", **kw), calibrate_class(ar, "decode", **kw)
    assert cal_ar.ph_threshold > 1.5 * cal_iid.ph_threshold
    fresh = synthetic_residuals(200_000, NOISE_STD, seed=7, ar=0.5)
    # target 1e-4 → ~20 expected at most; i.i.d. thresholds would fire far more often
    assert measure_false_alarm_rate(fresh, cal_ar)["page_hinkley"]["alarms"] <= 35
    assert measure_false_alarm_rate(fresh, cal_iid)["page_hinkley"]["alarms"] > 100


def test_block_bootstrap_understates_rare_alarms_which_is_why_calibration_uses_the_sieve():
    z = np.random.default_rng(0).standard_normal(5000)
    det_args = dict(threshold=9.0, delta=0.5)
    block = alarm_count(
        PageHinkleyDetector(**det_args), stationary_bootstrap(z, 400_000, 64, np.random.default_rng(1))
    )
    sieve = alarm_count(
        PageHinkleyDetector(**det_args), ar_sieve_bootstrap(z, 400_000, np.random.default_rng(1))
    )
    truth = alarm_count(PageHinkleyDetector(**det_args), np.random.default_rng(2).standard_normal(400_000))
    assert block < truth / 2 and truth / 2 < sieve < truth * 2


def test_calibration_refuses_too_little_data():
    with pytest.raises(ValueError, match="need ≥ 500"):
        calibrate_class(np.zeros(100), "decode")


def test_one_uncalibratable_detector_leaves_the_other_watching():
    # 60k resampled steps cannot show ADWIN at 1e-5 even with zero alarms (95 % bound 5e-5);
    # Page-Hinkley's 400k can: the class stays watched, by Page-Hinkley alone, and says so.
    r = synthetic_residuals(3000, NOISE_STD, seed=11)
    cal = calibrate_class(r, "decode", target_rate=1e-5, n_steps=400_000, adwin_n_steps=60_000, seed=1)
    assert cal.detector_names == ("page_hinkley",) and "no ADWIN delta" in cal.unavailable["adwin"]
    assert [d.name for d in cal.detectors()] == ["page_hinkley"] and "adwin" not in cal.estimates
    assert DriftCalibration.from_dict(json.loads(json.dumps(cal.to_dict()))) == cal
    events = DriftMonitor({"decode": cal}).update_many(
        np.arange(3000), np.full(3000, "decode"), slowed(2000, 1000, 0.08, seed=4), np.arange(3000) * 0.02
    )
    assert events and {e.detector for e in events} == {"page_hinkley"}
    assert min(e.step_seq for e in events) >= 2000
    with pytest.raises(ValueError, match="no drift detector reaches"):
        calibrate_class(r, "decode", target_rate=1e-5, n_steps=60_000, adwin_n_steps=60_000)


@pytest.mark.parametrize("noise_std", [0.02, 0.05])
def test_detection_delay_of_an_8_percent_slowdown_is_bounded(noise_std):
    r = synthetic_residuals(5000, noise_std, seed=3)
    cal = calibrate_class(r, "mixed", target_rate=1e-5, n_steps=2_000_000, adwin_n_steps=300_000, seed=3)
    out = measure_detection_delay(
        cal, shifts=(0.08,), noise_std=noise_std, warmup=2000, horizon=1000, reps=6, seed=4
    )
    rows = {r["detector"]: r for r in out["rows"]}
    ph = rows["page_hinkley"]
    assert ph["missed"] == 0 and ph["max_delay"] <= 100, ph
    assert rows["adwin"]["missed"] == 0 and rows["adwin"]["max_delay"] <= 500, rows["adwin"]
    json.dumps(out)


def test_smaller_shifts_take_longer(unit_calibration):
    out = measure_detection_delay(
        unit_calibration, shifts=(0.02, 0.15), noise_std=NOISE_STD, warmup=1500, horizon=1500, reps=4, seed=8
    )
    ph = {r["shift"]: r for r in out["rows"] if r["detector"] == "page_hinkley"}
    assert ph[0.15]["median_delay"] < ph[0.02]["median_delay"] <= 1500


def slowed(n_pre, n_post, shift, seed, std=NOISE_STD):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(0, std, n_pre), (1 + shift) * (1 + rng.normal(0, std, n_post)) - 1]


def test_monitor_flags_only_the_drifting_class(unit_calibration):
    cals = {
        "decode": unit_calibration,
        "prefill": DriftCalibration.from_dict({**unit_calibration.to_dict(), "step_class": "prefill"}),
    }
    mon = DriftMonitor(cals)
    n = 3000
    dec = slowed(2000, 1000, 0.08, seed=1)
    pre = slowed(3000, 0, 0.0, seed=2)
    seq = np.arange(2 * n)
    cls = np.where(seq % 2 == 0, "decode", "prefill")
    r = np.empty(2 * n)
    r[0::2], r[1::2] = dec, pre
    events = mon.update_many(seq, cls, r, seq * 0.02)
    assert events and {e.step_class for e in events} == {"decode"}
    first = min(e.step_seq for e in events if e.detector == "page_hinkley")
    assert 4000 <= first < 4000 + 2 * 100  # within 100 decode steps of the slowdown
    assert [e.step_seq for e in events] == sorted(e.step_seq for e in events)
    counts = mon.counts()
    assert counts["decode"]["steps"] == counts["prefill"]["steps"] == n
    assert counts["prefill"]["page_hinkley"] == counts["prefill"]["adwin"] == 0
    e = events[0].to_dict()
    assert {"ts", "step_seq", "detector", "statistic", "threshold", "step_class", "details"} <= set(e)
    json.dumps(mon.state())


def test_update_and_update_many_agree(unit_calibration):
    r = slowed(1500, 500, 0.15, seed=6)
    seq = np.arange(len(r))
    one = DriftMonitor({"decode": unit_calibration})
    a = [e for i, x in enumerate(r) for e in one.update(i, "decode", float(x), i * 0.01)]
    b = DriftMonitor({"decode": unit_calibration}).update_many(seq, ["decode"] * len(r), r, seq * 0.01)
    assert [(e.step_seq, e.detector) for e in a] == [(e.step_seq, e.detector) for e in b]
    assert a


def test_uncalibrated_classes_and_non_finite_residuals_are_skipped(unit_calibration):
    mon = DriftMonitor({"decode": unit_calibration})
    assert mon.update(1, "mixed", 0.5, 0.0) == []
    assert mon.update(2, "decode", float("nan"), 0.0) == []
    mon.update_many([3, 4], ["mixed", "decode"], [0.1, np.inf], [0.0, 0.0])
    assert mon.n_skipped == 4 and mon.counts()["decode"]["steps"] == 0


def test_a_single_stalled_step_cannot_fire_a_detector(unit_calibration):
    mon = DriftMonitor({"decode": unit_calibration})
    r = slowed(3000, 0, 0.0, seed=12)
    r[2000] = 50.0  # a 50x stall: clipped to +5 sd
    assert mon.update_many(np.arange(3000), ["decode"] * 3000, r, np.zeros(3000)) == []


def test_relative_residual():
    np.testing.assert_allclose(relative_residual([11.0, 9.0, 1.0], [10.0, 10.0, 0.0]), [0.1, -0.1, np.nan])


def test_calibration_round_trips_and_rejects_unknown_keys(unit_calibration):
    d = json.loads(json.dumps(unit_calibration.to_dict()))
    assert DriftCalibration.from_dict(d) == unit_calibration
    with pytest.raises(ValueError, match="ph_treshold"):
        DriftCalibration.from_dict({**d, "ph_treshold": 3})
    with pytest.raises(ValueError, match="std must be positive"):
        DriftCalibration.from_dict({**d, "std": 0.0})


def test_a_monitor_started_on_a_slower_engine_sees_it_only_when_primed(unit_calibration):
    """Design r21: detectors installed at the moment a slowdown began (a re-fit installed by
    chance at a fault, as on held-out 19's F19-step5 under r20) take the slower engine as their
    level and never raise it.  Primed with the calibration's held-out residuals, they start at
    the calibration's level and raise it as they would mid-run."""
    cal = DriftCalibration.from_dict({**unit_calibration.to_dict(), "confirm_steps": 200})
    slow = slowed(0, 2000, 0.08, seed=5)
    seq = np.arange(len(slow))
    fresh = DriftMonitor({"decode": cal})
    assert not fresh.update_many(seq, np.full(len(slow), "decode"), slow, seq * 0.02)
    primed = DriftMonitor({"decode": cal})
    primed.prime({"decode": slowed(1500, 0, 0.0, seed=6)})
    events = primed.update_many(seq, np.full(len(slow), "decode"), slow, seq * 0.02)
    assert events and min(e.step_seq for e in events) < 400
    assert primed.counts()["decode"]["steps"] == len(slow)  # priming judged nothing
