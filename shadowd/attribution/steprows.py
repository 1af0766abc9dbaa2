"""The row layout of a step batch: per-step sums and per-row broadcasts without Python loops.

Attribution does a handful of "sum over each step's requests" and "give every request its step's
value" per call.  Because a :class:`~shadowd.steps.batch.StepBatch` keeps each step's rows
contiguous and in order, ``np.add.reduceat`` and ``np.repeat`` do both without the scattered
reads and writes of ``np.bincount(weights=...)`` and fancy indexing, which is what keeps
attribution within its budget (measured by ``benchmarks/attribution_cost.py``: docs/benchmarks.md,
"Attribution cost").

>>> import numpy as np
>>> rows = StepRows(np.array([0, 0, 2, 2, 2]), num_steps=4)   # step 1 and 3 have no rows
>>> rows.sum(np.array([1.0, 2.0, 3.0, 4.0, 5.0])).tolist(), rows.counts.tolist()
([3.0, 0.0, 12.0, 0.0], [2, 0, 3, 0])
>>> rows.spread(np.array([10.0, 20.0, 30.0, 40.0])).tolist()
[10.0, 10.0, 30.0, 30.0, 30.0]
"""

from __future__ import annotations

import numpy as np


class StepRows:
    """Where each step's rows start in a contiguous, step-ordered ``req_step`` column."""

    def __init__(self, req_step: np.ndarray, num_steps: int) -> None:
        req_step = np.asarray(req_step)
        if req_step.size and (
            np.any(req_step[1:] < req_step[:-1]) or req_step[0] < 0 or req_step[-1] >= num_steps
        ):
            raise ValueError("request rows must be grouped by step, in step order")
        self.req_step = req_step
        self.num_steps = num_steps
        self.starts = np.searchsorted(req_step, np.arange(num_steps))
        self.counts = np.diff(np.r_[self.starts, req_step.size])
        self.dense = bool(self.counts.all())
        self._present = None if self.dense else self.counts > 0

    def sum(self, values: np.ndarray) -> np.ndarray:
        """Per-step sums of a per-row column or (R, k) matrix (float64; 0 for a step without rows)."""
        values = np.asarray(values, dtype=np.float64)
        if self.dense:
            return np.add.reduceat(values, self.starts, axis=0)
        out = np.zeros((self.num_steps,) + values.shape[1:])
        if self._present.any():
            out[self._present] = np.add.reduceat(values, self.starts[self._present], axis=0)
        return out

    def spread(self, per_step: np.ndarray) -> np.ndarray:
        """Each row's value of a per-step column."""
        return np.repeat(per_step, self.counts)
