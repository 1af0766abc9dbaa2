"""The bounded queue and delivery thread in front of one sink.

This is what keeps alerting from ever slowing the daemon: the caller's only
work is appending to an in-memory deque under a lock (microseconds), and the
network — timeouts, retries, backoff sleeps — happens on the outbox's own
thread. One outbox per sink, so a hung PagerDuty does not delay Alertmanager.

When the queue is full the *oldest* queued notification is dropped and
counted: the newest state of each alert (often its resolve) is what on-call
needs, and anything still firing is re-sent at the next resend anyway.

Counters, read by the notifier for metrics: ``sent`` (delivered), ``failed``
(gave up: not retryable, attempts exhausted, or the sink raised a bug),
``retried`` (attempts after the first), ``dropped`` (evicted from a full queue).

>>> from alerts.sinks.log import LogSink
>>> from alerts.notification import Notification
>>> from alerts.alert import Alert
>>> box = Outbox(LogSink("journal"), capacity=1)
>>> box.put(Notification("firing", Alert("A", "info"))), box.put(Notification("firing", Alert("B", "info")))
(True, False)
>>> box.counters()["dropped"], box.queued
(1, 1)
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

from .backoff import DEFAULT_BACKOFF, Backoff
from .notification import Notification
from .sinks.base import DeliveryError, Sink

log = logging.getLogger(__name__)

#: a receiver's Retry-After is honoured up to this many seconds
MAX_RETRY_AFTER_S = 300.0


class Outbox:
    """Queue notifications for one sink and deliver them on a worker thread.

    ``sleep`` waits between attempts; it defaults to a wait that :meth:`close`
    interrupts, and tests inject a recorder to check the backoff schedule.
    Call :meth:`start` to begin delivering (the notifier does).
    """

    def __init__(
        self,
        sink: Sink,
        *,
        capacity: int = 1000,
        max_attempts: int = 5,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], object] | None = None,
    ):
        if capacity < 1 or max_attempts < 1:
            raise ValueError("capacity and max_attempts must be >= 1")
        self.sink = sink
        self.capacity = capacity
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.last_error: str | None = None
        self._stopped = threading.Event()
        self._sleep = sleep or self._stopped.wait
        self._items: collections.deque[Notification] = collections.deque()
        self._cond = threading.Condition()
        self._busy = False
        self._counts = {"sent": 0, "failed": 0, "retried": 0, "dropped": 0}
        self._thread = threading.Thread(target=self._run, name=f"alerts-{sink.name}", daemon=True)

    @property
    def queued(self) -> int:
        """Notifications waiting (not counting one being delivered)."""
        return len(self._items)

    def counters(self) -> dict[str, int]:
        """A snapshot of sent / failed / retried / dropped, plus ``queued``."""
        return {**self._counts, "queued": len(self._items)}

    def put(self, notification: Notification) -> bool:
        """Queue without blocking; ``False`` if the queue was full and its oldest entry was dropped."""
        with self._cond:
            full = len(self._items) >= self.capacity
            if full:
                self._items.popleft()
                self._counts["dropped"] += 1
            self._items.append(notification)
            self._cond.notify()
        return not full

    def start(self) -> None:
        self._thread.start()

    def flush(self, timeout: float) -> bool:
        """Wait until the queue is empty and idle; ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._items or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(left)
        return True

    def close(self, drain_s: float = 2.0) -> None:
        """Deliver what fits in ``drain_s``, then stop; a call hung on the network is abandoned."""
        if self._thread.is_alive():
            self.flush(drain_s)
        self._stopped.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=0.5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._stopped.is_set():
                    self._cond.wait()
                if self._stopped.is_set():
                    return
                notification = self._items.popleft()
                self._busy = True
            try:
                self._deliver(notification)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _deliver(self, notification: Notification) -> None:
        alert = notification.alert
        attempt = 0
        while True:
            attempt += 1
            try:
                self.sink.send(notification)
            except DeliveryError as err:
                self.last_error = str(err)
                if not err.retryable or attempt >= self.max_attempts:
                    why = "not retryable" if not err.retryable else f"gave up after {attempt} attempts"
                    log.warning(
                        "alert %s %s to sink %s failed (%s): %s",
                        alert.name,
                        notification.status,
                        self.sink.name,
                        why,
                        err,
                    )
                    break
                self._sleep(max(self.backoff.delay(attempt), min(err.retry_after or 0.0, MAX_RETRY_AFTER_S)))
                if self._stopped.is_set():
                    break
                self._counts["retried"] += 1
            except Exception as err:  # a sink bug must not kill the thread
                self.last_error = repr(err)
                log.exception("alert sink %s raised unexpectedly", self.sink.name)
                break
            else:
                self._counts["sent"] += 1
                return
        self._counts["failed"] += 1
