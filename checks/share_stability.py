"""Does a request's attributed share depend on *who else* was in its batch?

A fair split charges a request for its own work. Rows (one request in one step) are grouped
by shape bucket: phase, log2 bucket of new tokens, log2 bucket of context. Within a bucket,
``log(share)`` is regressed on the request's own (log1p) shape, which soaks up what the wide
buckets leave, and on the (log1p) *composition* covariates: batch size, the others' prefill
tokens, the others' context. The effect size is the standard deviation of the fitted
composition component, i.e. the typical relative change of a request's share caused by its
batch-mates (0.10 ≈ ±10 %), corrected for the upward bias of fitting noise, averaged over
buckets weighted by rows. It is a magnitude, not a p-value: at these sample sizes every
dependence is "significant", what matters is how large it is.

The confidence interval is a cluster bootstrap (all rows of one step drawn together when
``groups`` gives step ids), computed from per-bucket moment matrices: all replicates come
from one product of resampling weights with the rows' moments and small solves, not a refit
per replicate. ``stability_report`` scores several splits (e.g. 'llmvisor' and
'token_baseline') side by side with the same resamples, and gives
paired differences. ``cost_per_work_by_strata`` is the tenant-level view: cost per unit of
work (e.g. ms per token) in low vs high batch-size strata, and their ratio.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> n = 4000
>>> batch = rng.integers(1, 64, n)
>>> ctx = rng.integers(100, 4000, n)
>>> bucket = shape_buckets(np.full(n, "decode"), np.ones(n), ctx)
>>> own = {"context": ctx}
>>> comp = {"batch_size": batch, "others_context": ctx * (batch - 1)}
>>> fair = (0.02 + 1e-5 * ctx) * rng.lognormal(0, 0.05, n)   # depends on own work only
>>> unfair = fair * 8 / batch                                  # shrinks as the batch grows
>>> rep = stability_report({"fair": fair, "unfair": unfair}, bucket, comp, own=own,
...                        groups=np.arange(n) // 8, n_boot=100)
>>> rep["fair"]["effect"] < 0.02 < 0.5 < rep["unfair"]["ci_low"]
True
>>> rep["differences"]["unfair - fair"]["ci_low"] > 0
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from checks.resample import group_weights


def log2_bucket(x: np.ndarray | Sequence[float]) -> np.ndarray:
    """``floor(log2(1 + x))``: 0 → 0, 1 → 1, 2..3 → 1..2, 1000 → 9."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    return np.floor(np.log2(1.0 + x)).astype(int)


@dataclass(frozen=True)
class Buckets:
    """Shape buckets as codes: ``labels`` (distinct, sorted) and each row's index into them.

    What :func:`shape_buckets` gives as one label string per row, at a few bytes per row instead
    of four per character: a calibration window holds tens of millions of rows
    (``benchmarks/window_memory.py``).  Either form gives the same report.
    """

    labels: np.ndarray
    codes: np.ndarray

    def per_row(self) -> np.ndarray:
        """One label per row, as :func:`shape_buckets` returns them."""
        return self.labels[self.codes]


def shape_bucket_codes(
    phase: Sequence[str] | np.ndarray,
    new_tokens: Sequence[float] | np.ndarray,
    context: Sequence[float] | np.ndarray,
) -> Buckets:
    """Each row's bucket (phase, log2 bucket of new tokens, of context), as codes.

    >>> b = shape_bucket_codes(["decode", "prefill", "decode"], [1, 512, 1], [100, 0, 3000])
    >>> b.labels.tolist(), b.codes.tolist()
    (['decode|n1|c11', 'decode|n1|c6', 'prefill|n9|c0'], [1, 2, 0])
    """
    p = np.asarray(phase).astype(str)
    if len(p) == 0:
        return Buckets(np.zeros(0, dtype="<U1"), np.zeros(0, dtype=np.intp))
    names, p_idx = np.unique(p, return_inverse=True)
    nb, cb = log2_bucket(new_tokens), log2_bucket(context)
    # The labels are built once per distinct bucket, not per row (a window holds ~10^6 rows and
    # a few dozen buckets): ``benchmarks/stability_cost.py``.
    code = (p_idx.astype(np.int64) * (nb.max() + 1) + nb) * (cb.max() + 1) + cb
    uniq, inv = np.unique(code, return_inverse=True)
    first = np.zeros(len(uniq), dtype=np.int64)
    first[inv[::-1]] = np.arange(len(code))[::-1]
    labels = np.array([f"{names[p_idx[i]]}|n{nb[i]}|c{cb[i]}" for i in first])
    # Sorted as ``np.unique`` sorts the labels, so a report's buckets come in the same order
    # from codes as from strings.
    ordered, rank = np.unique(labels, return_inverse=True)
    return Buckets(ordered, rank.reshape(-1)[inv.reshape(-1)])


def shape_buckets(
    phase: Sequence[str] | np.ndarray,
    new_tokens: Sequence[float] | np.ndarray,
    context: Sequence[float] | np.ndarray,
) -> np.ndarray:
    """Bucket key per row, e.g. ``'decode|n1|c11'`` (:func:`shape_bucket_codes` as strings)."""
    return shape_bucket_codes(phase, new_tokens, context).per_row()


def _design(share: np.ndarray, composition: Mapping[str, Any], own: Mapping[str, Any] | None):
    """``A = [1, own (q), composition (k), y]`` per row, built in place: a window's rows are tens
    of millions, and each column stacked or standardised as a new array added a copy of the
    window to the peak (``benchmarks/window_memory.py``)."""
    share = np.asarray(share, dtype=float)
    covariates = [*(own or {}).values(), *composition.values()]
    p = 1 + len(covariates)
    A = np.empty((len(share), p + 1))
    A[:, 0] = 1.0
    for i, v in enumerate(covariates, start=1):
        A[:, i] = np.log1p(np.maximum(np.asarray(v, dtype=float), 0))
    A[:, p] = np.log(share, where=share > 0, out=np.full(len(share), np.nan))
    X = A[:, 1:p]
    ok = np.isfinite(A[:, p]) & np.all(np.isfinite(X), axis=1)
    if ok.any():
        held = X[ok]
        mu, sd = held.mean(axis=0), held.std(axis=0)
        del held
        X -= mu  # conditioning only: the effect is affine-invariant
        X /= np.where(sd > 0, sd, 1.0)
    return A, ok, len(own or {}), len(composition)


def _moment_stats(G: np.ndarray, q: int, k: int) -> dict[str, np.ndarray]:
    """Effect, partial R² and standardised slopes from weighted moments.

    ``G = A' W A`` with ``A = [1, own (q), composition (k), y]``; leading dimensions of ``G``
    are replicates (bootstrap draws), handled in one pass.
    """
    p = 1 + q + k
    n = G[..., 0, 0]
    ZZ, Zy, yy = G[..., :p, :p], G[..., :p, p], G[..., p, p]
    inv = np.linalg.pinv(ZZ)
    coef = np.einsum("...ij,...j->...i", inv, Zy)
    rss = np.maximum(yy - np.einsum("...i,...i->...", coef, Zy), 0.0)
    inv_r = np.linalg.pinv(G[..., : 1 + q, : 1 + q])
    coef_r = np.einsum("...ij,...j->...i", inv_r, G[..., : 1 + q, p])
    rss_r = np.maximum(yy - np.einsum("...i,...i->...", coef_r, G[..., : 1 + q, p]), 0.0)
    c = slice(1 + q, p)
    m = G[..., 0, c] / n[..., None]
    cov_c = G[..., c, c] / n[..., None, None] - m[..., :, None] * m[..., None, :]
    gamma = coef[..., c]
    var_comp = np.einsum("...i,...ij,...j->...", gamma, cov_c, gamma)
    dof = np.maximum(n - np.linalg.matrix_rank(ZZ), 1.0)
    s2 = rss / dof
    bias = s2 * np.einsum("...ij,...ji->...", cov_c, inv[..., c, c])
    effect = np.sqrt(np.maximum(var_comp - bias, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        partial_r2 = np.where(rss_r > 0, 1.0 - rss / rss_r, 0.0)
    slopes = gamma * np.sqrt(np.maximum(np.diagonal(cov_c, axis1=-2, axis2=-1), 0.0))
    return {"effect": effect, "partial_r2": partial_r2, "slopes": slopes, "n": n}


def _group_moments(A: np.ndarray, b_idx: np.ndarray, g_idx: np.ndarray):
    """``A'A`` per (bucket, group), sorted by bucket then group; and each one's bucket and group.

    A bootstrap replicate weighs whole groups, so it needs only these sums, not the rows (a
    step holds many rows); built one pair of columns at a time, never a rows × d² array
    (``benchmarks/stability_cost.py``).  Sorts ``A``'s rows in place, a column at a time: a
    sorted copy was one more window of rows at the peak (``benchmarks/window_memory.py``)."""
    order = np.lexsort((g_idx, b_idx))
    b_s, g_s = b_idx[order], g_idx[order]
    for i in range(A.shape[1]):
        A[:, i] = A[order, i]
    del order
    starts = np.flatnonzero(np.r_[True, (b_s[1:] != b_s[:-1]) | (g_s[1:] != g_s[:-1])])
    d = A.shape[1]
    M = np.empty((len(starts), d, d))
    for i in range(d):
        for j in range(i, d):
            M[:, i, j] = M[:, j, i] = np.add.reduceat(A[:, i] * A[:, j], starts)
    return M, b_s[starts], g_s[starts]


def _bucket_moments(A: np.ndarray, b_idx: np.ndarray, g_idx: np.ndarray, gw: np.ndarray, used: np.ndarray):
    """Per bucket in ``used``: its moment matrix ``A'A`` and, with replicates (``gw``: weights per
    group), each replicate's, from the per-(bucket, group) sums of ``_group_moments``."""
    M, seg_b, seg_g = _group_moments(A, b_idx, g_idx)
    bounds = np.searchsorted(seg_b, np.arange(int(b_idx.max()) + 2))
    d = A.shape[1]
    for b in used:
        Mb, gb = M[bounds[b] : bounds[b + 1]], seg_g[bounds[b] : bounds[b + 1]]
        boot = (gw[:, gb] @ Mb.reshape(len(gb), d * d)).reshape(len(gw), d, d) if len(gw) else None
        yield Mb.sum(axis=0), boot


def _effect_with_boot(bucket, share, composition, own, groups, min_rows, n_boot, seed):
    A, ok, q, k = _design(share, composition, own)
    if isinstance(bucket, Buckets):
        present, b_idx, counts = np.unique(bucket.codes[ok], return_inverse=True, return_counts=True)
        uniq = bucket.labels[present]
    else:
        uniq, b_idx, counts = np.unique(np.asarray(bucket)[ok], return_inverse=True, return_counts=True)
    if not ok.all():
        A = A[ok]
    grp = np.asarray(groups)[ok] if groups is not None else np.arange(len(A))
    _, g_idx = np.unique(grp, return_inverse=True)
    used = np.flatnonzero(counts >= min_rows)
    rng = np.random.default_rng(seed)
    n_groups = int(g_idx.max()) + 1 if len(g_idx) else 0
    gw = (
        rng.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=n_boot).astype(float)
        if n_boot and n_groups
        else np.zeros((0, n_groups))
    )
    point = {"effect": [], "partial_r2": [], "slopes": [], "n": []}
    boot_eff = np.zeros((n_boot, len(used)))
    boot_n = np.zeros((n_boot, len(used)))
    per_bucket = []
    d = A.shape[1]
    moments = _bucket_moments(A, b_idx, g_idx, gw, used) if len(used) else ()
    for j, (b, (G, Gb)) in enumerate(zip(used, moments)):
        st = _moment_stats(G, q, k)
        for key in point:
            point[key].append(st[key])
        per_bucket.append({"bucket": str(uniq[b]), "rows": int(counts[b]), "effect": float(st["effect"])})
        if Gb is not None:
            sb = _moment_stats(Gb, q, k)
            boot_eff[:, j] = np.where(sb["n"] > d, sb["effect"], np.nan)
            boot_n[:, j] = np.where(sb["n"] > d, sb["n"], 0.0)
    return (
        point,
        per_bucket,
        boot_eff,
        boot_n,
        int(ok.sum()),
        int((~ok).sum()),
        int(counts[used].sum()) if len(used) else 0,
    )


def _weighted(values: np.ndarray, weights: np.ndarray, axis: int = -1) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    v = np.nan_to_num(np.asarray(values, dtype=float))
    tot = w.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, (v * w).sum(axis=axis) / tot, np.nan)


def _composition_effect(
    bucket, share, composition, *, own=None, groups=None, min_rows=30, n_boot=200, ci=0.95, seed=0
) -> tuple[dict[str, Any], np.ndarray]:
    point, per_bucket, boot_eff, boot_n, n_ok, n_bad, n_used = _effect_with_boot(
        bucket, share, composition, own, groups, min_rows, n_boot, seed
    )
    names = list(composition)
    out: dict[str, Any] = {
        "covariates": names,
        "units": "sd of log(share) explained by composition (≈ relative)",
        "rows": n_ok,
        "rows_dropped": n_bad,
        "rows_in_buckets_used": n_used,
        "buckets": len(per_bucket),
        "min_rows": min_rows,
        "n_boot": n_boot,
        "ci_level": ci,
    }
    if not per_bucket:
        return {
            **out,
            "effect": None,
            "ci_low": None,
            "ci_high": None,
            "partial_r2": None,
            "slopes": {},
            "per_bucket": [],
        }, np.full(n_boot, np.nan)
    w = np.asarray(point["n"], dtype=float)
    slopes = np.asarray(point["slopes"], dtype=float)
    boot = _weighted(boot_eff, boot_n, axis=1) if n_boot else np.zeros(0)
    a = (1 - ci) / 2
    lo, hi = np.nanquantile(boot, [a, 1 - a]) if n_boot and np.isfinite(boot).any() else (np.nan, np.nan)
    out.update(
        effect=float(_weighted(np.asarray(point["effect"]), w)),
        ci_low=float(lo) if np.isfinite(lo) else None,
        ci_high=float(hi) if np.isfinite(hi) else None,
        partial_r2=float(_weighted(np.asarray(point["partial_r2"]), w)),
        slopes={nm: float(_weighted(slopes[:, i], w)) for i, nm in enumerate(names)},
        per_bucket=sorted(per_bucket, key=lambda r: -r["rows"]),
    )
    return out, boot


def composition_effect(
    bucket: Sequence[str] | np.ndarray | Buckets,
    share: Sequence[float] | np.ndarray,
    composition: Mapping[str, Sequence[float] | np.ndarray],
    *,
    own: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    groups: Sequence[Any] | np.ndarray | None = None,
    min_rows: int = 30,
    n_boot: int = 200,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Composition effect size of one split, with a bootstrap CI (see module docstring).

    ``composition`` and ``own`` map names to per-row non-negative covariates (log1p is
    applied); rows with a non-positive share are dropped and counted; buckets with fewer
    than ``min_rows`` rows are skipped. Returns a plain dict: effect, ci_low, ci_high,
    partial_r2, slopes (standardised, per covariate), per_bucket, row counts.
    """
    return _composition_effect(
        bucket, share, composition, own=own, groups=groups, min_rows=min_rows, n_boot=n_boot, ci=ci, seed=seed
    )[0]


def stability_report(
    shares: Mapping[str, Sequence[float] | np.ndarray],
    bucket: Sequence[str] | np.ndarray | Buckets,
    composition: Mapping[str, Sequence[float] | np.ndarray],
    *,
    own: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    groups: Sequence[Any] | np.ndarray | None = None,
    min_rows: int = 30,
    n_boot: int = 200,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """``composition_effect`` for each named split, plus paired differences between splits.

    All splits use the same bootstrap resamples, so ``differences['b - a']`` (for each pair,
    ``b`` given after ``a``) has a paired CI: a lower bound above 0 means split ``b`` depends
    on batch composition more than ``a``. Pass e.g. ``{'llmvisor': ..., 'token_baseline': ...}``.
    """
    out: dict[str, Any] = {}
    boots: dict[str, np.ndarray] = {}
    for name, share in shares.items():
        out[name], boots[name] = _composition_effect(
            bucket,
            share,
            composition,
            own=own,
            groups=groups,
            min_rows=min_rows,
            n_boot=n_boot,
            ci=ci,
            seed=seed,
        )
    diffs: dict[str, Any] = {}
    names = list(shares)
    a = (1 - ci) / 2
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            if out[x]["effect"] is None or out[y]["effect"] is None:
                continue
            d = boots[y] - boots[x]
            ok = np.isfinite(d)
            lo_ci, hi_ci = np.quantile(d[ok], [a, 1 - a]) if ok.any() else (np.nan, np.nan)
            diffs[f"{y} - {x}"] = {
                "difference": out[y]["effect"] - out[x]["effect"],
                "ci_low": float(lo_ci) if np.isfinite(lo_ci) else None,
                "ci_high": float(hi_ci) if np.isfinite(hi_ci) else None,
            }
    out["differences"] = diffs
    return out


def cost_per_work_by_strata(
    tenant: Sequence[str] | np.ndarray,
    cost: Sequence[float] | np.ndarray,
    work: Sequence[float] | np.ndarray,
    stratum: Sequence[float] | np.ndarray,
    *,
    edges: Sequence[float] | None = None,
    labels: Sequence[str] | None = None,
    groups: Sequence[Any] | np.ndarray | None = None,
    n_boot: int = 0,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Per tenant, Σcost/Σwork in each composition stratum and the last/first stratum ratio.

    ``stratum`` is a per-row composition variable (e.g. batch size); default is two strata
    split at its median ('low' ≤ median < 'high'). A fair split can still have a ratio ≠ 1
    (batching does amortise work), so compare splits with each other or with ground truth.
    ``n_boot`` > 0 adds a cluster-bootstrap CI of each ratio.

    >>> r = cost_per_work_by_strata(["a", "a", "b", "b"], [2.0, 1.0, 4.0, 2.0], [1, 1, 2, 2],
    ...                             [1, 10, 1, 10])
    >>> r["tenants"]["a"]["ratio"], r["tenants"]["b"]["high"]["cost_per_work"]
    (0.5, 1.0)
    """
    t = np.asarray(tenant).astype(str)
    c = np.asarray(cost, dtype=float)
    w = np.asarray(work, dtype=float)
    s = np.asarray(stratum, dtype=float)
    ok = np.isfinite(c) & np.isfinite(w) & np.isfinite(s) & (w > 0)
    t, c, w, s = t[ok], c[ok], w[ok], s[ok]
    if edges is None:
        edges = [float(np.median(s))] if len(s) else [0.0]
    edges = list(edges)
    labels = (
        list(labels)
        if labels is not None
        else (["low", "high"] if len(edges) == 1 else [f"s{i}" for i in range(len(edges) + 1)])
    )
    if len(labels) != len(edges) + 1:
        raise ValueError(f"{len(edges)} edges need {len(edges) + 1} labels, got {len(labels)}")
    st = np.searchsorted(np.asarray(edges), s, side="left")  # value == edge: lower stratum
    tenants, t_idx = np.unique(t, return_inverse=True)
    cell = t_idx * len(labels) + st
    n_cells = len(tenants) * len(labels)

    def ratios(weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cw = c if weights is None else c * weights
        ww = w if weights is None else w * weights
        sc = np.bincount(cell, cw, n_cells).reshape(len(tenants), len(labels))
        sw = np.bincount(cell, ww, n_cells).reshape(len(tenants), len(labels))
        with np.errstate(invalid="ignore", divide="ignore"):
            cpw = np.where(sw > 0, sc / sw, np.nan)
        return cpw, sw, cpw[:, -1] / cpw[:, 0]

    cpw, sw, ratio = ratios(None)
    rows = np.bincount(cell, minlength=n_cells).reshape(len(tenants), len(labels))
    lo = hi = np.full(len(tenants), np.nan)
    if n_boot:
        rng = np.random.default_rng(seed)
        grp = np.asarray(groups)[ok] if groups is not None else np.arange(len(c))
        reps = np.stack([ratios(group_weights(grp, rng))[2] for _ in range(n_boot)])
        a = (1 - ci) / 2
        with np.errstate(invalid="ignore"):
            lo, hi = np.nanquantile(reps, a, axis=0), np.nanquantile(reps, 1 - a, axis=0)

    def num(x: float) -> float | None:
        return float(x) if np.isfinite(x) else None

    out_t = {}
    for i, name in enumerate(tenants):
        out_t[str(name)] = {
            **{
                lab: {"cost_per_work": num(cpw[i, j]), "rows": int(rows[i, j]), "work": float(sw[i, j])}
                for j, lab in enumerate(labels)
            },
            "ratio": num(ratio[i]),
            "ci_low": num(lo[i]),
            "ci_high": num(hi[i]),
        }
    finite = ratio[np.isfinite(ratio) & (ratio > 0)]
    return {
        "strata": labels,
        "edges": edges,
        "tenants": out_t,
        "max_abs_log_ratio": float(np.abs(np.log(finite)).max()) if len(finite) else None,
    }
