"""How fairly an attribution divides steps, against the reference engine's Shapley values.

On the reference engine the step-latency function ``T`` is known, so the fair division of a step
is defined: the Shapley value of each request in the game ``v(S) = T(S)`` (noiseless, Monte Carlo,
:func:`shadowd.twin.ground_truth.shapley_values`).  :func:`tenant_truth_errors` compares an
:class:`~shadowd.attribution.shares.Attribution` with it on a sample of steps, per tenant and
per request.

**What is compared.**  The attributed shares are those the product stores and bills: LLMVisor's
shares of the *measured* latency (``llmvisor_measured_ms``, under the attribution's fixed-term
policy and under every other policy too) and the token split of the measured latency (``vtc_ms``).
Shapley values add up to the *noiseless* ``T(B)``, the measurement adds jitter, so each step's
Shapley values are rescaled by ``T_measured / T(B)`` first: both sides then divide the same total
and the error is about the division alone, not about the jitter of the step total (without the
rescaling the figures move by the jitter's mean, which the host-time tail makes positive).

**Tenant error** = ``|Σ attributed − Σ Shapley| / Σ Shapley`` over the sampled steps, per tenant;
``tenant_error_max`` is its maximum over tenants.  **Request error** = per request row
``|attributed − Shapley| / Shapley``, summarised by its p50 and p90.

**The truth's own error.**  Each tenant's summed Shapley value is a Monte Carlo estimate; its
standard error (``shapley_se_ms``) is measured from the spread of each step's independent
estimates over the very orderings the value averages (antithetic pairs), so a tenant error can
be read against the noise of the truth it is measured by: a small tenant's sum rests on few
rows, and a few percent of it can be the orderings drawn.

**Sample.**  ``sample_steps`` steps spread over the whole batch: the batch is cut into that many
equal runs of steps and one step is drawn at random (seeded) from each, so a long run is covered
from end to end and a repeat with the same seed picks the same steps.  A sampled step's Shapley
values take ``permutations · (n+1)`` sub-batch evaluations of width ``n``, so the cost grows with
the square of the batch size.

>>> import numpy as np
>>> spread_sample(10, 4, seed=0).tolist() == sorted(spread_sample(10, 4, seed=0).tolist())
True
>>> len(spread_sample(10, 40, seed=0)), len(spread_sample(0, 5, seed=0))
(10, 0)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from shadowd.attribution.llmvisor import LLMVisorModel
from shadowd.attribution.model_shapley import model_shapley_shares
from shadowd.attribution.shares import FIXED_TERM_POLICIES, Attribution, normalise
from shadowd.attribution.steprows import StepRows
from shadowd.attribution.token_baseline import tenant_index
from shadowd.steps.batch import StepBatch
from shadowd.twin.ground_truth import shapley_estimates, shapley_values_with_error
from shadowd.twin.step_latency import ReferenceEngine


def spread_sample(num_steps: int, sample_steps: int, seed: int = 0) -> np.ndarray:
    """Indices of ``min(sample_steps, num_steps)`` steps, one drawn from each equal run, sorted."""
    k = min(int(sample_steps), int(num_steps))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    edges = np.linspace(0, num_steps, k + 1).astype(np.int64)
    rng = np.random.default_rng(seed)
    return np.array([rng.integers(lo, hi) for lo, hi in zip(edges[:-1], edges[1:])], dtype=np.int64)


def _step_rows(batch: StepBatch, steps: np.ndarray) -> Iterator[tuple[int, int, int, int]]:
    """(position in ``steps``, step, first row, end row) of every step in ``steps`` with requests."""
    starts = np.searchsorted(batch.req_step, steps, side="left")
    ends = np.searchsorted(batch.req_step, steps, side="right")
    for j, (s, lo, hi) in enumerate(zip(steps, starts, ends)):
        if hi > lo:
            yield j, int(s), int(lo), int(hi)


def step_shapley(
    engine: ReferenceEngine, batch: StepBatch, steps: np.ndarray, *, permutations: int = 64, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(row indices of ``steps``' requests, their Shapley values rescaled to the measured latency,
    and per step with requests its independent estimates, rescaled alike: ``(pairs, rows)``, in
    the order of the rows)."""
    rows, values, estimates = [], [], []
    for j, s, lo, hi in _step_rows(batch, steps):
        phi, est = shapley_values_with_error(
            engine,
            batch.new_tokens[lo:hi],
            batch.context_tokens[lo:hi],
            batch.prefill[lo:hi],
            permutations=permutations,
            seed=seed + j,
        )
        total = phi.sum()
        scale = batch.latency_ms[s] / total if total > 0 else 1.0
        rows.append(np.arange(lo, hi))
        values.append(phi * scale if total > 0 else phi)
        estimates.append(est * scale)
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0), []
    return np.concatenate(rows), np.concatenate(values), estimates


def tenant_standard_errors(estimates: list[np.ndarray], inv: np.ndarray, k: int) -> np.ndarray:
    """Monte Carlo standard error (ms) of each of ``k`` tenants' summed Shapley values: per step
    the variance of the tenant's sum over its independent estimates, over their number (steps
    are estimated independently, so the variances add).  ``inv``: tenant index per row, in the
    order of the estimates' rows.

    >>> est = [np.array([[1.0, 3.0], [3.0, 1.0]]), np.array([[2.0], [2.0]])]
    >>> tenant_standard_errors(est, np.array([0, 1, 0]), 2).tolist()
    [1.0, 1.0]
    """
    var = np.zeros(k)
    at = 0
    for est in estimates:
        n = est.shape[1]
        pairs = est.shape[0]
        if pairs > 1:
            units = np.zeros((pairs, k))
            np.add.at(units, (slice(None), inv[at : at + n]), est)
            var += units.var(axis=0, ddof=1) / pairs
        at += n
    return np.sqrt(var)


@dataclass(frozen=True)
class TenantShapley:
    """Shapley GPU time (ms) per step and tenant, with the Monte Carlo error of its sums.

    ``per_step[j, t]``: tenant ``names[t]``'s Shapley values on step ``steps[j]`` (rescaled to the
    measured latency, as :func:`step_shapley`).  ``cov``: covariance of the tenant sums of
    ``per_step`` over the scored steps, from the spread of each step's independent estimates
    (steps are estimated independently, so the per-step covariances add).  ``exact[j]``: the
    step was small enough to enumerate every ordering (no Monte Carlo error)."""

    names: list[str]
    steps: np.ndarray
    per_step: np.ndarray
    cov: np.ndarray
    exact: np.ndarray
    pairs: int


def tenant_shapley(
    engine: ReferenceEngine,
    batch: StepBatch,
    steps: np.ndarray,
    names: list[str],
    *,
    pairs: int = 8,
    seed: int = 0,
    scored: np.ndarray | None = None,
) -> TenantShapley:
    """Shapley values of ``T`` on *every* one of ``steps``, summed per tenant per step.

    Each step gets ``pairs`` antithetic pairs of orderings (or all orderings when few, exact:
    :func:`shadowd.twin.ground_truth.shapley_estimates`), seeded by the step's index, so the
    same run scores the same.  ``scored`` (bool per step of ``steps``, default all) selects the
    steps whose covariance is summed into ``cov``."""
    steps = np.asarray(steps, dtype=np.int64)
    scored = np.ones(len(steps), dtype=bool) if scored is None else np.asarray(scored, dtype=bool)
    col = {t: j for j, t in enumerate(names)}
    which = np.array([col.get(t, -1) for t in batch.tenant], dtype=np.int64)
    if (which < 0).any():
        raise ValueError(f"tenants not in names: {sorted(set(batch.tenant[which < 0].tolist()))}")
    k = len(names)
    per_step = np.zeros((len(steps), k))
    cov = np.zeros((k, k))
    exact = np.zeros(len(steps), dtype=bool)
    for j, s, lo, hi in _step_rows(batch, steps):
        est = shapley_estimates(
            engine,
            batch.new_tokens[lo:hi],
            batch.context_tokens[lo:hi],
            batch.prefill[lo:hi],
            pairs=pairs,
            seed=seed * 1_000_003 + int(s),
        )
        total = est[0].sum()
        if total > 0:
            est = est * (batch.latency_ms[s] / total)
        onehot = np.zeros((hi - lo, k))
        onehot[np.arange(hi - lo), which[lo:hi]] = 1.0
        units = est @ onehot  # (estimates, tenants)
        per_step[j] = units.mean(axis=0)
        if units.shape[0] == 1:
            exact[j] = True
        elif scored[j]:
            cov += np.cov(units, rowvar=False, ddof=1).reshape(k, k) / units.shape[0]
    return TenantShapley(list(names), steps, per_step, cov, exact, int(pairs))


def _compare(
    attributed: np.ndarray, shapley: np.ndarray, inv: np.ndarray, names: np.ndarray, se: np.ndarray
) -> dict[str, Any]:
    k = len(names)
    a = np.bincount(inv, weights=attributed, minlength=k)
    s = np.bincount(inv, weights=shapley, minlength=k)
    per = {
        str(names[j]): {
            "attributed_ms": float(a[j]),
            "shapley_ms": float(s[j]),
            "error": float(abs(a[j] - s[j]) / s[j]) if s[j] > 0 else None,
            "shapley_se_ms": float(se[j]),  # the truth's own Monte Carlo standard error
        }
        for j in range(k)
        if s[j] > 0 or a[j] > 0
    }
    errs = [v["error"] for v in per.values() if v["error"] is not None]
    rel = np.abs(attributed - shapley) / np.where(shapley > 0, shapley, np.nan)
    rel = rel[np.isfinite(rel)]
    return {
        "tenant_error_max": float(max(errs)) if errs else None,
        "per_tenant": per,
        "request_error_p50": float(np.percentile(rel, 50)) if rel.size else None,
        "request_error_p90": float(np.percentile(rel, 90)) if rel.size else None,
    }


def tenant_truth_errors(
    engine: ReferenceEngine,
    batch: StepBatch,
    attribution: Attribution,
    sample_steps: int = 150,
    seed: int = 0,
    *,
    permutations: int = 64,
    model: LLMVisorModel | None = None,
) -> dict[str, Any]:
    """Per-tenant and per-request errors of both attributions against Shapley values.

    ``attribution`` must be ``version.attribute(batch, ...)`` for this very ``batch``.  Returns
    ``{"llmvisor": {...}, "token_baseline": {...}, "llmvisor_policies": {policy: {...}},
    "steps", "requests", "permutations", "policy"}``; each ``{...}`` holds ``tenant_error_max``,
    ``per_tenant`` (``attributed_ms``, ``shapley_ms``, ``error``), ``request_error_p50/p90``.
    ``llmvisor`` is under the attribution's own policy.  With ``model`` (the attribution's
    LLMVisor model), ``"model_shapley"`` too: the Shapley values of the model's own ``T̂`` over
    sub-batches (:mod:`shadowd.attribution.model_shapley`), rescaled to the measured latency as
    the shares are, on the same sampled steps.
    """
    if attribution.llmvisor_measured_ms.shape[0] != batch.num_requests:
        raise ValueError("attribution does not belong to this batch (request rows differ)")
    steps = spread_sample(batch.num_steps, sample_steps, seed)
    rows, shapley, estimates = step_shapley(engine, batch, steps, permutations=permutations, seed=seed)
    names, inv_all = tenant_index(batch)
    inv = inv_all[rows]
    se = tenant_standard_errors(estimates, inv, len(names))
    policies = {}
    for pol in FIXED_TERM_POLICIES:
        att = attribution if pol == attribution.policy else attribution.with_policy(pol)
        policies[pol] = _compare(att.llmvisor_measured_ms[rows], shapley, inv, names, se)
    extra = {}
    if model is not None:
        extra["model_shapley"] = _compare(
            model_shapley_rows(model, batch, steps, seed), shapley, inv, names, se
        )
    return {
        **extra,
        "llmvisor": policies[attribution.policy],
        "token_baseline": _compare(attribution.vtc_ms[rows], shapley, inv, names, se),
        "llmvisor_policies": policies,
        "policy": attribution.policy,
        "steps": int(len(steps)),
        "requests": int(len(rows)),
        "permutations": int(permutations),
    }


def model_shapley_rows(model: LLMVisorModel, batch: StepBatch, steps: np.ndarray, seed: int) -> np.ndarray:
    """The model's own Shapley values on ``steps``' rows, in the order ``step_shapley`` gives
    them (step by step, ascending), rescaled per step to its measured latency."""
    sub = batch.select_steps(np.isin(np.arange(batch.num_steps), steps))
    values = model_shapley_shares(model, sub, seed=seed)
    rows = StepRows(sub.req_step, sub.num_steps)
    return normalise(values, rows.sum(values), sub.latency_ms, rows)
