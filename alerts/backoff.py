"""Exponential backoff between delivery attempts, capped, with optional jitter.

A receiver that is down or rate-limiting must not be hammered, and many hosts
retrying in lock-step would hit it together when it comes back: each retry
waits ``initial_s · factor^(n-1)`` seconds, capped at ``max_s``, shortened by a
random fraction of up to ``jitter``.

>>> Backoff(initial_s=1, factor=2, max_s=10, jitter=0).schedule(6)
[1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
>>> 0.9 <= Backoff(initial_s=1, jitter=0.1).delay(1) <= 1.0
True
"""

from __future__ import annotations

import dataclasses
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
        base = min(self.max_s, self.initial_s * self.factor ** (retry - 1))
        return base * (1.0 - self.jitter * random.random()) if self.jitter else float(base)

    def schedule(self, retries: int) -> list[float]:
        """The delays before the first ``retries`` retries (for docs and tests)."""
        return [self.delay(n) for n in range(1, retries + 1)]


#: the default: 1 s, doubling, capped at 60 s, up to 10 % shorter at random
DEFAULT_BACKOFF = Backoff()
