"""A notification: one alert in one state, on its way to one sink.

The notifier turns alert state changes (new, still firing at resend time,
resolved) into notifications and queues one per routed sink; a sink only ever
sees notifications, so it needs no memory of its own.

>>> from alerts.alert import Alert
>>> n = Notification("firing", Alert("TapSilent", "warning"))
>>> n.firing, n.alert.name
(True, 'TapSilent')
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from .alert import Alert

Status = Literal["firing", "resolved"]


@dataclasses.dataclass(frozen=True)
class Notification:
    """``status`` is ``"firing"`` (first send or resend) or ``"resolved"`` (sent once)."""

    status: Status
    alert: Alert

    @property
    def firing(self) -> bool:
        return self.status == "firing"
