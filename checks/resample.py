"""Seeded resampling used by calibration and the stability statistics.

Step residuals are serially correlated (consecutive steps share requests and GPU state), so
an i.i.d. bootstrap would understate false-alarm rates. Two ways to keep the dependence:

- ``ar_sieve_bootstrap`` fits an autoregression (order by AIC) and drives it with
  innovations drawn i.i.d. from the fitted ones. It can produce runs the calibration window
  never contained, which is what estimating a 1-in-100k-steps false-alarm rate from a few
  thousand steps needs: calibration uses it.
- ``stationary_bootstrap`` (Politis & Romano, 1994) resamples blocks of random length. It
  keeps any dependence, but only recombines stretches already in the sample, so it
  *underestimates* rare-event rates (a test shows this); use it for typical behaviour
  (detection delays on real residuals), not for tails.

``group_weights`` is the cluster bootstrap as multinomial weights: all rows of one step (or
one request) are drawn together.

>>> import numpy as np
>>> x = np.arange(10.0)
>>> y = stationary_bootstrap(x, 25, mean_block=5, rng=np.random.default_rng(0))
>>> y.shape, set(y) <= set(x)
((25,), True)
>>> a = ar_sieve_bootstrap(np.sin(np.arange(500) / 3.0), 1000, rng=np.random.default_rng(0))
>>> a.shape
(1000,)
>>> w = group_weights(np.array([7, 7, 9, 9, 9]), np.random.default_rng(1))
>>> w.shape, bool(np.all(w[:2] == w[0])), bool(np.all(w[2:] == w[2]))
((5,), True, True)
"""

from __future__ import annotations

import numpy as np


def stationary_bootstrap(
    x: np.ndarray, n: int, mean_block: float = 64.0, rng: np.random.Generator | None = None
) -> np.ndarray:
    """``n`` values resampled from ``x`` in circular blocks of mean length ``mean_block``."""
    x = np.asarray(x, dtype=float)
    m = len(x)
    if m == 0:
        raise ValueError("cannot resample an empty array")
    rng = rng or np.random.default_rng()
    new_block = rng.random(n) < 1.0 / max(mean_block, 1.0)
    new_block[0] = True
    block_id = np.cumsum(new_block) - 1
    block_start_pos = np.flatnonzero(new_block)
    starts = rng.integers(0, m, size=len(block_start_pos))
    offset = np.arange(n) - block_start_pos[block_id]
    return x[(starts[block_id] + offset) % m]


def fit_ar(x: np.ndarray, max_order: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """AR coefficients (order by AIC, ≤ ``max_order``) and centred innovations of ``x``.

    Orders whose fit is not stationary are skipped, so the result can always be simulated.
    """
    x = np.asarray(x, dtype=float)
    x = x - x.mean()
    n = len(x)
    max_order = int(min(max_order, max(n // 10, 0)))
    y = x[max_order:]
    best = (n * np.log(max(y.var(), 1e-300)), np.zeros(0), y)
    for p in range(1, max_order + 1):
        lags = np.column_stack([x[max_order - k : n - k] for k in range(1, p + 1)])
        coef, *_ = np.linalg.lstsq(lags, y, rcond=None)
        if p and np.any(np.abs(np.roots(np.r_[1.0, -coef])) >= 0.999):
            continue
        resid = y - lags @ coef
        aic = len(y) * np.log(max(resid.var(), 1e-300)) + 2 * p
        if aic < best[0]:
            best = (aic, coef, resid)
    _, coef, resid = best
    return coef, resid - resid.mean()


def ar_sieve_bootstrap(
    x: np.ndarray, n: int, rng: np.random.Generator | None = None, max_order: int = 10, burn: int = 500
) -> np.ndarray:
    """``n`` values of a stationary series with ``x``'s mean, AR structure and innovation law."""
    from scipy.signal import lfilter

    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        raise ValueError("cannot resample an empty array")
    rng = rng or np.random.default_rng()
    coef, innov = fit_ar(x, max_order)
    e = rng.choice(innov, size=n + burn, replace=True)
    return lfilter([1.0], np.r_[1.0, -coef], e)[burn:] + x.mean()


def group_weights(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per-row bootstrap weights: each distinct group drawn a multinomial number of times."""
    uniq, inverse = np.unique(np.asarray(groups), return_inverse=True)
    counts = rng.multinomial(len(uniq), np.full(len(uniq), 1.0 / len(uniq)))
    return counts[inverse].astype(float)


def poisson_upper(k: int, exposure: float, level: float = 0.95) -> float:
    """One-sided upper confidence bound of a Poisson rate (k events in ``exposure`` units)."""
    from scipy.stats import chi2

    if exposure <= 0:
        return float("inf")
    return float(chi2.ppf(level, 2 * (k + 1)) / 2.0 / exposure)
