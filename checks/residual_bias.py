"""The part of a step class's residual that batch composition explains (its bias there). Pure.

A model fitted on one window carries a small bias that depends on where in it a step lies: its
batch size, the KV tokens it reads, the tokens it computes.  Under load that swings between
regimes that bias moves with the load, slowly, and the drift detectors, calibrated to hold their
false-alarm rate on the window's own residual, see that slow wander as persistence and get very
high thresholds: too dull to raise the smallest slowdown the gate must catch
(``checks.FAULT_SHIFT``) in time (design r19's check).  Design r24 fits
the bias, per class, as a linear function of the log features over the calibration window, and
the detectors watch the residual less that function: a whole-step slowdown moves every step's
residual by the same amount wherever it lies, so it stays in what they see.  The function is
fixed at calibration; it is centred on the window's feature means, so the residual's level there
is unchanged.  Steps outside the calibrated domain are never fed (``DriftCalibration.in_domain``),
so it is not extrapolated far.

>>> rng = np.random.default_rng(0)
>>> size = rng.integers(1, 64, 2000).astype(float)
>>> resid = 0.01 * np.log1p(size) + rng.normal(0, 0.002, 2000)
>>> bias = fit_bias(resid, {"batch_size": size})
>>> round(bias["batch_size"][0], 3)
0.01
>>> left = remove_bias(resid, {"batch_size": size}, bias)
>>> bool(left.std() < resid.std() / 3), round(float(left.mean() - resid.mean()), 6)
(True, 0.0)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

MIN_STEPS = 50  # fewer steps than this: no effect fitted (the detectors see the residual as is)

Bias = dict[str, tuple[float, float]]  # feature -> (slope per unit of log1p, centre of log1p)


def _logs(features: Mapping[str, np.ndarray], names: list[str]) -> np.ndarray:
    return np.column_stack([np.log1p(np.maximum(np.asarray(features[n], dtype=float), 0.0)) for n in names])


def fit_bias(residuals: np.ndarray, features: Mapping[str, np.ndarray]) -> Bias:
    """Least-squares slopes of ``residuals`` on the centred ``log1p`` of each feature; empty when
    fewer than ``MIN_STEPS`` finite residuals or no feature varies."""
    r = np.asarray(residuals, dtype=float)
    ok = np.isfinite(r)
    if ok.sum() < MIN_STEPS:
        return {}
    names = sorted(n for n in features if np.ptp(np.asarray(features[n], dtype=float)[ok]) > 0)
    if not names:
        return {}
    x = _logs(features, names)[ok]
    centre = x.mean(axis=0)
    slope, *_ = np.linalg.lstsq(x - centre, r[ok] - r[ok].mean(), rcond=None)
    return {n: (float(s), float(c)) for n, s, c in zip(names, slope, centre) if np.isfinite(s)}


def remove_bias(residuals: np.ndarray, features: Mapping[str, np.ndarray], bias: Bias) -> np.ndarray:
    """``residuals`` less the fitted bias (unchanged where ``bias`` is empty)."""
    r = np.asarray(residuals, dtype=float)
    if not bias:
        return r
    names = list(bias)
    x = _logs(features, names)
    slope = np.array([bias[n][0] for n in names])
    centre = np.array([bias[n][1] for n in names])
    return r - (x - centre) @ slope
