"""Replay scenarios: real trace requests for named tenants, at stated multiples of their entitlement.

A tenant's entitlement is its weight's share of the GPU.  Its arrival rate is set so that its
*offered* GPU time is ``demand ×`` that share of a second per second, from its **capacity**: how
many of its requests per second the engine completes when this tenant alone saturates it (a pilot
run of ``PILOT_S`` simulated seconds on the real scheduler, all ``PILOT_REQUESTS`` arriving at
once; prefix-cache hits and batching included).  Arrivals are Poisson at that rate (seeded); the
requests themselves (lengths, prefix blocks, order) are the trace's.  The pilot's capacity is an
estimate (batching beside other tenants differs), so the replay measures what each tenant
actually received against the Shapley ground truth rather than trusting the offered multiple.

* ``noisy-neighbour``: ``longdoc`` (Mooncake conversation trace, real prefix sharing) offered
  well above its entitlement beside ``code`` and ``chat`` (Azure 2023 code and conversation
  traces) offered a little above theirs (the ``demand`` of each ``TenantPlan`` below), equal
  weights: all three exceed their share, so a fair policy can show equal shares.
* ``decode-heavy``: ``longgen`` (Mooncake conversation prompts, outputs lengthened to
  ``LONG_OUTPUT`` tokens: cheap in VTC tokens, expensive in KV reads) beside ``code`` and
  ``chat``, all with the same ``demand`` (higher than the noisy neighbour's batch-mates: pilot
  capacities are measured alone, and mixed the engine batches better, so a small excess left
  nobody backlogged), equal weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from shadowd.twin.request_spec import RequestSpec
from shadowd.twin.workload import TenantSpec, load_stream, merge_streams

LONG_OUTPUT = 1024
PILOT_REQUESTS = 600
PILOT_S = 60.0


@dataclass(frozen=True)
class TenantPlan:
    name: str
    trace: str  # a workload trace name (shadowd.twin.workload.SHORT_NAMES)
    demand: float  # offered GPU time as a multiple of the entitlement
    weight: float = 1.0
    reshape: Callable[[RequestSpec], RequestSpec] | None = None


def _long_output(r: RequestSpec) -> RequestSpec:
    return replace(r, output_tokens=LONG_OUTPUT)


SCENARIOS: dict[str, tuple[TenantPlan, ...]] = {
    "noisy-neighbour": (
        TenantPlan("longdoc", "mooncake-conversation", 3.0),
        TenantPlan("code", "azure-code", 1.2),
        TenantPlan("chat", "azure-conv", 1.2),
    ),
    "decode-heavy": (
        TenantPlan("longgen", "mooncake-conversation", 2.0, reshape=_long_output),
        TenantPlan("code", "azure-code", 2.0),
        TenantPlan("chat", "azure-conv", 2.0),
    ),
}


def _stream(p: TenantPlan, limit: int, seed: int, max_context: int) -> list[RequestSpec]:
    reqs = load_stream(TenantSpec(p.name, p.trace), seed=seed, limit=limit, max_context=max_context)
    return [p.reshape(r).capped(max_context) for r in reqs] if p.reshape else reqs


def _poisson(reqs: list[RequestSpec], rate: float, seed: int, horizon_s: float) -> list[RequestSpec]:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1.0 / rate, len(reqs)))
    return [replace(r, arrival_s=float(x)) for r, x in zip(reqs, t) if x <= horizon_s]


def scenario_requests(
    name: str,
    capacity: Callable[[list[RequestSpec], float], float],
    duration_s: float,
    *,
    seed: int = 0,
    max_context: int = 31744,
) -> tuple[list[RequestSpec], dict[str, dict]]:
    """(requests arriving within ``duration_s``, per tenant: weight, entitlement, demand, rate).

    ``capacity(requests, seconds)`` runs the pilot: requests completed per simulated second."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; expected one of {sorted(SCENARIOS)}")
    plans = SCENARIOS[name]
    total_w = sum(p.weight for p in plans)
    streams, info = [], {}
    for i, p in enumerate(plans):
        pilot = [replace(r, arrival_s=0.0) for r in _stream(p, PILOT_REQUESTS, seed, max_context)]
        cap = capacity(pilot, PILOT_S)
        share = p.weight / total_w
        rate = p.demand * share * cap
        reqs = _stream(p, int(rate * duration_s * 1.5) + 50, seed, max_context)
        reqs = _poisson(reqs, rate, seed * 1000 + i, duration_s)
        streams.append(reqs)
        info[p.name] = {
            "weight": p.weight,
            "entitlement": share,
            "demand": p.demand,
            "trace": p.trace,
            "capacity_rps": cap,
            "rate_rps": rate,
            "requests": len(reqs),
        }
    return merge_streams(streams), info
