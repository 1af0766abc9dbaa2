"""Weighted non-negative least squares, shared by both latency models.

Step-latency features span ten orders of magnitude (``1`` next to ``Σp·c`` ~ 1e8), so columns are
scaled to unit norm before ``scipy.optimize.nnls`` and the solution scaled back; an all-zero column
(a feature the window never exercised, e.g. draft tokens without speculative decoding) gets ``0``.

>>> import numpy as np
>>> a = np.array([[1.0, 0.0, 1.0], [1.0, 0.0, 2.0], [1.0, 0.0, 3.0]])
>>> coef, sse = weighted_nnls(a, np.array([3.0, 5.0, 7.0]), np.ones(3))
>>> coef.round(6).tolist(), round(sse, 9)
([1.0, 0.0, 2.0], 0.0)
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls


def weighted_nnls(a: np.ndarray, y: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, float]:
    """Minimise ``Σ (w·(a·x − y))²`` subject to ``x ≥ 0``; returns (x, weighted SSE)."""
    aw = a * weight[:, None]
    norm = np.linalg.norm(aw, axis=0)
    live = norm > 0
    coef = np.zeros(a.shape[1])
    if not live.any() or a.shape[0] == 0:
        return coef, float(np.sum((y * weight) ** 2))
    sol, resid = nnls(aw[:, live] / norm[live], y * weight, maxiter=50 * a.shape[1])
    coef[live] = sol / norm[live]
    return coef, float(resid) ** 2
