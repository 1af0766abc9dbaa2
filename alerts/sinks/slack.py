"""Slack incoming webhook: a short ``text`` (used in notifications) plus Block Kit ``blocks``.

The webhook URL is itself the credential, so it never appears in logs or
error messages (only its host does). Slack answers 200 ``ok``; 400/403/404/410
mean the payload or the webhook is wrong (not retried); 429 carries a
``Retry-After`` that the outbox honours.

Resends are reminders in a human channel, so the default resend interval is
4 hours (Alertmanager's default ``repeat_interval``), not a minute.

>>> from alerts.alert import Alert
>>> from alerts.notification import Notification
>>> sink = SlackSink("ops", webhook_url="https://hooks.slack.com/services/T/B/x")
>>> msg = sink.payload(Notification("firing", Alert("TapSilent", "warning", {"host": "a<b"},
...                                                 summary="no frames for 30 s")))
>>> msg["text"]
'[FIRING:warning] TapSilent: no frames for 30 s'
>>> msg["blocks"][1]["fields"][0]["text"]
'*host*\\na&lt;b'
"""

from __future__ import annotations

from typing import Any

from ..alert import rfc3339
from ..notification import Notification
from .base import TIMEOUT, Option, Sink, http_url
from .http import post_json

MAX_FIELDS = 10  # Slack's limit per section block
MAX_TEXT = 3000  # Slack's limit per text object


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": text[:MAX_TEXT]}


class SlackSink(Sink):
    """Posts firing and resolved messages to one Slack incoming webhook."""

    type = "slack"
    default_resend_interval_s = 4 * 3600.0
    options = {
        "webhook_url": Option(
            str,
            required=True,
            check=http_url,
            help="the incoming webhook URL (https://hooks.slack.com/services/...)",
        ),
        "mention": Option(str, default="", help='prefix for page alerts, e.g. "<!here>"'),
        "timeout_s": TIMEOUT,
    }

    def __init__(self, name: str, webhook_url: str, mention: str = "", timeout_s: float = 10.0):
        super().__init__(name)
        self.webhook_url = webhook_url
        self.mention = mention
        self.timeout_s = timeout_s

    def payload(self, notification: Notification) -> dict[str, Any]:
        """The webhook body: fallback text and blocks (headline, labels, details, times)."""
        alert = notification.alert
        state = f"FIRING:{alert.severity}" if notification.firing else "RESOLVED"
        text = f"[{state}] {alert.name}: {alert.summary or alert.name}"
        headline = f"*[{state}]* `{escape(alert.name)}`\n{escape(alert.summary)}"
        if notification.firing and alert.severity == "page" and self.mention:
            headline = f"{self.mention} {headline}"
        blocks: list[dict[str, Any]] = [{"type": "section", "text": _mrkdwn(headline)}]
        fields = [_mrkdwn(f"*{escape(k)}*\n{escape(v)}") for k, v in alert.labels.items()]
        if fields:
            blocks.append({"type": "section", "fields": fields[:MAX_FIELDS]})
        if alert.details:
            lines = [f"*{escape(k)}*: {escape(str(v))}" for k, v in alert.details.items()]
            blocks.append({"type": "context", "elements": [_mrkdwn("\n".join(lines))]})
        times = []
        if alert.starts_at is not None:
            times.append(f"since {rfc3339(alert.starts_at)}")
        if not notification.firing and alert.ends_at is not None:
            times.append(f"resolved {rfc3339(alert.ends_at)}")
        if times:
            blocks.append({"type": "context", "elements": [_mrkdwn(" · ".join(times))]})
        return {"text": text[:MAX_TEXT], "blocks": blocks}

    def send(self, notification: Notification) -> None:
        post_json(self.webhook_url, self.payload(notification), timeout=self.timeout_s, secret_url=True)
