"""Synthetic vLLM-like steps with a known, non-linear latency: a stand-in until the reference engine.

Tests, doc examples and the attribution benchmark need many steps whose latency comes from a
function *outside* the LLMVisor family, over batches shaped like those vLLM V1's scheduler forms:
running decodes first, then chunked prefills filling a token budget (``max_num_batched_tokens``),
chunks continuing a long prompt or hitting the prefix cache (``c > 0``), total KV bounded by the
engine's capacity.  Three tenants mix sources of different shape: ``chat`` (short contexts),
``code`` (medium), ``longdoc`` (8k–32k contexts, long chunked prompts).

:func:`reference_latency` is an H100 / 8B-like roofline (constants from first principles except where
noted): GEMMs a smooth max of weight loading and compute over ``ceil(N/64)·64``
tokens (flat, a knee near 240 tokens, wave quantisation), prefill attention ∝ ``p·c + p²/2`` with
worse efficiency for short chunks, decode attention ∝ ``Σc`` above a per-layer launch floor,
per-request sampling, a fixed launch cost, and multiplicative log-normal noise.  The decode
attention form, per layer ``max(0.0115, 0.006 + 1.34e-6·Σc + 1.4e-4·|B_dec|)`` ms, was read off
AIConfigurator's vLLM 0.14 H100 table (32 heads, 8 KV heads; ``../shared/data/kernels``): close to
it for large batches, low for one or two sequences at long context.  It is *not* the reference
engine (``shadowd.twin``), which uses measured kernel tables.

>>> b = synthetic_batch(steps=200, seed=0)
>>> sorted(set(b.kind_names())) == ['decode', 'mixed', 'prefill'], bool((b.latency_ms > 0).all())
(True, True)
>>> int(b.per_step_sum(b.new_tokens.astype(float)).max()) <= 2048
True
"""

from __future__ import annotations

import numpy as np

from shadowd.steps.batch import StepBatch

TENANTS = np.array(["chat", "code", "longdoc"], dtype=object)
TENANT_MIX = (0.6, 0.25, 0.15)
CONTEXT_RANGE = ((100, 4_000), (500, 8_000), (8_000, 32_000))  # decode contexts per tenant

GEMM_FLAT_MS, GEMM_KNEE_TOKENS = 5.5, 240.0  # 16 GB of weights at ~3 TB/s; ~16 GFLOP/token
ATTN_PAIR_MS = 1.3e-6  # one query-key pair over 32 layers at ~400 TFLOP/s
KV_TOKEN_MS = 4.3e-5  # 128 KiB of KV per token at ~3 TB/s
LAYERS, DECODE_FLOOR_MS, DECODE_SEQ_MS = 32, 0.0115, 1.4e-4  # per layer; see reference_latency
SAMPLE_MS, FIXED_MS = 0.004, 1.0


def reference_latency(batch: StepBatch, *, noise: float = 0.02, seed: int = 0) -> np.ndarray:
    """Step latency (ms) of ``batch`` under the synthetic roofline, with log-normal noise."""
    p = batch.new_tokens.astype(np.float64)
    c = batch.context_tokens.astype(np.float64)
    pre = batch.prefill
    n = batch.per_step_sum(p)
    n_q = np.ceil(n / 64.0) * 64.0
    gemm = GEMM_FLAT_MS * (1.0 + (n_q / GEMM_KNEE_TOKENS) ** 4) ** 0.25 * (n > 0)
    pf = np.where(pre, ATTN_PAIR_MS * (p * c + p * p / 2.0) * (1.0 + 64.0 / np.maximum(p, 1.0)), 0.0)
    n_dec = batch.per_step_sum((~pre).astype(np.float64))
    kv = batch.per_step_sum(np.where(pre, 0.0, c * p))
    per_layer = np.maximum(DECODE_FLOOR_MS, 0.006 + KV_TOKEN_MS / LAYERS * kv + DECODE_SEQ_MS * n_dec)
    dec = LAYERS * per_layer * (n_dec > 0)
    t = FIXED_MS + gemm + batch.per_step_sum(pf) + dec + SAMPLE_MS * batch.batch_size()
    rng = np.random.default_rng(seed)
    return t * rng.lognormal(0.0, noise, size=t.shape) if noise > 0 else t


def synthetic_batch(
    steps: int = 1000,
    seed: int = 0,
    *,
    requests_per_step: int | None = None,
    budget: int = 2048,
    max_seqs: int = 256,
    kv_capacity: int = 450_000,
    noise: float = 0.02,
) -> StepBatch:
    """``steps`` vLLM-like steps (20% prefill-only, 40% decode-only, 40% mixed) with latencies.

    ``requests_per_step`` fixes the batch size (decode-only and mixed steps only), for timing.
    """
    rng = np.random.default_rng(seed)
    s = steps
    kind = (
        rng.choice(3, size=s, p=(0.2, 0.4, 0.4)) if requests_per_step is None else rng.choice([1, 2], size=s)
    )
    n_pre = np.where(kind == 1, 0, rng.integers(1, 4, size=s))
    if requests_per_step is None:
        n_dec = np.where(kind == 0, 0, np.exp(rng.uniform(0, np.log(max_seqs), size=s)).astype(np.int64))
        n_dec = np.maximum(n_dec, (kind != 0).astype(np.int64))
    else:
        n_dec = requests_per_step - n_pre
    count = n_pre + n_dec
    req_step = np.repeat(np.arange(s), count)
    start = np.cumsum(count) - count
    pos = np.arange(req_step.size) - start[req_step]
    prefill = pos >= n_dec[req_step]
    r = req_step.size
    tenant_code = rng.choice(3, size=r, p=TENANT_MIX)

    # Decodes: log-uniform context per tenant, total KV capped at the engine's capacity.
    lo, hi = (np.array(x)[tenant_code] for x in zip(*CONTEXT_RANGE))
    ctx = np.exp(rng.uniform(np.log(lo), np.log(hi)))
    kv = np.bincount(req_step, weights=np.where(prefill, 0.0, ctx), minlength=s)
    ctx *= np.minimum(1.0, kv_capacity / np.maximum(kv, 1.0))[req_step]
    new = np.ones(r)

    # Prefill chunks: fill the budget left by decodes (60% of steps) or part of it (queue drained).
    left = np.maximum(budget - n_dec - 16 * n_pre, 0).astype(np.float64)
    fill = np.where(rng.random(s) < 0.6, 1.0, rng.uniform(0.1, 1.0, size=s)) * left
    u = rng.uniform(0.2, 1.0, size=r) * prefill
    u_total = np.bincount(req_step, u, minlength=s)[req_step]
    chunk = 16.0 + np.floor(fill[req_step] * u / np.maximum(u_total, 1e-9))
    new = np.where(prefill, chunk, new)
    # Prefix of a chunk: fresh prompt, a continuation of a long prompt, or a prefix-cache hit.
    how = rng.choice(3, size=r, p=(0.4, 0.3, 0.3))
    cont = budget * rng.integers(1, 16, size=r) * np.where(tenant_code == 2, 1, 0.25)
    hit = 512.0 * rng.integers(1, 17, size=r)
    pre_ctx = np.choose(how, [np.zeros(r), cont, hit])
    ctx = np.where(prefill, pre_ctx, ctx)

    new_i, ctx_i = new.astype(np.int64), ctx.astype(np.int64)
    batch = StepBatch(
        latency_ms=np.zeros(s),
        req_step=req_step,
        new_tokens=new_i,
        context_tokens=ctx_i,
        prompt_tokens=np.where(prefill, ctx_i + new_i, np.maximum(ctx_i // 2, 1)),
        prefill=prefill,
        tenant=TENANTS[tenant_code],
        req_id=np.char.add("r", (seed * 10**9 + np.arange(r)).astype(str)).astype(object),
        step_seq=np.arange(s, dtype=np.int64),
    )
    batch.latency_ms = reference_latency(batch, noise=noise, seed=seed + 1)
    return batch
