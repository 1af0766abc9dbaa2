"""Design r24: the drift detectors watch the residual less its calibrated composition bias.

A model's bias that follows batch size moves the residual whenever load swings; detectors fed
the raw residual read that as a shift.  Fed the residual less the bias fitted at calibration,
they stay quiet through the same swing and still raise a whole-step slowdown, which moves every
step's residual alike.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import checks
from checks.residual_bias import MIN_STEPS, fit_bias, remove_bias
from tests.helpers import calibrate_synthetic, page_hinkley_decode

STD = 0.01


def _swinging_load(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Batch sizes that swing between light (2-8) and heavy (100-200) every 400 steps, and a
    residual whose bias grows with log batch size (3 % from one end to the other), plus noise."""
    rng = np.random.default_rng(seed)
    heavy = (np.arange(n) // 400) % 2 == 1
    size = np.where(heavy, rng.integers(100, 200, n), rng.integers(2, 8, n)).astype(float)
    resid = 0.0075 * (np.log1p(size) - 2.9) + rng.normal(0, STD, n)
    return size, resid


def test_a_slowdown_moves_the_unbiased_residual_by_itself():
    size, resid = _swinging_load(4000, 1)
    bias = fit_bias(resid, {"batch_size": size})
    assert bias["batch_size"][0] == pytest.approx(0.0075, rel=0.05)
    base = remove_bias(resid, {"batch_size": size}, bias)
    slower = remove_bias(resid + 0.05, {"batch_size": size}, bias)
    np.testing.assert_allclose(slower - base, 0.05)
    assert abs(base.mean() - resid.mean()) < 1e-12  # the level where calibration saw it is kept
    assert base.std() < resid.std() * 0.7


def test_too_few_steps_or_no_spread_fit_no_bias():
    size, resid = _swinging_load(MIN_STEPS - 1, 2)
    assert fit_bias(resid, {"batch_size": size}) == {}
    assert fit_bias(np.zeros(500), {"batch_size": np.full(500, 8.0)}) == {}
    np.testing.assert_array_equal(remove_bias(resid, {"batch_size": size}, {}), resid)


def _monitor(bias: dict) -> checks.DriftMonitor:
    return checks.DriftMonitor({"decode": page_hinkley_decode(STD, bias=bias)})


def _feed(monitor: checks.DriftMonitor, size: np.ndarray, resid: np.ndarray, start: int = 0) -> list:
    n = len(resid)
    return monitor.update_many(
        np.arange(start, start + n), np.full(n, "decode"), resid, np.arange(n, dtype=float),
        {"batch_size": size},
    )  # fmt: skip


def test_unbiased_detectors_stay_quiet_through_a_swing_and_raise_a_slowdown():
    size, resid = _swinging_load(4000, 3)
    bias = fit_bias(resid, {"batch_size": size})  # calibration's window
    size, resid = _swinging_load(4000, 4)  # live traffic, the same swing
    assert _feed(_monitor({}), size, resid), "the raw residual's swing should trip the detector"
    unbiased = _monitor(bias)
    assert not _feed(unbiased, size, resid)
    later = _feed(unbiased, size, resid + 0.05, start=4000)
    assert later and later[0].step_seq < 4000 + 100


def test_the_bias_travels_with_the_calibration():
    cal = _monitor({"batch_size": (0.0075, 2.9)}).calibrations["decode"]
    again = checks.DriftCalibration.from_dict(cal.to_dict())
    assert again.bias == {"batch_size": (0.0075, 2.9)}
    older = cal.to_dict()
    del older["bias"]  # stored before r24
    assert checks.DriftCalibration.from_dict(older).bias == {}
    assert dataclasses.replace(cal, bias={}).unbiased(np.ones(3), {"batch_size": np.ones(3)}).tolist() == [
        1,
        1,
        1,
    ]


def test_calibration_fits_a_bias_per_watched_class_and_stores_it():
    from shadowd.daemon.calibrator import calibration_from_body, model_body

    cal = calibrate_synthetic()
    assert cal.drift and all(d.bias for d in cal.drift.values())
    again = calibration_from_body(model_body(cal))
    assert {c: d.bias for c, d in again.drift.items()} == {c: d.bias for c, d in cal.drift.items()}
    plain = calibrate_synthetic(unbias=False)
    assert plain.drift and not any(d.bias for d in plain.drift.values())
    assert plain.model.version == cal.model.version  # the model is the same; only what drift watches
