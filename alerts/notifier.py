"""The notifier: turns alert state into notifications, once per change, never blocking.

The daemon tells the notifier what is true — :meth:`Notifier.fire` when a
condition holds, :meth:`Notifier.resolve` when it clears, or
:meth:`Notifier.sync` with the whole set of conditions that hold now — as
often as it likes. The notifier remembers which alerts are active, keyed by
identity (name + labels), and notifies only on change:

- the first ``fire`` of an identity notifies every routed sink; firing it again
  only updates its summary and details (dedup);
- :meth:`Notifier.tick`, called from a scheduled job every few seconds,
  re-sends still-firing alerts to each sink at that sink's
  ``resend_interval_s`` (Alertmanager needs this to keep ``endsAt`` ahead; for
  a chat channel it is a reminder; 0 disables it);
- ``resolve`` notifies the sinks that got the alert, once, with ``ends_at`` set.

Delivery happens on one :class:`~alerts.outbox.Outbox` thread per sink, so
``fire`` costs a hash and a few deque appends — microseconds — even when a
sink hangs. Static ``labels`` (e.g. ``instance``) are added to every alert and
take part in its identity.

>>> from alerts.alert import Alert
>>> from alerts.sinks.log import LogSink
>>> now = [1000.0]
>>> notifier = Notifier(clock=lambda: now[0], labels={"instance": "host-1"})
>>> outbox = notifier.add_sink(LogSink("journal"), resend_interval_s=60)
>>> notifier.fire(Alert("TapSilent", "warning", summary="no frames")), notifier.fire(Alert("TapSilent", "warning"))
(True, False)
>>> now[0] += 61; notifier.tick()
1
>>> notifier.resolve("TapSilent"), notifier.resolve("TapSilent")
(True, False)
>>> notifier.close(); notifier.counters()["journal"]["sent"]
3
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping

from .alert import Alert, fingerprint
from .backoff import DEFAULT_BACKOFF, Backoff
from .notification import Notification
from .outbox import Outbox
from .router import Router
from .sinks.base import Sink

log = logging.getLogger(__name__)


@dataclasses.dataclass
class _Active:
    latest: Alert  # as last fired, static labels not merged: re-firing only swaps this reference
    starts_at: float
    sinks: tuple[str, ...]
    last_sent: dict[str, float]

    def current(self, static_labels: Mapping[str, str]) -> Alert:
        """The alert as sinks see it: static labels merged, original start, no end."""
        labels = {**static_labels, **self.latest.labels}
        return dataclasses.replace(self.latest, labels=labels, starts_at=self.starts_at, ends_at=None)


class Notifier:
    """Dedup, resend and resolve alerts, and hand notifications to per-sink outboxes.

    ``router`` picks sinks per alert; without one, every alert goes to every sink.
    ``clock`` returns epoch seconds (inject one in tests).
    """

    def __init__(
        self,
        router: Router | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.router = router
        self.labels = dict(labels or {})
        self.clock = clock
        self.unrouted = 0
        self._outboxes: dict[str, Outbox] = {}
        self._resend: dict[str, float] = {}
        self._active: dict[str, _Active] = {}
        self._lock = threading.Lock()

    def add_sink(
        self,
        sink: Sink,
        *,
        resend_interval_s: float | None = None,
        queue_size: int = 1000,
        max_attempts: int = 5,
        backoff: Backoff = DEFAULT_BACKOFF,
        start: bool = True,
        sleep: Callable[[float], object] | None = None,
    ) -> Outbox:
        """Register a sink behind its own outbox (``resend_interval_s`` defaults per sink type)."""
        if sink.name in self._outboxes:
            raise ValueError(f"a sink named {sink.name!r} is already registered")
        outbox = Outbox(sink, capacity=queue_size, max_attempts=max_attempts, backoff=backoff, sleep=sleep)
        self._outboxes[sink.name] = outbox
        self._resend[sink.name] = (
            sink.default_resend_interval_s if resend_interval_s is None else resend_interval_s
        )
        if start:
            outbox.start()
        return outbox

    def fire(self, alert: Alert) -> bool:
        """Record that ``alert`` holds; ``True`` if this notified (it was not already firing)."""
        key = self._key(alert.name, alert.labels) if self.labels else alert.fingerprint
        with self._lock:
            active = self._active.get(key)
            if active is not None:
                active.latest = alert
                return False
            now = self.clock()
            starts_at = now if alert.starts_at is None else alert.starts_at
            active = _Active(alert, starts_at, sinks=(), last_sent={})
            current = active.current(self.labels)
            active.sinks = self._route(current)  # decided once: resends and the resolve go there too
            active.last_sent = dict.fromkeys(active.sinks, now)
            self._active[key] = active
            self._enqueue(Notification("firing", current), active.sinks)
        return True

    def resolve(self, name: str, labels: Mapping[str, str] | None = None) -> bool:
        """Record that the alert ``name`` + ``labels`` cleared; ``True`` if it was firing."""
        key = self._key(name, labels or {})
        with self._lock:
            return self._resolve(key)

    def sync(self, alerts: Iterable[Alert], *, names: Collection[str] | None = None) -> None:
        """Make ``alerts`` the complete set of firing alerts: fire each, resolve the rest.

        ``names`` limits which active alerts may be resolved, so independent
        checks (gate, tap health, storage) can each sync their own alert names.
        """
        current = set()
        for alert in alerts:
            self.fire(alert)
            current.add(self._key(alert.name, alert.labels) if self.labels else alert.fingerprint)
        with self._lock:
            stale = [
                key
                for key, active in self._active.items()
                if key not in current and (names is None or active.latest.name in names)
            ]
            for key in stale:
                self._resolve(key)

    def tick(self, now: float | None = None) -> int:
        """Queue resends that are due; returns how many were queued."""
        now = self.clock() if now is None else now
        queued = 0
        with self._lock:
            for active in self._active.values():
                for sink in active.sinks:
                    interval = self._resend[sink]
                    if interval > 0 and now - active.last_sent[sink] >= interval:
                        self._outboxes[sink].put(Notification("firing", active.current(self.labels)))
                        active.last_sent[sink] = now
                        queued += 1
        return queued

    def adopt(self, old: Notifier) -> int:
        """Fire here every alert still firing in ``old`` (a reload's replacement notifier takes
        over: its sinks learn what is firing, with the original start); returns how many."""
        with old._lock:
            firing = [dataclasses.replace(a.latest, starts_at=a.starts_at) for a in old._active.values()]
        return sum(self.fire(alert) for alert in firing)

    def active(self) -> list[Alert]:
        """The alerts firing now (for /healthz, the CLI, tests)."""
        with self._lock:
            return [a.current(self.labels) for a in self._active.values()]

    def counters(self) -> dict[str, dict[str, int]]:
        """Per sink: sent, failed, retried, dropped (monotonic) and queued (a gauge)."""
        return {name: box.counters() for name, box in self._outboxes.items()}

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every outbox is empty and idle (tests, shutdown); ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        return all(box.flush(max(0.0, deadline - time.monotonic())) for box in self._outboxes.values())

    def close(self, drain_s: float = 2.0) -> None:
        """Deliver what fits in ``drain_s`` and stop the outbox threads."""
        deadline = time.monotonic() + drain_s
        for box in self._outboxes.values():
            box.close(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Notifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _route(self, alert: Alert) -> tuple[str, ...]:
        names = self.router.sinks_for(alert) if self.router else tuple(self._outboxes)
        known = tuple(n for n in names if n in self._outboxes)
        if len(known) != len(names):
            log.error("alert %s routed to unknown sinks %s", alert.name, sorted(set(names) - set(known)))
        if not known:
            self.unrouted += 1
            log.warning("alert %s %s matched no route and reaches nobody", alert.name, alert.labels)
        return known

    def _key(self, name: str, labels: Mapping[str, str]) -> str:
        return fingerprint(name, {**self.labels, **labels})

    def _resolve(self, key: str) -> bool:
        active = self._active.pop(key, None)
        if active is None:
            return False
        alert = dataclasses.replace(active.current(self.labels), ends_at=self.clock())
        self._enqueue(Notification("resolved", alert), active.sinks)
        return True

    def _enqueue(self, notification: Notification, sinks: tuple[str, ...]) -> None:
        for sink in sinks:
            self._outboxes[sink].put(notification)
