"""Load that changes with time: a tenant's arrivals re-timed so its rate follows a profile.

A trace gives arrivals at its own (or a rescaled) mean rate. A profile multiplies that rate by
``m(t)`` at simulated time ``t``: each arrival at base time ``b`` moves to the ``t`` where
``∫₀ᵗ m(s) ds = b``, so request order and lengths are kept and only the pace changes. This is
how the gate's held-out scenarios drive an engine between light and saturated load without
a new trace (``benchmarks/gate_scenarios.py``).

- ``steady``: ``m = 1``;
- ``ramp:LOW:HIGH:SECONDS``: ``m`` goes linearly from LOW to HIGH over SECONDS, then stays;
- ``swing:LOW:HIGH:PERIOD``: ``m`` swings between LOW and HIGH (raised cosine, starting at LOW).

>>> p = LoadProfile.parse("ramp:0.5:2:100")
>>> [round(float(p.multiplier(t)), 2) for t in (0.0, 50.0, 100.0, 500.0)]
[0.5, 1.25, 2.0, 2.0]
>>> [round(float(t), 1) for t in p.retime([0.0, 25.0, 50.0])]  # 0.5 t + 0.0075 t² = b
[0.0, 33.3, 54.9]
>>> LoadProfile.parse("swing:0.2:1.5:60").multiplier(30.0)
1.5
>>> LoadProfile.parse("wave:1")
Traceback (most recent call last):
...
ValueError: load profile 'wave:1': expected steady, ramp:LOW:HIGH:SECONDS or swing:LOW:HIGH:PERIOD
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .request_spec import RequestSpec

_USAGE = "expected steady, ramp:LOW:HIGH:SECONDS or swing:LOW:HIGH:PERIOD"
GRID_POINTS = 200_001  # resolution of the numerical inverse of ∫ m


@dataclass(frozen=True)
class LoadProfile:
    kind: str = "steady"
    low: float = 1.0
    high: float = 1.0
    seconds: float = 1.0  # ramp length or swing period

    @classmethod
    def parse(cls, text: str) -> LoadProfile:
        parts = text.strip().split(":")
        if parts == ["steady"]:
            return cls()
        if parts[0] not in ("ramp", "swing") or len(parts) != 4:
            raise ValueError(f"load profile {text!r}: {_USAGE}")
        try:
            low, high, seconds = (float(x) for x in parts[1:])
        except ValueError:
            raise ValueError(f"load profile {text!r}: LOW, HIGH and SECONDS must be numbers") from None
        if not (0.01 <= low <= 100 and 0.01 <= high <= 100 and 0 < seconds <= 1e7):
            raise ValueError(f"load profile {text!r}: LOW/HIGH in [0.01, 100], SECONDS in (0, 1e7]")
        return cls(parts[0], low, high, seconds)

    def multiplier(self, t: np.ndarray | float) -> np.ndarray | float:
        """The rate multiplier ``m(t)`` at simulated time ``t`` (seconds)."""
        t = np.asarray(t, dtype=float)
        if self.kind == "ramp":
            out = self.low + (self.high - self.low) * np.clip(t / self.seconds, 0.0, 1.0)
        elif self.kind == "swing":
            out = self.low + (self.high - self.low) * (1 - np.cos(2 * np.pi * t / self.seconds)) / 2
        else:
            out = np.ones_like(t)
        return float(out) if out.ndim == 0 else out

    def retime(self, base: Sequence[float] | np.ndarray) -> np.ndarray:
        """New arrival times for arrivals at ``base`` seconds (sorted) under this profile."""
        b = np.asarray(base, dtype=float)
        if self.kind == "steady" or not len(b):
            return b.copy()
        horizon = float(b.max()) / min(self.low, self.high) + self.seconds  # ∫ m ≥ max(b) by then
        grid = np.linspace(0.0, horizon, GRID_POINTS)
        m = self.multiplier(grid)
        cum = np.concatenate(([0.0], np.cumsum((m[1:] + m[:-1]) / 2 * np.diff(grid))))
        return np.interp(b, cum, grid)

    def apply(self, reqs: list[RequestSpec]) -> list[RequestSpec]:
        """``reqs`` (arrival-sorted) with arrivals re-timed; everything else unchanged."""
        times = self.retime([r.arrival_s for r in reqs])
        return [
            RequestSpec(float(t), r.tenant, r.prompt_tokens, r.output_tokens, r.prefix_blocks)
            for t, r in zip(times, reqs)
        ]
