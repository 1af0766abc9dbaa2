"""Decoded frames -> columns for the ``steps`` and ``step_requests`` tables.

One call converts a whole batch of frames with numpy, so per-request Python
work is limited to flattening the frames' lists (``np.fromiter`` over
``chain``/``map``: no Python frame per element).  The result also exposes the
batch as a ``StepBatch`` for attribution and drift checks, and, on demand, the
tenants as codes into a small name table (``tenant_index``), which is what
per-tenant sums should group by: ``np.unique`` over an object array sorts
Python strings, far dearer per row (``IngestStats.observe`` before and after,
docs/benchmarks.md "What was optimised", from ``benchmarks/ingest.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter

import numpy as np

from shadowd.steps.batch import KIND_NAMES, StepBatch, step_kinds
from shadowd.steps.latency import step_latency_ms
from shadowd.steps.request_rows import lifecycle_columns
from shadowd.tap.frame import StepFrame

_PHASES = np.array(["decode", "prefill"], dtype=object)
_KINDS = np.array(KIND_NAMES, dtype=object)


@dataclass
class StepColumns:
    steps: dict[str, np.ndarray]
    requests: dict[str, np.ndarray]
    batch: StepBatch
    _tenant_index: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    ended: dict[str, np.ndarray] | None = None  # ``requests`` rows: requests that ended (request_rows)

    @property
    def tenant_index(self) -> tuple[np.ndarray, np.ndarray]:
        """``(names, codes)``: ``names[codes]`` is the request rows' tenant column.

        Names are in order of first appearance; computed once, on first use.

        >>> from tests.helpers import make_frame
        >>> names, codes = frames_to_columns([make_frame(1, n=3)]).tenant_index
        >>> names.tolist(), codes.tolist()
        (['beta', 'acme'], [0, 1, 0])
        """
        if self._tenant_index is None:
            self._tenant_index = _codes(self.requests["tenant"])
        return self._tenant_index

    @property
    def num_steps(self) -> int:
        return len(self.steps["step_seq"])

    @property
    def num_requests(self) -> int:
        return len(self.requests["req_id"])


class _CodeTable(dict):
    """value -> code, numbering new values in order of appearance (``__missing__`` runs per new value only)."""

    def __missing__(self, key: object) -> int:
        code = self[key] = len(self)
        return code


def _codes(values: Iterable[object], count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(names, codes)`` of ``values``: distinct values in order of first appearance, and indices."""
    table = _CodeTable()
    codes = np.fromiter(
        map(table.__getitem__, values), dtype=np.int32, count=len(values) if count is None else count
    )  # type: ignore[arg-type]
    names = np.empty(len(table), dtype=object)
    names[:] = list(table)
    return names, codes


def _flat(frames: Sequence[StepFrame], name: str, dtype: type, count: int) -> np.ndarray:
    return np.fromiter(chain.from_iterable(map(attrgetter(name), frames)), dtype=dtype, count=count)


def frames_to_columns(frames: Sequence[StepFrame]) -> StepColumns:
    """Columns of both tables for ``frames`` (all decoded and validated)."""
    sizes = np.fromiter((len(f.req_ids) for f in frames), dtype=np.int64, count=len(frames))
    n_req = int(sizes.sum())
    req_step = np.repeat(np.arange(len(frames)), sizes)
    stamp = lambda name: np.fromiter((getattr(f, name) for f in frames), np.int64, len(frames))  # noqa: E731
    t_done, t_prev, t_sched_end = stamp("t_done"), stamp("t_prev_done"), stamp("t_sched_end")
    new_tokens = _flat(frames, "new_tokens", np.int64, n_req)
    prefill = _flat(frames, "prefill", np.bool_, n_req)
    kind = step_kinds(req_step, prefill, len(frames))
    pre_tok = np.bincount(req_step, weights=new_tokens * prefill, minlength=len(frames)).astype(np.int64)
    all_tok = np.bincount(req_step, weights=new_tokens, minlength=len(frames)).astype(np.int64)
    engine = np.array([f.engine_id for f in frames], dtype=object)
    run = np.array([f.run_id for f in frames], dtype=object)
    seq = stamp("step_seq")
    latency = step_latency_ms(t_done, t_prev, t_sched_end)
    ts = stamp("wall_ns").astype("datetime64[ns]").astype("datetime64[us]")
    steps = {
        "engine_id": engine,
        "run_id": run,
        "step_seq": seq,
        "ts": ts,
        "latency_ms": latency,
        "kind": _KINDS[kind],
        "num_requests": sizes.astype(np.int32),
        "prefill_tokens": pre_tok.astype(np.int32),
        "decode_tokens": (all_tok - pre_tok).astype(np.int32),
        "t_sched_start_ns": stamp("t_sched_start"),
        "t_sched_end_ns": t_sched_end,
        "t_done_ns": t_done,
        "t_prev_done_ns": t_prev,
        "dropped_frames_total": stamp("dropped_total"),
    }
    ctx = _flat(frames, "context_tokens", np.int64, n_req)
    prompt = _flat(frames, "prompt_tokens", np.int64, n_req)
    spec = _flat(frames, "spec_tokens", np.int64, n_req)
    # Strings go through a code table: every row of a request (or tenant) then refers to one
    # str object instead of a fresh copy per frame, halving what a queued row costs in memory
    # (~240 -> ~90 bytes), and the tenant codes are ready for per-tenant sums.
    tenant_names, tenant_codes = _codes(chain.from_iterable(map(attrgetter("tenants"), frames)), n_req)
    tenant = tenant_names[tenant_codes]
    req_id = _codes(chain.from_iterable(map(attrgetter("req_ids"), frames)), n_req)
    req_id = req_id[0][req_id[1]]
    requests = {
        "engine_id": engine[req_step],
        "run_id": run[req_step],
        "step_seq": seq[req_step],
        "req_id": req_id,
        "tenant": tenant,
        "phase": _PHASES[prefill.astype(np.int8)],
        "new_tokens": new_tokens.astype(np.int32),
        "context_tokens": ctx.astype(np.int32),
        "prompt_tokens": prompt.astype(np.int32),
        "spec_tokens": spec.astype(np.int32),
        "preemptions": _flat(frames, "preemptions", np.int16, n_req),
    }
    batch = StepBatch(
        latency_ms=latency,
        req_step=req_step,
        new_tokens=new_tokens,
        context_tokens=ctx,
        prompt_tokens=prompt,
        prefill=prefill,
        spec_tokens=spec,
        tenant=tenant,
        req_id=req_id,
        step_seq=seq,
        engine_id=engine,
        run_id=run,
        ts=ts,
        kind=kind,
    )
    return StepColumns(
        steps=steps,
        requests=requests,
        batch=batch,
        _tenant_index=(tenant_names, tenant_codes),
        ended=lifecycle_columns(frames),
    )
