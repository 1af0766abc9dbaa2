"""In-process sinks and a clock for notifier tests: no network, fully scripted."""

from __future__ import annotations

import threading

from alerts.notification import Notification
from alerts.sinks.base import DeliveryError, Sink


class Clock:
    """A settable epoch clock: ``clock()`` reads it, ``clock.advance(s)`` moves it."""

    def __init__(self, now: float = 1_700_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RecordingSink(Sink):
    """Records every notification; fails the first ``failures`` attempts with the given error."""

    type = "recording"
    default_resend_interval_s = 60.0

    def __init__(self, name: str = "rec", failures: list[DeliveryError | Exception] | None = None):
        super().__init__(name)
        self.failures = list(failures or [])
        self.attempts = 0
        self.delivered: list[Notification] = []

    def send(self, notification: Notification) -> None:
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)
        self.delivered.append(notification)

    @property
    def statuses(self) -> list[tuple[str, str]]:
        return [(n.status, n.alert.name) for n in self.delivered]


class BlockingSink(Sink):
    """``send`` blocks until released: a receiver that never answers."""

    type = "blocking"

    def __init__(self, name: str = "stuck"):
        super().__init__(name)
        self.release = threading.Event()
        self.entered = threading.Event()

    def send(self, notification: Notification) -> None:
        self.entered.set()
        self.release.wait()
