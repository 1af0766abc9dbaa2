"""Request streams for the real-scheduler tests, from the real traces in ../shared/data."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from itertools import islice

import numpy as np

from shadowd.paths import data_dir


@dataclass(frozen=True)
class Req:
    arrival_s: float
    tenant: str
    prompt_tokens: int
    output_tokens: int
    prefix_blocks: tuple[int, ...] | None = None


def mixed_trace_requests(
    per_tenant: int, seed: int, time_scale: float = 0.05, max_prompt: int = 12000
) -> list[Req]:
    """Three tenants: Mooncake conversations (shared prefixes), Azure code, Azure chat."""
    rng = np.random.default_rng(seed)
    out: list[Req] = []
    with open(data_dir() / "traces/mooncake/conversation_trace.jsonl") as f:
        for rec in islice(map(json.loads, f), per_tenant):
            out.append(
                Req(
                    rec["timestamp"] / 1000 * time_scale,
                    "longdoc",
                    min(rec["input_length"], max_prompt),
                    min(rec["output_length"], 64),
                    tuple(rec["hash_ids"]),
                )
            )
    for tenant, name in (("coder", "code"), ("chat", "conv")):
        with open(data_dir() / f"traces/azure-2023/AzureLLMInferenceTrace_{name}.csv") as f:
            rows = list(islice(csv.DictReader(f), per_tenant))
        t = np.cumsum(rng.exponential(0.4, len(rows))) * time_scale * 10
        for ts, row in zip(t, rows):
            out.append(
                Req(
                    float(ts),
                    tenant,
                    min(int(row["ContextTokens"]), max_prompt),
                    max(1, min(int(row["GeneratedTokens"]), 64)),
                )
            )
    return sorted(out, key=lambda r: r.arrival_s)
