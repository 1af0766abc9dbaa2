"""The contract every residual detector in checks.DETECTORS keeps (river-style shared test)."""

from __future__ import annotations

import numpy as np
import pytest

from checks import DETECTORS, ResidualDetector
from checks.adwin import AdwinDetector
from checks.page_hinkley import PageHinkleyDetector


def build(cls, cal):
    """A detector of class ``cls`` at the calibrated thresholds."""
    by_name = {d.name: d for d in cal.detectors()}
    det = by_name[cls.name]
    assert isinstance(det, cls)
    return det


def hits(det, z):
    return [i for i, x in enumerate(np.asarray(z, dtype=float).tolist()) if det.update(x)]


@pytest.fixture(params=DETECTORS, ids=lambda c: c.name)
def detector_cls(request):
    return request.param


def test_every_detector_is_listed_and_follows_the_protocol(detector_cls, unit_calibration):
    assert set(DETECTORS) == {PageHinkleyDetector, AdwinDetector}
    det = build(detector_cls, unit_calibration)
    assert isinstance(det, ResidualDetector)
    assert det.n_seen == 0 and det.n_detections == 0 and det.last_detection is None
    assert det.update(0.1) is False


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_detection_on_stationary_unit_noise(detector_cls, unit_calibration, seed):
    det = build(detector_cls, unit_calibration)
    z = np.random.default_rng(seed).standard_normal(5000)
    assert hits(det, z) == []
    assert det.n_seen == 5000


@pytest.mark.parametrize("shift", [1.0, -1.0])
def test_detects_a_one_sigma_mean_shift_in_either_direction(detector_cls, unit_calibration, shift):
    det = build(detector_cls, unit_calibration)
    rng = np.random.default_rng(5)
    z = np.r_[rng.standard_normal(3000), rng.standard_normal(1000) + shift]
    found = hits(det, z)
    assert found, "shift not detected"
    assert 3000 <= found[0] < 3300
    info = det.last_detection
    assert {"statistic", "threshold", "direction"} <= set(info)
    assert info["direction"] == ("up" if shift > 0 else "down")


def test_reset_returns_to_the_fresh_state(detector_cls, unit_calibration):
    rng = np.random.default_rng(9)
    z = np.r_[rng.standard_normal(2000), rng.standard_normal(500) + 2.0]
    det = build(detector_cls, unit_calibration)
    first = hits(det, z)
    assert first and det.n_detections == len(first)
    det.reset()
    assert det.n_seen == 0 and det.n_detections == 0 and det.last_detection is None
    assert hits(det, z) == first == hits(build(detector_cls, unit_calibration), z)


def test_counts_survive_the_automatic_reset_after_a_detection(detector_cls, unit_calibration):
    rng = np.random.default_rng(3)
    z = np.r_[rng.standard_normal(2000), rng.standard_normal(2000) + 2.0, rng.standard_normal(2000) - 1.0]
    det = build(detector_cls, unit_calibration)
    found = hits(det, z)
    assert det.n_detections == len(found) >= 2
    assert det.n_seen == len(z)
    assert any(2000 <= i < 2300 for i in found) and any(4000 <= i < 4400 for i in found)
