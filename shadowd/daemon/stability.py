"""Share stability: does a request's share depend on who else is in its batch?

Scored on the most recent steps, re-attributed with the model in force, for
three splits over the same rows:

* ``llmvisor``: the request's own-work share ``θ·φ_i`` (what the gate judges);
* ``llmvisor_total``: the full share normalised to the measured step, which also
  carries the fixed per-step cost split equally (or pro rata);
* ``token_baseline``: the VTC token split of the measured step.

Why the gate judges the own-work part: a cost every non-empty batch pays
(weights read once per step, launch overheads) has Shapley value ``β/|B|`` per
member, so *any* fair split of it depends on batch size by design; what must
not depend on batch-mates is the charge for a request's own work.  All three
are reported, so the fixed-term policy's effect stays visible.
"""

from __future__ import annotations

import time
from typing import Any

import duckdb
import numpy as np

import checks
from shadowd.attribution.model_version import ModelVersion
from shadowd.attribution.shares import Attribution
from shadowd.steps.batch import StepBatch
from shadowd.steps.log_reader import Window, last_steps_within, load_batch


def stability_from_db(
    con: duckdb.DuckDBPyConnection,
    model: ModelVersion,
    *,
    policy: str = "equal",
    max_steps: int = 20_000,
    max_rows: int | None = None,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """The stability report over the last ``max_steps`` stored steps, or, where they hold more
    than ``max_rows`` request rows (the memory guard's bound), the most recent steps that fit:
    ``max_steps`` in the report is then the cut (``cut_for_rows`` true), the most the window
    holds at that density of rows."""
    window, cut = Window(last_steps=max_steps), False
    if max_rows is not None:
        fit = last_steps_within(con, window, max_rows) or 0
        cut = fit < (last_steps_within(con, window, 1 << 62) or 0)
        if cut:
            max_steps = max(1, fit)
            window = Window(last_steps=max_steps)
    batch = load_batch(con, window, request_ids=False)
    if batch.num_steps < 50:
        why = "fit under the daemon's memory limit" if cut else "stored"
        return {
            "computed_at": time.time(),
            "rows": 0,
            "error": f"fewer than 50 steps {why}",
            "max_steps": int(max_steps),
            "cut_for_rows": cut,
        }
    report = stability_of(batch, model.attribute(batch, policy), n_boot=n_boot, seed=seed)
    # How many steps over how long, and the most the window holds: how long a CI that straddles
    # its limit takes to settle at this rate, or that it never does (``checks.rules``).
    report["steps"], report["max_steps"] = int(batch.num_steps), int(max_steps)
    report["cut_for_rows"] = cut
    if batch.ts is not None and batch.num_steps > 1:
        report["span_s"] = float((batch.ts.max() - batch.ts.min()) / np.timedelta64(1, "s"))
    return report


def stability_of(
    batch: StepBatch,
    att: Attribution,
    *,
    n_boot: int = 200,
    seed: int = 0,
    extra: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """``checks.stability_report`` of the three splits (plus ``extra`` ones) over ``batch``'s rows."""
    shares = {
        "llmvisor": att.variable_ms,
        "llmvisor_total": att.llmvisor_measured_ms,
        "token_baseline": att.vtc_ms,
        **(extra or {}),
    }
    finite = np.all(
        [np.isfinite(np.asarray(s, dtype=float)) & (np.asarray(s) > 0) for s in shares.values()], axis=0
    )
    # As a rule every row is kept, and then no column is copied: a calibration window holds tens
    # of millions of rows (``benchmarks/window_memory.py``).
    every = bool(finite.all())
    pick = lambda a: np.asarray(a) if every else np.asarray(a)[finite]  # noqa: E731
    step = batch.req_step
    pre_tok = batch.new_tokens * batch.prefill
    composition = {
        "batch_size": pick(batch.batch_size()[step]),
        "others_prefill": pick(batch.per_step_sum(pre_tok.astype(float))[step] - pre_tok),
        "others_context": pick(
            batch.per_step_sum(batch.context_tokens.astype(float))[step] - batch.context_tokens
        ),
    }
    del pre_tok
    new, context = pick(batch.new_tokens), pick(batch.context_tokens)
    report = checks.stability_report(
        {k: np.asarray(pick(v), dtype=float) for k, v in shares.items()},
        checks.shape_bucket_codes(np.where(pick(batch.prefill), "prefill", "decode"), new, context),
        composition,
        own={"new_tokens": new, "context": context},
        groups=pick(step),
        n_boot=n_boot,
        seed=seed,
    )
    report["computed_at"] = time.time()
    report["rows"] = int(finite.sum())
    return report
