"""A sink that hangs or answers 500 must not slow the caller.

Measured, not assumed: the rate of ``fire``/``resolve`` calls in a tight loop
(each call notifies every sink, the worst case for the caller) with a healthy
webhook alone, and with the same webhook plus a receiver that accepts the
connection and never answers plus one that always answers 500. Rounds
alternate and each variant keeps its best round, so a noisy shared machine
affects both alike. The assertion is a ratio, not a wall-clock figure.
"""

from __future__ import annotations

import statistics
import time

from alert_http_stub import Reply, StubServer

from alerts import Backoff, Notifier, catalog
from alerts.sinks import WebhookSink

ITERATIONS = 4000
ROUNDS = 3
ALERTS = [catalog.storage_error(operation=f"op{i}", error="x") for i in range(50)]


def calls_per_second(notifier: Notifier) -> float:
    began = time.perf_counter()
    for i in range(ITERATIONS):
        alert = ALERTS[i % len(ALERTS)]
        notifier.fire(alert)
        notifier.resolve(alert.name, alert.labels)
    return 2 * ITERATIONS / (time.perf_counter() - began)


def build(healthy_url: str, bad_urls: tuple[str, ...] = ()) -> Notifier:
    notifier = Notifier()
    notifier.add_sink(WebhookSink("healthy", url=healthy_url))
    for i, url in enumerate(bad_urls):
        notifier.add_sink(
            WebhookSink(f"bad{i}", url=url, timeout_s=30),
            queue_size=100,
            backoff=Backoff(initial_s=0.05, max_s=0.2),
        )
    return notifier


def test_fire_throughput_with_hung_and_failing_sinks_stays_within_half_of_healthy(record_property):
    with (
        StubServer([Reply(200)]) as healthy,
        StubServer([Reply(hang=True)]) as hung,
        StubServer([Reply(500, "boom")]) as failing,
    ):
        rates: dict[str, list[float]] = {"healthy": [], "with_bad": []}
        bad_counters = []
        for _ in range(ROUNDS):
            for variant, bad in (("healthy", ()), ("with_bad", (hung.url, failing.url))):
                notifier = build(healthy.url, bad)
                rates[variant].append(calls_per_second(notifier))
                if bad:
                    hung.wait_for(1, timeout=5)  # the hung sink's worker is stuck in a request
                    bad_counters.append(notifier.counters())
                notifier.close(drain_s=0)

    best = {variant: max(values) for variant, values in rates.items()}
    ratio = best["with_bad"] / best["healthy"]
    record_property("fire_calls_per_s", {k: round(v) for k, v in best.items()})
    record_property("fire_throughput_ratio", round(ratio, 3))
    print(
        f"\nfire+resolve calls/s: healthy {best['healthy']:.0f}, with bad sinks {best['with_bad']:.0f}, "
        f"ratio {ratio:.2f} (medians {statistics.median(rates['healthy']):.0f} / "
        f"{statistics.median(rates['with_bad']):.0f})"
    )
    assert ratio >= 0.5, rates
    for counters in bad_counters:  # the bad sinks were really exercised, and bounded
        assert counters["bad0"]["queued"] <= 100 and counters["bad0"]["dropped"] > 0
        assert counters["bad1"]["queued"] <= 100 and counters["bad1"]["dropped"] > 0


def test_single_fire_latency_stays_small_relative_to_healthy_with_a_hung_sink():
    """The slowest fire() calls, not just the average, must not wait on a hung sink."""
    with StubServer([Reply(200)]) as healthy, StubServer([Reply(hang=True)]) as hung:
        p99 = {}
        for variant, bad in (("healthy", ()), ("with_hung", (hung.url,))):
            notifier = build(healthy.url, bad)
            samples = []
            for i in range(2000):
                alert = ALERTS[i % len(ALERTS)]
                began = time.perf_counter_ns()
                notifier.fire(alert)
                samples.append(time.perf_counter_ns() - began)
                notifier.resolve(alert.name, alert.labels)
            notifier.close(drain_s=0)
            p99[variant] = statistics.quantiles(samples, n=100)[98]
    print(f"\nfire() p99 ns: {p99}")
    # 30 s is the hung sink's timeout: a blocked caller would be ~10^6 times slower.
    assert p99["with_hung"] < 20 * max(p99["healthy"], 20_000), p99
