"""The token-count baseline: VTC counters, a token-count latency model, token-proportional shares.

This is what LLMVisor must beat to be worth its keep ("Fairness in Serving LLMs", OSDI'24).

- **VTC counters**: each request row charges ``w_p·p`` when prefill-like and ``w_q·p`` when
  decode-like (``p`` = tokens processed this step), defaults ``w_p = 1``, ``w_q = 2``.  Summed
  over a request's steps this is VTC's charge at admission (the prompt, minus prefix-cache hits,
  which are not recomputed) plus one charge per decode step.  Speculative drafts count as output.
- **Latency model**: ``T̂ = γ0 + γ1·N`` per step class (prefill / decode / mixed), ``N = Σp``,
  fitted by NNLS with the same ``1/T`` row weighting as LLMVisor so the comparison is on equal terms;
  a class with fewer than ``min_class_steps`` steps uses the fit over all steps.
- **Shares**: the measured step latency split in proportion to weighted tokens.

>>> import numpy as np
>>> from shadowd.steps.batch import StepBatch
>>> b = StepBatch.from_rows([dict(latency_ms=12.0)], [[
...     dict(new_tokens=10, prefill=True, tenant="a"), dict(new_tokens=1, prefill=False, tenant="b")]])
>>> tb = TokenBaseline(gamma={"prefill": (1.0, 0.1), "decode": (2.0, 0.0), "mixed": (1.0, 0.5)})
>>> tb.weighted_tokens(b).tolist(), tb.shares(b).tolist(), tb.predict(b).tolist()
([10.0, 2.0], [10.0, 2.0], [6.5])
>>> vtc_counters(b)
{'a': 10.0, 'b': 2.0}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shadowd.attribution.regression import weighted_nnls
from shadowd.attribution.steprows import StepRows
from shadowd.steps.batch import KIND_NAMES, StepBatch

W_PROMPT, W_OUTPUT = 1.0, 2.0


def weighted_tokens(batch: StepBatch, w_p: float = W_PROMPT, w_q: float = W_OUTPUT) -> np.ndarray:
    """VTC charge per request row: ``w_p·p`` for prefill-like rows, ``w_q·p`` for decode rows."""
    return np.where(batch.prefill, w_p, w_q) * batch.new_tokens


def vtc_counters(batch: StepBatch, w_p: float = W_PROMPT, w_q: float = W_OUTPUT) -> dict[str, float]:
    """VTC counter per tenant over the batch (tenant ``unknown`` when the batch has none)."""
    names, inverse = tenant_index(batch)
    totals = np.bincount(inverse, weights=weighted_tokens(batch, w_p, w_q), minlength=len(names))
    return {str(n): float(t) for n, t in zip(names, totals)}


def tenant_index(batch: StepBatch) -> tuple[np.ndarray, np.ndarray]:
    """(sorted tenant names, row -> tenant index); missing tenants read as ``unknown``."""
    if batch.tenant is None:
        return np.array(["unknown"], dtype=object), np.zeros(batch.num_requests, dtype=np.intp)
    t = np.asarray(batch.tenant, dtype=object)
    t = np.where(np.equal(t, None), "unknown", t).astype(str)
    names, inverse = np.unique(t, return_inverse=True)
    return names.astype(object), inverse.reshape(-1)


@dataclass(eq=False)
class TokenBaseline:
    """Per-class ``(γ0, γ1)`` of ``T̂ = γ0 + γ1·N`` and the VTC weights."""

    gamma: dict[str, tuple[float, float]]
    w_p: float = W_PROMPT
    w_q: float = W_OUTPUT
    _g: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.gamma = {k: (float(v[0]), float(v[1])) for k, v in self.gamma.items()}
        self._g = np.array([self.gamma[k] for k in KIND_NAMES]).T  # (2, 3) by KIND_* code

    @classmethod
    def fit(
        cls,
        batch: StepBatch,
        *,
        w_p: float = W_PROMPT,
        w_q: float = W_OUTPUT,
        weighting: str = "relative",
        min_class_steps: int = 10,
    ) -> TokenBaseline:
        """Fit ``γ`` per step class by NNLS; sparse classes fall back to the all-steps fit."""
        y = batch.latency_ms
        keep = np.isfinite(y) & (y > 0) & (batch.batch_size() > 0)
        if not keep.any():
            raise ValueError("no usable steps to fit (need steps with requests and latency > 0)")
        n = batch.per_step_sum(batch.new_tokens.astype(np.float64))
        a = np.column_stack([np.ones_like(n), n])
        w = 1.0 / y if weighting == "relative" else np.ones_like(y)
        every, _ = weighted_nnls(a[keep], y[keep], w[keep])
        gamma = {}
        for code, name in enumerate(KIND_NAMES):
            m = keep & (batch.kind == code)
            enough = m.sum() >= min_class_steps
            gamma[name] = tuple(weighted_nnls(a[m], y[m], w[m])[0]) if enough else tuple(every)
        return cls(gamma, w_p, w_q)

    def weighted_tokens(self, batch: StepBatch) -> np.ndarray:
        return weighted_tokens(batch, self.w_p, self.w_q)

    def predict(self, batch: StepBatch, step_tokens: np.ndarray | None = None) -> np.ndarray:
        """Token-count prediction per step (ms)."""
        if step_tokens is None:
            step_tokens = StepRows(batch.req_step, batch.num_steps).sum(batch.new_tokens)
        return self._g[0, batch.kind] + self._g[1, batch.kind] * step_tokens

    def shares(
        self, batch: StepBatch, tokens: np.ndarray | None = None, rows: StepRows | None = None
    ) -> np.ndarray:
        """Measured step latency split by weighted tokens (ms per request row)."""
        if rows is None:
            rows = StepRows(batch.req_step, batch.num_steps)
        if tokens is None:
            tokens = self.weighted_tokens(batch)
        total = rows.sum(tokens)
        per = np.divide(batch.latency_ms, total, out=np.zeros(batch.num_steps), where=total > 0)
        return tokens * rows.spread(per)

    def to_dict(self) -> dict[str, Any]:
        return {
            "w_p": self.w_p,
            "w_q": self.w_q,
            "gamma": {k: [g0, g1] for k, (g0, g1) in sorted(self.gamma.items())},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TokenBaseline:
        return cls({k: tuple(v) for k, v in d["gamma"].items()}, float(d["w_p"]), float(d["w_q"]))
