"""Prometheus metrics, collected at scrape time from the daemon's own state.

Nothing here runs per step: a custom collector reads counters the pipeline,
receiver, writer, drift watch and gate keeper keep anyway.  Base units
(seconds), ``_total`` counters, and bounded label sets: tenants beyond the
``max_tenants`` largest are folded into ``other``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from shadowd.steps.columns import StepColumns

if TYPE_CHECKING:
    from shadowd.daemon.service import Daemon

VERDICTS = ("GO", "NO_GO", "INCONCLUSIVE")
STATUSES = ("pass", "fail", "inconclusive")
QUANTILES = (0.5, 0.9, 0.99)


class IngestStats:
    """Per-batch observer: tenant seconds, residual windows, ingest lag."""

    def __init__(self, window: int = 4096, max_tenants: int = 20) -> None:
        self.max_tenants = max_tenants
        self.tenant_seconds: dict[str, float] = {}
        self.residuals = {k: deque(maxlen=window) for k in ("prefill", "decode", "mixed")}
        self.lag_s = float("nan")
        self._lock = threading.Lock()

    def observe(self, cols: StepColumns) -> None:
        steps, reqs = cols.steps, cols.requests
        lag = time.time() - steps["ts"].max().astype("datetime64[us]").astype(np.int64) / 1e6
        pred, meas = steps.get("predicted_ms"), steps["latency_ms"]
        shares = reqs.get("llmvisor_measured_ms")
        with self._lock:
            self.lag_s = float(lag)
            if pred is not None:
                ok = np.isfinite(pred) & np.isfinite(meas) & (pred > 0)
                err = np.abs(meas[ok] - pred[ok]) / meas[ok]
                for kind, e in zip(steps["kind"][ok].tolist(), err.tolist()):
                    self.residuals[kind].append(e)
            if shares is not None and np.isfinite(shares).any():
                names, inv = cols.tenant_index  # codes the columns already carry
                sums = np.bincount(
                    inv, weights=np.nan_to_num(shares.astype(np.float64)), minlength=len(names)
                )
                for name, ms in zip(names.tolist(), sums.tolist()):
                    self.tenant_seconds[name] = self.tenant_seconds.get(name, 0.0) + ms / 1e3

    def tenants_capped(self) -> dict[str, float]:
        with self._lock:
            ranked = sorted(self.tenant_seconds.items(), key=lambda kv: -kv[1])
        out = dict(ranked[: self.max_tenants])
        rest = sum(v for _, v in ranked[self.max_tenants :])
        if rest:
            out["other"] = out.get("other", 0.0) + rest
        return out

    def residual_quantiles(self) -> dict[str, list[float]]:
        with self._lock:
            return {
                k: np.quantile(np.fromiter(v, float), QUANTILES).tolist()
                for k, v in self.residuals.items()
                if v
            }


class DaemonCollector(Collector):
    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def collect(self) -> Iterator[Any]:
        d = self.daemon
        decision = d.gatekeeper.last if d.gatekeeper else None
        g = GaugeMetricFamily("shadowd_gate_verdict", "1 for the current gate verdict", labels=["verdict"])
        for v in VERDICTS:
            g.add_metric([v], 1.0 if decision and decision["verdict"] == v else 0.0)
        yield g
        c = GaugeMetricFamily(
            "shadowd_gate_check_status", "1 for each check's current status", labels=["check", "status"]
        )
        for check in (decision or {}).get("checks", []):
            for s in STATUSES:
                c.add_metric([check["name"], s], 1.0 if check["status"] == s else 0.0)
        yield c
        adv = GaugeMetricFamily(
            "shadowd_gate_advantage_ratio",
            "Token-baseline p90 error / model p90 error per step class (reported, not a gate check)",
            labels=["step_class"],
        )
        for cls, a in ((decision or {}).get("details") or {}).get("advantage", {}).items():
            if a.get("ratio") is not None and math.isfinite(a["ratio"]):
                adv.add_metric([cls], float(a["ratio"]))
        yield adv
        yield _counter("shadowd_steps_ingested", "Engine steps ingested", d.pipeline.steps_ingested)
        yield _counter("shadowd_request_rows_ingested", "Request rows ingested", d.pipeline.rows_ingested)
        rx = d.receiver
        yield _counter(
            "shadowd_tap_dropped_frames",
            "Frames the taps report dropped (latest per run)",
            sum(dr for _, dr in rx.tracker.runs().values()) if rx else 0,
        )
        faults = CounterMetricFamily(
            "shadowd_ingest_faults", "Frames rejected or lost, by kind", labels=["kind"]
        )
        for kind in ("malformed", "version", "oversized", "gap", "consumer"):
            faults.add_metric([kind], float(rx.faults.get(kind, 0) if rx else 0))
        yield faults
        yield GaugeMetricFamily(
            "shadowd_ingest_lag_seconds", "Wall time from step end to ingest", value=d.stats.lag_s
        )
        yield _counter("shadowd_storage_errors", "Failed DuckDB writes", d.writer.stats.errors)
        yield _counter(
            "shadowd_storage_rows_dropped",
            "Rows dropped by the writer (queue or retry bound)",
            d.writer.stats.rows_dropped,
        )
        q = GaugeMetricFamily(
            "shadowd_residual_relative_error",
            "Recent |T - T_hat|/T of LLMVisor",
            labels=["step_class", "quantile"],
        )
        for kind, values in d.stats.residual_quantiles().items():
            for qq, v in zip(QUANTILES, values):
                q.add_metric([kind, str(qq)], v)
        yield q
        t = CounterMetricFamily(
            "shadowd_tenant_attributed_seconds",
            "GPU time attributed to each tenant by LLMVisor (measured-normalised)",
            labels=["tenant"],
        )
        for tenant, sec in d.stats.tenants_capped().items():
            t.add_metric([tenant], sec)
        yield t
        de = CounterMetricFamily("shadowd_drift_events", "Drift detections", labels=["detector"])
        for det, n in d.drift.events_total.items():
            de.add_metric([det], float(n))
        yield de
        yield from _drift_watch_metrics(d.drift.state().get("residual"))
        if d.notifier is not None:
            an = CounterMetricFamily(
                "shadowd_alert_notifications",
                "Alert notifications by sink and outcome",
                labels=["sink", "outcome"],
            )
            for sink, counts in d.notifier.counters().items():
                for outcome in ("sent", "failed", "retried", "dropped"):
                    an.add_metric([sink, outcome], float(counts.get(outcome, 0)))
            yield an


def _drift_watch_metrics(residual: dict[str, Any] | None) -> Iterator[Any]:
    """Per watched class: steps judged by the residual detectors, and steps outside their domain."""
    judged = CounterMetricFamily(
        "shadowd_drift_steps_judged", "Steps fed to the residual drift detectors", labels=["step_class"]
    )
    outside = CounterMetricFamily(
        "shadowd_drift_steps_out_of_domain",
        "Steps outside the calibrated batch composition, not judged",
        labels=["step_class"],
    )
    for cls, c in ((residual or {}).get("classes") or {}).items():
        judged.add_metric([cls], float(c["steps"]))
        outside.add_metric([cls], float(c.get("out_of_domain", 0)))
    yield judged
    yield outside


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=float(value))


def registry_for(daemon: Daemon) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(DaemonCollector(daemon))
    return reg
