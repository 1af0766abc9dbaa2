"""The share-stability check's cost on a gate window: group moments against the row-level bootstrap.

The gate's stability check (``checks/share_stability.py``, scheduled by the daemon) bootstraps
the composition effect over whole steps.  It used to form each replicate from the rows: a
``replicates × rows`` weight matrix times a ``rows × d²`` array of per-row moment products, per
shape bucket — time and memory that grow with the rows of the window.  Now a bucket's moments are
summed per step first, and the replicates weigh steps.  This benchmark runs both on one window of
changing batches (batch size swinging between a few and a few hundred requests, mostly decode
rows with growing contexts, prompt chunks in some steps, shares with a composition-dependent part)
and records wall time, peak traced memory (``tracemalloc``: numpy's buffers) and how far the
figures of the two agree; the row-level form is kept here, and only here, as the reference.

    .venv/bin/python -m benchmarks.run --only stability
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import numpy as np

import checks
import checks.share_stability as stability

STEPS = 3000
N_BOOT = 200  # the daemon's default ([stability] n_boot)


def window(steps: int, seed: int = 0) -> dict[str, Any]:
    """Rows of ``steps`` steps whose batch sizes change: the inputs of ``checks.stability_report``."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps)
    sizes = np.clip((130 + 120 * np.sin(t / 150.0) + rng.normal(0, 20, steps)).astype(int), 2, 256)
    step = np.repeat(t, sizes)
    n = len(step)
    prefill = rng.random(n) < 0.02
    new = np.where(prefill, rng.integers(64, 2048, n), 1)
    context = rng.integers(100, 8000, n)
    batch = sizes[step]
    others_prefill = np.bincount(step, weights=new * prefill)[step] - new * prefill
    others_context = np.bincount(step, weights=context)[step] - context
    work = np.where(prefill, 2e-3 * new + 1e-7 * new * context, 4e-5 * context + 0.02)
    share = work * (1 + 0.03 * np.log1p(batch) / 5) * rng.lognormal(0, 0.05, n)
    return {
        "splits": {"llmvisor": share, "token_baseline": new * (0.03 + 0.2 / batch)},
        "bucket": checks.shape_buckets(np.where(prefill, "prefill", "decode"), new, context),
        "composition": {
            "batch_size": batch,
            "others_prefill": others_prefill,
            "others_context": others_context,
        },
        "own": {"new_tokens": new, "context": context},
        "groups": step,
    }


def _row_level(A: np.ndarray, b_idx: np.ndarray, g_idx: np.ndarray, gw: np.ndarray, used: np.ndarray):
    """The former form of ``_bucket_moments`` (the reference): each replicate from the rows."""
    d = A.shape[1]
    for b in used:
        rows = np.flatnonzero(b_idx == b)
        Ab = A[rows]
        outer = (Ab[:, :, None] * Ab[:, None, :]).reshape(len(rows), -1)
        boot = (gw[:, g_idx[rows]] @ outer).reshape(len(gw), d, d) if len(gw) else None
        yield outer.sum(axis=0).reshape(d, d), boot


def point_errors(w: dict[str, Any], split: str = "llmvisor", min_rows: int = 30) -> dict[str, float]:
    """Largest relative error of a bucket's point effect, each form against sums in long double."""
    A, ok, q, k = stability._design(w["splits"][split], w["composition"], w["own"])
    A, keys, grp = A[ok], np.asarray(w["bucket"])[ok], np.asarray(w["groups"])[ok]
    _, b_idx, counts = np.unique(keys, return_inverse=True, return_counts=True)
    _, g_idx = np.unique(grp, return_inverse=True)
    M, seg_b, _ = stability._group_moments(A, b_idx, g_idx)
    bounds = np.searchsorted(seg_b, np.arange(len(counts) + 1))
    worst = {"row_level": 0.0, "group_moments": 0.0}
    for b in np.flatnonzero(counts >= min_rows):
        Ab = A[b_idx == b]
        outer = (Ab[:, :, None] * Ab[:, None, :]).reshape(len(Ab), -1)
        d = A.shape[1]
        exact = stability._moment_stats(
            outer.astype(np.longdouble).sum(axis=0).astype(float).reshape(d, d), q, k
        )
        for name, G in (
            ("row_level", outer.sum(axis=0).reshape(d, d)),
            ("group_moments", M[bounds[b] : bounds[b + 1]].sum(axis=0)),
        ):
            e = float(stability._moment_stats(G, q, k)["effect"])
            if exact["effect"] > 0:
                worst[name] = max(worst[name], abs(e - float(exact["effect"])) / float(exact["effect"]))
    return worst


def _timed(w: dict[str, Any], n_boot: int) -> tuple[dict[str, Any], float, float]:
    tracemalloc.start()
    t0 = time.perf_counter()
    rep = checks.stability_report(
        w["splits"], w["bucket"], w["composition"], own=w["own"], groups=w["groups"], n_boot=n_boot
    )
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return rep, dt, peak / 2**20


def measure(steps: int = STEPS, n_boot: int = N_BOOT) -> dict[str, Any]:
    w = window(steps)
    current = stability._bucket_moments
    stability._bucket_moments = _row_level
    try:
        ref, ref_s, ref_mib = _timed(w, n_boot)
    finally:
        stability._bucket_moments = current
    rep, s, mib = _timed(w, n_boot)
    diff = {
        name: max(
            abs(rep[name][f] - ref[name][f]) / abs(ref[name][f]) for f in ("effect", "ci_low", "ci_high")
        )
        for name in w["splits"]
    }
    return {
        "steps": steps,
        "rows": int(len(w["groups"])),
        "buckets": int(rep["llmvisor"]["buckets"]),
        "n_boot": n_boot,
        "splits": len(w["splits"]),
        "row_level_s": round(ref_s, 3),
        "group_moments_s": round(s, 3),
        "speedup": round(ref_s / s, 2),
        "row_level_peak_mib": round(ref_mib, 1),
        "group_moments_peak_mib": round(mib, 1),
        "max_relative_difference": max(diff.values()),
        "point_error_vs_long_double": point_errors(w),
    }


def run(quick: bool) -> dict[str, Any]:
    return {"stability_cost": measure(STEPS // 3 if quick else STEPS)}


if __name__ == "__main__":
    import json

    print(json.dumps(measure(), indent=1))
