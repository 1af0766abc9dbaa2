"""``shadowd twin step``: one step's latency from a textual batch description.

Prefills are ``TOKENS[@PREFIX]`` (a chunk of TOKENS new tokens after PREFIX cached
ones); decodes are ``COUNTxKV`` (COUNT requests each with KV tokens cached).

>>> r = twin_step("builtin", "llama-3.1-8b", 1, prefills=["512@3072"], decodes=["4x1000"])
>>> r["platform"], r["requests"], r["latency_ms"] == r["breakdown"]["total_ms"]
('analytic:h100_sxm', 5, True)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .step_latency import ReferenceEngine


@lru_cache(maxsize=8)
def cached_engine(platform: str, model: str, tp: int) -> ReferenceEngine:
    """One engine per (platform, model, tp): construction interpolates the tables once."""
    return ReferenceEngine(platform, model, tp, jitter=False)


def parse_prefill(text: str) -> tuple[int, int]:
    """``"512@3072"`` -> (512, 3072); ``"2048"`` -> (2048, 0)."""
    tokens, _, prefix = text.strip().partition("@")
    new, cached = int(tokens), int(prefix or 0)
    if new < 1 or cached < 0:
        raise ValueError(f"prefill {text!r}: want TOKENS>=1[@PREFIX>=0]")
    return new, cached


def parse_decode(text: str) -> tuple[int, int]:
    """``"128x4096"`` -> (128 requests, 4096 KV tokens each)."""
    count, sep, kv = text.strip().lower().partition("x")
    if not sep:
        raise ValueError(f"decode {text!r}: want COUNTxKV")
    n, k = int(count), int(kv)
    if n < 1 or k < 0:
        raise ValueError(f"decode {text!r}: want COUNT>=1 and KV>=0")
    return n, k


def twin_step(
    platform: str,
    model: str,
    tp: int = 1,
    prefills: list[str] | tuple[str, ...] = (),
    decodes: list[str] | tuple[str, ...] = (),
) -> dict:
    """Noiseless latency of one step: ``{"latency_ms", "breakdown", "platform", ...}``."""
    new, ctx, pre = [], [], []
    for text in prefills:
        n, c = parse_prefill(text)
        new.append(n), ctx.append(c), pre.append(True)
    for text in decodes:
        n, k = parse_decode(text)
        new += [1] * n
        ctx += [k] * n
        pre += [False] * n
    if not new:
        raise ValueError("an empty step: give at least one --prefill or --decode")
    engine = cached_engine(str(platform), str(model), int(tp))
    breakdown = engine.breakdown(np.array(new), np.array(ctx), np.array(pre))
    return {
        "latency_ms": breakdown["total_ms"],
        "breakdown": breakdown,
        "platform": engine.platform.key,
        "model": engine.model.name,
        "tp": engine.tp,
        "requests": len(new),
    }
