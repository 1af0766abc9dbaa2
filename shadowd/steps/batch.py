"""Columnar view of many engine steps and their request rows.

Everything downstream of ingest (attribution, reports, the reference engine's
ground truth) works on this one shape, so a step log read back from DuckDB, a
Parquet export, or frames fresh off the tap all look alike.  Request rows are
grouped by step: ``req_step[i]`` is the index of request row ``i``'s step, and
rows of one step are contiguous and in step order.

>>> b = StepBatch.from_rows(
...     steps=[dict(latency_ms=10.0), dict(latency_ms=7.0)],
...     requests=[[dict(new_tokens=512, context_tokens=0, prompt_tokens=600, prefill=True),
...                dict(new_tokens=1, context_tokens=900, prompt_tokens=800, prefill=False)],
...               [dict(new_tokens=1, context_tokens=901, prompt_tokens=800, prefill=False)]])
>>> b.num_steps, b.num_requests, list(b.kind_names())
(2, 3, ['mixed', 'decode'])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KIND_PREFILL, KIND_DECODE, KIND_MIXED = 0, 1, 2
KIND_NAMES = ("prefill", "decode", "mixed")


def step_kinds(req_step: np.ndarray, prefill: np.ndarray, num_steps: int) -> np.ndarray:
    """Classify steps: all rows prefill -> prefill, all decode -> decode, else mixed."""
    n_pre = np.bincount(req_step, weights=prefill.astype(np.float64), minlength=num_steps)
    n_all = np.bincount(req_step, minlength=num_steps)
    kind = np.full(num_steps, KIND_MIXED, dtype=np.int8)
    kind[n_pre == n_all] = KIND_PREFILL
    kind[n_pre == 0] = KIND_DECODE
    return kind


@dataclass
class StepBatch:
    """Steps (length S) and their request rows (length R), as numpy columns."""

    latency_ms: np.ndarray  # float64[S], measured
    req_step: np.ndarray  # int64[R], index into steps
    new_tokens: np.ndarray  # int64[R], tokens processed this step (incl. drafts)
    context_tokens: np.ndarray  # int64[R], tokens in KV before the step
    prompt_tokens: np.ndarray  # int64[R]
    prefill: np.ndarray  # bool[R], prefill-like work (incl. recompute)
    spec_tokens: np.ndarray | None = None  # int64[R]
    tenant: np.ndarray | None = None  # object[R]
    req_id: np.ndarray | None = None  # object[R]
    step_seq: np.ndarray | None = None  # int64[S]
    engine_id: np.ndarray | None = None  # object[S]
    run_id: np.ndarray | None = None  # object[S]
    ts: np.ndarray | None = None  # datetime64[us][S], wall clock at step end
    kind: np.ndarray = field(default=None)  # int8[S], KIND_* codes

    def __post_init__(self) -> None:
        self.latency_ms = np.asarray(self.latency_ms, dtype=np.float64)
        self.req_step = np.asarray(self.req_step, dtype=np.int64)
        for name in ("new_tokens", "context_tokens", "prompt_tokens"):
            setattr(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        self.prefill = np.asarray(self.prefill, dtype=bool)
        if self.spec_tokens is None:
            self.spec_tokens = np.zeros_like(self.new_tokens)
        if self.kind is None:
            self.kind = step_kinds(self.req_step, self.prefill, self.num_steps)

    @property
    def num_steps(self) -> int:
        return int(self.latency_ms.shape[0])

    @property
    def num_requests(self) -> int:
        return int(self.req_step.shape[0])

    def kind_names(self) -> np.ndarray:
        return np.asarray(KIND_NAMES, dtype=object)[self.kind]

    def batch_size(self) -> np.ndarray:
        """Requests per step, int64[S]."""
        return np.bincount(self.req_step, minlength=self.num_steps)

    def per_step_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum a per-request column over each step, float64[S]."""
        return np.bincount(self.req_step, weights=values, minlength=self.num_steps)

    def max_reach(self, sizes: np.ndarray | None = None) -> np.ndarray:
        """Per step, the longest context any of its requests reaches (context + new tokens),
        float64[S]: the workload envelope's ``context`` dimension.  ``sizes``: ``batch_size()``,
        if the caller has it."""
        reach = (self.context_tokens + self.new_tokens).astype(np.float64)
        if not len(reach):
            return np.zeros(self.num_steps)
        sizes = self.batch_size() if sizes is None else sizes
        if sizes.all():  # rows are contiguous per step: one reduceat
            starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
            return np.maximum.reduceat(reach, starts)
        out = np.zeros(self.num_steps)
        np.maximum.at(out, self.req_step, reach)
        return out

    def composition(self) -> dict[str, np.ndarray]:
        """Per-step features the residual detectors' domain is drawn over (``checks.domain``)."""
        return {
            "batch_size": self.batch_size().astype(float),
            "kv_tokens": self.per_step_sum(self.context_tokens.astype(float)),
            "new_tokens": self.per_step_sum(self.new_tokens.astype(float)),
        }

    def select_steps(self, mask: np.ndarray) -> StepBatch:
        """The sub-batch of steps where ``mask`` (bool[S]) is true, rows renumbered."""
        mask = np.asarray(mask, dtype=bool)
        new_index = np.cumsum(mask) - 1
        rows = mask[self.req_step]
        pick = lambda a: None if a is None else a[rows]  # noqa: E731
        pick_s = lambda a: None if a is None else a[mask]  # noqa: E731
        return StepBatch(
            latency_ms=self.latency_ms[mask],
            req_step=new_index[self.req_step[rows]],
            new_tokens=self.new_tokens[rows],
            context_tokens=self.context_tokens[rows],
            prompt_tokens=self.prompt_tokens[rows],
            prefill=self.prefill[rows],
            spec_tokens=pick(self.spec_tokens),
            tenant=pick(self.tenant),
            req_id=pick(self.req_id),
            step_seq=pick_s(self.step_seq),
            engine_id=pick_s(self.engine_id),
            run_id=pick_s(self.run_id),
            ts=pick_s(self.ts),
            kind=self.kind[mask],
        )

    @classmethod
    def concat(cls, batches: Sequence[StepBatch]) -> StepBatch:
        """One batch from several, in order (step indices renumbered)."""
        if len(batches) == 1:
            return batches[0]
        offsets = np.cumsum([0] + [b.num_steps for b in batches[:-1]])
        cat = lambda name: (
            None
            if any(getattr(b, name) is None for b in batches)  # noqa: E731
            else np.concatenate([getattr(b, name) for b in batches])
        )
        return cls(
            latency_ms=cat("latency_ms"),
            req_step=np.concatenate([b.req_step + o for b, o in zip(batches, offsets)]),
            new_tokens=cat("new_tokens"),
            context_tokens=cat("context_tokens"),
            prompt_tokens=cat("prompt_tokens"),
            prefill=cat("prefill"),
            spec_tokens=cat("spec_tokens"),
            tenant=cat("tenant"),
            req_id=cat("req_id"),
            step_seq=cat("step_seq"),
            engine_id=cat("engine_id"),
            run_id=cat("run_id"),
            ts=cat("ts"),
            kind=cat("kind"),
        )

    @classmethod
    def from_rows(
        cls, steps: Sequence[dict[str, Any]], requests: Sequence[Iterable[dict[str, Any]]]
    ) -> StepBatch:
        """Build from plain dicts (tests, small examples); not for hot paths."""
        rows = [(i, r) for i, reqs in enumerate(requests) for r in reqs]
        col = lambda k, d=0: np.array([r.get(k, d) for _, r in rows])  # noqa: E731
        tenant = np.array([r.get("tenant", "unknown") for _, r in rows], dtype=object)
        return cls(
            latency_ms=np.array([s["latency_ms"] for s in steps], dtype=np.float64),
            req_step=np.array([i for i, _ in rows], dtype=np.int64),
            new_tokens=col("new_tokens"),
            context_tokens=col("context_tokens"),
            prompt_tokens=col("prompt_tokens"),
            prefill=col("prefill", False).astype(bool),
            spec_tokens=col("spec_tokens"),
            tenant=tenant,
            step_seq=np.array([s.get("step_seq", i) for i, s in enumerate(steps)], dtype=np.int64),
        )
