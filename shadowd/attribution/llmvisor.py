"""LLMVisor: an additive, piecewise-linear step-latency model whose terms are per-request shares.

The full paper is not public here; this reconstruction follows its abstract, secondary readings
and the closest published form (DistServe's step model).  Choices made where the text is unknown:

**Terms.** A step ``s`` of batch ``B`` is predicted as
``T̂_s = β_k + Σ_{i∈B} θ_{k,phase(i)} · φ_i`` where ``k`` is the step's segment and each request row
is *prefill-like* (new prompt tokens, chunk continuation, recompute after preemption) or
*decode-like*.  Prefill rows use ``φ = (p, c, p², p·c, 1)``: ``p`` new tokens (GEMM work), ``c``
context already in KV (KV reads, per-chunk overheads), ``p²`` (causal self-attention of the chunk),
``p·c`` (a chunk attending to its own prefix; without it chunked batches are badly predicted) and a
per-request constant.  Decode rows use ``φ = (c, 1, max(p−1, 0))``: attention cost ∝ context, a
per-request constant (the decode token's GEMM row, sampling) and extra draft tokens under speculative
decoding (zero otherwise).  ``p = 1`` makes ``Σp``, ``Σp²`` and ``|B|`` collinear in decode, hence
that reduced set.  Both phases are fitted **jointly** on all steps, so mixed steps identify both.

**Segments.** GEMMs are flat while memory-bound and grow with tokens once compute-bound, and all
rows of a step share them, so the segment is chosen per step by its total tokens ``N = Σp``:
``N ≤ breakpoint`` → segment 0 (memory-bound), else segment 1.  Each segment has its own ``β`` and
``θ`` for both phases (two linear segments per phase, not forced to meet).  The breakpoint is
searched per fit (one platform per fit) over quantiles of the observed ``N``, then refined between
the best candidate's neighbours until every observed value there has been tried.  ``inf`` means
one segment (too little data to split).  Design r18: each segment must also hold at least
:data:`MIN_SEGMENT_LEVELS` distinct values of ``N`` (as many as a segment has coefficients).  A
window of near-lone decode steps (``N`` of 1-3) otherwise let the search split between two token
counts; the upper segment's line through them then charged each extra request of a slightly
bigger batch several times its real cost (``DESIGN`` in ``benchmarks/gate_designs.py``).

**Fit.** Non-negative least squares (``scipy.optimize.nnls``) on step totals, so every share is
≥ 0.  Rows are weighted by ``1/T`` (minimising relative error, the metric reported) and columns are
scaled to unit norm before solving, as the features span ten orders of magnitude.

**Ablations.**  On :mod:`shadowd.attribution.synthetic_steps` (fit on one window, score the
next), leaving out ``p·c`` made out-of-sample relative error much worse (prefill above all) and
one segment instead of two worsened it too, the p99 most; dropping ``p²``, or weighting by
absolute instead of relative error, changed little there.  Those figures, and the same ablations
on the reference engine's CI-sized runs, were not stored, so no document states them; the model
as it is is scored in ``docs/accuracy.md`` (``benchmarks/accuracy_study.py``).

**Shares.** ``v_i = θ·φ_i`` per request (its own work: it depends on the rest of the batch only
through the step's segment), plus a part of the step's fixed term by a stated policy (see
:mod:`shadowd.attribution.shares`).  Under ``equal`` the fixed term divided is the memory-bound
floor ``β₀`` (:attr:`LLMVisorModel.floor_ms`), not a compute-bound segment's own intercept ``β₁``
(a line's extrapolation to zero tokens, below the cost of running any step), and the rest of
``T̂`` is divided by *price*: ``v_i`` for prefill-like rows, the memory-bound ``θ₀·φ_i`` for
decode-like rows (their one token costs GEMM time only because a chunk made the step
compute-bound).  Chosen because it tracks the Shapley ground truth of the reference engine
more closely than the plain ``β/|B|`` split (a development comparison, not stored; the policies as
they are, per run, against the Shapley values: ``docs/accuracy.md``, "Against the ground truth"
and "Held-out runs", measured by ``benchmarks/accuracy_study.py``; see also
:mod:`shadowd.attribution.shares`).  In the
example the step is compute-bound (``T̂ = β₁ + 24 + 0.42 = 25.42``): the floor ``4`` is split
equally, the other ``21.42`` in proportion to ``24 : 0.4`` (the decode at segment-0 prices).

**On the reference engine** (the real vLLM scheduler, H100/A100 kernel tables, llama-3.1-8b and
qwen2.5-14b, real traces, KV usage up to its capacity; figures in ``docs/accuracy.md``, measured by
``benchmarks/accuracy_study.py``) the latency model itself is unchanged: it meets the R² and
per-class p99 targets out of sample, near the engine's jitter floor, in every run but the light A100
llama-3.1-8b one.  What it cannot carry is a step function of the step's *total* tokens: the GEMM
tables jump between 128 and 129 tokens (tile quantisation; far more on A100 than on H100), so a lone
127-token chunk runs about as fast as a decode step and a slightly longer one much slower; no
additive per-request term can follow that, and those steps set the prefill p99 and the mixed p99 of
the light A100 llama run (those p99s: ``docs/accuracy.md``, "Targets missed").  CUDA-graph padding (to multiples of 8/16 tokens up to 512) is the same kind of step
function, but small.  A separate prefix-attention term is not needed: ``c`` and ``p·c`` carry it.

>>> import numpy as np
>>> from shadowd.steps.batch import StepBatch
>>> m = LLMVisorModel.from_dict({"breakpoint_tokens": 256, "segments": [
...     {"beta_ms": 4.0, "prefill": {"p": 0.001, "pc": 1e-6}, "decode": {"c": 4e-5}},
...     {"beta_ms": 1.0, "prefill": {"p": 0.02, "pc": 1e-6}, "decode": {"c": 4e-5, "request": 0.02}}]})
>>> b = StepBatch.from_rows([dict(latency_ms=30.0)], [[
...     dict(new_tokens=1000, context_tokens=4000, prefill=True),
...     dict(new_tokens=1, context_tokens=10000, prefill=False)]])
>>> m.predict(b).round(3).tolist()
[25.42]
>>> m.shares(b, "equal").round(3).tolist()
[23.069, 2.351]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shadowd.attribution.regression import weighted_nnls
from shadowd.attribution.shares import DEFAULT_POLICY, split_fixed_term
from shadowd.attribution.steprows import StepRows
from shadowd.steps.batch import KIND_NAMES, StepBatch

PREFILL_FEATURES = ("p", "c", "p2", "pc", "request")
DECODE_FEATURES = ("c", "request", "extra_tokens")
# Step-level design columns: intercept, then prefill sums, then decode sums.
COLUMNS = (
    ("beta",)
    + tuple("prefill_" + f for f in PREFILL_FEATURES)
    + tuple("decode_" + f for f in DECODE_FEATURES)
)
_NP, _ND = len(PREFILL_FEATURES), len(DECODE_FEATURES)
# Design r18: a segment spanning fewer distinct step token counts than it has coefficients cannot
# tell its fixed cost from its per-token and per-request costs (see "Segments" above).
MIN_SEGMENT_LEVELS = len(COLUMNS)


def request_features(batch: StepBatch) -> np.ndarray:
    """Per-request design rows (R, 8): prefill features, then decode features; other phase zero."""
    p = batch.new_tokens.astype(np.float64)
    c = batch.context_tokens.astype(np.float64)
    pre = batch.prefill
    x = np.zeros((batch.num_requests, _NP + _ND))
    x[pre, 0], x[pre, 1], x[pre, 2], x[pre, 3], x[pre, 4] = p[pre], c[pre], p[pre] ** 2, p[pre] * c[pre], 1.0
    dec = ~pre
    x[dec, 5], x[dec, 6], x[dec, 7] = c[dec], 1.0, np.maximum(p[dec] - 1.0, 0.0)
    return x


def design_matrix(batch: StepBatch) -> np.ndarray:
    """Step-level design (S, 9): a column of ones, then per-step sums of :func:`request_features`."""
    sums = StepRows(batch.req_step, batch.num_steps).sum(request_features(batch))
    return np.hstack([np.ones((batch.num_steps, 1)), sums])


@dataclass
class BreakpointSearch:
    """The breakpoint chosen and every candidate tried with its weighted SSE (inf: one segment)."""

    best: float
    candidates: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)


def _segment_loss(
    a: np.ndarray, y: np.ndarray, w: np.ndarray, tokens: np.ndarray, breakpoint: float
) -> tuple[np.ndarray, float]:
    coef = np.zeros((2, a.shape[1]))
    loss = 0.0
    for k, mask in enumerate((tokens <= breakpoint, tokens > breakpoint)):
        if mask.any():
            coef[k], part = weighted_nnls(a[mask], y[mask], w[mask])
            loss += part
        else:
            coef[k] = coef[0]
    return coef, loss


def search_breakpoint(
    a: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    tokens: np.ndarray,
    candidates: Sequence[float] | None = None,
    *,
    min_segment_steps: int = 30,
    grid_points: int = 24,
    min_segment_levels: int = MIN_SEGMENT_LEVELS,
) -> tuple[np.ndarray, BreakpointSearch]:
    """Grid search (then local refinement) of the token breakpoint minimising the weighted SSE.

    A breakpoint is tried only where both segments keep ``min_segment_steps`` steps and
    ``min_segment_levels`` distinct token counts (design r18).

    >>> rng = np.random.default_rng(0)
    >>> n = rng.choice([1, 2, 3], 300)  # lone decode steps: only three token counts
    >>> a = np.c_[np.ones(300), n]
    >>> search_breakpoint(a, 8.0 + 0.2 * n, np.ones(300), n.astype(float))[1].best
    inf
    """
    order = np.sort(tokens)
    levels = np.unique(order)
    if len(order) < 2 * min_segment_steps or len(levels) < 2 * min_segment_levels:
        coef, loss = _segment_loss(a, y, w, tokens, math.inf)
        return coef, BreakpointSearch(math.inf, [math.inf], [loss])

    def valid(b: float) -> bool:  # both segments keep enough steps, and token counts, to fit
        below = int(np.searchsorted(order, b, side="right"))
        kinds = int(np.searchsorted(levels, b, side="right"))
        return (
            min(below, len(order) - below) >= min_segment_steps
            and min(kinds, len(levels) - kinds) >= min_segment_levels
        )

    tried: dict[float, tuple[np.ndarray, float]] = {}

    def run(points: np.ndarray) -> None:
        for b in np.unique(points):
            if float(b) not in tried and valid(b):
                tried[float(b)] = _segment_loss(a, y, w, tokens, float(b))

    if candidates is not None:
        run(np.asarray(candidates, dtype=np.float64))
    else:
        observed = np.unique(order[min_segment_steps - 1 : len(order) - min_segment_steps])
        run(np.quantile(observed, np.linspace(0, 1, grid_points), method="nearest"))
        while tried:  # refine between the best candidate's neighbours until nothing is new
            ranked = sorted(tried)
            i = ranked.index(min(tried, key=lambda b: tried[b][1]))
            left, right = ranked[max(i - 1, 0)], ranked[min(i + 1, len(ranked) - 1)]
            local = observed[(observed > left) & (observed < right)]
            if len(local) > grid_points:
                local = np.quantile(local, np.linspace(0, 1, grid_points), method="nearest")
            before = len(tried)
            run(local)
            if len(tried) == before:
                break
    if not tried:
        coef, loss = _segment_loss(a, y, w, tokens, math.inf)
        return coef, BreakpointSearch(math.inf, [math.inf], [loss])
    best = min(tried, key=lambda b: tried[b][1])
    ranked = sorted(tried)
    return tried[best][0], BreakpointSearch(best, ranked, [tried[b][1] for b in ranked])


@dataclass(eq=False)
class LLMVisorModel:
    """Fitted LLMVisor coefficients: a token breakpoint and, per segment, ``coef`` over :data:`COLUMNS`."""

    breakpoint: float
    coef: np.ndarray  # float64[2, 9]
    search: BreakpointSearch | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.coef = np.asarray(self.coef, dtype=np.float64).reshape(2, len(COLUMNS))
        if (self.coef < 0).any():
            raise ValueError("LLMVisor coefficients must be non-negative")
        # Per-row lookup table for the hot path: row code = 2·segment + is_decode, giving
        # v = p·(k0 + k2·p + k3·c) + k1·c + k4 for both phases.
        t = np.zeros((4, 5))
        for k in range(2):
            pre, dec = self.coef[k, 1 : 1 + _NP], self.coef[k, 1 + _NP :]
            t[2 * k] = pre
            t[2 * k + 1] = (dec[2], dec[0], 0.0, 0.0, dec[1] - dec[2])
        self._table = np.ascontiguousarray(t.T)  # (5, 4)

    # -- fitting -----------------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        batch: StepBatch,
        *,
        breakpoints: Sequence[float] | None = None,
        weighting: str = "relative",
        min_segment_steps: int = 30,
    ) -> LLMVisorModel:
        """Fit by NNLS on step totals, searching the breakpoint (or trying ``breakpoints``).

        ``weighting``: ``relative`` (rows weighted 1/T, the reported metric) or ``absolute``.
        Steps with non-positive or non-finite latency or no requests are left out.
        """
        if weighting not in ("relative", "absolute"):
            raise ValueError(f"unknown weighting {weighting!r}")
        y = batch.latency_ms
        keep = np.isfinite(y) & (y > 0) & (batch.batch_size() > 0)
        if not keep.any():
            raise ValueError("no usable steps to fit (need steps with requests and latency > 0)")
        a, y = design_matrix(batch)[keep], y[keep]
        w = 1.0 / y if weighting == "relative" else np.ones_like(y)
        tokens = batch.per_step_sum(batch.new_tokens.astype(np.float64))[keep]
        coef, search = search_breakpoint(a, y, w, tokens, breakpoints, min_segment_steps=min_segment_steps)
        return cls(search.best, coef, search)

    # -- prediction and shares (vectorised hot path) -----------------------------------------
    def decompose(
        self, batch: StepBatch, rows: StepRows | None = None, step_tokens: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(variable share per request, fixed term per step, predicted T̂ per step).

        ``rows`` and ``step_tokens`` (Σp per step) may be passed in when the caller has them.
        """
        return self.decompose_with_prices(batch, rows, step_tokens)[:3]

    def decompose_with_prices(
        self, batch: StepBatch, rows: StepRows | None = None, step_tokens: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`decompose` plus each row's price for dividing work (see shares): ``v_i``, except
        decode-like rows of compute-bound steps, which are priced at the memory-bound ``θ₀·φ_i``."""
        if rows is None:
            rows = StepRows(batch.req_step, batch.num_steps)
        p = batch.new_tokens.astype(np.float64)
        c = batch.context_tokens.astype(np.float64)
        if step_tokens is None:
            step_tokens = rows.sum(p)
        seg = (step_tokens > self.breakpoint).astype(np.intp)
        code = rows.spread(2 * seg) + ~batch.prefill
        k0, k1, k2, k3, k4 = (np.take(t, code) for t in self._table)
        v = k2 * p
        v += k3 * c
        v += k0
        v *= p
        v += k1 * c
        v += k4
        np.maximum(v, 0.0, out=v)
        fixed = self.coef[seg, 0]
        price = v
        dec1 = code == 3  # decode-like row, compute-bound step
        if dec1.any():
            d0, d1, _, _, d4 = self._table[:, 1]  # segment 0, decode-like
            price = v.copy()
            price[dec1] = np.maximum(d0 * p[dec1] + d1 * c[dec1] + d4, 0.0)
        return v, fixed, fixed + rows.sum(v), price

    @property
    def floor_ms(self) -> float:
        """The memory-bound floor ``β₀``: the fixed term the ``equal`` policy divides (see shares)."""
        return float(self.coef[0, 0])

    def segment(self, batch: StepBatch) -> np.ndarray:
        """Segment per step: 0 memory-bound (N ≤ breakpoint), 1 compute-bound."""
        return (batch.per_step_sum(batch.new_tokens.astype(np.float64)) > self.breakpoint).astype(np.int8)

    def zero_priced(self, batch: StepBatch) -> list[dict[str, Any]]:
        """Work terms fitted at zero in a segment whose steps in ``batch`` carry that work.

        NNLS sets a coefficient to zero when the window cannot tell its work apart from the rest
        (few decode steps in a segment full of mixed ones, say); the segment's predictions then
        carry none of that work, whatever the KV read, and so do the shares wherever that
        segment sets the price (decode rows of compute-bound steps are priced at segment 0's
        decode terms, see "Shares" above).  Checked: a decode row's KV reads
        (``decode.c``), and a prefill row's new tokens with no price at all (``p``, ``p2`` and
        ``pc`` all zero; ``p`` alone may be zero while GEMMs are flat).  Found on steps timed on a
        GPU (``benchmarks/gpu_steps.py``).
        """
        seg = self.segment(batch)[batch.req_step]
        pre, dec = batch.prefill, ~batch.prefill
        col = COLUMNS.index
        work = {  # term -> (its columns in COLUMNS, the rows that carry that work)
            "prefill.p+p2+pc": (
                [col("prefill_p"), col("prefill_p2"), col("prefill_pc")],
                pre & (batch.new_tokens > 0),
            ),
            "decode.c": ([col("decode_c")], dec & (batch.context_tokens > 0)),
        }
        out = []
        for k in range(2 if math.isfinite(self.breakpoint) else 1):
            for term, (cols, rows) in work.items():
                held = rows & (seg == k)
                if not self.coef[k, cols].any() and held.any():
                    steps = np.unique(batch.req_step[held])
                    kinds = sorted({KIND_NAMES[int(c)] for c in np.unique(batch.kind[steps])})
                    z = {"segment": k, "term": term, "rows": int(held.sum()), "steps": int(steps.size)}
                    out.append({**z, "classes": kinds})
        return out

    def predict(self, batch: StepBatch) -> np.ndarray:
        """Predicted step latency T̂ (ms), float64[S]."""
        return self.decompose(batch)[2]

    def variable_shares(self, batch: StepBatch) -> np.ndarray:
        """θ·φ_i per request (ms), before any part of the fixed term."""
        return self.decompose(batch)[0]

    def shares(self, batch: StepBatch, policy: str = DEFAULT_POLICY) -> np.ndarray:
        """Per-request shares of T̂ (ms); they sum to :meth:`predict` per step."""
        rows = StepRows(batch.req_step, batch.num_steps)
        v, fixed, _, price = self.decompose_with_prices(batch, rows)
        return split_fixed_term(v, fixed, rows, policy, np.full(batch.num_steps, self.floor_ms), price)

    # -- storage ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Named coefficients (JSON-able); ``breakpoint_tokens`` is null for one segment."""
        segs = []
        for k in range(2):
            row = self.coef[k]
            segs.append(
                {
                    "beta_ms": float(row[0]),
                    "prefill": {f: float(x) for f, x in zip(PREFILL_FEATURES, row[1 : 1 + _NP])},
                    "decode": {f: float(x) for f, x in zip(DECODE_FEATURES, row[1 + _NP :])},
                }
            )
        bp = None if math.isinf(self.breakpoint) else float(self.breakpoint)
        return {"breakpoint_tokens": bp, "segments": segs}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LLMVisorModel:
        """Inverse of :meth:`to_dict`; features left out are zero."""
        coef = np.zeros((2, len(COLUMNS)))
        for k, seg in enumerate(d["segments"]):
            coef[k, 0] = seg.get("beta_ms", 0.0)
            for j, f in enumerate(PREFILL_FEATURES):
                coef[k, 1 + j] = seg.get("prefill", {}).get(f, 0.0)
            for j, f in enumerate(DECODE_FEATURES):
                coef[k, 1 + _NP + j] = seg.get("decode", {}).get(f, 0.0)
        bp = d.get("breakpoint_tokens")
        return cls(math.inf if bp is None else float(bp), coef)
