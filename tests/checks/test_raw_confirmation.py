"""Design r26: with the composition bias taken out, an alarm also needs the raw residual to move.

The bias is fitted on the calibration window; carried to batch compositions the window barely
held (a load ramp), it can be wrong, and the residual less it then shifts on a healthy engine
while the residual as measured does not.  A slowdown of the engine moves both alike.  So a
detection on the unbiased stream is confirmed only if the raw stream's mean moved too, by its
own allowance (``AlarmConfirmation``'s raw stream, ``DriftCalibration.raw_allowance``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import checks
from checks.alarm_confirmation import AlarmConfirmation
from tests.helpers import page_hinkley_decode

STD = 0.01
# A bias the window measured between batch sizes 1 and 3: 4 % lower residual per unit of
# log1p(batch size); the true residual does not follow it beyond 3.
BIAS = {"batch_size": (-0.04, float(np.log1p(1.5)))}


def _calibration(raw_allowance: float) -> checks.DriftCalibration:
    return page_hinkley_decode(
        STD, detrend_steps=100, confirm_steps=200, allowance=0.02, bias=BIAS, raw_allowance=raw_allowance
    )


def _ramp(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Batch sizes of 1-3 for the first half, then 5-8 (beyond where the bias was measured);
    the measured residual is noise around zero throughout: a healthy engine."""
    rng = np.random.default_rng(seed)
    size = np.where(np.arange(n) < n // 2, rng.integers(1, 4, n), rng.integers(5, 9, n)).astype(float)
    # The window's own bias, exactly, where it was measured; flat beyond (what it got wrong).
    inside = BIAS["batch_size"][0] * (np.log1p(np.minimum(size, 3.0)) - BIAS["batch_size"][1])
    return size, inside + rng.normal(0, STD / 2, n)


def _events(cal: checks.DriftCalibration, size: np.ndarray, resid: np.ndarray) -> list[checks.DriftEvent]:
    mon = checks.DriftMonitor({"decode": cal})
    n = len(resid)
    return mon.update_many(
        np.arange(n), np.full(n, "decode"), resid, np.arange(n, dtype=float), {"batch_size": size}
    )


def test_a_bias_carried_beyond_its_window_alarms_without_the_raw_check_and_not_with_it():
    size, resid = _ramp(3000, 1)
    assert _events(_calibration(0.0), size, resid), "r24: the wrong extrapolation should alarm"
    mon = checks.DriftMonitor({"decode": _calibration(0.02)})
    n = len(resid)
    events = mon.update_many(
        np.arange(n), np.full(n, "decode"), resid, np.arange(n, dtype=float), {"batch_size": size}
    )
    assert events == []
    state = mon.state()["classes"]["decode"]["confirmation"]
    assert state["dismissed_raw"] >= 1  # detected on the unbiased stream, dismissed on the raw one


@pytest.mark.parametrize("slowdown", [0.05, 0.08])
def test_a_slowdown_is_still_confirmed_on_both_streams(slowdown):
    size, resid = _ramp(3000, 2)
    size, resid = size[:1500], resid[:1500]  # inside the bias's range: both streams agree
    slowed = np.r_[resid[:1000], (1 + slowdown) * (1 + resid[1000:]) - 1]
    events = _events(_calibration(0.02), size, slowed)
    assert events, f"a {slowdown:.0%} slowdown must be raised"
    first = events[0]
    assert 1000 < first.step_seq <= 1000 + 300 + 200  # detection within 300, then confirmation
    # Standardised residuals are clipped at 5 sd (here 0.05), so the measured shift stops there.
    assert 0.02 <= first.details["raw_lasting_shift"] <= min(slowdown, 5 * STD) + 0.015


def test_without_a_bias_the_raw_stream_is_not_watched():
    cal = dataclasses.replace(_calibration(0.02), bias={})
    assert not cal.watches_raw and cal.confirmation().raw_allowance_z is None
    assert _calibration(0.02).confirmation().raw_allowance_z == pytest.approx(2.0)
    again = checks.DriftCalibration.from_dict(_calibration(0.02).to_dict())
    assert again.raw_allowance == 0.02 and again.watches_raw
    older = _calibration(0.02).to_dict()
    del older["raw_allowance"]  # stored before r26
    assert not checks.DriftCalibration.from_dict(older).watches_raw


def test_confirmation_rejects_a_negative_raw_allowance():
    with pytest.raises(ValueError, match="raw_allowance_z"):
        AlarmConfirmation(steps=10, allowance_z=1.0, raw_allowance_z=-1.0)


def test_priming_fills_the_raw_baseline():
    """Primed with raw residuals that sit above the unbiased ones, the raw reference of a
    detection right after install is the calibration's raw level, not zero."""
    cal = _calibration(0.02)
    mon = checks.DriftMonitor({"decode": cal})
    rng = np.random.default_rng(5)
    held = rng.normal(0, STD / 2, 500)
    mon.prime({"decode": held}, {"decode": held + 0.03})
    base = mon._raw_baselines["decode"].baseline
    assert base == pytest.approx(3.0, abs=0.5)  # standardised: 0.03 / STD
    fresh = checks.DriftMonitor({"decode": cal})
    fresh.prime({"decode": held}, {"decode": held[:10]})  # not the same steps: not used
    assert fresh._raw_baselines["decode"].baseline == 0.0
    assert fresh._baselines["decode"].baseline == pytest.approx(mon._baselines["decode"].baseline)


def test_calibration_sets_the_raw_allowance_and_dull_says_when_it_is_too_wide():
    from shadowd.attribution.synthetic_steps import synthetic_batch
    from shadowd.daemon.calibrator import CalibrationSettings, calibrate

    key = {"gpu": "H100-SXM", "model": "llama-3.1-8b"}
    batch = synthetic_batch(steps=3000, seed=21, max_seqs=32)
    settings = CalibrationSettings(min_class_steps=150, drift_sim_steps=50_000, target_false_alarm_rate=1e-3)
    cal = calibrate(batch, key, settings)
    watched = [c for c, d in cal.drift.items() if d.watches_raw]
    assert watched and all(cal.drift[c].raw_allowance >= settings.min_shift / 2 for c in watched)
    assert set(cal.holdout_raw) == set(watched)
    assert all(len(cal.holdout_raw[c]) == len(cal.holdout_residuals[c]) for c in watched)
    off = calibrate(batch, key, dataclasses.replace(settings, confirm_raw=False))
    assert not any(d.watches_raw for d in off.drift.values()) and not off.holdout_raw
    c = watched[0]
    cal.drift[c] = dataclasses.replace(cal.drift[c], raw_allowance=checks.FAULT_SHIFT * 1.5)
    cal._dull = None
    assert "would not be confirmed" in cal.dull().get(c, "")
