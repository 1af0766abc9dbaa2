"""A slowly moving baseline under the standardised residuals, so detectors see sudden changes.

The latency model's bias moves with batch composition (``checks.wander``): over hundreds of steps
of a bursty trace, the residual mean of a perfectly healthy engine wanders by a standard deviation
or more, and far more than a short calibration window shows. What the residual detectors are for
is different: a driver update, a throttled GPU, a co-located job or a new kernel makes *every*
step slower from one step on. So each class's standardised residual is taken relative to an
exponentially weighted baseline of its own past (time constant ``steps``), ``y_t = z_t - b_{t-1}``,
``b_t = b_{t-1} + (z_t - b_{t-1}) / steps``: a step change passes through almost whole for the
tens of steps Page-Hinkley needs, while wander slower than ``steps`` is absorbed. Slow changes
are the accuracy check's business (per-class error against the policy's bound), not the
detectors'. Calibration runs its resampled streams through the same filter, so thresholds and
false-alarm rates are those of what the detectors are fed.

>>> import numpy as np
>>> z = np.r_[np.zeros(5), np.full(5, 4.0)]
>>> y, b = detrend(z, steps=10)
>>> [round(float(v), 2) for v in y[4:8]], round(float(b), 3)
([0.0, 4.0, 3.6, 3.24], 1.638)
>>> d = Detrend(steps=10)
>>> [round(d.update(float(v)), 2) for v in z][4:8]
[0.0, 4.0, 3.6, 3.24]
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter


def detrend(z: np.ndarray, steps: float, baseline: float = 0.0) -> tuple[np.ndarray, float]:
    """``z`` minus its lagged EWMA baseline (time constant ``steps``); also the final baseline.

    Works along the last axis, so a 2-D array is a batch of independent runs (each starting
    from ``baseline``; then the returned baseline is that of the last row).
    """
    z = np.asarray(z, dtype=float)
    if steps <= 0:
        return z.copy(), baseline
    a = 1.0 / float(steps)
    # b_t = (1 - a) b_{t-1} + a z_t, started from ``baseline``.
    zi = np.full(z.shape[:-1] + (1,), (1.0 - a) * baseline)
    b, _ = lfilter([a], [1.0, -(1.0 - a)], z, axis=-1, zi=zi)
    prev = np.concatenate([np.full(z.shape[:-1] + (1,), baseline), b[..., :-1]], axis=-1)
    last = float(b.reshape(-1, z.shape[-1])[-1, -1]) if z.size else baseline
    return z - prev, last


class Detrend:
    """The same filter, one value at a time (state: the baseline)."""

    def __init__(self, steps: float, baseline: float = 0.0) -> None:
        self.steps = float(steps)
        self.baseline = float(baseline)

    def update(self, z: float) -> float:
        if self.steps <= 0:
            return z
        y = z - self.baseline
        self.baseline += y / self.steps
        return y

    def update_many(self, z: np.ndarray) -> np.ndarray:
        y, self.baseline = detrend(z, self.steps, self.baseline)
        return y
