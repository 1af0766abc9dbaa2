"""Prometheus Alertmanager, API v2: ``POST /api/v2/alerts`` to every replica.

Alertmanager expects clients that are not Prometheus to behave like Prometheus:
re-send each firing alert periodically with ``endsAt`` a little in the future,
and send ``endsAt`` = now once it clears. If the sender dies, the alert then
resolves by itself when ``endsAt`` passes instead of paging forever. So this
sink sets ``endsAt = now + ends_at_horizon_s`` at every firing send (a retry
gets a fresh horizon), and the notifier re-sends every ``resend_interval_s``
(default 60 s, well inside the default 300 s horizon; config validation
rejects a horizon that is not longer than the resend interval).

Alertmanager replicas in a cluster gossip silences and notification state, not
alerts: each must receive every alert itself. The sink posts to every URL in
``urls``; one accepting replica counts as delivered (the next resend reaches a
replica that was briefly down) and the failures are counted in
``replica_failures`` and logged. Only when no replica accepts does the outbox
retry.

Labels sent are the alert's labels plus ``alertname`` and ``severity``;
``summary`` and each ``details`` entry become annotations (values rendered as
strings, keys made into valid label names).

>>> from alerts.alert import Alert
>>> from alerts.notification import Notification
>>> sink = AlertmanagerSink("am", urls=["http://127.0.0.1:9093"], clock=lambda: 100.0)
>>> body = sink.payload(Notification("firing", Alert("TapSilent", "warning", {"host": "a"},
...                     summary="no frames", details={"silent for s": 42}, starts_at=40.0)))
>>> body["labels"], body["annotations"]
({'alertname': 'TapSilent', 'severity': 'warning', 'host': 'a'}, {'summary': 'no frames', 'silent_for_s': '42'})
>>> body["startsAt"], body["endsAt"]
('1970-01-01T00:00:40.000Z', '1970-01-01T00:06:40.000Z')
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..alert import rfc3339
from ..notification import Notification
from .base import TIMEOUT, DeliveryError, Option, Sink, http_url, http_urls, positive
from .http import post_json

log = logging.getLogger(__name__)

_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_]")


def annotation_name(key: str) -> str:
    """A valid Alertmanager annotation name from a free-form details key.

    >>> annotation_name("p99 error"), annotation_name("2x")
    ('p99_error', '_2x')
    """
    name = _INVALID_NAME_CHARS.sub("_", key)
    return name if name and not name[0].isdigit() else "_" + name


def annotation_value(value: Any) -> str:
    """Strings as they are, everything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, default=str, separators=(",", ":"))


class AlertmanagerSink(Sink):
    """Posts alerts to one or more Alertmanager replicas (API v2)."""

    type = "alertmanager"
    default_resend_interval_s = 60.0
    options = {
        "urls": Option(
            list,
            required=True,
            check=http_urls,
            help='base URL of every replica, e.g. ["http://127.0.0.1:9093"]',
        ),
        "ends_at_horizon_s": Option(
            float,
            default=300.0,
            check=positive,
            help="endsAt = now + this while firing; longer than resend_interval_s",
        ),
        "generator_url": Option(
            str,
            default="",
            check=lambda v: http_url(v) if v else None,
            help="link shown in Alertmanager, e.g. the daemon's /gate",
        ),
        "timeout_s": TIMEOUT,
    }

    def __init__(
        self,
        name: str,
        urls: Sequence[str],
        ends_at_horizon_s: float = 300.0,
        generator_url: str = "",
        timeout_s: float = 10.0,
        clock: Callable[[], float] = time.time,
    ):
        super().__init__(name)
        self.endpoints = [u.rstrip("/") + "/api/v2/alerts" for u in urls]
        self.ends_at_horizon_s = ends_at_horizon_s
        self.generator_url = generator_url
        self.timeout_s = timeout_s
        self.clock = clock
        self.replica_failures = 0
        self._lock = threading.Lock()

    def payload(self, notification: Notification) -> dict[str, Any]:
        """One element of the ``POST /api/v2/alerts`` list."""
        alert = notification.alert
        now = self.clock()
        if notification.firing:
            ends_at = now + self.ends_at_horizon_s
        else:
            ends_at = alert.ends_at if alert.ends_at is not None else now
        annotations = {"summary": alert.summary} if alert.summary else {}
        for key, value in alert.details.items():
            annotations[annotation_name(key)] = annotation_value(value)
        body: dict[str, Any] = {
            "labels": alert.match_labels,
            "annotations": annotations,
            "startsAt": rfc3339(alert.starts_at if alert.starts_at is not None else now),
            "endsAt": rfc3339(ends_at),
        }
        if self.generator_url:
            body["generatorURL"] = self.generator_url
        return body

    def send(self, notification: Notification) -> None:
        body = [self.payload(notification)]
        errors: list[DeliveryError] = []
        for endpoint in self.endpoints:
            try:
                post_json(endpoint, body, timeout=self.timeout_s)
            except DeliveryError as err:
                errors.append(err)
        if not errors:
            return
        if len(errors) == len(self.endpoints):
            raise DeliveryError("; ".join(map(str, errors)), retryable=any(e.retryable for e in errors))
        with self._lock:
            self.replica_failures += len(errors)
        for err in errors:
            log.warning("alertmanager sink %s: a replica refused or was unreachable: %s", self.name, err)
