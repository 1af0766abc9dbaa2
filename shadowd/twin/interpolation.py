"""Interpolation in log space over measured kernel grids.

Kernel latency is close to a power law in each size between grid points (flat
while launch- or memory-latency-bound, then linear in the work), so the
reference engine interpolates ``log(latency)`` linearly in ``log(size)``.
Beyond the largest measured size it extrapolates with a stated power (1 for
work that grows linearly, 2 for causal attention in the sequence length), and
below the smallest it holds the first value: a kernel never gets cheaper than
its smallest measured launch.

>>> import numpy as np
>>> xp = np.array([1.0, 2.0, 4.0]); fp = np.array([1.0, 1.0, 2.0])
>>> loglog_interp(np.array([0.5, 3.0, 8.0]), xp, fp, slope=1.0).round(3).tolist()
[1.0, 1.5, 4.0]
"""

from __future__ import annotations

import numpy as np


def loglog_interp(x: np.ndarray, xp: np.ndarray, fp: np.ndarray, *, slope: float = 1.0) -> np.ndarray:
    """Piecewise power-law interpolation of ``fp(xp)`` at ``x``; power ``slope`` past ``xp[-1]``.

    ``xp`` must be increasing and positive, ``fp`` positive.
    """
    x = np.asarray(x, dtype=np.float64)
    lx, lxp, lfp = np.log(np.maximum(x, 1e-12)), np.log(xp), np.log(fp)
    out = np.interp(lx, lxp, lfp)
    beyond = lx > lxp[-1]
    if np.any(beyond):
        out = np.where(beyond, lfp[-1] + slope * (lx - lxp[-1]), out)
    return np.exp(out)


def interp_rows(
    log_query: np.ndarray, log_axis: np.ndarray, log_rows: np.ndarray, *, slope: float = 1.0
) -> np.ndarray:
    """Interpolate whole rows of a log-valued grid along its first axis.

    ``log_rows[i]`` holds log latencies at ``exp(log_axis[i])``; returns one log row per
    query, linear in log space between rows and with power ``slope`` beyond the last row.
    """
    q = np.asarray(log_query, dtype=np.float64)
    i = np.clip(np.searchsorted(log_axis, q, side="right") - 1, 0, len(log_axis) - 2)
    lo, hi = log_axis[i], log_axis[i + 1]
    w = np.clip((q - lo) / (hi - lo), 0.0, 1.0)[:, None]
    rows = log_rows[i] * (1.0 - w) + log_rows[i + 1] * w
    beyond = q > log_axis[-1]
    if np.any(beyond):
        rows[beyond] = log_rows[-1] + slope * (q[beyond] - log_axis[-1])[:, None]
    return rows


def fill_by_scaling(grid: np.ndarray, axis_values: np.ndarray, *, axis: int, power: float) -> np.ndarray:
    """Fill NaN cells along ``axis`` from the previous cell, scaled by ``(x/x_prev)**power``.

    The measured attention grids are triangular (large batch x long context was not
    run); in that corner the kernels are saturated, so latency scales with the work.
    """
    g = np.array(grid, dtype=np.float64, copy=True)
    if axis == 1:
        return fill_by_scaling(g.T, axis_values, axis=0, power=power).T
    for i in range(1, g.shape[0]):
        missing = np.isnan(g[i])
        if np.any(missing):
            g[i, missing] = g[i - 1, missing] * (axis_values[i] / axis_values[i - 1]) ** power
    return g


def extend_axis(
    values: np.ndarray, grid: np.ndarray, new_max: float, *, power: float, axis: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Append doubling nodes up to ``new_max`` along ``axis``, scaled by ``2**power`` per step."""
    vals, g = list(values), np.array(grid, dtype=np.float64)
    while vals[-1] < new_max:
        vals.append(vals[-1] * 2.0)
        last = np.take(g, [-1], axis=axis)
        g = np.concatenate([g, last * 2.0**power], axis=axis)
    return np.asarray(vals, dtype=np.float64), g
