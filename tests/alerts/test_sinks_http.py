"""Sinks against local HTTP servers standing in for PagerDuty, Slack, webhooks and Alertmanager."""

from __future__ import annotations

import logging

import pytest
from alert_fakes import Clock
from alert_http_stub import Reply, StubServer
from alertmanager_server import free_port

from alerts import Backoff, Notifier, catalog
from alerts.alert import rfc3339
from alerts.sinks import AlertmanagerSink, LogSink, PagerDutySink, SlackSink, WebhookSink
from alerts.sinks.base import Sink

QUICK = Backoff(initial_s=0.01, factor=2.0, max_s=0.05, jitter=0.0)
ACCEPTED = Reply(202, '{"status":"success","message":"Event processed"}')
PLATFORM = "h100/llama-8b/bf16/tp1/vllm-0.33"


def run(sink: Sink, clock: Clock, *actions: str, max_attempts: int = 5) -> Notifier:
    """Fire the gate alert and/or resolve it through ``sink``; return the (closed) notifier."""
    notifier = Notifier(clock=clock)
    notifier.add_sink(sink, backoff=QUICK, max_attempts=max_attempts)
    for action in actions:
        if action == "fire":
            notifier.fire(catalog.gate_left_go("NO_GO", platform=PLATFORM, failing_checks=["residual_p99"]))
        else:
            clock.advance(120)
            notifier.resolve(catalog.GATE_NOT_GO, {"platform": PLATFORM})
        assert notifier.flush(timeout=10)  # sinks read the clock when they send
    notifier.close()
    return notifier


# PagerDuty Events API v2


def test_pagerduty_trigger_and_resolve_are_well_formed():
    clock = Clock()
    with StubServer([ACCEPTED]) as pagerduty:
        sink = PagerDutySink("pd", routing_key="R" * 32, url=pagerduty.url, source="host-1")
        run(sink, clock, "fire", "resolve")
        trigger, resolve = pagerduty.wait_for(2)
    assert trigger.path == resolve.path == "/v2/enqueue"
    assert trigger.headers["Content-Type"] == "application/json"
    alert = catalog.gate_left_go("NO_GO", platform=PLATFORM)
    assert trigger.json == {
        "routing_key": "R" * 32,
        "event_action": "trigger",
        "dedup_key": f"AttributionNotGo/{alert.fingerprint}",
        "payload": {
            "summary": alert.summary,
            "source": "host-1",
            "severity": "critical",
            "class": "AttributionNotGo",
            "timestamp": rfc3339(clock.now - 120),
            "custom_details": {"labels": {"platform": PLATFORM}, **trigger.json["payload"]["custom_details"]},
        },
        "client": "shadowd",
    }
    details = trigger.json["payload"]["custom_details"]
    assert details["verdict"] == "NO_GO" and details["failing_checks"] == "residual_p99"
    assert resolve.json == {
        "routing_key": "R" * 32,
        "event_action": "resolve",
        "dedup_key": trigger.json["dedup_key"],
    }


@pytest.mark.parametrize("first", [Reply(429, "rate limited", {"Retry-After": "0"}), Reply(500), Reply(503)])
def test_pagerduty_throttling_or_server_errors_are_retried_until_accepted(first):
    with StubServer([first, ACCEPTED]) as pagerduty:
        notifier = run(PagerDutySink("pd", routing_key="k", url=pagerduty.url), Clock(), "fire")
        first_try, second_try = pagerduty.wait_for(2)
    assert first_try.json == second_try.json
    assert notifier.counters()["pd"] == {"sent": 1, "failed": 0, "retried": 1, "dropped": 0, "queued": 0}


def test_pagerduty_400_is_not_retried_and_counts_failed():
    with StubServer([Reply(400, '{"status":"invalid event","errors":["bad routing_key"]}'), ACCEPTED]) as pd:
        notifier = run(PagerDutySink("pd", routing_key="bad", url=pd.url), Clock(), "fire")
        assert len(pd.received) == 1
    assert notifier.counters()["pd"] == {"sent": 0, "failed": 1, "retried": 0, "dropped": 0, "queued": 0}


def test_pagerduty_gives_up_after_max_attempts():
    with StubServer([Reply(502)]) as pagerduty:
        notifier = run(
            PagerDutySink("pd", routing_key="k", url=pagerduty.url), Clock(), "fire", max_attempts=3
        )
        assert len(pagerduty.received) == 3
    assert notifier.counters()["pd"]["failed"] == 1 and notifier.counters()["pd"]["retried"] == 2


# Slack incoming webhook


def test_slack_messages_carry_text_and_blocks_for_firing_and_resolved():
    with StubServer([Reply(200, "ok")]) as slack:
        sink = SlackSink("ops", webhook_url=slack.url + "/services/T0/B0/secret", mention="<!here>")
        run(sink, Clock(), "fire", "resolve")
        fired, resolved = slack.wait_for(2)
    assert fired.path == "/services/T0/B0/secret"
    assert fired.json["text"].startswith("[FIRING:page] AttributionNotGo: attribution confidence dropped")
    headline, labels, details, times = fired.json["blocks"]
    assert headline["type"] == "section" and headline["text"]["text"].startswith("<!here> *[FIRING:page]*")
    assert labels["fields"] == [{"type": "mrkdwn", "text": f"*platform*\n{PLATFORM}"}]
    assert "*verdict*: NO_GO" in details["elements"][0]["text"]
    assert times["elements"][0]["text"].startswith("since ")
    assert resolved.json["text"].startswith("[RESOLVED] AttributionNotGo")
    assert "resolved " in resolved.json["blocks"][-1]["elements"][0]["text"]
    assert "<!here>" not in resolved.json["blocks"][0]["text"]["text"]


def test_slack_errors_never_show_the_secret_webhook_path():
    with StubServer([Reply(404, "no_service")]) as slack:
        notifier = Notifier(clock=Clock())
        outbox = notifier.add_sink(SlackSink("ops", webhook_url=slack.url + "/services/T0/B0/secret"))
        notifier.fire(catalog.tap_silent(seconds_since_last_frame=60))
        notifier.flush(timeout=10)
        notifier.close()
    assert outbox.counters()["failed"] == 1
    assert "404" in outbox.last_error and "secret" not in outbox.last_error


# Generic webhook


def test_webhook_posts_the_versioned_document_with_configured_headers():
    clock = Clock()
    with StubServer([Reply(204, "")]) as hook:
        sink = WebhookSink("hook", url=hook.url + "/alerts", headers={"Authorization": "Bearer t0k"})
        run(sink, clock, "fire", "resolve")
        fired, resolved = hook.wait_for(2)
    assert fired.headers["Authorization"] == "Bearer t0k"
    assert fired.json["version"] == "1" and fired.json["status"] == "firing"
    assert fired.json["labels"] == {"platform": PLATFORM} and fired.json["severity"] == "page"
    assert fired.json["endsAt"] is None
    assert resolved.json["status"] == "resolved" and resolved.json["endsAt"] == rfc3339(clock.now)
    assert resolved.json["fingerprint"] == fired.json["fingerprint"]


def test_redirects_are_not_followed_and_not_retried():
    with StubServer([Reply(302, "", {"Location": "http://127.0.0.1:1/elsewhere"})]) as hook:
        notifier = run(WebhookSink("hook", url=hook.url), Clock(), "fire")
        assert len(hook.received) == 1
    assert notifier.counters()["hook"]["failed"] == 1


# Alertmanager API v2 (payload shape; the real server is in test_alertmanager_real.py)


def test_alertmanager_sink_posts_to_every_replica_with_a_moving_ends_at():
    clock = Clock()
    with StubServer([Reply(200, "")]) as replica_a, StubServer([Reply(200, "")]) as replica_b:
        sink = AlertmanagerSink(
            "am",
            urls=[replica_a.url, replica_b.url + "/"],
            clock=clock,
            generator_url="http://127.0.0.1:9464/gate",
        )
        run(sink, clock, "fire", "resolve")
        for replica in (replica_a, replica_b):
            fired, resolved = replica.wait_for(2)
            assert fired.path == "/api/v2/alerts"
            (alert,) = fired.json
            assert alert["labels"] == {
                "alertname": "AttributionNotGo",
                "severity": "page",
                "platform": PLATFORM,
            }
            assert alert["annotations"]["summary"].startswith("attribution confidence dropped")
            assert alert["annotations"]["verdict"] == "NO_GO"
            assert alert["startsAt"] == rfc3339(clock.now - 120)
            assert alert["endsAt"] == rfc3339(clock.now - 120 + 300)
            assert alert["generatorURL"] == "http://127.0.0.1:9464/gate"
            assert resolved.json[0]["endsAt"] == rfc3339(clock.now)


def test_alertmanager_one_replica_down_still_delivers_all_down_retries():
    dead = f"http://127.0.0.1:{free_port()}"
    with StubServer([Reply(200, "")]) as alive:
        sink = AlertmanagerSink("am", urls=[dead, alive.url])
        notifier = run(sink, Clock(), "fire")
        assert len(alive.received) == 1
    assert notifier.counters()["am"]["sent"] == 1 and sink.replica_failures == 1

    notifier = run(AlertmanagerSink("am", urls=[dead]), Clock(), "fire", max_attempts=2)
    assert notifier.counters()["am"] | {"queued": 0} == {
        "sent": 0,
        "failed": 1,
        "retried": 1,
        "dropped": 0,
        "queued": 0,
    }


# Log / journal


def test_log_sink_levels_follow_severity_and_resolves_are_info(caplog):
    caplog.set_level(logging.INFO, logger="shadowd.alerts")
    run(LogSink("journal", logger="shadowd.alerts"), Clock(), "fire", "resolve")
    (fired, resolved) = [r for r in caplog.records if r.name == "shadowd.alerts"]
    assert fired.levelno == logging.ERROR and fired.getMessage().startswith("FIRING page AttributionNotGo{")
    assert fired.alert["labels"] == {"platform": PLATFORM} and fired.alert_status == "firing"
    assert resolved.levelno == logging.INFO and resolved.getMessage().startswith("RESOLVED page")
