"""How far each tenant's attributed time could move while the fit stays as good: its bounds.

Why: a share is only as good as the coefficients that price it, and a calibration window can fit
several sets of coefficients equally well.  A window whose steps all carry the scheduler's token
budget cannot tell a prompt token's price from the fixed term; the non-negative fit then lands on
one corner (a price of zero, say) and each tenant's share follows that corner, not the engine.
The held-out studies found a few tenants missing the share target that way (``docs/accuracy.md``,
"Held-out share misses"), and a fit's point estimate gives no hint of it.

What it computes: the coefficients the window cannot tell from the fitted ones, the profile
region ``SSE(θ) ≤ SSE(θ̂) · (1 + χ²₁(level) / (n − p))`` of the fit's own weighted least squares
(rows weighted ``1/T``, segments as fitted, every coefficient ``≥ 0``), with ``n`` the fit's
steps and ``p`` its non-zero coefficients.  For each tenant, the coefficients in that region
whose linearised total is lowest and highest are found (SLSQP), and the tenant's attributed
time on the scored steps is computed exactly at each: the bounds are attained by models the
window fits as well, an inner approximation of the range.  The region assumes independent step
errors; a model's error wanders with the batch mix, so the real uncertainty is wider, and the
bounds are a floor on it.  A coefficient of a feature the fit window never exercised (all-zero
column) stays at zero: those are the gate's "barely held" and "zero priced" classes
(``shadowd.daemon.calibrator``).

Measured on the held-out studies: ``benchmarks/accuracy_study.py`` stores each run's bounds,
and ``benchmarks/share_misses.py`` sets them beside the share errors.

>>> import numpy as np
>>> from shadowd.attribution import fit
>>> from shadowd.steps.batch import StepBatch
>>> rng = np.random.default_rng(0)
>>> def steps(n):  # every step carries 2048 new tokens: a prompt token's price is not identified
...     rows, reqs = [], []
...     for _ in range(n):
...         a = int(rng.integers(1500, 1900))
...         reqs.append([dict(new_tokens=a, context_tokens=0, prefill=True, tenant="big"),
...                      dict(new_tokens=2048 - a, context_tokens=0, prefill=True, tenant="small")])
...         rows.append(dict(latency_ms=20.0 * (1 + 0.01 * rng.normal())))
...     return StepBatch.from_rows(rows, reqs)
>>> window, scored = steps(400), steps(200)
>>> b = share_bounds(fit(window, {"platform": "doc"}), window, scored)
>>> b["small"].half_width > 0.25  # the fixed term or the token price: the window cannot say
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.stats import chi2

from shadowd.attribution.llmvisor import COLUMNS, LLMVisorModel, design_matrix
from shadowd.attribution.model_version import ModelVersion
from shadowd.attribution.shares import DEFAULT_POLICY, normalise, split_fixed_term
from shadowd.attribution.steprows import StepRows
from shadowd.steps.batch import StepBatch

LEVEL = 0.95  # the profile region's confidence level


@dataclass(frozen=True)
class ShareBound:
    """A tenant's attributed time (ms, rescaled to the measured latency) on the scored steps, and
    the lowest and highest that coefficients fitting the window as well give it."""

    ms: float
    low_ms: float
    high_ms: float

    @property
    def half_width(self) -> float:
        """Half the range, relative to the attributed time (``inf`` for a tenant with none)."""
        return (self.high_ms - self.low_ms) / 2 / self.ms if self.ms > 0 else float("inf")

    def to_dict(self) -> dict[str, float | None]:
        half = self.half_width
        return {
            "ms": self.ms,
            "low_ms": self.low_ms,
            "high_ms": self.high_ms,
            "half_width": half if half < float("inf") else None,
        }


@dataclass
class _Region:
    """The fit's weighted SSE as a quadratic in the scaled free coefficients ``u`` and its bound."""

    a: np.ndarray  # (k, k)
    b: np.ndarray  # (k,)
    c: float
    bound: float
    u0: np.ndarray  # the fitted coefficients, scaled
    scale: np.ndarray  # θ = u · scale on the free coefficients
    free: np.ndarray  # bool over the flattened (2, len(COLUMNS)) coefficients
    one_segment: bool
    base: np.ndarray  # the fitted coefficients, flattened

    def sse(self, u: np.ndarray) -> float:
        return float(u @ self.a @ u - 2 * self.b @ u + self.c)

    def coef(self, u: np.ndarray) -> np.ndarray:
        theta = np.zeros_like(self.base)
        theta[self.free] = np.maximum(u, 0.0) * self.scale
        if self.one_segment:  # one segment: both rows of the table are the same coefficients
            theta[len(COLUMNS) :] = theta[: len(COLUMNS)]
        return theta.reshape(2, len(COLUMNS))


def _region(model: LLMVisorModel, window: StepBatch, level: float) -> _Region:
    """The profile region of ``model``'s fit on ``window`` (its steps, weights and segments)."""
    y = window.latency_ms
    keep = np.isfinite(y) & (y > 0) & (window.batch_size() > 0)
    a, y = design_matrix(window)[keep], y[keep]
    w = 1.0 / y
    tokens = window.per_step_sum(window.new_tokens.astype(np.float64))[keep]
    one = not np.isfinite(model.breakpoint)
    k = len(COLUMNS)
    gram, rhs, c = np.zeros((2 * k, 2 * k)), np.zeros(2 * k), 0.0
    masks = (np.ones(len(y), bool),) if one else (tokens <= model.breakpoint, tokens > model.breakpoint)
    for s, mask in enumerate(masks):
        aw, yw = a[mask] * w[mask, None], y[mask] * w[mask]
        gram[s * k : (s + 1) * k, s * k : (s + 1) * k] = aw.T @ aw
        rhs[s * k : (s + 1) * k] = aw.T @ yw
        c += float(yw @ yw)
    free = np.diag(gram) > 0
    scale = 1.0 / np.sqrt(np.diag(gram)[free])
    base = model.coef.ravel().copy()
    u0 = base[free] / scale
    ga, gb = gram[np.ix_(free, free)] * np.outer(scale, scale), rhs[free] * scale
    sse0 = float(u0 @ ga @ u0 - 2 * gb @ u0 + c)
    dof = max(int(keep.sum()) - int((u0 > 0).sum()), 1)
    bound = sse0 * (1.0 + chi2.ppf(level, 1) / dof)
    return _Region(ga, gb, c, bound, u0, scale, free, one, base)


class _Totals:
    """Each tenant's attributed time on ``scored`` under given coefficients (the hot loop)."""

    def __init__(self, model: LLMVisorModel, scored: StepBatch, policy: str) -> None:
        if scored.tenant is None:
            raise ValueError("the scored steps carry no tenants")
        self.breakpoint, self.scored, self.policy = model.breakpoint, scored, policy
        self.rows = StepRows(scored.req_step, scored.num_steps)
        self.tokens = self.rows.sum(scored.new_tokens)
        self.names, self.index = np.unique(scored.tenant.astype(str), return_inverse=True)

    def __call__(self, coef: np.ndarray) -> np.ndarray:
        model = LLMVisorModel(self.breakpoint, coef)
        variable, fixed, predicted, price = model.decompose_with_prices(self.scored, self.rows, self.tokens)
        floor = np.full(self.scored.num_steps, model.floor_ms)
        shares = split_fixed_term(variable, fixed, self.rows, self.policy, floor, price)
        measured = normalise(shares, predicted, self.scored.latency_ms, self.rows)
        return np.bincount(self.index, weights=measured, minlength=len(self.names))


def _gradient(totals: _Totals, region: _Region, at: np.ndarray) -> np.ndarray:
    """d(tenant totals)/du by forward differences (one exact attribution per free coefficient)."""
    base = totals(region.coef(at))
    grad = np.zeros((len(base), len(at)))
    for j in range(len(at)):
        h = max(abs(at[j]) * 1e-4, 1e-6 * float(np.abs(at).max() or 1.0))
        step = at.copy()
        step[j] += h
        grad[:, j] = (totals(region.coef(step)) - base) / h
    return grad


def _extreme(region: _Region, direction: np.ndarray) -> np.ndarray:
    """The coefficients in the region that minimise ``direction · u``."""
    constraint = {
        "type": "ineq",
        "fun": lambda u: region.bound - region.sse(u),
        "jac": lambda u: -(2 * region.a @ u - 2 * region.b),
    }
    res = minimize(
        lambda u: float(direction @ u),
        region.u0,
        jac=lambda u: direction,
        bounds=[(0.0, None)] * len(region.u0),
        constraints=[constraint],
        method="SLSQP",
        options={"maxiter": 300, "ftol": 1e-12},
    )
    return _inside(region, np.maximum(res.x, 0.0))


def _inside(region: _Region, u: np.ndarray) -> np.ndarray:
    """``u``, or where it lies outside the region (the solver stops near its edge, on either
    side) the last point inside on the segment from the fitted coefficients to it: the region
    is convex and holds them, so the segment leaves it once."""
    if region.sse(u) <= region.bound:
        return u
    d = u - region.u0
    qa = float(d @ region.a @ d)
    qb = float((2 * region.a @ region.u0 - 2 * region.b) @ d)
    qc = region.sse(region.u0) - region.bound  # <= 0
    if qa <= 0:
        return region.u0
    t = (-qb + np.sqrt(max(qb * qb - 4 * qa * qc, 0.0))) / (2 * qa)
    return region.u0 + min(max(t, 0.0), 1.0) * (1 - 1e-9) * d


def share_bounds(
    version: ModelVersion,
    window: StepBatch,
    scored: StepBatch,
    policy: str = DEFAULT_POLICY,
    level: float = LEVEL,
) -> dict[str, ShareBound]:
    """Per tenant of ``scored``: its attributed time under ``version`` and the lowest and highest
    that coefficients fitting ``window`` (the fit's window) as well give it (see the module)."""
    model = version.llmvisor
    region = _region(model, window, level)
    totals = _Totals(model, scored, policy)
    point = totals(model.coef)
    grad = _gradient(totals, region, region.u0)
    out = {}
    for i, name in enumerate(totals.names):
        ends = [totals(region.coef(_extreme(region, sign * grad[i])))[i] for sign in (1.0, -1.0)]
        lo, hi = min(ends + [point[i]]), max(ends + [point[i]])
        out[str(name)] = ShareBound(float(point[i]), float(lo), float(hi))
    return out
