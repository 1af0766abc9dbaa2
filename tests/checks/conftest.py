"""Shared fixtures for the checks tests: calibrations small enough for a shared 2-core box."""

from __future__ import annotations

import numpy as np
import pytest

from checks.threshold_search import calibrate_class, synthetic_residuals

NOISE_STD = 0.03  # relative step-latency noise of a decent model: 2-5 % in practice


@pytest.fixture(scope="session")
def unit_calibration():
    """Thresholds for ≤ 1 false alarm per 100k steps, from 5k steps of N(0, 0.03) residuals."""
    r = synthetic_residuals(5000, noise_std=NOISE_STD, seed=11)
    return calibrate_class(r, "decode", target_rate=1e-5, n_steps=3_000_000, adwin_n_steps=400_000, seed=11)


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(1234)
