"""Built-in synthetic tenants, so the demo needs no trace file.

Three shapes that a shared engine typically co-batches, modelled on the real traces
(lengths: Azure conv/code 2023 medians, Mooncake conversation; sharing: Mooncake's
prefix reuse).  They are synthetic: results that depend on them say so.

* ``chat``: Poisson arrivals, prompts median ~700 tokens (one shared 512-token system
  prompt plus the turn), outputs median ~180.
* ``code``: bursty (Gamma, CV 2) arrivals, long prompts median ~2,600 tokens of which
  the first 4 blocks are one of 12 repositories' shared context, short outputs (~25).
* ``longdoc``: rare requests over long documents (median ~10k tokens); each document
  is asked 1-3 questions in a row, so follow-ups hit the prefix cache; outputs ~250.

>>> reqs = synthetic_stream("code", "c", seed=1, limit=50)
>>> len(reqs), reqs[0].arrival_s == 0.0, all(r.prompt_tokens > r.output_tokens for r in reqs[:5])
(50, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .request_spec import BLOCK_TOKENS, RequestSpec, block_key


@dataclass(frozen=True)
class SyntheticKind:
    """Parameters of one synthetic tenant shape (lengths are log-normal: median, sigma)."""

    rate: float  # req/s
    arrival_cv: float  # 1 = Poisson
    prompt: tuple[float, float]
    output: tuple[float, float]
    shared_blocks: int  # leading blocks drawn from a small shared pool
    pool: int  # size of that pool (1 = one system prompt for all)
    repeats: tuple[int, int]  # the same prompt prefix is reused this many times in a row (range)


KINDS: dict[str, SyntheticKind] = {
    "chat": SyntheticKind(
        rate=3.0,
        arrival_cv=1.0,
        prompt=(700, 0.8),
        output=(180, 0.7),
        shared_blocks=1,
        pool=1,
        repeats=(1, 1),
    ),
    "code": SyntheticKind(
        rate=1.5,
        arrival_cv=2.0,
        prompt=(2600, 0.6),
        output=(25, 0.8),
        shared_blocks=4,
        pool=12,
        repeats=(1, 1),
    ),
    "longdoc": SyntheticKind(
        rate=0.3,
        arrival_cv=1.0,
        prompt=(10000, 0.5),
        output=(250, 0.6),
        shared_blocks=0,
        pool=0,
        repeats=(1, 3),
    ),
}


def synthetic_stream(
    kind: str,
    tenant: str,
    *,
    seed: int = 0,
    limit: int | None = None,
    duration_s: float | None = None,
    rate: float | None = None,
) -> list[RequestSpec]:
    """A seeded stream of ``kind`` requests; stops at ``limit`` requests or ``duration_s`` (default 600 s)."""
    if kind not in KINDS:
        raise KeyError(f"unknown synthetic kind {kind!r}; known: {', '.join(KINDS)}")
    spec = KINDS[kind]
    if limit is None and duration_s is None:
        duration_s = 600.0
    rng = np.random.default_rng(seed)
    mean_gap = 1.0 / (rate or spec.rate)
    shape = 1.0 / spec.arrival_cv**2
    out: list[RequestSpec] = []
    t, next_id, doc_left = 0.0, 0, 0
    doc_blocks: tuple[int, ...] = ()
    while limit is None or len(out) < limit:
        if out:
            t += float(rng.gamma(shape, mean_gap / shape))
        if duration_s is not None and t > duration_s:
            break
        output = max(1, int(rng.lognormal(np.log(spec.output[0]), spec.output[1])))
        if spec.repeats[1] > 1:  # questions over one document
            if doc_left == 0:
                doc_len = max(BLOCK_TOKENS, int(rng.lognormal(np.log(spec.prompt[0]), spec.prompt[1])))
                n_doc = doc_len // BLOCK_TOKENS
                doc_blocks = tuple(block_key(kind, tenant, next_id + j) for j in range(n_doc))
                next_id += n_doc
                doc_left = int(rng.integers(spec.repeats[0], spec.repeats[1] + 1))
            doc_left -= 1
            question = int(rng.integers(50, 400))
            prompt = len(doc_blocks) * BLOCK_TOKENS + question
            blocks = doc_blocks + (block_key(kind, tenant, next_id),)
            next_id += 1
        else:
            prompt = max(
                spec.shared_blocks * BLOCK_TOKENS + 16,
                int(rng.lognormal(np.log(spec.prompt[0]), spec.prompt[1])),
            )
            which = int(rng.integers(0, max(spec.pool, 1)))
            shared = tuple(block_key(kind, tenant, -(which * 64 + j) - 1) for j in range(spec.shared_blocks))
            n_own = -(-prompt // BLOCK_TOKENS) - len(shared)
            own = tuple(block_key(kind, tenant, next_id + j) for j in range(n_own))
            next_id += n_own
            blocks = shared + own
        out.append(RequestSpec(t, tenant, prompt, output, blocks))
    return out
