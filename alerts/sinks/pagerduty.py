"""PagerDuty Events API v2: ``POST {url}/v2/enqueue`` with trigger and resolve events.

The ``dedup_key`` is derived from the alert identity (name + fingerprint of its
labels), so it is the same in every process and across daemon restarts:
re-triggering an open incident is absorbed by PagerDuty, and a resolve sent by
a restarted daemon still closes the incident the old one opened.

Severity maps ``page → critical``, ``warning → warning``, ``info → info``
(override with ``severities``; PagerDuty accepts critical, error, warning,
info). PagerDuty answers 202 when it accepts an event, 400 when the event is
invalid (a bad routing key or payload: retrying cannot help, so the outbox
counts it failed at once), 429 when rate-limited and 5xx on its own faults
(both retried with backoff).

>>> from alerts.alert import Alert
>>> from alerts.notification import Notification
>>> sink = PagerDutySink("pd", routing_key="R" * 32, source="host-1")
>>> alert = Alert("AttributionNotGo", "page", {"platform": "p1"}, summary="confidence dropped",
...               starts_at=0.0)
>>> event = sink.payload(Notification("firing", alert))
>>> event["event_action"], event["payload"]["severity"], event["payload"]["source"]
('trigger', 'critical', 'host-1')
>>> event["dedup_key"] == sink.payload(Notification("resolved", alert))["dedup_key"]
True
>>> sorted(sink.payload(Notification("resolved", alert)))
['dedup_key', 'event_action', 'routing_key']
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

from ..alert import Alert, rfc3339
from ..notification import Notification
from .base import TIMEOUT, Option, Sink, http_url
from .http import post_json

PAGERDUTY_SEVERITIES = ("critical", "error", "warning", "info")
DEFAULT_SEVERITIES = {"page": "critical", "warning": "warning", "info": "info"}


def dedup_key(alert: Alert) -> str:
    """The PagerDuty dedup key for an alert identity (≤ 255 characters).

    >>> dedup_key(Alert("TapSilent", "warning", {"host": "a"}))
    'TapSilent/d9663c96a283cdd3'
    """
    return f"{alert.name[:200]}/{alert.fingerprint}"


def _check_severities(value: Mapping[str, str]) -> str | None:
    for ours, theirs in value.items():
        if ours not in DEFAULT_SEVERITIES:
            return f"key {ours!r}: use the alert severities page, warning, info"
        if theirs not in PAGERDUTY_SEVERITIES:
            return f"{ours} = {theirs!r}: PagerDuty accepts {', '.join(PAGERDUTY_SEVERITIES)}"
    return None


class PagerDutySink(Sink):
    """Triggers and resolves PagerDuty incidents through one integration's routing key."""

    type = "pagerduty"
    default_resend_interval_s = 3600.0
    options = {
        "routing_key": Option(
            str,
            required=True,
            check=lambda v: None if v.strip() else "must be non-empty",
            help="the Events API v2 integration key of the PagerDuty service",
        ),
        "url": Option(
            str,
            default="https://events.pagerduty.com",
            check=http_url,
            help="Events API base URL (change only for a proxy or a test server)",
        ),
        "source": Option(str, default="", help="the affected host; defaults to this host's name"),
        "severities": Option(
            dict,
            default=None,
            check=_check_severities,
            help="override the page/warning/info to PagerDuty severity map",
        ),
        "timeout_s": TIMEOUT,
    }

    def __init__(
        self,
        name: str,
        routing_key: str,
        url: str = "https://events.pagerduty.com",
        source: str = "",
        severities: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
    ):
        super().__init__(name)
        self.routing_key = routing_key
        self.endpoint = url.rstrip("/") + "/v2/enqueue"
        self.source = source or socket.gethostname()
        self.severities = {**DEFAULT_SEVERITIES, **(severities or {})}
        self.timeout_s = timeout_s

    def payload(self, notification: Notification) -> dict[str, Any]:
        """The Events API v2 body for one notification."""
        alert = notification.alert
        event: dict[str, Any] = {
            "routing_key": self.routing_key,
            "event_action": "trigger" if notification.firing else "resolve",
            "dedup_key": dedup_key(alert),
        }
        if not notification.firing:
            return event
        event["payload"] = {
            "summary": (alert.summary or alert.name)[:1024],
            "source": self.source,
            "severity": self.severities[alert.severity],
            "class": alert.name,
            "custom_details": {"labels": dict(alert.labels), **alert.details},
        }
        if alert.starts_at is not None:
            event["payload"]["timestamp"] = rfc3339(alert.starts_at)
        event["client"] = "shadowd"
        return event

    def send(self, notification: Notification) -> None:
        post_json(self.endpoint, self.payload(notification), timeout=self.timeout_s)
