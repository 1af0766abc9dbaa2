"""Against a real Prometheus Alertmanager (Debian ``prometheus-alertmanager``) on loopback.

Fires the gate alert through the notifier, reads it back as active from
``GET /api/v2/alerts`` with the expected labels, checks that a resend moves
``endsAt`` forward, then resolves it and sees Alertmanager stop listing it as
active. Fails, never skips, when Alertmanager cannot be installed or started.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from alertmanager_server import AlertmanagerServer, free_port

from alerts import build_notifier, catalog

PLATFORM = "h100/llama-8b/bf16/tp1/vllm-0.33"


def poll(read: Callable[[], object], until: Callable[[object], bool], timeout_s: float = 15.0) -> object:
    """Re-read until ``until(value)`` holds; return the value (the last one on timeout)."""
    deadline = time.monotonic() + timeout_s
    value = read()
    while not until(value) and time.monotonic() < deadline:
        time.sleep(0.1)
        value = read()
    return value


def gate_alerts(server: AlertmanagerServer) -> list[dict]:
    return server.alerts(filter=f'alertname="{catalog.GATE_NOT_GO}"')


def ends_at(alert: dict) -> datetime:
    return datetime.fromisoformat(alert["endsAt"].replace("Z", "+00:00"))


def test_alert_fires_resends_and_resolves_in_a_real_alertmanager(alertmanager: AlertmanagerServer):
    down_replica = f"http://127.0.0.1:{free_port()}"  # a second replica that is down must not matter
    notifier = build_notifier(
        {
            "labels": {"instance": "host-1"},
            "sinks": {
                "am": {
                    "type": "alertmanager",
                    "urls": [alertmanager.base_url, down_replica],
                    "resend_interval_s": 1,
                    "ends_at_horizon_s": 300,
                    "max_attempts": 1,
                }
            },
        }
    )
    try:
        notifier.fire(catalog.gate_left_go("NO_GO", platform=PLATFORM, failing_checks=["residual_p99"]))
        assert notifier.flush(timeout=10)
        alerts = poll(
            lambda: gate_alerts(alertmanager), lambda v: len(v) == 1 and v[0]["status"]["state"] == "active"
        )
        assert len(alerts) == 1, (alerts, alertmanager.log())
        (alert,) = alerts
        assert alert["status"]["state"] == "active"
        assert alert["labels"] == {
            "alertname": "AttributionNotGo",
            "severity": "page",
            "platform": PLATFORM,
            "instance": "host-1",
        }
        assert alert["annotations"]["summary"] == (
            "attribution confidence dropped; the scheduler must fall back to its conservative quota"
        )
        assert alert["annotations"]["verdict"] == "NO_GO"
        assert alert["receivers"] == [{"name": "null"}]
        assert notifier.counters()["am"]["sent"] == 1

        first_ends_at = ends_at(alert)
        time.sleep(1.1)
        assert notifier.tick() == 1  # resend: Alertmanager sees a later endsAt
        assert notifier.flush(timeout=10)
        moved = poll(lambda: gate_alerts(alertmanager), lambda v: v and ends_at(v[0]) > first_ends_at)
        assert ends_at(moved[0]) > first_ends_at

        assert notifier.resolve(catalog.GATE_NOT_GO, {"platform": PLATFORM})
        assert notifier.flush(timeout=10)
        still_active = poll(
            lambda: [a for a in gate_alerts(alertmanager) if a["status"]["state"] == "active"],
            lambda v: v == [],
        )
        assert still_active == [], alertmanager.log()
        assert notifier.counters()["am"] == {"sent": 3, "failed": 0, "retried": 0, "dropped": 0, "queued": 0}
    finally:
        notifier.close()
