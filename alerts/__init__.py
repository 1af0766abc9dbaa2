"""shadowd alerting: tell on-call once when attribution confidence drops, and again when it recovers.

A leaf library (it imports nothing from ``shadowd``, ``checks`` or
``storage``, and only the standard library): the daemon builds a
:class:`Notifier` from its ``[alerts]`` config and calls it with
:mod:`alerts.catalog` alerts.

- :mod:`alerts.alert` — the alert value and its identity (name + labels).
- :mod:`alerts.notifier` — dedup, resend while firing, resolve; never blocks.
- :mod:`alerts.router` — which sinks get which alerts.
- :mod:`alerts.outbox` — per-sink bounded queue, worker thread, retries.
- :mod:`alerts.backoff` — the retry schedule.
- :mod:`alerts.config` — validate the config dict and build a notifier.
- :mod:`alerts.catalog` — the alerts shadowd raises.
- :mod:`alerts.sinks` — Alertmanager v2, PagerDuty Events v2, Slack, webhook, log.

>>> notifier = build_notifier({"sinks": {"journal": {"type": "log"}}})
>>> notifier.fire(catalog.tap_silent(seconds_since_last_frame=90))
True
>>> notifier.close()
"""

from . import catalog
from .alert import Alert, Severity, fingerprint
from .backoff import Backoff
from .config import ConfigError, build_notifier, validate
from .notification import Notification
from .notifier import Notifier
from .outbox import Outbox
from .router import Route, Router

__all__ = [
    "Alert",
    "Backoff",
    "ConfigError",
    "Notification",
    "Notifier",
    "Outbox",
    "Route",
    "Router",
    "Severity",
    "build_notifier",
    "catalog",
    "fingerprint",
    "validate",
]
