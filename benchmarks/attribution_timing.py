"""How long attribution takes: a helper the benchmark calls (target ≤ 20 µs per 256-request step).

Attribution runs on every step the daemon ingests, so its cost is measured the way it is paid:
many steps at once (amortised over a batch), best of a few repeats, for the full
:meth:`ModelVersion.attribute` and for the token baseline's part alone (the cost ratio).

>>> r = time_attribution(steps=50, repeats=1)
>>> sorted(r)
['ratio_to_token_baseline', 'requests_per_step', 'steps', 'token_baseline_us_per_step', 'us_per_step']
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from shadowd.attribution.model_version import ModelVersion, fit
from shadowd.attribution.steprows import StepRows
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.steps.batch import StepBatch


def _best_seconds(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(max(repeats, 1)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def time_attribution(
    version: ModelVersion | None = None,
    batch: StepBatch | None = None,
    *,
    steps: int = 2000,
    requests_per_step: int = 256,
    repeats: int = 5,
    seed: int = 0,
) -> dict[str, Any]:
    """µs per step to attribute ``batch`` (default: ``steps`` synthetic steps of ``requests_per_step``).

    Without ``version`` one is fitted on the batch first (not timed).
    """
    if batch is None:
        batch = synthetic_batch(steps, seed, requests_per_step=requests_per_step)
    if version is None:
        version = fit(batch, {"gpu": "synthetic"})
    tb = version.token_baseline

    def token_only() -> None:
        rows = StepRows(batch.req_step, batch.num_steps)
        tb.shares(batch, tb.weighted_tokens(batch), rows)
        tb.predict(batch, rows.sum(batch.new_tokens))

    full = _best_seconds(lambda: version.attribute(batch), repeats)
    token = _best_seconds(token_only, repeats)
    per = 1e6 / batch.num_steps
    return {
        "steps": batch.num_steps,
        "requests_per_step": batch.num_requests / max(batch.num_steps, 1),
        "us_per_step": full * per,
        "token_baseline_us_per_step": token * per,
        "ratio_to_token_baseline": full / token if token > 0 else None,
    }
