"""Random engine-like steps, for fits and tests that do not need the real scheduler.

Batches look like what vLLM's chunked-prefill scheduler forms: a decode batch of
1-256 requests with log-normal KV lengths, and in some steps one to three prefill
chunks (some after a cached prefix) filling part of the token budget.  The real
scheduler (driven by the demo) remains the reference for workload realism; these
are for quick, seeded checks.

>>> from shadowd.twin.step_latency import ReferenceEngine
>>> b = sample_steps(ReferenceEngine("builtin", "llama-3.1-8b"), 20, seed=0)
>>> b.num_steps, sorted(set(b.kind_names()))
(20, ['decode', 'mixed', 'prefill'])
"""

from __future__ import annotations

import numpy as np

from shadowd.steps.batch import KIND_NAMES, StepBatch

from .step_latency import ReferenceEngine


def sample_steps(
    engine: ReferenceEngine,
    steps: int,
    *,
    seed: int = 0,
    max_batch: int = 256,
    token_budget: int = 8192,
    jitter: bool = True,
) -> StepBatch:
    """``steps`` random steps with their engine latencies, as a :class:`StepBatch`."""
    rng = np.random.default_rng(seed)
    req_step, new, ctx, prompt, pre, lat = [], [], [], [], [], []
    for s in range(steps):
        kind = rng.choice(3, p=[0.15, 0.55, 0.30])  # prefill-only, decode-only, mixed
        nd = 0 if kind == 0 else int(np.exp(rng.uniform(0, np.log(max_batch))))
        kv = np.minimum(rng.lognormal(np.log(1500), 1.0, nd).astype(np.int64) + 1, 32000)
        n_new, n_ctx, n_pre = [1] * nd, list(kv), [False] * nd
        if kind != 1:
            budget = token_budget - nd
            for _ in range(int(rng.integers(1, 4))):
                if budget < 16:
                    break
                chunk = int(min(budget, np.exp(rng.uniform(np.log(16), np.log(token_budget)))))
                cached = int(rng.choice([0, 0, rng.integers(512, 16384)]))
                n_new.append(chunk), n_ctx.append(cached), n_pre.append(True)
                budget -= chunk
        a_new, a_ctx, a_pre = np.array(n_new), np.array(n_ctx), np.array(n_pre, dtype=bool)
        lat.append(engine.latency_ms(a_new, a_ctx, a_pre, jitter=jitter))
        req_step += [s] * len(n_new)
        new += n_new
        ctx += n_ctx
        prompt += [c + n if p else max(c // 2, 1) for n, c, p in zip(n_new, n_ctx, n_pre)]
        pre += n_pre
    return StepBatch(
        latency_ms=np.array(lat),
        req_step=np.array(req_step),
        new_tokens=np.array(new),
        context_tokens=np.array(ctx),
        prompt_tokens=np.array(prompt),
        prefill=np.array(pre),
    )


def token_count_fit(batch: StepBatch) -> dict[str, tuple[float, float]]:
    """Per step class, least squares of latency on [1, tokens in the step]: (R^2, p90 rel. error).

    The token baseline's latency model; on a faithful engine it must visibly miss.
    """
    tokens = batch.per_step_sum(batch.new_tokens.astype(np.float64))
    out = {}
    for code, name in enumerate(KIND_NAMES):
        sel = batch.kind == code
        if sel.sum() < 3:
            continue
        y = batch.latency_ms[sel]
        X = np.c_[np.ones(sel.sum()), tokens[sel]]
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        yhat = X @ coef
        r2 = 1.0 - ((y - yhat) ** 2).sum() / ((y - y.mean()) ** 2).sum()
        out[name] = (float(r2), float(np.percentile(np.abs(yhat - y) / y, 90)))
    return out
