"""Generic JSON webhook: one POST per notification, for receivers of your own.

The body is flat and versioned so a receiver can dedup on ``fingerprint``
(stable across processes) and switch on ``status``::

    {"version": "1", "status": "firing" | "resolved", "fingerprint": "...",
     "name": "...", "severity": "page" | "warning" | "info", "labels": {...},
     "summary": "...", "details": {...}, "startsAt": "<RFC 3339>", "endsAt": "<RFC 3339>" | null}

Extra ``headers`` (e.g. ``Authorization``) are sent with every request. 2xx is
delivered; 408/429/5xx and network errors are retried; other statuses are not.

>>> from alerts.alert import Alert
>>> from alerts.notification import Notification
>>> body = WebhookSink("hook", url="http://127.0.0.1:8080/alerts").payload(
...     Notification("resolved", Alert("TapSilent", "warning", starts_at=0.0, ends_at=60.0)))
>>> body["status"], body["startsAt"], body["endsAt"]
('resolved', '1970-01-01T00:00:00.000Z', '1970-01-01T00:01:00.000Z')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..alert import rfc3339
from ..notification import Notification
from .base import TIMEOUT, Option, Sink, http_url
from .http import post_json


def _check_headers(value: Mapping[str, Any]) -> str | None:
    bad = [k for k, v in value.items() if not isinstance(v, str)]
    return f"header values must be strings (check {', '.join(bad)})" if bad else None


class WebhookSink(Sink):
    """POSTs a small JSON document per notification to one URL."""

    type = "webhook"
    default_resend_interval_s = 3600.0
    options = {
        "url": Option(str, required=True, check=http_url, help="where to POST"),
        "headers": Option(
            dict,
            default=None,
            check=_check_headers,
            help='extra request headers, e.g. {Authorization = "Bearer ..."}',
        ),
        "timeout_s": TIMEOUT,
    }

    def __init__(
        self, name: str, url: str, headers: Mapping[str, str] | None = None, timeout_s: float = 10.0
    ):
        super().__init__(name)
        self.url = url
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s

    def payload(self, notification: Notification) -> dict[str, Any]:
        """The versioned JSON body documented above."""
        alert = notification.alert
        return {
            "version": "1",
            "status": notification.status,
            "fingerprint": alert.fingerprint,
            "name": alert.name,
            "severity": alert.severity,
            "labels": dict(alert.labels),
            "summary": alert.summary,
            "details": dict(alert.details),
            "startsAt": rfc3339(alert.starts_at) if alert.starts_at is not None else None,
            "endsAt": rfc3339(alert.ends_at) if alert.ends_at is not None else None,
        }

    def send(self, notification: Notification) -> None:
        post_json(self.url, self.payload(notification), timeout=self.timeout_s, headers=self.headers)
