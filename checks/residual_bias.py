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

Design r44 adds, after the smooth bias, one offset per CUDA graph the steps ran at
(``checks.alarm_confirmation.graph_size``: a batch of up to 8 its own graph): the engine pads a
batch to its graph, so its cost is a step function of the batch that no smooth function follows,
and a mix moving across graph edges makes the residual persistent.  An offset is the mean of
what the smooth bias left among the window's steps at that graph, shrunk toward none by
``n / (n + GRAPH_MIN_STEPS)``; a graph the window held fewer than ``GRAPH_MIN_STEPS`` times
gets none (withdrawn r25 took one offset per batch size, and paged on sizes barely held).

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

from checks.alarm_confirmation import graph_size

MIN_STEPS = 50  # fewer steps than this: no effect fitted (the detectors see the residual as is)
GRAPH_MIN_STEPS = 30  # design r44: a graph's offset needs this many steps (withdrawn r25's count)

Bias = dict[str, tuple[float, float]]  # feature -> (slope per unit of log1p, centre of log1p)
GraphOffsets = dict[int, float]  # design r44: CUDA graph (``graph_size``) -> offset of the residual


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


def fit_graph_offsets(residuals: np.ndarray, batch_size: np.ndarray) -> GraphOffsets:
    """Design r44: per CUDA graph held at least ``GRAPH_MIN_STEPS`` times, the mean of
    ``residuals`` (less their overall mean) there, shrunk by ``n / (n + GRAPH_MIN_STEPS)``.

    >>> size = np.array([1] * 40 + [9] * 40 + [12] * 40 + [30] * 5)
    >>> resid = np.where(size > 8, 0.02, -0.02) * (size < 30)
    >>> {k: round(v, 4) for k, v in fit_graph_offsets(resid, size).items()}
    {1: -0.0151, 9: 0.0099}
    """
    r = np.asarray(residuals, dtype=float)
    ok = np.isfinite(r)
    if ok.sum() < MIN_STEPS:
        return {}
    graphs = graph_size(np.asarray(batch_size)[ok])
    left = r[ok] - r[ok].mean()
    out = {}
    for g in np.unique(graphs):
        mine = graphs == g
        n = int(mine.sum())
        if n >= GRAPH_MIN_STEPS:
            out[int(g)] = float(left[mine].mean() * n / (n + GRAPH_MIN_STEPS))
    return out


def remove_graph_offsets(residuals: np.ndarray, batch_size: np.ndarray, offsets: GraphOffsets) -> np.ndarray:
    """``residuals`` less their graph's offset (none for a graph without one)."""
    r = np.asarray(residuals, dtype=float)
    if not offsets:
        return r
    graphs = graph_size(np.asarray(batch_size))
    return r - np.array([offsets.get(int(g), 0.0) for g in graphs.tolist()], dtype=float).reshape(r.shape)
