"""What a policy did to each tenant: service received, and true GPU time against entitlement.

**True GPU time** is the Shapley value of the reference engine's noiseless ``T`` on the steps
the scheduler really formed, computed on **every** step (a census, :func:`shapley_census`, no
model involved): each step's values come from ``SHAPLEY_PAIRS`` antithetic pairs of orderings
(every ordering, exact, for a step of a few requests), rescaled to the step's latency.  A step
takes about a millisecond this way, so sampling steps (where one long prompt chunk moves a
tenant's sampled share by a percent) is not needed.  The window skips the first ``warmup``
fraction of the horizon (the engine filling up).  What is left is Monte Carlo error inside the
steps; each step's ordering pairs are independent estimates, so their spread gives the step's
covariance across tenants, and the window's covariance is the sum over its steps.  Every
fairness figure carries a **95% interval** (``*_ci95``): the figure computed on
``INTERVAL_DRAWS`` tenant totals drawn from that normal approximation, 2.5th to 97.5th
percentile.  Beside it, for comparison only, ``attributed_share`` is the LLMVisor model's share
of the same window and ``attributed_over_true`` its ratio to the true share.

**Backlogged**: a tenant with a request that has arrived but not yet been scheduled at a
fraction ``BACKLOG_FRACTION`` or more of the window's step ends.  Only backlogged tenants can be
held to their entitlement (a tenant asking
for less than its share gets what it asks for), so the fairness figures are over them: each
one's *normalised share* ``x_t = (true_t / Σ_B true) / (w_t / Σ_B w)`` (1 = exactly its
entitlement among the backlogged), its relative gap ``|x_t − 1|``, and Jain's index
``(Σx)² / (|B| Σx²)`` (1 = perfectly proportional).

**Service**: TTFT and TPOT p50/p99 per tenant over requests arriving in the window.  A request
with no first token by the horizon counts with TTFT = horizon − arrival (a lower bound: leaving
it out would flatter the policy that starved it); ``unserved`` counts them.  ``ttft_cdf_s`` is
the tenant's TTFT distribution as its quantiles at the report's CDF levels
(:data:`shadowd.reports.model.CDF_P`, ``ttft_cdf_levels`` in the result): the CDF the HTML page
draws, at a size that does not grow with the number of requests.

**Over time** (:func:`share_series`): the run's horizon cut into ``WINDOWS`` equal windows, each
step's GPU time counted in the window it ended in; per window and tenant, its Shapley GPU time
(the census covers the warm-up too) as a share of the window's total.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shadowd.replay.lifecycle import ServiceDriver
from shadowd.reports.model import CDF_P
from shadowd.sim.truth import TenantShapley, tenant_shapley
from shadowd.steps.batch import StepBatch
from shadowd.twin.step_latency import ReferenceEngine

BACKLOG_FRACTION = 0.9
WINDOWS = 30
SHAPLEY_PAIRS = 8  # antithetic pairs of orderings per step
INTERVAL_DRAWS = 4000
INTERVAL_NOTE = (
    "95% interval of the Monte Carlo error: every step of the window is scored, each with independent "
    "ordering pairs; their spread gives each step's covariance, summed over steps (normal approximation)"
)
VTC_W_P, VTC_W_Q = 1.0, 2.0


def _pct(x: list[float], q: float) -> float | None:
    return float(np.percentile(x, q)) if x else None


def _first_scheduled(driver: ServiceDriver) -> dict[str, int]:
    out: dict[str, int] = {}
    ends = driver.step_end_ns
    for i, st in enumerate(driver.steps):
        start = ends[i - 1] if i else driver._origin_ns
        for rid in st.req_ids:
            out.setdefault(rid, start)
    return out


def tenant_service(driver: ServiceDriver, t0_ns: int, stop_ns: int) -> dict[str, dict[str, Any]]:
    """Per tenant: TTFT/TPOT p50/p99 (s), output tokens per second, preemptions, unserved."""
    by: dict[str, dict[str, list]] = {}
    span_s = (stop_ns - t0_ns) / 1e9
    for s in driver.service.values():
        if s.arrival_ns < t0_ns or s.arrival_ns > stop_ns:
            continue
        d = by.setdefault(s.tenant, {"ttft": [], "tpot": [], "tokens": 0, "pre": 0, "unserved": 0, "n": 0})
        d["n"] += 1
        d["pre"] += s.preemptions
        if s.first_token_ns is None:
            d["unserved"] += 1
            d["ttft"].append((stop_ns - s.arrival_ns) / 1e9)
        else:
            d["ttft"].append(s.ttft_s)
            d["tokens"] += s.tokens
            if s.tpot_s is not None:
                d["tpot"].append(s.tpot_s)
    return {
        t: {
            "requests": d["n"],
            "unserved": d["unserved"],
            "ttft_p50_s": _pct(d["ttft"], 50),
            "ttft_p99_s": _pct(d["ttft"], 99),
            "tpot_p50_ms": None if not d["tpot"] else 1e3 * _pct(d["tpot"], 50),
            "tpot_p99_ms": None if not d["tpot"] else 1e3 * _pct(d["tpot"], 99),
            "output_tokens_per_s": d["tokens"] / span_s if span_s > 0 else None,
            "preemptions": d["pre"],
            "ttft_cdf_s": [float(v) for v in np.percentile(d["ttft"], [100 * p for p in CDF_P])]
            if d["ttft"]
            else None,
        }
        for t, d in sorted(by.items())
    }


def shapley_census(
    driver: ServiceDriver,
    batch: StepBatch,
    engine: ReferenceEngine,
    names: list[str],
    t0_ns: int,
    *,
    pairs: int = SHAPLEY_PAIRS,
    seed: int = 0,
) -> TenantShapley:
    """Shapley values of the engine's ``T`` on every step of the run, per tenant; the steps
    ending at or after ``t0_ns`` are the scored window (their Monte Carlo error is summed)."""
    ends = np.asarray(driver.step_end_ns)
    steps = np.arange(batch.num_steps)
    return tenant_shapley(engine, batch, steps, names, pairs=pairs, seed=seed, scored=ends >= t0_ns)


def true_shares(
    driver: ServiceDriver,
    batch: StepBatch,
    census: TenantShapley,
    weights: dict[str, float],
    t0_ns: int,
    *,
    attributed_ms: np.ndarray | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Shapley shares of the window per tenant with 95% intervals, backlog, normalised shares, Jain's index."""
    ends = np.asarray(driver.step_end_ns)
    first = int(np.searchsorted(ends, t0_ns))
    names = sorted(weights)
    if census.names != names:
        raise ValueError(f"census tenants {census.names} differ from the weights' {names}")
    scored = census.steps >= first
    gpu = census.per_step[scored].sum(axis=0)
    in_window = batch.req_step >= first
    tokens = np.where(batch.prefill, VTC_W_P, VTC_W_Q) * batch.new_tokens  # what VTC charges
    vtc = {t: float(tokens[in_window & (batch.tenant == t)].sum()) for t in names}
    vtc_total = sum(vtc.values())
    att: dict[str, float | None] = {}
    if attributed_ms is not None:
        window_ms = float(attributed_ms[in_window].sum())
        for t in names:
            mine = float(attributed_ms[in_window & (batch.tenant == t)].sum())
            att[t] = mine / window_ms if window_ms > 0 else None
    queued = _queued_fraction(driver, ends[census.steps[scored]], names)
    backlogged = [t for t in names if queued[t] >= BACKLOG_FRACTION]
    point = _fairness(gpu[None, :], names, weights, backlogged)
    draws = _fairness(_draw_totals(gpu, census.cov, seed), names, weights, backlogged)

    def ci(key: str, j: int | None = None) -> list[float] | None:
        v = draws[key] if j is None else draws[key][:, j]
        v = v[np.isfinite(v)]
        return [float(q) for q in np.percentile(v, [2.5, 97.5])] if v.size else None

    bi = {t: i for i, t in enumerate(backlogged)}
    per_tenant = {}
    for j, t in enumerate(names):
        share = float(point["share"][0, j])
        x = float(point["x"][0, bi[t]]) if t in bi else None
        per_tenant[t] = {
            "true_share": share if np.isfinite(share) else None,
            "true_share_ci95": ci("share", j),
            "attributed_share": att.get(t),
            "attributed_over_true": att[t] / share if att.get(t) is not None and share > 0 else None,
            "vtc_token_share": vtc[t] / vtc_total if vtc_total > 0 else None,
            "entitlement": weights[t] / sum(weights.values()),
            "queued_fraction": queued[t],
            "backlogged": t in bi,
            "normalised_share": x,
            "normalised_share_ci95": ci("x", bi[t]) if t in bi else None,
            "gap": abs(x - 1.0) if x is not None else None,
            "gap_ci95": ci("gap", bi[t]) if t in bi else None,
        }
    return {
        "method": "census",
        "shapley_steps": int(scored.sum()),
        "exact_steps": int(census.exact[scored].sum()),
        "pairs_per_step": census.pairs,
        "interval": INTERVAL_NOTE,
        "per_tenant": per_tenant,
        "backlogged": backlogged,
        "jain": _scalar(point["jain"]),
        "jain_ci95": ci("jain"),
        "max_gap": _scalar(point["max_gap"]),
        "max_gap_ci95": ci("max_gap"),
    }


def _scalar(v: np.ndarray) -> float | None:
    return float(v[0]) if np.isfinite(v[0]) else None


def _draw_totals(gpu: np.ndarray, cov: np.ndarray, seed: int) -> np.ndarray:
    """``INTERVAL_DRAWS`` tenant totals from the normal approximation of their Monte Carlo error."""
    w, v = np.linalg.eigh(cov)
    root = v * np.sqrt(np.clip(w, 0.0, None))
    z = np.random.default_rng(seed).standard_normal((INTERVAL_DRAWS, len(gpu)))
    return gpu[None, :] + z @ root.T


def _fairness(
    totals: np.ndarray, names: list[str], weights: dict[str, float], backlogged: list[str]
) -> dict[str, np.ndarray]:
    """Per row of tenant totals: shares, normalised shares and gaps of the backlogged, Jain, max gap."""
    with np.errstate(invalid="ignore", divide="ignore"):
        share = totals / totals.sum(axis=1, keepdims=True)
        cols = [names.index(t) for t in backlogged]
        w = np.array([weights[t] for t in backlogged], dtype=np.float64)
        b = totals[:, cols]
        x = (b / b.sum(axis=1, keepdims=True)) / (w / w.sum()) if cols else np.zeros((len(totals), 0))
        gap = np.abs(x - 1.0)
        n = x.shape[1]
        jain = (x.sum(axis=1) ** 2) / (n * (x**2).sum(axis=1)) if n else np.full(len(totals), np.nan)
        max_gap = gap.max(axis=1) if n else np.full(len(totals), np.nan)
    return {"share": share, "x": x, "gap": gap, "jain": jain, "max_gap": max_gap}


def _queued_fraction(driver: ServiceDriver, times_ns: np.ndarray, names: list[str]) -> dict[str, float]:
    """Per tenant, the fraction of ``times_ns`` at which it had an arrived, unscheduled request."""
    first = _first_scheduled(driver)
    stop = np.iinfo(np.int64).max
    out = {}
    for t in names:
        iv = [(s.arrival_ns, first.get(rid, stop)) for rid, s in driver.service.items() if s.tenant == t]
        if not iv or not len(times_ns):
            out[t] = 0.0
            continue
        a = np.array(iv, dtype=np.int64)
        # queued at time x  <=>  #arrived(<= x) > #first-scheduled(<= x)
        arrived = np.searchsorted(np.sort(a[:, 0]), times_ns, side="right")
        started = np.searchsorted(np.sort(a[:, 1]), times_ns, side="right")
        out[t] = float(np.mean(arrived > started))
    return out


def step_tenant_ms(batch: StepBatch, row_ms: np.ndarray, names: list[str]) -> np.ndarray:
    """Per-row ms summed per step and tenant: ``(num_steps, len(names))``."""
    out = np.zeros((batch.num_steps, len(names)))
    for j, t in enumerate(names):
        m = batch.tenant == t
        out[:, j] = np.bincount(batch.req_step[m], weights=row_ms[m], minlength=batch.num_steps)
    return out


def share_series(
    driver: ServiceDriver, step_ms: np.ndarray, names: list[str], *, windows: int = WINDOWS
) -> dict[str, Any]:
    """Per window of the horizon, each tenant's share of the window's GPU time.

    ``step_ms[s, t]``: tenant ``names[t]``'s GPU time on step ``s`` (Shapley values, or a model's
    attribution).  ``t_s``: window starts in simulated seconds from the run's start; ``gpu_ms``:
    the window's total (so shares over any run of windows can be pooled); a share is ``None`` in
    a window with no GPU time."""
    span_ns = max(driver.stop_ns - driver._origin_ns, 1)
    width_ns = span_ns / windows
    ends = np.asarray(driver.step_end_ns, dtype=np.int64)
    step_window = np.clip(((ends - driver._origin_ns) / width_ns).astype(np.int64), 0, windows - 1)
    per = np.zeros((len(names), windows))
    for i in range(len(names)):
        per[i] = np.bincount(step_window, weights=step_ms[: len(ends), i], minlength=windows)
    total = per.sum(axis=0)
    return {
        "width_s": width_ns / 1e9,
        "t_s": [i * width_ns / 1e9 for i in range(windows)],
        "gpu_ms": [float(v) for v in total],
        "share": {
            t: [float(v / tot) if tot > 0 else None for v, tot in zip(per[i], total)]
            for i, t in enumerate(names)
        },
    }
