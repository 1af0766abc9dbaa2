"""The tap's warnings, at most one a minute per owner: an error on every step must not flood
the engine's log (each owner still counts every one)."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("shadowd.tap")
INTERVAL_S = 60.0


class FaultLog:
    """Rate-limited warnings for one owner (recorder, builder, sender)."""

    def __init__(self) -> None:
        self._last = float("-inf")

    def warn(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last > INTERVAL_S:
            self._last = now
            log.warning(message, *args)

    def frame_lost(self, exc: Exception) -> None:
        self.warn("shadowd tap: %s: %s (frame dropped; the engine is unaffected)", type(exc).__name__, exc)
