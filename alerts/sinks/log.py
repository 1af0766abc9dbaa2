"""Python logging: every notification as one log line (journald keeps it under systemd).

Firing ``page`` alerts log at ERROR, ``warning`` at WARNING, ``info`` and every
resolve at INFO, so ``journalctl -p err -u shadowd`` shows what paged. The
record also carries the alert as ``record.alert`` (a dict) and
``record.alert_status`` for structured handlers. This sink cannot fail, which
makes it a good catch-all route beside the paging ones.

>>> from alerts.alert import Alert
>>> from alerts.notification import Notification
>>> LogSink("journal").line(Notification("firing", Alert("TapSilent", "warning", {"host": "a"},
...                                                      summary="no frames")))
'FIRING warning TapSilent{host="a"}: no frames'
"""

from __future__ import annotations

import json
import logging

from ..notification import Notification
from .base import Option, Sink

LEVELS = {"page": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO}


class LogSink(Sink):
    """Writes notifications to a Python logger."""

    type = "log"
    default_resend_interval_s = 3600.0
    options = {"logger": Option(str, default="alerts", help="logger name to write to")}

    def __init__(self, name: str, logger: str = "alerts"):
        super().__init__(name)
        self.logger = logging.getLogger(logger)

    def line(self, notification: Notification) -> str:
        """The human-readable line: status, severity, name{labels}: summary [details]."""
        alert = notification.alert
        labels = ",".join(f'{k}="{v}"' for k, v in alert.labels.items())
        text = f"{notification.status.upper()} {alert.severity} {alert.name}{{{labels}}}: {alert.summary}"
        if alert.details:
            text += " " + json.dumps(alert.details, default=str, separators=(",", ":"))
        return text

    def send(self, notification: Notification) -> None:
        level = LEVELS[notification.alert.severity] if notification.firing else logging.INFO
        self.logger.log(
            level,
            "%s",
            self.line(notification),
            extra={"alert": notification.alert.to_dict(), "alert_status": notification.status},
        )
