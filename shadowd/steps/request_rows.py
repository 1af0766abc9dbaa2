"""Frames' ``requests`` sections -> rows of the ``requests`` table: the service each request got.

The tap sends a request's lifecycle once, when it ends (``shadowd.tap.frame.RequestRecord``): vLLM's
arrival time (wall clock) and monotonic stamps of the engine process for its first scheduling,
first token and end.  A monotonic stamp ``t`` becomes wall time through the frame that carried it,
``wall_ns - (t_done - t)``, so all four times share one clock and queue time, TTFT and E2E are
differences on it.  A stage that never happened (aborted while waiting: never scheduled, no token)
is NULL, not zero.

>>> from tests.helpers import make_frame
>>> lifecycle_columns([make_frame(1)]) is None  # no request ended in this step
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from shadowd.tap.frame import StepFrame

NS_PER_MS = 1e6
COLUMNS = (
    "engine_id", "run_id", "req_id", "tenant", "arrival_ts", "ended_ts", "queue_ms", "ttft_ms", "tpot_ms",
    "e2e_ms", "prompt_tokens", "output_tokens", "preemptions", "finish_reason", "first_step_seq",
    "first_token_step_seq", "end_step_seq",
)  # fmt: skip


def lifecycle_columns(frames: Sequence[StepFrame]) -> dict[str, np.ndarray] | None:
    """Columns for the ``requests`` table, or None when no frame carries an ended request."""
    rows = [_row(f, r) for f in frames for r in (getattr(f, "requests", None) or ())]
    if not rows:
        return None
    cols = {name: [row[i] for row in rows] for i, name in enumerate(COLUMNS)}
    out: dict[str, np.ndarray] = {}
    for name, values in cols.items():
        if name in ("arrival_ts", "ended_ts"):
            out[name] = np.array(values, dtype="datetime64[ns]").astype("datetime64[us]")
        elif name.endswith("_ms"):
            out[name] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        elif name in ("prompt_tokens", "output_tokens", "preemptions"):
            out[name] = np.array(values, dtype=np.int64)
        elif name.endswith("step_seq"):
            out[name] = np.array([-1 if v is None else v for v in values], dtype=np.int64)
        else:
            out[name] = np.array(values, dtype=object)
    return out


def _row(f: StepFrame, r: Any) -> tuple:
    wall = lambda t: f.wall_ns - (f.t_done - t)  # noqa: E731  (monotonic -> wall, via this frame)
    arrival = r.arrival_wall_ns or None
    ended = wall(r.t_finish)
    first_sched = wall(r.t_first_sched) if r.first_sched_seq else None
    first_token = wall(r.t_first_token) if r.first_token_seq else None
    since = lambda t: None if t is None or arrival is None else max(0.0, (t - arrival) / NS_PER_MS)  # noqa: E731
    tpot = None
    if first_token is not None and r.output_tokens > 1:
        tpot = max(0.0, (ended - first_token) / NS_PER_MS / (r.output_tokens - 1))
    return (
        f.engine_id, f.run_id, r.req_id, r.tenant, arrival, ended, since(first_sched), since(first_token), tpot,
        since(ended), r.prompt_tokens, r.output_tokens, r.preemptions, r.finish_reason,
        r.first_sched_seq or None, r.first_token_seq or None, f.step_seq,
    )  # fmt: skip
