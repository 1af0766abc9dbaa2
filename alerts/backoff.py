"""Exponential backoff between delivery attempts, capped, with optional jitter.

A receiver that is down or rate-limiting must not be hammered, and many hosts
retrying in lock-step would hit it together when it comes back: each retry
waits ``initial_s · factor^(n-1)`` seconds, capped at ``max_s``, shortened by a
random fraction of up to ``jitter``.

>>> Backoff(initial_s=1, factor=2, max_s=10, jitter=0).schedule(6)
[1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
>>> 0.9 <= Backoff(initial_s=1, jitter=0.1).delay(1) <= 1.0
True

The exponent stops growing once the cap is reached, so a sink that has been down for
days (retry 10,000) still gets ``max_s`` rather than an ``OverflowError`` from
``factor ** n`` that would end its outbox thread.

>>> Backoff(initial_s=1, factor=2, max_s=60, jitter=0).delay(10_000)
60.0
"""

from __future__ import annotations

import dataclasses
import math
import random


@dataclasses.dataclass(frozen=True)
class Backoff:
    """How long to wait before each retry (retry numbers start at 1)."""

    initial_s: float = 1.0
    factor: float = 2.0
    max_s: float = 60.0
    jitter: float = 0.1

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry``."""
        base = min(self.max_s, self.initial_s * self.factor ** min(retry - 1, self._steps_to_cap))
        return base * (1.0 - self.jitter * random.random()) if self.jitter else float(base)

    @property
    def _steps_to_cap(self) -> int:
        """Retries after which ``initial_s · factor^n`` has reached ``max_s`` (0 if it never grows)."""
        if self.factor <= 1.0 or self.initial_s >= self.max_s:
            return 0
        return math.ceil(math.log(self.max_s / self.initial_s, self.factor))

    def schedule(self, retries: int) -> list[float]:
        """The delays before the first ``retries`` retries (for docs and tests)."""
        return [self.delay(n) for n in range(1, retries + 1)]


#: the default: 1 s, doubling, capped at 60 s, up to 10 % shorter at random
DEFAULT_BACKOFF = Backoff()
