"""Shares as Shapley values of the fitted model's own step latency over sub-batches.

Why: the ground truth the shares are scored against is the Shapley value of the engine's step
latency ``T`` over sub-batches (:mod:`shadowd.twin.ground_truth`).  The ``equal`` policy
approximates it by hand (the floor split equally, the rest by price), and on held-out runs small
tenants missed the share target while the window pinned their coefficients, which made that
approximation a suspect (``docs/accuracy.md``, "Held-out share misses").  The fitted model is
itself a game:
``T̂(S) = β_k + Σ_{i∈S} θ_k·φ_i`` with the segment ``k`` set by the sub-batch's own token count,
so its Shapley values are what the truth would be if the model were the engine.  This module
computes them; ``benchmarks/accuracy_study.py`` reports them beside ``equal`` as a candidate
policy.  It is not the one in force: on the runs it was proposed on it mended most of
``equal``'s misses but added as many elsewhere, and the set declared to test it could not
tell the two apart (``benchmarks/share_misses.py``, "The same runs divided both ways").

Every ordering of a step's rows telescopes to ``T̂(B)``, so the Monte Carlo estimate is exact
in sum, step by step.  Along one ordering the prefix costs need only running sums of the new
tokens and of each row's price under both segments: ``O(orderings × rows)`` per step.
Orderings are antithetic pairs, seeded by ``seed`` and the step's index, so a run scores the
same every time, and the fixed cost is taken out exactly as the truth takes it out.

>>> import numpy as np
>>> from shadowd.attribution.llmvisor import LLMVisorModel
>>> from shadowd.steps.batch import StepBatch
>>> m = LLMVisorModel.from_dict({"breakpoint_tokens": 256, "segments": [
...     {"beta_ms": 4.0, "prefill": {"p": 0.001}, "decode": {"c": 4e-5}},
...     {"beta_ms": 1.0, "prefill": {"p": 0.02}, "decode": {"c": 4e-5}}]})
>>> b = StepBatch.from_rows([dict(latency_ms=30.0)], [[
...     dict(new_tokens=1000, context_tokens=0, prefill=True),
...     dict(new_tokens=1, context_tokens=10000, prefill=False)]])
>>> phi = model_shapley_shares(m, b, permutations=2)
>>> phi.round(3).tolist(), bool(np.isclose(phi.sum(), m.predict(b)[0]))
([19.0, 2.4], True)

The chunk alone makes the step compute-bound (``T̂ = 1 + 20``); the decode row alone is a
memory-bound step (``4 + 0.4``).  Each ordering charges the decode row either ``4.4`` (first) or
``0.4`` (after the chunk, in a step the chunk already pays for), so its value is their mean,
``2.4``; the chunk gets the rest of ``T̂ = 21.4``.
"""

from __future__ import annotations

import numpy as np

from shadowd.attribution.llmvisor import LLMVisorModel
from shadowd.attribution.steprows import StepRows
from shadowd.steps.batch import StepBatch

PERMUTATIONS = 64  # orderings per step (antithetic pairs), as many as the truth samples


def row_prices(model: LLMVisorModel, batch: StepBatch) -> np.ndarray:
    """Each row's own term ``θ_k·φ_i`` under segment 0 and under segment 1: ``(2, rows)``, from
    the model's own pricing (:meth:`LLMVisorModel.decompose`) with every step put in that segment."""
    rows = StepRows(batch.req_step, batch.num_steps)
    below = np.zeros(batch.num_steps)  # every step at or under the breakpoint: segment 0
    above = np.full(batch.num_steps, np.inf)  # over it: segment 1 (segment 0 with one segment)
    return np.stack([model.decompose(batch, rows, tokens)[0] for tokens in (below, above)])


def _step_values(
    new: np.ndarray, prices: np.ndarray, beta: np.ndarray, breakpoint: float, orders: np.ndarray
) -> np.ndarray:
    """Mean over ``orders`` of each row's gain when it joins the rows before it."""
    n = orders.shape[1]
    tokens = np.cumsum(new[orders], axis=1)
    cost = np.where(
        tokens > breakpoint,
        beta[1] + np.cumsum(prices[1][orders], axis=1),
        beta[0] + np.cumsum(prices[0][orders], axis=1),
    )
    gains = np.diff(cost, axis=1, prepend=0.0)
    # The control variate the truth uses (``shadowd.twin.ground_truth``): the cheapest row alone
    # is a cost every ordering's first row pays; its part is exactly ``fixed / n`` each, so only
    # the rest is sampled (most of the variance is the fixed cost landing on whoever is first).
    alone = np.where(new > breakpoint, beta[1] + prices[1], beta[0] + prices[0])
    fixed = float(alone.min())
    gains[:, 0] -= fixed
    out = np.zeros(n)
    np.add.at(out, orders.ravel(), gains.ravel())
    return out / len(orders) + fixed / n


def model_shapley_shares(
    model: LLMVisorModel, batch: StepBatch, *, permutations: int = PERMUTATIONS, seed: int = 0
) -> np.ndarray:
    """Per request row of ``batch``: its Shapley value in the game ``v(S) = T̂(S)`` of its step
    (ms); a step's rows sum to its ``T̂``."""
    prices = row_prices(model, batch)
    new = batch.new_tokens.astype(np.float64)
    beta = model.coef[:, 0]
    ends = np.searchsorted(batch.req_step, np.arange(batch.num_steps + 1), side="left")
    out = np.zeros(batch.num_requests)
    half = max(1, permutations // 2)
    for s in range(batch.num_steps):
        lo, hi = int(ends[s]), int(ends[s + 1])
        n = hi - lo
        if n == 0:
            continue
        if n == 1:
            out[lo] = beta[int(new[lo] > model.breakpoint)] + prices[int(new[lo] > model.breakpoint), lo]
            continue
        rng = np.random.default_rng([seed, s])
        orders = rng.permuted(np.tile(np.arange(n), (half, 1)), axis=1)
        orders = np.concatenate([orders, orders[:, ::-1]])
        out[lo:hi] = _step_values(new[lo:hi], prices[:, lo:hi], beta, model.breakpoint, orders)
    return out
