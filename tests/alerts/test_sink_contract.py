"""Contract tests every alert sink type passes (river-style: one suite, every class in the registry).

A new sink is added to ``alerts.sinks.SINK_TYPES`` and gets these tests for free: it is built from
config the way the daemon builds it, delivers a firing and a resolved notification to a local
receiver, and reports failure only as ``DeliveryError`` with the right ``retryable`` flag — the one
policy a sink decides (see ``alerts.sinks.base``).
"""

from __future__ import annotations

import logging
import socket

import pytest
from alert_http_stub import Reply, StubServer

from alerts import catalog
from alerts.config import validate
from alerts.notification import Notification
from alerts.sinks import SINK_TYPES
from alerts.sinks.base import DeliveryError, Option, Sink

PLATFORM = "h100/llama-8b/bf16/tp1/vllm-0.33"
ALERT = catalog.gate_left_go("NO_GO", platform=PLATFORM, failing_checks=["accuracy.decode"])
HTTP_TYPES = sorted(t for t in SINK_TYPES if t != "log")


def settings_for(kind: str, url: str) -> dict:
    """The smallest config of each type that points at ``url`` (what an operator would write)."""
    return {
        "alertmanager": {"urls": [url]},
        "pagerduty": {"routing_key": "R" * 32, "url": url},
        "slack": {"webhook_url": url},
        "webhook": {"url": url},
        "log": {},
    }[kind]


def build(kind: str, url: str = "http://127.0.0.1:9/", **extra) -> Sink:
    config = {"sinks": {"s": {"type": kind, **settings_for(kind, url), **extra}}}
    settings = validate(config)["s"]
    cls = SINK_TYPES[kind]
    own = {k: v for k, v in settings.items() if k in cls.options or k == "timeout_s"}
    return cls.from_config("s", own)


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def test_every_sink_type_is_covered_by_this_suite():
    assert set(SINK_TYPES) == {"alertmanager", "pagerduty", "slack", "webhook", "log"}


@pytest.mark.parametrize("kind", sorted(SINK_TYPES))
def test_declares_its_type_and_options(kind):
    cls = SINK_TYPES[kind]
    assert issubclass(cls, Sink) and cls.type == kind
    assert all(isinstance(o, Option) for o in cls.options.values())
    assert cls.default_resend_interval_s >= 0


@pytest.mark.parametrize("kind", sorted(SINK_TYPES))
def test_config_without_required_keys_is_rejected_with_a_message(kind):
    required = [k for k, o in SINK_TYPES[kind].options.items() if o.required]
    if not required:
        assert isinstance(build(kind), SINK_TYPES[kind])
        return
    with pytest.raises(ValueError, match=required[0]):
        validate({"sinks": {"s": {"type": kind}}})


@pytest.mark.parametrize("kind", HTTP_TYPES)
def test_delivers_firing_then_resolved_to_a_local_receiver(kind):
    with StubServer([Reply(200, "{}"), Reply(200, "{}")]) as receiver:
        sink = build(kind, receiver.url)
        sink.send(Notification("firing", ALERT))
        sink.send(Notification("resolved", ALERT))
        firing, resolved = receiver.wait_for(2)
    assert firing.json is not None and resolved.json is not None
    assert firing.json != resolved.json  # a resolve is not a resend


@pytest.mark.parametrize("kind", HTTP_TYPES)
@pytest.mark.parametrize(
    ("reply", "retryable"), [(Reply(503), True), (Reply(429), True), (Reply(400), False)]
)
def test_failure_is_a_delivery_error_with_the_right_retry_policy(kind, reply, retryable):
    with StubServer([reply]) as receiver:
        sink = build(kind, receiver.url)
        with pytest.raises(DeliveryError) as err:
            sink.send(Notification("firing", ALERT))
    assert err.value.retryable is retryable


@pytest.mark.parametrize("kind", HTTP_TYPES)
def test_an_unreachable_receiver_is_retryable_and_bounded_by_the_timeout(kind):
    sink = build(kind, f"http://127.0.0.1:{_dead_port()}/", timeout_s=2.0)
    with pytest.raises(DeliveryError) as err:
        sink.send(Notification("firing", ALERT))
    assert err.value.retryable


def test_log_sink_never_raises_and_writes_one_record_per_notification(caplog):
    sink = build("log")
    with caplog.at_level(logging.INFO):
        sink.send(Notification("firing", ALERT))
        sink.send(Notification("resolved", ALERT))
    assert len([r for r in caplog.records if "AttributionNotGo" in r.getMessage()]) == 2
