"""Notifier semantics: dedup, resend, resolve, sync, routing, retries, backoff, bounded queues."""

from __future__ import annotations

import time

import pytest
from alert_fakes import BlockingSink, Clock, RecordingSink

from alerts import Alert, Backoff, Notifier, Route, Router, catalog
from alerts.notification import Notification
from alerts.outbox import Outbox
from alerts.sinks.base import DeliveryError

NO_JITTER = Backoff(initial_s=1.0, factor=2.0, max_s=10.0, jitter=0.0)


def make(clock: Clock, *sinks: RecordingSink, router: Router | None = None, **kwargs) -> Notifier:
    notifier = Notifier(router, clock=clock, **kwargs)
    for sink in sinks:
        notifier.add_sink(sink)
    return notifier


def drift(step_class: str = "decode") -> Alert:
    return catalog.drift_detected(step_class, platform="p1", detector="adwin")


def test_firing_the_same_alert_again_notifies_once():
    clock, sink = Clock(), RecordingSink()
    with make(clock, sink) as notifier:
        assert notifier.fire(drift()) is True
        clock.advance(5)
        assert notifier.fire(drift()) is False
        assert notifier.fire(drift("prefill")) is True  # other labels: another alert
        assert notifier.flush()
    assert sink.statuses == [("firing", "AttributionDrift")] * 2
    assert notifier.counters()["rec"] == {"sent": 2, "failed": 0, "retried": 0, "dropped": 0, "queued": 0}


def test_refire_keeps_starts_at_and_updates_details_for_the_next_resend():
    clock, sink = Clock(), RecordingSink()
    with make(clock, sink) as notifier:
        notifier.fire(catalog.tap_silent(seconds_since_last_frame=30))
        started = clock.now
        clock.advance(30)
        notifier.fire(catalog.tap_silent(seconds_since_last_frame=60))
        (active,) = notifier.active()
        assert active.starts_at == started and active.details["seconds_since_last_frame"] == 60
        clock.advance(30)
        assert notifier.tick() == 1
        notifier.flush()
    first, resent = sink.delivered
    assert first.alert.details["seconds_since_last_frame"] == 30
    assert resent.alert.details["seconds_since_last_frame"] == 60
    assert resent.alert.starts_at == started


def test_resend_follows_each_sinks_interval():
    clock = Clock()
    fast, slow, never = RecordingSink("fast"), RecordingSink("slow"), RecordingSink("never")
    with Notifier(clock=clock) as notifier:
        notifier.add_sink(fast, resend_interval_s=60)
        notifier.add_sink(slow, resend_interval_s=300)
        notifier.add_sink(never, resend_interval_s=0)
        notifier.fire(drift())
        for _ in range(10):  # the daemon ticks every 30 s for 5 minutes
            clock.advance(30)
            notifier.tick()
        notifier.flush()
    assert len(fast.delivered) == 1 + 5
    assert len(slow.delivered) == 1 + 1
    assert len(never.delivered) == 1


def test_resolve_notifies_once_with_ends_at_and_only_while_firing():
    clock, sink = Clock(), RecordingSink()
    with make(clock, sink) as notifier:
        assert notifier.resolve("AttributionDrift", {"platform": "p1", "step_class": "decode"}) is False
        notifier.fire(drift())
        clock.advance(42)
        assert notifier.resolve("AttributionDrift", {"platform": "p1", "step_class": "decode"}) is True
        assert notifier.resolve("AttributionDrift", {"platform": "p1", "step_class": "decode"}) is False
        assert notifier.tick(clock.now + 3600) == 0  # nothing left to resend
        notifier.flush()
    fired, resolved = sink.delivered
    assert resolved.status == "resolved"
    assert resolved.alert.ends_at == clock.now and resolved.alert.starts_at == fired.alert.starts_at


def test_fire_after_resolve_is_a_new_alert_with_a_new_start():
    clock, sink = Clock(), RecordingSink()
    with make(clock, sink) as notifier:
        notifier.fire(drift())
        notifier.sync([])
        clock.advance(10)
        assert notifier.fire(drift()) is True
        notifier.flush()
    assert [n.status for n in sink.delivered] == ["firing", "resolved", "firing"]
    assert sink.delivered[2].alert.starts_at == sink.delivered[0].alert.starts_at + 10


def test_sync_fires_the_new_and_resolves_the_missing_within_its_names():
    clock, sink = Clock(), RecordingSink()
    with make(clock, sink) as notifier:
        notifier.fire(catalog.storage_error(operation="append", error="disk full"))
        notifier.sync([drift("decode"), drift("prefill")], names=[catalog.DRIFT])
        notifier.sync([drift("decode")], names=[catalog.DRIFT])
        active = {(a.name, a.labels.get("step_class")) for a in notifier.active()}
        assert active == {("StorageErrors", None), ("AttributionDrift", "decode")}
        notifier.sync([])  # no scope: everything not listed resolves
        assert notifier.active() == []
        notifier.flush()
    assert sorted(sink.statuses) == sorted(
        [
            ("firing", "StorageErrors"),
            ("firing", "AttributionDrift"),
            ("firing", "AttributionDrift"),
            ("resolved", "AttributionDrift"),
            ("resolved", "AttributionDrift"),
            ("resolved", "StorageErrors"),
        ]
    )


def test_static_labels_join_the_identity_and_resolve_needs_only_the_alerts_own():
    clock, sink = Clock(), RecordingSink()
    with make(clock, sink, labels={"instance": "host-1"}) as notifier:
        notifier.fire(catalog.calibration_missing(platform="p1"))
        assert notifier.active()[0].labels == {"instance": "host-1", "platform": "p1"}
        assert notifier.resolve(catalog.CALIBRATION_MISSING, {"platform": "p1"}) is True


def test_routes_pick_sinks_and_resolve_follows_the_fire():
    clock = Clock()
    pager, chat = RecordingSink("pager"), RecordingSink("chat")
    router = Router([Route(("pager",), {"severity": "page"}, continue_=True), Route(("chat",))])
    with make(clock, pager, chat, router=router) as notifier:
        notifier.fire(catalog.gate_left_go("NO_GO", platform="p1"))
        notifier.fire(drift())
        notifier.sync([])
        notifier.flush()
    assert pager.statuses == [("firing", "AttributionNotGo"), ("resolved", "AttributionNotGo")]
    assert sorted(chat.statuses) == sorted(
        [
            ("firing", "AttributionNotGo"),
            ("firing", "AttributionDrift"),
            ("resolved", "AttributionNotGo"),
            ("resolved", "AttributionDrift"),
        ]
    )


def test_an_alert_no_route_matches_is_counted():
    clock, sink = Clock(), RecordingSink()
    router = Router([Route(("rec",), {"severity": "page"})])
    with make(clock, sink, router=router) as notifier:
        notifier.fire(drift())
        assert notifier.unrouted == 1
        assert notifier.resolve("AttributionDrift", {"platform": "p1", "step_class": "decode"}) is True


def test_retries_follow_the_backoff_schedule_then_give_up():
    waits: list[float] = []
    errors = [DeliveryError("503", retryable=True) for _ in range(5)]
    sink = RecordingSink(failures=errors)
    with Notifier(clock=Clock()) as notifier:
        notifier.add_sink(sink, max_attempts=5, backoff=NO_JITTER, sleep=waits.append)
        notifier.fire(drift())
        notifier.flush()
    assert waits == [1.0, 2.0, 4.0, 8.0]
    assert sink.attempts == 5
    assert notifier.counters()["rec"] | {"queued": 0} == {
        "sent": 0,
        "failed": 1,
        "retried": 4,
        "dropped": 0,
        "queued": 0,
    }


def test_retry_succeeds_and_honours_retry_after():
    waits: list[float] = []
    sink = RecordingSink(failures=[DeliveryError("429", retryable=True, retry_after=30.0)])
    with Notifier(clock=Clock()) as notifier:
        notifier.add_sink(sink, backoff=NO_JITTER, sleep=waits.append)
        notifier.fire(drift())
        notifier.flush()
    assert waits == [30.0]
    assert notifier.counters()["rec"]["sent"] == 1 and notifier.counters()["rec"]["retried"] == 1


def test_a_rejected_notification_is_not_retried():
    waits: list[float] = []
    sink = RecordingSink(failures=[DeliveryError("400 bad routing key", retryable=False)])
    with Notifier(clock=Clock()) as notifier:
        notifier.add_sink(sink, backoff=NO_JITTER, sleep=waits.append)
        notifier.fire(drift())
        notifier.flush()
    assert waits == [] and sink.attempts == 1
    assert notifier.counters()["rec"]["failed"] == 1


def test_a_sink_bug_is_counted_and_the_outbox_keeps_delivering():
    sink = RecordingSink(failures=[KeyError("oops")])
    with Notifier(clock=Clock()) as notifier:
        notifier.add_sink(sink)
        notifier.fire(drift("decode"))
        notifier.fire(drift("prefill"))
        notifier.flush()
    assert notifier.counters()["rec"]["failed"] == 1 and notifier.counters()["rec"]["sent"] == 1


def test_a_full_queue_drops_its_oldest_and_counts():
    box = Outbox(RecordingSink(), capacity=3)  # not started: nothing drains
    names = [f"A{i}" for i in range(5)]
    accepted = [box.put(Notification("firing", Alert(n, "info"))) for n in names]
    assert accepted == [True, True, True, False, False]
    assert box.counters()["dropped"] == 2 and box.queued == 3
    assert [n.alert.name for n in box._items] == names[2:]


def test_a_hung_sink_neither_blocks_fire_nor_other_sinks_nor_close():
    stuck, healthy = BlockingSink(), RecordingSink()
    notifier = Notifier(clock=Clock())
    stuck_box = notifier.add_sink(stuck, queue_size=10)
    healthy_box = notifier.add_sink(healthy, queue_size=1000)
    for i in range(100):
        notifier.fire(catalog.storage_error(operation=f"op{i}", error="x"))
    assert healthy_box.flush(timeout=5) and len(healthy.delivered) == 100
    assert stuck.entered.wait(2)
    assert stuck_box.flush(timeout=0.2) is False  # the stuck one never drains
    assert notifier.counters()["stuck"]["dropped"] in (89, 90)  # 10 queued (+1 taken before it filled)
    began = time.monotonic()
    notifier.close(drain_s=0.2)
    assert time.monotonic() - began < 2.0
    stuck.release.set()


@pytest.mark.parametrize(
    "bad",
    [
        {"name": ""},
        {"severity": "critical"},
        {"labels": {"severity": "x"}},
        {"labels": {"bad-name": "x"}},
        {"labels": {"n": 3}},
    ],
)
def test_alert_rejects_what_receivers_would_reject(bad):
    fields = {"name": "X", "severity": "info", **bad}
    with pytest.raises(ValueError):
        Alert(**fields)
