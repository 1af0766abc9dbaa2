"""The workload envelope the latency model was calibrated on, and steps that leave it.

A piecewise-linear latency model is only validated where calibration had data: a context,
batch size or per-step token count beyond that range is extrapolation, and a tenant the
calibration never saw has unvalidated shares. ``WorkloadEnvelope`` records the range
(longest context, p99 batch size and, from design r17, a p1 floor under it, most tokens per
step, the tenant set; from design r20, decode-only steps' own batch range and KV tokens read;
from design r21, a p1 floor under tokens per step; from design r43, widened by ``covering`` over
steps beyond it that the model was validated on);
``EnvelopeMonitor`` flags steps beyond it as drift events (at most one per dimension per
``cooldown_steps``, one per new tenant) and keeps the fractions the gate's coverage check reads.

>>> env = WorkloadEnvelope.from_calibration(
...     context=[100, 2000, 4096], batch_size=[1, 8, 32], tokens_per_step=[64, 512, 2048],
...     tenants=["acme", "globex"])
>>> env.max_context, env.max_tokens_per_step, sorted(env.tenants)
(4096, 2048, ['acme', 'globex'])
>>> mon = EnvelopeMonitor(env)
>>> [e.detector for e in mon.update(1, 0.0, max_context=9000, batch_size=4, tokens=100,
...                                 tenants=["acme", "initech"])]
['envelope.context', 'envelope.new_tenant']
>>> mon.update(2, 0.1, max_context=9001, batch_size=4, tokens=100)  # within the cooldown
[]
>>> s = mon.summary()
>>> s["extrapolated_steps"], s["new_tenants"]
(2, ['initech'])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from checks.drift_event import DriftEvent


@dataclass(frozen=True)
class WorkloadEnvelope:
    """Range of the calibration workload; numeric limits are inclusive."""

    max_context: int
    max_batch_size: float
    max_tokens_per_step: int
    tenants: frozenset[str] = field(default_factory=frozenset)
    # Design r17: the fewest requests per step the model was calibrated on.  A fit on saturated
    # batches only does not separate the step's fixed cost from its per-request costs, so a
    # batch well below the calibration's is extrapolation too (``from_calibration``).
    min_batch_size: float = 0.0
    # Design r20: decode-only steps' own batch range and KV tokens read (the step's summed
    # context), over the steps the model was fitted on (the caller's choice: the daemon passes
    # the window's fit part).  A decode-only step's cost is a fixed term, a per-request term and
    # a per-KV-token term, identified only by decode-only steps of such sizes and such reads:
    # mixed steps carry prompt chunks and often sit in the model's other segment, and the longest
    # context (``max_context``) bounds one request, not what a batch of them reads.
    # Infinite/zero: no range (bodies before r20); no decode-only steps: none inside (max 0).
    max_decode_batch_size: float = math.inf
    min_decode_batch_size: float = 0.0
    max_decode_kv_tokens: float = math.inf
    # Design r21: the fewest new tokens per step, as r17's floor under batch size.  A window of
    # steps near the token budget only does not separate the step's fixed cost from its
    # per-token costs: a lighter step after it is extrapolation (bodies before r21: no floor).
    min_tokens_per_step: float = 0.0

    @classmethod
    def from_calibration(
        cls,
        context: Iterable[float],
        batch_size: Iterable[float],
        tokens_per_step: Iterable[float],
        tenants: Iterable[str] = (),
        *,
        batch_quantile: float = 0.99,
        margin: float = 0.0,
        decode_batch_size: Iterable[float] | None = None,
        decode_kv_tokens: Iterable[float] | None = None,
    ) -> WorkloadEnvelope:
        """Longest context and most tokens seen, ``batch_quantile`` of batch size, +``margin``;
        the floor is the ``1 - batch_quantile`` quantile of batch size, over ``1 + margin``;
        with ``decode_batch_size`` (the decode-only steps' batch sizes), the same two for them;
        with ``decode_kv_tokens`` (their summed contexts), ``batch_quantile`` of it, +``margin``.

        >>> env = WorkloadEnvelope.from_calibration([100], [240, 250, 260], [255], margin=0.5)
        >>> round(env.min_batch_size, 1), env.inside(max_context=np.array([100, 100]),
        ...     batch_size=np.array([200, 100]), tokens=np.array([200, 100])).tolist()
        (160.1, [True, False])
        """
        ctx = np.asarray(list(context), dtype=float)
        bs = np.asarray(list(batch_size), dtype=float)
        tok = np.asarray(list(tokens_per_step), dtype=float)
        if not (len(ctx) and len(bs) and len(tok)):
            raise ValueError("calibration arrays must not be empty")
        m = 1.0 + margin
        dec = None if decode_batch_size is None else list(decode_batch_size)
        fewest_decode = 0.0 if dec is None else _quantile(dec, 1.0 - batch_quantile, 1.0 / m)
        return cls(
            max_context=int(np.nanmax(ctx) * m),
            max_batch_size=float(np.nanquantile(bs, batch_quantile) * m),
            max_tokens_per_step=int(np.nanmax(tok) * m),
            tenants=frozenset(str(t) for t in tenants),
            min_batch_size=float(np.nanquantile(bs, 1.0 - batch_quantile) / m),
            max_decode_batch_size=_quantile(dec, batch_quantile, m),
            min_decode_batch_size=fewest_decode,
            max_decode_kv_tokens=_quantile(decode_kv_tokens, batch_quantile, m),
            min_tokens_per_step=float(np.nanquantile(tok, 1.0 - batch_quantile) / m),
        )

    def limits(self) -> dict[str, float]:
        """Per dimension, its limit: a step beyond it lies outside (a ``*_floor``: below it);
        the ``decode_*`` dimensions judge decode-only steps only."""
        return {
            "context": self.max_context,
            "batch_size": self.max_batch_size,
            "tokens": self.max_tokens_per_step,
            "batch_floor": self.min_batch_size,
            "decode_batch": self.max_decode_batch_size,
            "decode_floor": self.min_decode_batch_size,
            "decode_kv": self.max_decode_kv_tokens,
            "tokens_floor": self.min_tokens_per_step,
        }

    def violations(
        self,
        *,
        max_context: float | None = None,
        batch_size: float | None = None,
        tokens: float | None = None,
        step_class: str | None = None,
        kv_tokens: float | None = None,
    ) -> dict[str, float]:
        """Dimensions of one step beyond the envelope, with the observed value (``kv_tokens``:
        the step's summed context, judged on decode-only steps)."""
        seen = _by_dimension(max_context, batch_size, tokens, step_class == "decode", kv_tokens)
        limits = self.limits()
        return {k: float(v) for k, v in seen.items() if v is not None and bool(_beyond(k, v, limits[k]))}

    def inside(
        self,
        *,
        max_context: np.ndarray,
        batch_size: np.ndarray,
        tokens: np.ndarray,
        decode: np.ndarray | None = None,
        kv_tokens: np.ndarray | None = None,
    ) -> np.ndarray:
        """Per step, whether it lies inside the envelope (no dimension beyond its limit), as
        ``violations`` judges one step; bool[S].  ``decode`` (bool[S]): the decode-only steps,
        judged on their own batch range too, and on their KV tokens read with ``kv_tokens``.

        >>> env = WorkloadEnvelope(max_context=4096, max_batch_size=32.0, max_tokens_per_step=2048)
        >>> env.inside(max_context=np.array([100, 5000, 100]), batch_size=np.array([8, 8, 40]),
        ...            tokens=np.array([8, 8, 40])).tolist()
        [True, False, False]
        """
        bs = np.asarray(batch_size, float)
        inside = (
            (np.asarray(max_context, float) <= self.max_context)
            & (bs <= self.max_batch_size)
            & (bs >= self.min_batch_size)
            & (np.asarray(tokens, float) <= self.max_tokens_per_step)
            & (np.asarray(tokens, float) >= self.min_tokens_per_step)
        )
        if decode is not None:
            off = (bs > self.max_decode_batch_size) | (bs < self.min_decode_batch_size)
            if kv_tokens is not None:
                off |= np.asarray(kv_tokens, float) > self.max_decode_kv_tokens
            inside &= ~(np.asarray(decode, bool) & off)
        return inside

    def covering(
        self,
        *,
        max_context: np.ndarray,
        batch_size: np.ndarray,
        tokens: np.ndarray,
        decode: np.ndarray,
        kv_tokens: np.ndarray,
        margin: float = 0.0,
    ) -> WorkloadEnvelope:
        """This envelope widened so the given steps lie inside it: each limit some of them lie
        beyond moves past their extreme by ``margin`` (as ``from_calibration`` widens what
        calibration saw); the limits none of them passes stay.  Design r43
        (``checks.envelope_extension``): the steps a model was validated on beyond its envelope.
        ``decode`` (bool[S]) marks the decode-only steps, the only ones the ``decode_*`` limits
        judge.

        >>> env = WorkloadEnvelope(max_context=4096, max_batch_size=32.0, max_tokens_per_step=2048,
        ...                        max_decode_kv_tokens=10000.0)
        >>> wide = env.covering(max_context=np.array([100, 100]), batch_size=np.array([8, 40]),
        ...     tokens=np.array([8, 40]), decode=np.array([True, True]),
        ...     kv_tokens=np.array([20000, 900]), margin=0.5)
        >>> wide.max_batch_size, wide.max_decode_kv_tokens, wide.max_context, wide.max_tokens_per_step
        (60.0, 30000.0, 4096, 2048)
        >>> env.covering(max_context=np.array([4000]), batch_size=np.array([30]), tokens=np.array([30]),
        ...     decode=np.array([False]), kv_tokens=np.array([0]), margin=0.5) == env   # none beyond
        True
        """
        m = 1.0 + margin
        bs = np.asarray(batch_size, float)
        tok = np.asarray(tokens, float)
        dec = np.asarray(decode, bool)

        def up(limit: float, seen: np.ndarray) -> float:  # moved only where a step is beyond
            return float(seen.max()) * m if len(seen) and seen.max() > limit else limit

        def down(limit: float, seen: np.ndarray) -> float:
            return float(seen.min()) / m if len(seen) and seen.min() < limit else limit

        own, kv = bs[dec], np.asarray(kv_tokens, float)[dec]
        return dataclasses.replace(
            self,
            max_context=int(up(self.max_context, np.asarray(max_context, float))),
            max_batch_size=up(self.max_batch_size, bs),
            max_tokens_per_step=int(up(self.max_tokens_per_step, tok)),
            min_batch_size=down(self.min_batch_size, bs),
            min_tokens_per_step=down(self.min_tokens_per_step, tok),
            max_decode_batch_size=up(self.max_decode_batch_size, own),
            min_decode_batch_size=down(self.min_decode_batch_size, own),
            max_decode_kv_tokens=up(self.max_decode_kv_tokens, kv),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_context": self.max_context,
            "max_batch_size": self.max_batch_size,
            "max_tokens_per_step": self.max_tokens_per_step,
            "tenants": sorted(self.tenants),
            "min_batch_size": self.min_batch_size,
            "max_decode_batch_size": None
            if math.isinf(self.max_decode_batch_size)
            else self.max_decode_batch_size,
            "min_decode_batch_size": self.min_decode_batch_size,
            "max_decode_kv_tokens": None
            if math.isinf(self.max_decode_kv_tokens)
            else self.max_decode_kv_tokens,
            "min_tokens_per_step": self.min_tokens_per_step,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkloadEnvelope:
        known = {
            "max_context",
            "max_batch_size",
            "max_tokens_per_step",
            "tenants",
            "min_batch_size",
            "max_decode_batch_size",
            "min_decode_batch_size",
            "max_decode_kv_tokens",
            "min_tokens_per_step",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown WorkloadEnvelope key(s) {unknown}; known: {sorted(known)}")
        return cls(
            max_context=int(data["max_context"]),
            max_batch_size=float(data["max_batch_size"]),
            max_tokens_per_step=int(data["max_tokens_per_step"]),
            tenants=frozenset(data.get("tenants", ())),
            min_batch_size=float(data.get("min_batch_size", 0.0)),  # bodies stored before r17
            max_decode_batch_size=_or_inf(data.get("max_decode_batch_size")),  # before r20: none
            min_decode_batch_size=float(data.get("min_decode_batch_size") or 0.0),
            max_decode_kv_tokens=_or_inf(data.get("max_decode_kv_tokens")),
            min_tokens_per_step=float(data.get("min_tokens_per_step") or 0.0),  # before r21
        )


def _or_inf(x: Any) -> float:
    return math.inf if x is None else float(x)


def _quantile(values: Iterable[float] | None, q: float, scale: float) -> float:
    """``q`` quantile of ``values`` times ``scale``: no values given, no limit (inf); none at all, 0."""
    if values is None:
        return math.inf
    arr = np.asarray(list(values), dtype=float)
    return float(np.nanquantile(arr, q) * scale) if len(arr) else 0.0


def _by_dimension(
    max_context: Any, batch_size: Any, tokens: Any, decode: Any = False, kv_tokens: Any = None
) -> dict[str, Any]:
    """What each dimension of ``WorkloadEnvelope.limits`` is judged on; ``decode`` (a bool, or
    bool[S] for arrays): the decode-only steps, the only ones the ``decode_*`` dimensions judge
    (the others: ``None``, or NaN, which is beyond no limit)."""
    if isinstance(batch_size, np.ndarray):
        dec = np.asarray(decode, bool)
        own = np.where(dec, batch_size, np.nan)
        kv = None if kv_tokens is None else np.where(dec, np.asarray(kv_tokens, float), np.nan)
    else:
        own = batch_size if decode else None
        kv = kv_tokens if decode else None
    return {
        "context": max_context,
        "batch_size": batch_size,
        "tokens": tokens,
        "batch_floor": batch_size,
        "decode_batch": own,
        "decode_floor": own,
        "decode_kv": kv,
        "tokens_floor": tokens,
    }


def _beyond(dim: str, value: Any, limit: float) -> Any:
    """``value`` outside ``limit`` on ``dim`` (elementwise for arrays): below a floor, above a maximum."""
    return value < limit if dim.endswith("_floor") else value > limit


class EnvelopeMonitor:
    """Counts steps beyond a ``WorkloadEnvelope`` and reports them as drift events."""

    def __init__(self, envelope: WorkloadEnvelope, cooldown_steps: int = 1000) -> None:
        self.envelope = envelope
        self.cooldown_steps = int(cooldown_steps)
        self.steps = 0
        self.extrapolated_steps = 0
        self.by_dimension = {k: 0 for k in envelope.limits()}
        self.max_seen = {k: 0.0 for k in ("context", "batch_size", "tokens")}
        self.min_batch_seen = math.inf
        self.new_tenants: dict[str, int] = {}  # tenant -> step_seq first seen
        self._last_event: dict[str, int] = {}

    def update(
        self,
        step_seq: int,
        ts: float,
        *,
        max_context: float | None = None,
        batch_size: float | None = None,
        tokens: float | None = None,
        tenants: Iterable[str] = (),
        step_class: str | None = None,
        kv_tokens: float | None = None,
    ) -> list[DriftEvent]:
        """Check one step; returns the events it raises."""
        self.steps += 1
        seen = {"context": max_context, "batch_size": batch_size, "tokens": tokens}
        for k, v in seen.items():
            if v is not None:
                self.max_seen[k] = max(self.max_seen[k], float(v))
        if batch_size is not None:
            self.min_batch_seen = min(self.min_batch_seen, float(batch_size))
        beyond = self.envelope.violations(
            max_context=max_context,
            batch_size=batch_size,
            tokens=tokens,
            step_class=step_class,
            kv_tokens=kv_tokens,
        )
        return self._judge(int(step_seq), float(ts), beyond, tenants, step_class)

    def update_many(
        self,
        step_seq: np.ndarray,
        ts: np.ndarray,
        *,
        max_context: np.ndarray,
        batch_size: np.ndarray,
        tokens: np.ndarray,
        step_class: Sequence[str | None],
        tenants: Mapping[int, Iterable[str]] | None = None,
        kv_tokens: np.ndarray | None = None,
    ) -> list[DriftEvent]:
        """``update`` for many steps at once (the same events and counts, in step order).

        The ingest path's form: steps inside the envelope (nearly all) cost no Python work.
        ``tenants`` maps a step's index to tenants to check; only steps that may bring a tenant
        not seen before need an entry.
        """
        bs = np.asarray(batch_size, float)
        decode = np.asarray(step_class, dtype=object) == "decode"
        seen = _by_dimension(np.asarray(max_context, float), bs, np.asarray(tokens, float), decode, kv_tokens)
        n = len(step_seq)
        self.steps += n
        if n == 0:
            return []
        for k in self.max_seen:
            self.max_seen[k] = max(self.max_seen[k], float(seen[k].max()))
        self.min_batch_seen = min(self.min_batch_seen, float(bs.min()))
        limits = self.envelope.limits()
        outside = {k: _beyond(k, v, limits[k]) for k, v in seen.items() if v is not None}
        beyond = np.logical_or.reduce(list(outside.values()))
        tenants = tenants or {}
        events: list[DriftEvent] = []
        for i in sorted(set(np.flatnonzero(beyond).tolist()) | set(tenants)):
            over = {k: float(seen[k][i]) for k, o in outside.items() if o[i]}
            events += self._judge(int(step_seq[i]), float(ts[i]), over, tenants.get(i, ()), step_class[i])
        return events

    def _judge(
        self,
        step_seq: int,
        ts: float,
        beyond: dict[str, float],
        tenants: Iterable[str],
        step_class: str | None,
    ) -> list[DriftEvent]:
        events = []
        if beyond:
            self.extrapolated_steps += 1
        limits = self.envelope.limits()
        for dim, value in beyond.items():
            self.by_dimension[dim] += 1
            last = self._last_event.get(dim)
            if last is None or step_seq - last >= self.cooldown_steps:
                self._last_event[dim] = step_seq
                events.append(
                    DriftEvent(
                        ts=ts,
                        step_seq=step_seq,
                        detector=f"envelope.{dim}",
                        statistic=value,
                        threshold=float(limits[dim]),
                        step_class=step_class,
                        details={"steps_beyond": self.by_dimension[dim]},
                    )
                )
        for tenant in tenants:
            if tenant not in self.envelope.tenants and tenant not in self.new_tenants:
                self.new_tenants[tenant] = step_seq
                events.append(
                    DriftEvent(
                        ts=ts,
                        step_seq=step_seq,
                        detector="envelope.new_tenant",
                        statistic=1.0,
                        threshold=0.0,
                        step_class=step_class,
                        details={"tenant": tenant},
                    )
                )
        return events

    def summary(self) -> dict[str, Any]:
        """Fractions and counts for the gate's coverage check and for reports."""
        return {
            "steps": self.steps,
            "extrapolated_steps": self.extrapolated_steps,
            "extrapolated_fraction": self.extrapolated_steps / self.steps if self.steps else None,
            "by_dimension": dict(self.by_dimension),
            "max_seen": dict(self.max_seen),
            "min_batch_seen": self.min_batch_seen if self.steps else None,
            "limits": self.envelope.limits(),
            "new_tenants": sorted(self.new_tenants),
        }
