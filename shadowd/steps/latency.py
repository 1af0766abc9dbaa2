"""Measured step latency from the tap's raw monotonic timestamps.

With async scheduling (a batch queue of two) step N+1 is scheduled while step
N runs, so the time between scheduling and output arrival overstates N's GPU
time.  Step N cannot start before step N-1's output was consumed nor before N
itself was scheduled, hence::

    latency(N) = t_done(N) - max(t_done(N-1), t_sched_end(N))

which for sync scheduling reduces to ``t_done(N) - t_sched_end(N)``.  The raw
stamps are stored beside the estimate so it can be revised later (e.g. with
CUDA events on a GPU host).  Monotonic clocks only: a wall-clock jump cannot
produce a negative or absurd latency; anything non-positive is stored as NULL.

>>> import numpy as np
>>> step_latency_ms(np.array([100_000_000]), np.array([90_000_000]), np.array([95_000_000]))
array([5.])
"""

from __future__ import annotations

import numpy as np


def step_latency_ms(t_done: np.ndarray, t_prev_done: np.ndarray, t_sched_end: np.ndarray) -> np.ndarray:
    """Vectorised estimator; NaN where the stamps are inconsistent (never negative)."""
    start = np.maximum(t_prev_done, t_sched_end)
    lat = (t_done - start).astype(np.float64) / 1e6
    lat[lat <= 0] = np.nan
    return lat
