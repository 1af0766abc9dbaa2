"""What a policy did to each tenant: service received, and true GPU time against entitlement.

**True GPU time** is the Shapley value of the reference engine's noiseless ``T`` on the steps
the scheduler really formed (:func:`shadowd.sim.truth.step_shapley`), on ``sample_steps`` steps
spread over the measurement window (one drawn per equal run of steps).  The window skips the
first ``warmup`` fraction of the horizon (the engine filling up).  A few hundred steps are too few
on their own: one step with a long prompt chunk moves a tenant's sampled share by a percent.  So
the per-tenant total is a **ratio estimate**: the LLMVisor model's shares summed over *every*
step of the window, times the tenant's ratio of Shapley to LLMVisor on the sampled steps (the
sample calibrates the model; with no model it is the sampled Shapley share alone).  Both the
sampled Shapley share and the model's share on the sample are reported beside it.

**Backlogged**: a tenant with a request that has arrived but not yet been scheduled at a
fraction ``BACKLOG_FRACTION`` or more of the sampled steps.  Only backlogged tenants can be held to their entitlement (a tenant asking
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
step's GPU time counted in the window it ended in.  Per window and tenant, the model's attributed
time times the tenant's Shapley-to-model ratio on the sample (the same ratio estimate as the
totals; a window holds too few sampled steps for Shapley alone), as a share of the window's total.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shadowd.replay.lifecycle import ServiceDriver
from shadowd.reports.model import CDF_P
from shadowd.sim.truth import spread_sample, step_shapley
from shadowd.steps.batch import StepBatch
from shadowd.twin.step_latency import ReferenceEngine

BACKLOG_FRACTION = 0.9
WINDOWS = 30
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


def true_shares(
    driver: ServiceDriver,
    batch: StepBatch,
    engine: ReferenceEngine,
    weights: dict[str, float],
    t0_ns: int,
    *,
    sample_steps: int,
    seed: int = 0,
    permutations: int = 32,
    attributed_ms: np.ndarray | None = None,
) -> dict[str, Any]:
    """Shapley shares of the sampled steps per tenant, backlog, normalised shares, Jain's index."""
    ends = np.asarray(driver.step_end_ns)
    first = int(np.searchsorted(ends, t0_ns))
    idx = first + spread_sample(len(ends) - first, sample_steps, seed)
    rows, phi = step_shapley(engine, batch, idx, permutations=permutations, seed=seed)
    tenants = batch.tenant[rows]
    names = sorted(weights)
    sampled = {t: float(phi[tenants == t].sum()) for t in names}
    in_window = batch.req_step >= first
    tokens = np.where(batch.prefill, VTC_W_P, VTC_W_Q) * batch.new_tokens  # what VTC charges
    vtc = {t: float(tokens[in_window & (batch.tenant == t)].sum()) for t in names}
    vtc_total = sum(vtc.values())
    gpu, att, att_all, ratio = dict(sampled), {}, {}, {}
    if attributed_ms is not None:
        a = attributed_ms[rows]
        att = {t: float(a[tenants == t].sum()) / float(a.sum()) for t in names}
        window_ms = float(attributed_ms[in_window].sum())
        for t in names:  # ratio estimator: the model over every step, corrected by the sample
            mine = float(attributed_ms[in_window & (batch.tenant == t)].sum())
            att_all[t] = mine / window_ms if window_ms > 0 else None
            on_sample = float(a[tenants == t].sum())
            if on_sample > 0:
                ratio[t] = sampled[t] / on_sample
                gpu[t] = mine * ratio[t]
    total = sum(gpu.values())
    sampled_total = sum(sampled.values())
    queued = _queued_fraction(driver, ends[idx], names)
    backlogged = [t for t in names if queued[t] >= BACKLOG_FRACTION]
    b_gpu = sum(gpu[t] for t in backlogged)
    b_w = sum(weights[t] for t in backlogged)
    x = {t: (gpu[t] / b_gpu) / (weights[t] / b_w) for t in backlogged} if b_gpu > 0 else {}
    xs = np.array(list(x.values()))
    return {
        "sampled_steps": int(len(idx)),
        "per_tenant": {
            t: {
                "true_share": gpu[t] / total if total > 0 else None,
                "sampled_true_share": sampled[t] / sampled_total if sampled_total > 0 else None,
                "attributed_share": att_all.get(t),
                "shapley_over_attributed": ratio.get(t),
                "vtc_token_share": vtc[t] / vtc_total if vtc_total > 0 else None,
                "attributed_share_on_sample": att.get(t),
                "entitlement": weights[t] / sum(weights.values()),
                "queued_fraction": queued[t],
                "backlogged": t in x,
                "normalised_share": x.get(t),
                "gap": abs(x[t] - 1.0) if t in x else None,
            }
            for t in names
        },
        "backlogged": backlogged,
        "jain": float(xs.sum() ** 2 / (len(xs) * (xs**2).sum())) if len(xs) else None,
        "max_gap": float(np.abs(xs - 1).max()) if len(xs) else None,
    }


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


def share_series(
    driver: ServiceDriver,
    batch: StepBatch,
    attributed_ms: np.ndarray,
    scale: dict[str, float],
    *,
    windows: int = WINDOWS,
) -> dict[str, Any]:
    """Per window of the horizon, each tenant's share of the window's GPU time.

    A tenant's attributed ms count times ``scale[tenant]`` (its Shapley-to-model ratio; 1 where
    absent).  ``t_s``: window starts in simulated seconds from the run's start; ``gpu_ms``: the
    window's total (so shares over any run of windows can be pooled); a share is ``None`` in a
    window with no GPU time."""
    span_ns = max(driver.stop_ns - driver._origin_ns, 1)
    width_ns = span_ns / windows
    ends = np.asarray(driver.step_end_ns, dtype=np.int64)
    step_window = np.clip(((ends - driver._origin_ns) / width_ns).astype(np.int64), 0, windows - 1)
    row_window = step_window[batch.req_step]
    names = sorted(set(batch.tenant.tolist()) | set(scale))
    per = np.zeros((len(names), windows))
    for i, t in enumerate(names):
        m = batch.tenant == t
        per[i] = np.bincount(row_window[m], weights=attributed_ms[m], minlength=windows) * scale.get(t, 1.0)
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
