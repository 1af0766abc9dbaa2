"""Multi-tenant workloads: ``NAME=TRACE[:RATE]`` tenant specs, merged by arrival time.

``TRACE`` is a path (``.csv`` Azure, ``.jsonl`` Mooncake, ServeGen ``chunk-<c>-*``
file) or a short name: ``azure-code``, ``azure-conv``, ``mooncake-conversation``,
``mooncake-synthetic``, ``servegen:<client>``, ``synthetic:<chat|code|longdoc>``,
``lengths:<sharegpt|arxiv>`` (real length pairs, Poisson arrivals at RATE, default 1 req/s).
``RATE`` (req/s) rescales the stream's arrival times to that mean rate.  Each stream
is seeded from the run seed and the tenant name, so adding a tenant does not change
the others.

>>> TenantSpec.parse("docs=synthetic:longdoc:0.5")
TenantSpec(name='docs', trace='synthetic:longdoc', rate=0.5)
>>> TenantSpec.parse("acme=servegen:14"), TenantSpec.parse("b=azure-code:2").rate
(TenantSpec(name='acme', trace='servegen:14', rate=None), 2.0)
>>> w = build_workload(DEFAULT_TENANTS, seed=3, limit=200)
>>> len(w), sorted({r.tenant for r in w}), all(a.arrival_s <= b.arrival_s for a, b in zip(w, w[1:]))
(200, ['chat', 'code', 'docs'], True)
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from shadowd.paths import data_dir

from .request_spec import RequestSpec
from .synthetic_tenants import KINDS, synthetic_stream
from .traces import load_azure, load_lengths, load_mooncake, load_servegen

_SCHEMES = ("servegen", "synthetic", "lengths")
DEFAULT_LENGTHS_RATE = 1.0  # req/s of a ``lengths:`` tenant given no rate (the files have no arrivals)
DEFAULT_TENANTS = ("chat=synthetic:chat", "code=synthetic:code", "docs=synthetic:longdoc")

SHORT_NAMES = {
    "azure-code": ("azure", "azure-2023/AzureLLMInferenceTrace_code.csv"),
    "azure-conv": ("azure", "azure-2023/AzureLLMInferenceTrace_conv.csv"),
    "mooncake-conversation": ("mooncake", "mooncake/conversation_trace.jsonl"),
    "mooncake-synthetic": ("mooncake", "mooncake/synthetic_trace.jsonl"),
}


@dataclass(frozen=True)
class TenantSpec:
    """A tenant and where its requests come from; ``rate`` in req/s rescales arrivals."""

    name: str
    trace: str
    rate: float | None = None

    @classmethod
    def parse(cls, text: str) -> TenantSpec:
        """Parse ``NAME=TRACE[:RATE]``; a trailing ``:number`` is the rate."""
        if "=" not in text:
            raise ValueError(f"tenant spec {text!r}: expected NAME=TRACE[:RATE]")
        name, trace = (s.strip() for s in text.split("=", 1))
        rate = None
        parts = trace.split(":")
        if parts[0] in _SCHEMES:  # servegen:<client>[:RATE], synthetic:<kind>[:RATE], lengths:<name>[:RATE]
            trace, rest = ":".join(parts[:2]), parts[2:]
            if len(rest) > 1:
                raise ValueError(f"tenant spec {text!r}: expected {parts[0]}:<name>[:RATE]")
            rate = float(rest[0]) if rest else None
        else:
            head, _, tail = trace.rpartition(":")
            if head:
                try:
                    rate = float(tail)
                    trace = head
                except ValueError:
                    pass
        if not name or not trace:
            raise ValueError(f"tenant spec {text!r}: empty name or trace")
        if rate is not None and rate <= 0:
            raise ValueError(f"tenant spec {text!r}: rate must be positive")
        return cls(name, trace, rate)

    def check_source(self) -> None:
        """Raise now, before an engine is built, if a trace file is missing or of unknown format
        (a demo with a typo should fail in a second, not after vLLM has loaded); the schemes
        (``servegen:``, ``synthetic:``, ``lengths:``) are checked when loaded."""
        scheme = self.trace.split(":", 1)[0]
        if scheme not in _SCHEMES and not Path(self.trace).name.startswith("chunk-"):
            _trace_file(self.trace)


def _stream_seed(seed: int, tenant: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(tenant.encode())) & 0x7FFFFFFF


def _rescaled(reqs: list[RequestSpec], rate: float | None) -> list[RequestSpec]:
    if rate is None or len(reqs) < 2 or reqs[-1].arrival_s <= 0:
        return reqs
    factor = ((len(reqs) - 1) / reqs[-1].arrival_s) / rate
    return [
        RequestSpec(r.arrival_s * factor, r.tenant, r.prompt_tokens, r.output_tokens, r.prefix_blocks)
        for r in reqs
    ]


def load_stream(
    spec: TenantSpec | str,
    *,
    seed: int = 0,
    limit: int | None = None,
    duration_s: float | None = None,
    max_context: int | None = None,
) -> list[RequestSpec]:
    """One tenant's requests, arrival-sorted from 0 s, capped to ``max_context`` tokens."""
    spec = TenantSpec.parse(spec) if isinstance(spec, str) else spec
    s = _stream_seed(seed, spec.name)
    trace = spec.trace
    if trace.startswith("synthetic:"):
        reqs = synthetic_stream(
            trace.split(":", 1)[1], spec.name, seed=s, limit=limit, duration_s=duration_s, rate=spec.rate
        )
    elif trace.startswith("lengths:"):
        reqs = load_lengths(
            trace.split(":", 1)[1],
            spec.name,
            rate=spec.rate or DEFAULT_LENGTHS_RATE,
            seed=s,
            limit=limit,
            duration_s=duration_s,
        )
    elif trace.startswith("servegen:") or Path(trace).name.startswith("chunk-"):
        client = trace.split(":", 1)[1] if trace.startswith("servegen:") else trace
        horizon = duration_s if duration_s is not None else (None if limit else 600.0)
        if spec.rate is None:
            reqs = load_servegen(client, spec.name, seed=s, limit=limit, duration_s=horizon)
        else:  # generate enough at the native rate, then stretch time to RATE
            need = int(spec.rate * horizon * 1.25) + 10 if horizon is not None else limit
            need = min(need, limit) if limit is not None else need
            reqs = _rescaled(load_servegen(client, spec.name, seed=s, limit=need, duration_s=None), spec.rate)
            if horizon is not None:
                reqs = [r for r in reqs if r.arrival_s <= horizon]
    else:
        kind, path = _trace_file(trace)
        loader = load_azure if kind == "azure" else load_mooncake
        # rescaling stretches time, so cut by duration only afterwards
        reqs = _rescaled(
            loader(path, spec.name, limit=limit, duration_s=None if spec.rate else duration_s), spec.rate
        )
        if duration_s is not None:
            reqs = [r for r in reqs if r.arrival_s <= duration_s]
    return [r.capped(max_context) for r in reqs]


def _trace_file(trace: str) -> tuple[str, Path]:
    if trace in SHORT_NAMES:
        kind, rel = SHORT_NAMES[trace]
        return kind, data_dir() / "traces" / rel
    p = Path(trace)
    if not p.exists():
        known = (
            sorted(SHORT_NAMES)
            + ["servegen:<client>", "lengths:<sharegpt|arxiv>"]
            + [f"synthetic:{k}" for k in KINDS]
        )
        raise FileNotFoundError(f"trace {trace!r}: no such file; short names: {', '.join(known)}")
    if p.suffix == ".jsonl":
        return "mooncake", p
    if p.suffix == ".csv":
        return "azure", p
    raise ValueError(f"trace {trace!r}: unknown format (want .csv Azure, .jsonl Mooncake, ServeGen chunk)")


def merge_streams(streams: Iterable[list[RequestSpec]], limit: int | None = None) -> list[RequestSpec]:
    """Merge arrival-sorted streams into one (stable for equal times), keeping the first ``limit``."""
    merged = heapq.merge(*streams, key=lambda r: r.arrival_s)
    out = []
    for r in merged:
        if limit is not None and len(out) >= limit:
            break
        out.append(r)
    return out


def build_workload(
    tenants: Iterable[TenantSpec | str] = DEFAULT_TENANTS,
    *,
    seed: int = 0,
    limit: int | None = None,
    duration_s: float | None = None,
    max_context: int | None = None,
) -> list[RequestSpec]:
    """All tenants' requests merged by arrival; at most ``limit`` requests in total."""
    specs = [TenantSpec.parse(t) if isinstance(t, str) else t for t in tenants]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate tenant names in {names}")
    streams = [
        load_stream(s, seed=seed, limit=limit, duration_s=duration_s, max_context=max_context) for s in specs
    ]
    return merge_streams(streams, limit)
