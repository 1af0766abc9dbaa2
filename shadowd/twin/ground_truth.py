"""Per-request ground truth on the reference engine: marginal costs and Shapley values.

On real hardware nobody knows what each request in a batch "cost"; on the reference
engine ``T`` is a known function, so two definitions are available:

* **marginal cost** ``T(B) - T(B \\ {i})``: what leaving request i out would have saved.
  Marginals do not add up to ``T(B)`` (the fixed cost of running a step at all is in
  nobody's marginal, and non-linearities make them over- or under-count).
* **Shapley value** of the cooperative game ``v(S) = T(S)`` (noiseless), with
  ``T(empty) = 0``: no step runs for an empty batch.  Shares are therefore *efficient*,
  ``sum_i phi_i = T(B)`` exactly, and the fixed cost of a step (weights read once, host
  time, kernel launches) is divided among the requests like everything else; in
  expectation over orderings each request carries an equal part of it.  Identical
  requests get equal values (symmetry), up to Monte Carlo error.

The Monte Carlo estimate samples orderings (each also reversed, antithetic sampling)
and evaluates every prefix sub-batch of each ordering at once with
:meth:`ReferenceEngine.subset_latency_ms`.  Most of the variance would come from the
fixed cost landing on whoever comes first, so it is taken out exactly: Shapley values
are linear in the game, the game ``F * [S non-empty]`` gives every player ``F / n``,
and with ``F = min_i T({i})`` only the remainder is sampled.  Every sampled ordering
telescopes to ``T(B)``, so the estimate is efficient exactly, not just in expectation.

**Exact where affordable, measured error elsewhere.**  ``T`` has no structure that gives exact
Shapley values cheaply on a real batch: it is neither a sum of per-request terms nor a function
of one weighted sum (decode attention is the larger of the batch's mean per-sequence time at the
padded batch size and the longest sequence alone; prefill attention goes with the chunks'
root-mean-square length and a work-weighted prefix ratio; the GEMMs with the padded token count),
so the exact values need all ``2^n`` sub-batches.  :func:`shapley_estimates` therefore enumerates
every ordering of a small batch (exact) and otherwise returns *independent* estimates, one per
antithetic pair of orderings, so that a sum over many steps carries a measured Monte Carlo error
(:func:`shadowd.sim.truth.tenant_shapley`).

>>> from shadowd.twin.step_latency import ReferenceEngine
>>> e = ReferenceEngine("builtin", "llama-3.1-8b")
>>> new, ctx, pre = [1, 1, 512], [900, 900, 0], [False, False, True]
>>> phi = shapley_values(e, new, ctx, pre, permutations=32, seed=0)
>>> bool(abs(phi.sum() - e.expected_ms(new, ctx, pre)) < 1e-9), bool(phi[2] > phi[0])
(True, True)
"""

from __future__ import annotations

from itertools import combinations
from itertools import permutations as all_orderings
from math import factorial

import numpy as np

from .step_latency import ArrayLike, ReferenceEngine

MAX_CELLS = 2_000_000  # subset x request cells evaluated per chunk (memory bound)
EXHAUSTIVE_ORDERINGS = 720  # up to 6 requests: every ordering is enumerated (exact, cheap)


def marginal_costs(
    engine: ReferenceEngine, new_tokens: ArrayLike, context_tokens: ArrayLike, prefill: ArrayLike
) -> np.ndarray:
    """``T(B) - T(B without i)`` for every request i (noiseless), ms."""
    n = len(new_tokens)
    masks = np.ones((n + 1, n), dtype=bool)
    masks[np.arange(n) + 1, np.arange(n)] = False
    t = engine.subset_latency_ms(new_tokens, context_tokens, prefill, masks)
    return t[0] - t[1:]


def _ordering_values(
    engine: ReferenceEngine,
    new_tokens: ArrayLike,
    context_tokens: ArrayLike,
    prefill: ArrayLike,
    orders: np.ndarray,
    fixed: float,
) -> np.ndarray:
    """Per ordering, each player's gain in it, less ``fixed`` for the first: ``(len(orders), n)``.

    Each row plus ``fixed / n`` is an unbiased, efficient estimate of the Shapley values for a
    uniformly drawn ordering; the mean over all ``n!`` orderings is exact."""
    n = orders.shape[1]
    out = np.zeros((len(orders), n))
    per_chunk = max(1, MAX_CELLS // (n * (n + 1)))
    tri = np.tri(n + 1, n, k=-1, dtype=bool)  # row r: the first r positions
    for start in range(0, len(orders), per_chunk):
        chunk = orders[start : start + per_chunk]
        masks = np.zeros((len(chunk), n + 1, n), dtype=bool)
        rows = np.arange(len(chunk))[:, None, None]
        masks[rows, np.arange(n + 1)[None, :, None], chunk[:, None, :]] = tri[None]
        t = engine.subset_latency_ms(new_tokens, context_tokens, prefill, masks.reshape(-1, n)).reshape(
            len(chunk), n + 1
        )
        gains = np.diff(t, axis=1)  # gain of the player at each position
        gains[:, 0] -= fixed
        out[start + np.arange(len(chunk))[:, None], chunk] = gains
    return out


def _fixed_cost(
    engine: ReferenceEngine, new_tokens: ArrayLike, context_tokens: ArrayLike, prefill: ArrayLike
) -> float:
    """The control variate: the cheapest request alone (the step's fixed cost, shared equally)."""
    n = len(new_tokens)
    return float(engine.subset_latency_ms(new_tokens, context_tokens, prefill, np.eye(n, dtype=bool)).min())


def shapley_values(
    engine: ReferenceEngine,
    new_tokens: ArrayLike,
    context_tokens: ArrayLike,
    prefill: ArrayLike,
    *,
    permutations: int = 64,
    seed: int = 0,
    antithetic: bool = True,
) -> np.ndarray:
    """Monte Carlo Shapley values of the noiseless ``T`` (ms); they sum to ``T(B)``.

    ``permutations`` orderings are sampled (half of them the reverses of the other half
    when ``antithetic``); cost is ``permutations * n`` sub-batch evaluations of width n.
    """
    return shapley_values_with_error(
        engine,
        new_tokens,
        context_tokens,
        prefill,
        permutations=permutations,
        seed=seed,
        antithetic=antithetic,
    )[0]


def shapley_values_with_error(
    engine: ReferenceEngine,
    new_tokens: ArrayLike,
    context_tokens: ArrayLike,
    prefill: ArrayLike,
    *,
    permutations: int = 64,
    seed: int = 0,
    antithetic: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`shapley_values` and, from the very same orderings, its independent estimates: one
    row per antithetic pair (per ordering without ``antithetic``), ``(pairs, n)``, whose mean is
    the value; their spread is the Monte Carlo error of the value
    (:func:`shadowd.sim.truth.tenant_truth_errors`: the truth's own standard error per tenant).

    >>> from shadowd.twin.step_latency import ReferenceEngine
    >>> e = ReferenceEngine("builtin", "llama-3.1-8b")
    >>> new, ctx, pre = [1, 1, 1, 512], [900, 300, 20, 0], [False, False, False, True]
    >>> phi, est = shapley_values_with_error(e, new, ctx, pre, permutations=16, seed=3)
    >>> est.shape, bool(np.allclose(est.mean(axis=0), phi))
    ((8, 4), True)
    >>> bool((phi == shapley_values(e, new, ctx, pre, permutations=16, seed=3)).all())
    True
    """
    n = len(new_tokens)
    if n == 0:
        return np.zeros(0), np.zeros((1, 0))
    rng = np.random.default_rng(seed)
    base = max(1, permutations // 2) if antithetic else max(1, permutations)
    orders = np.stack([rng.permutation(n) for _ in range(base)])
    if antithetic:
        orders = np.concatenate([orders, orders[:, ::-1]])
    fixed = _fixed_cost(engine, new_tokens, context_tokens, prefill)
    vals = _ordering_values(engine, new_tokens, context_tokens, prefill, orders, fixed)
    phi = vals.mean(axis=0) + fixed / n
    est = (0.5 * (vals[:base] + vals[base:]) if antithetic else vals) + fixed / n
    return phi, est


def shapley_estimates(
    engine: ReferenceEngine,
    new_tokens: ArrayLike,
    context_tokens: ArrayLike,
    prefill: ArrayLike,
    *,
    pairs: int = 8,
    seed: int = 0,
    exhaustive_up_to: int = EXHAUSTIVE_ORDERINGS,
) -> np.ndarray:
    """Independent Shapley estimates of the noiseless ``T``, one per row: ``(u, n)``, each row sums to ``T(B)``.

    Normally ``u = pairs`` rows, each the mean over a uniformly drawn ordering and its reverse
    (antithetic pair), so the rows are i.i.d. unbiased estimates and their spread measures the
    Monte Carlo error of their mean.  When ``n! <= max(exhaustive_up_to, 2 * pairs)`` every
    ordering is enumerated instead: one row, the exact Shapley values (no Monte Carlo error)."""
    n = len(new_tokens)
    if n == 0:
        return np.zeros((1, 0))
    fixed = _fixed_cost(engine, new_tokens, context_tokens, prefill)
    if factorial(n) <= max(exhaustive_up_to, 2 * pairs):
        orders = np.array(list(all_orderings(range(n))), dtype=np.int64)
        vals = _ordering_values(engine, new_tokens, context_tokens, prefill, orders, fixed)
        return vals.mean(axis=0, keepdims=True) + fixed / n
    rng = np.random.default_rng(seed)
    orders = np.stack([rng.permutation(n) for _ in range(max(1, pairs))])
    both = np.concatenate([orders, orders[:, ::-1]])
    vals = _ordering_values(engine, new_tokens, context_tokens, prefill, both, fixed)
    half = len(orders)
    return 0.5 * (vals[:half] + vals[half:]) + fixed / n


def shapley_exact(
    engine: ReferenceEngine, new_tokens: ArrayLike, context_tokens: ArrayLike, prefill: ArrayLike
) -> np.ndarray:
    """Exact Shapley values by enumerating all 2^n sub-batches (n <= 14); for tests."""
    n = len(new_tokens)
    if n > 14:
        raise ValueError("exact Shapley enumerates 2^n sub-batches; use shapley_values for n > 14")
    subsets = [s for r in range(n + 1) for s in combinations(range(n), r)]
    masks = np.zeros((len(subsets), n), dtype=bool)
    for row, s in enumerate(subsets):
        masks[row, list(s)] = True
    t = dict(zip(subsets, engine.subset_latency_ms(new_tokens, context_tokens, prefill, masks)))
    phi = np.zeros(n)
    for s in subsets:
        weight = factorial(len(s)) * factorial(n - len(s) - 1) / factorial(n) if len(s) < n else 0.0
        for i in set(range(n)) - set(s):
            phi[i] += weight * (t[tuple(sorted(s + (i,)))] - t[s])
    return phi
