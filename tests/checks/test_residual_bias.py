"""Designs r24 and r25: the drift detectors watch the residual less its calibrated bias.

A model's bias that follows batch size moves the residual whenever load swings; detectors fed
the raw residual read that as a shift.  Fed the residual less the bias fitted at calibration,
they stay quiet through the same swing and still raise a whole-step slowdown, which moves every
step's residual alike.  Design r25 adds per-batch-size offsets for a bias no smooth function
follows (its sign changing from one size to the next).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import checks
from checks.residual_bias import (
    MIN_STEPS,
    SIZE_STEPS,
    fit_bias,
    fit_size_offsets,
    remove_bias,
    remove_size_offsets,
)

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


def _zigzag(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Design r25's case: the residual alternates sign with batch size (a padded or tiled kernel),
    and the load moves slowly between small and large sizes, so the mix of signs drifts."""
    rng = np.random.default_rng(seed)
    low = (np.arange(n) // 400) % 2 == 0
    size = np.where(
        low, rng.choice([3, 4, 5], n, p=[0.6, 0.2, 0.2]), rng.choice([3, 4, 5], n, p=[0.2, 0.6, 0.2])
    )
    step = np.select([size == 3, size == 4], [0.02, -0.02], 0.0)
    return size.astype(float), step + rng.normal(0, STD, n)


def test_size_offsets_take_out_what_no_smooth_function_can():
    size, resid = _zigzag(4000, 5)
    smooth = remove_bias(resid, {"batch_size": size}, fit_bias(resid, {"batch_size": size}))
    offsets = fit_size_offsets(smooth, size)
    assert set(offsets) == {"3", "4", "5"}
    left = remove_size_offsets(smooth, size, offsets)
    assert left.std() < smooth.std() * 0.7
    np.testing.assert_allclose(
        remove_size_offsets(resid + 0.05, size, offsets) - remove_size_offsets(resid, size, offsets), 0.05
    )
    rare = fit_size_offsets(
        np.r_[np.zeros(100), np.ones(SIZE_STEPS - 1)], np.r_[np.full(100, 8), np.full(SIZE_STEPS - 1, 9)]
    )
    assert set(rare) == {"8"}  # a size seen fewer than SIZE_STEPS times gets no offset
    np.testing.assert_array_equal(remove_size_offsets(resid, size, {}), resid)


def _monitor(bias: dict, size_offsets: dict | None = None) -> checks.DriftMonitor:
    cal = checks.DriftCalibration(
        "decode",
        mean=0.0,
        std=STD,
        ph_threshold=8.0,
        adwin_delta=0.0,
        ph_delta=1.0,
        detector_names=("page_hinkley",),
        bias=bias,
        size_offsets=size_offsets or {},
    )
    return checks.DriftMonitor({"decode": cal})


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


def test_detectors_with_size_offsets_stay_quiet_through_a_zigzag_and_raise_a_slowdown():
    size, resid = _zigzag(4000, 6)
    feats = {"batch_size": size}
    bias = fit_bias(resid, feats)
    offsets = fit_size_offsets(remove_bias(resid, feats, bias), size)
    size, resid = _zigzag(4000, 7)
    assert _feed(_monitor(bias), size, resid), "the smooth bias alone should leave the zigzag"
    keen = _monitor(bias, offsets)
    assert not _feed(keen, size, resid)
    later = _feed(keen, size, resid + 0.05, start=4000)
    assert later and later[0].step_seq < 4000 + 100


def test_the_bias_travels_with_the_calibration():
    cal = _monitor({"batch_size": (0.0075, 2.9)}).calibrations["decode"]
    cal = dataclasses.replace(cal, size_offsets={"3": 0.01})
    again = checks.DriftCalibration.from_dict(json.loads(json.dumps(cal.to_dict())))
    assert again.bias == {"batch_size": (0.0075, 2.9)} and again.size_offsets == {"3": 0.01}
    older = cal.to_dict()
    del older["bias"], older["size_offsets"]  # stored before r24
    assert checks.DriftCalibration.from_dict(older).bias == {}
    assert dataclasses.replace(cal, bias={}).unbiased(np.ones(3), {"batch_size": np.ones(3)}).tolist() == [
        1,
        1,
        1,
    ]


def test_calibration_fits_a_bias_per_watched_class_and_stores_it():
    from shadowd.attribution.synthetic_steps import synthetic_batch
    from shadowd.daemon.calibrator import CalibrationSettings, calibrate, calibration_from_body, model_body

    key = {"gpu": "H100-SXM", "model": "llama-3.1-8b"}
    batch = synthetic_batch(steps=3000, seed=21, max_seqs=32)
    settings = CalibrationSettings(min_class_steps=150, drift_sim_steps=50_000, target_false_alarm_rate=1e-3)
    cal = calibrate(batch, key, settings)
    assert cal.drift and all(d.bias for d in cal.drift.values())
    again = calibration_from_body(model_body(cal))
    assert {c: d.bias for c, d in again.drift.items()} == {c: d.bias for c, d in cal.drift.items()}
    assert {c: d.size_offsets for c, d in again.drift.items()} == {
        c: d.size_offsets for c, d in cal.drift.items()
    }
    smooth = calibrate(batch, key, dataclasses.replace(settings, size_offsets=False))
    assert smooth.drift and not any(d.size_offsets for d in smooth.drift.values())
    plain = calibrate(batch, key, dataclasses.replace(settings, unbias=False))
    assert plain.drift and not any(d.biased for d in plain.drift.values())
    assert plain.model.version == cal.model.version  # the model is the same; only what drift watches
