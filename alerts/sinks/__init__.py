"""Sinks: where notifications go. One module per receiver, selected by ``type`` in config.

========================  =============================================
``type``                  class
========================  =============================================
``alertmanager``          :class:`alerts.sinks.alertmanager.AlertmanagerSink`
``pagerduty``             :class:`alerts.sinks.pagerduty.PagerDutySink`
``slack``                 :class:`alerts.sinks.slack.SlackSink`
``webhook``               :class:`alerts.sinks.webhook.WebhookSink`
``log``                   :class:`alerts.sinks.log.LogSink`
========================  =============================================

>>> sorted(SINK_TYPES)
['alertmanager', 'log', 'pagerduty', 'slack', 'webhook']
"""

from __future__ import annotations

from .alertmanager import AlertmanagerSink
from .base import DeliveryError, Option, Sink
from .log import LogSink
from .pagerduty import PagerDutySink
from .slack import SlackSink
from .webhook import WebhookSink

SINK_TYPES: dict[str, type[Sink]] = {
    cls.type: cls for cls in (AlertmanagerSink, PagerDutySink, SlackSink, WebhookSink, LogSink)
}

__all__ = [
    "SINK_TYPES",
    "AlertmanagerSink",
    "DeliveryError",
    "LogSink",
    "Option",
    "PagerDutySink",
    "Sink",
    "SlackSink",
    "WebhookSink",
]
