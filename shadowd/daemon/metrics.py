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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from alerts.notifier import Notifier
from shadowd.daemon.drift_watch import DriftWatch
from shadowd.daemon.governor_status import CHARGING, GovernorFiles
from shadowd.daemon.service_stats import ServiceStats
from shadowd.daemon.status import DaemonStatus
from shadowd.daemon.tenants import TenantRoster
from shadowd.steps.columns import StepColumns

VERDICTS = ("GO", "NO_GO", "INCONCLUSIVE")
STATUSES = ("pass", "fail", "inconclusive")
QUANTILES = (0.5, 0.9, 0.99)


class IngestStats:
    """Per-batch observer: tenant seconds, residual windows, ingest lag."""

    def __init__(self, window: int = 4096, max_tenants: int = 20) -> None:
        self.max_tenants = max_tenants
        self.tenant_seconds: dict[str, float] = {}
        self.tenant_tokens: dict[str, tuple[float, float]] = {}  # VTC weighted tokens, token-split ms
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
            self._count_tokens(cols)

    def _count_tokens(self, cols: StepColumns) -> None:
        """Per tenant, VTC's weighted tokens and the token split's ms (both kept, like the governor)."""
        vtc, split = cols.requests.get("vtc_tokens"), cols.requests.get("vtc_ms")
        if vtc is None or not np.isfinite(vtc).any():
            return
        names, inv = cols.tenant_index
        k = len(names)
        tokens = np.bincount(inv, weights=np.nan_to_num(vtc.astype(np.float64)), minlength=k)
        ms = np.bincount(inv, weights=np.nan_to_num(split.astype(np.float64)), minlength=k)
        for name, t, v in zip(names.tolist(), tokens.tolist(), ms.tolist()):
            old_t, old_v = self.tenant_tokens.get(name, (0.0, 0.0))
            self.tenant_tokens[name] = (old_t + t, old_v + v)

    def tenant_counters(self) -> dict[str, dict[str, float]]:
        """Per tenant since start: attributed GPU ms (LLMVisor), VTC weighted tokens, token-split ms."""
        with self._lock:
            names = set(self.tenant_seconds) | set(self.tenant_tokens)
            return {
                n: {
                    "attributed_gpu_ms": 1e3 * self.tenant_seconds.get(n, 0.0),
                    "vtc_tokens": self.tenant_tokens.get(n, (0.0, 0.0))[0],
                    "token_split_ms": self.tenant_tokens.get(n, (0.0, 0.0))[1],
                }
                for n in sorted(names)
            }

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


@dataclass(frozen=True)
class MetricSources:
    """What a scrape reads: the status snapshot and the owners of the counters behind it."""

    status: Callable[[], DaemonStatus]
    decision: Callable[[], dict[str, Any] | None]
    stats: IngestStats
    drift: DriftWatch
    notifier: Callable[[], Notifier] | None = None  # read per scrape: a reload replaces it
    tenants: TenantRoster | None = None
    http_refused: Callable[[], dict[str, int]] | None = None
    service: ServiceStats | None = None
    governors: GovernorFiles | None = None  # the engines' governor status files
    refits: Callable[[], dict[str, int]] | None = None  # re-fits installed / refused (r3), extensions (r43)
    window_cuts: Callable[[], dict[str, int]] | None = None  # windows cut short, per bound
    # rows a window still to load may hold under the memory limit now (None: no limit, no guard)
    window_rows_affordable: Callable[[], int | None] | None = None


class DaemonCollector(Collector):
    def __init__(self, sources: MetricSources) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Any]:
        src = self.sources
        status = src.status()
        yield from _gate_metrics(src.decision())
        yield _counter("shadowd_steps_ingested", "Engine steps ingested", status.steps_ingested)
        yield _counter("shadowd_request_rows_ingested", "Request rows ingested", status.rows_ingested)
        yield _counter(
            "shadowd_tap_dropped_frames",
            "Frames the taps report dropped (latest per run)",
            status.tap_dropped_frames,
        )
        tap = CounterMetricFamily(
            "shadowd_tap_events",
            "What the taps report shortening, losing or seeing (latest per run, summed): "
            "request ids shortened, lifecycle records dropped, finishes missed, preemptions",
            labels=["kind"],
        )
        for kind, value in status.tap_counters.items():
            tap.add_metric([kind], float(value))
        yield tap
        faults = CounterMetricFamily(
            "shadowd_ingest_faults", "Frames rejected or lost, by kind", labels=["kind"]
        )
        for kind in ("malformed", "version", "oversized", "gap", "consumer", "clock"):
            faults.add_metric([kind], float(status.faults.get(kind, 0)))
        yield faults
        yield GaugeMetricFamily(
            "shadowd_ingest_lag_seconds", "Wall time from step end to ingest", value=src.stats.lag_s
        )
        yield GaugeMetricFamily(
            "shadowd_healthy",
            "1 while ingest, storage and jobs make progress",
            value=1.0 if status.healthy else 0.0,
        )
        yield _counter("shadowd_storage_errors", "Failed DuckDB writes", status.storage_errors)
        yield _counter(
            "shadowd_storage_rows_dropped",
            "Rows dropped by the writer (queue or retry bound)",
            status.storage_rows_dropped,
        )
        yield _counter("shadowd_job_errors", "Scheduled jobs that raised", status.job_errors)
        yield _counter(
            "shadowd_storage_reopens", "Database reopened after a fatal DuckDB error", status.storage_reopens
        )
        yield GaugeMetricFamily(
            "shadowd_storage_rows_waiting",
            "Rows handed to the writer, not stored yet",
            value=status.writer_rows_waiting,
        )
        yield from _residual_metrics(src.stats)
        t = CounterMetricFamily(
            "shadowd_tenant_attributed_seconds",
            "GPU time attributed to each tenant by LLMVisor (measured-normalised)",
            labels=["tenant"],
        )
        for tenant, sec in src.stats.tenants_capped().items():
            t.add_metric([tenant], sec)
        yield t
        if src.tenants is not None:
            yield GaugeMetricFamily(
                "shadowd_tenants_admitted", "Distinct tenant labels admitted", value=src.tenants.distinct
            )
            yield _counts(
                "shadowd_tenant_rows_folded",
                "Request rows stored as tenant 'other': label not allowed, or past tenants.max_distinct",
                "reason",
                src.tenants.folded,
            )
        if src.http_refused is not None:
            yield _counts(
                "shadowd_http_refused",
                "HTTP connections closed or refused: bad Host, evicted when full, idle timeout, bad request",
                "reason",
                src.http_refused(),
            )
        yield _counts("shadowd_drift_events", "Drift detections", "detector", src.drift.events_total)
        yield from _drift_watch_metrics(src.drift.state().get("residual"))
        if src.refits is not None:
            yield _counts(
                "shadowd_model_refits",
                "Re-fits on traffic that left the calibration: installed, or refused by the guard; "
                "envelope extensions (design r43): extended, or not",
                "outcome",
                src.refits(),
            )
        if src.window_cuts is not None:
            yield _counts(
                "shadowd_calibration_windows_cut",
                "Calibration, re-fit, extension and stability windows cut short: at [calibration] "
                "max_window_rows (rows), or to fit under the daemon's memory limit (memory)",
                "bound",
                src.window_cuts(),
            )
        affordable = src.window_rows_affordable() if src.window_rows_affordable is not None else None
        if affordable is not None:
            yield GaugeMetricFamily(
                "shadowd_calibration_window_rows_affordable",
                "Request rows a re-fit or stability window could hold now under the daemon's memory "
                "limit (the memory guard's bound); a window of more is cut",
                value=float(affordable),
            )
        if src.service is not None:
            yield from _service_metrics(src.service)
        if src.governors is not None:
            yield from _governor_metrics(src.governors)
        if src.notifier is not None:
            yield _notification_metrics(src.notifier())


def _gate_metrics(decision: dict[str, Any] | None) -> Iterator[Any]:
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
    held = GaugeMetricFamily(
        "shadowd_gate_class_not_vouched",
        "1 for a step class the calibration never identified (too few fit steps, or work priced "
        "at zero): the gate does not vouch for it; recalibrate on a window holding it",
        labels=["step_class"],
    )
    for cls in ((decision or {}).get("details") or {}).get("not_vouched", {}):
        held.add_metric([str(cls)], 1.0)
    yield held
    wait = GaugeMetricFamily(
        "shadowd_gate_evidence_wait_seconds",
        "Seconds until an evidence minimum not yet met is met at the rate so far (+Inf: the "
        "evidence window never holds it at that rate); absent once met or without a rate",
        labels=["check"],
    )
    for check, seconds in ((decision or {}).get("details") or {}).get("evidence_wait_s", {}).items():
        wait.add_metric([str(check)], math.inf if seconds is None else float(seconds))
    yield wait


def _governor_metrics(files: GovernorFiles) -> Iterator[Any]:
    """What each engine's governor charges, why, and how often it switched (its status file)."""
    labels = ["engine"]
    sw = CounterMetricFamily(
        "shadowd_governor_switches",
        "Times the governor switched its charging, by the reason it switched to",
        labels=[*labels, "reason"],
    )
    charging = GaugeMetricFamily(
        "shadowd_governor_charging", "1 for the counter the governor charges now", labels=[*labels, "unit"]
    )
    steps = CounterMetricFamily(
        "shadowd_governor_steps_charged", "Steps the governor charged, by counter", labels=[*labels, "unit"]
    )
    errors = CounterMetricFamily(
        "shadowd_governor_errors", "Steps the governor failed to charge", labels=labels
    )
    age = GaugeMetricFamily(
        "shadowd_governor_status_age_seconds", "Time since the governor last wrote its status", labels=labels
    )
    on_thread = GaugeMetricFamily(
        "shadowd_governor_charge_thread",
        "1 while the governor charges steps on its own thread, 0 on the engine thread (SHADOWD_GOVERN_CHARGE"
        "=inline, or its thread stopped)",
        labels=labels,
    )
    for g in files.read():
        for reason, n in g.switches.items():
            sw.add_metric([g.engine, reason], float(n))
        for unit in CHARGING:
            charging.add_metric([g.engine, unit], 1.0 if g.charging == unit else 0.0)
            steps.add_metric([g.engine, unit], float(g.steps_charged.get(unit, 0)))
        errors.add_metric([g.engine], float(g.errors))
        age.add_metric([g.engine], g.age_s)
        if g.charged_on:
            on_thread.add_metric([g.engine], 1.0 if g.charged_on == "thread" else 0.0)
    yield from (sw, charging, steps, errors, age, on_thread)
    yield _counter("shadowd_governor_status_unreadable", "Governor status files skipped", files.unreadable)


def _residual_metrics(stats: IngestStats) -> Iterator[Any]:
    q = GaugeMetricFamily(
        "shadowd_residual_relative_error",
        "Recent |T - T_hat|/T of LLMVisor",
        labels=["step_class", "quantile"],
    )
    for kind, values in stats.residual_quantiles().items():
        for qq, v in zip(QUANTILES, values):
            q.add_metric([kind, str(qq)], v)
    yield q


def _service_metrics(service: ServiceStats) -> Iterator[Any]:
    """Service received per tenant: recent queue/TTFT/TPOT quantiles, ended requests by outcome."""
    for metric, name in (("queue_ms", "queue"), ("ttft_ms", "ttft"), ("tpot_ms", "tpot")):
        g = GaugeMetricFamily(
            f"shadowd_tenant_{name}_seconds",
            f"Recent {name.upper()} of each tenant's ended requests (quantiles over the last requests)",
            labels=["tenant", "quantile"],
        )
        for tenant, values in service.quantiles(metric).items():
            for q, v in zip(QUANTILES, values):
                g.add_metric([tenant, str(q)], v / 1e3)
        yield g
    c = CounterMetricFamily(
        "shadowd_tenant_requests_ended",
        "Requests that ended, by tenant and finish reason",
        labels=["tenant", "reason"],
    )
    for (tenant, reason), n in service.outcomes().items():
        c.add_metric([tenant, reason], float(n))
    yield c


def _notification_metrics(notifier: Notifier) -> CounterMetricFamily:
    an = CounterMetricFamily(
        "shadowd_alert_notifications", "Alert notifications by sink and outcome", labels=["sink", "outcome"]
    )
    for sink, counts in notifier.counters().items():
        for outcome in ("sent", "failed", "retried", "dropped"):
            an.add_metric([sink, outcome], float(counts.get(outcome, 0)))
    return an


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
    # Design r8: a detection is an alarm only once its shift has lasted (checks.alarm_confirmation).
    detections = CounterMetricFamily(
        "shadowd_drift_detections",
        "Residual detections by outcome: confirmed (an alarm), dismissed (the shift did not last), "
        "absorbed (the same shift again)",
        labels=["step_class", "outcome"],
    )
    # Design r26: of the dismissed, those whose unbiased shift lasted but the raw residual's did not.
    dismissed_raw = CounterMetricFamily(
        "shadowd_drift_detections_dismissed_raw",
        "Dismissed residual detections whose shift lasted on the residual less its composition bias "
        "but not on the residual as measured (a bias carried beyond its calibration window)",
        labels=["step_class"],
    )
    # Design r31: of the dismissed, those whose shift lasted but within no composition stratum.
    dismissed_strata = CounterMetricFamily(
        "shadowd_drift_detections_dismissed_strata",
        "Dismissed residual detections whose shift lasted overall but not within batch-size strata "
        "(a move of the batch-size mix, not of the engine)",
        labels=["step_class"],
    )
    # Design r38: of the judged within strata, those judged in r34's coarser strata.
    judged_coarse = CounterMetricFamily(
        "shadowd_drift_detections_judged_coarse",
        "Residual detections judged within the coarser (CUDA-graph) strata because the finer ones "
        "held too little of the confirmation window",
        labels=["step_class"],
    )
    # Design r40: of the judged within strata, those judged in r31's quarter octaves.
    judged_octave = CounterMetricFamily(
        "shadowd_drift_detections_judged_octave",
        "Residual detections judged within quarter-octave strata because the CUDA-graph strata "
        "held too little of the confirmation window too",
        labels=["step_class"],
    )
    # Designs r31 and r45: lasting shifts the gate could not judge (the class is blind until a
    # re-fit or calibration): in compositions seen too rarely, or mostly beyond those calibration held.
    unsupported = CounterMetricFamily(
        "shadowd_drift_detections_unsupported",
        "Residual detections whose shift lasted where drift and the model's own error cannot be told "
        "apart: in batch compositions seen too rarely (where=rare), or mostly on steps beyond the "
        "compositions calibration held (where=beyond)",
        labels=["step_class", "where"],
    )
    pending = GaugeMetricFamily(
        "shadowd_drift_detections_pending",
        "Residual detections waiting for confirmation",
        labels=["step_class"],
    )
    for cls, c in ((residual or {}).get("classes") or {}).items():
        judged.add_metric([cls], float(c["steps"]))
        outside.add_metric([cls], float(c.get("out_of_domain", 0)))
        conf = c.get("confirmation") or {}
        for outcome in ("confirmed", "dismissed", "absorbed"):
            detections.add_metric([cls, outcome], float(conf.get(outcome, 0)))
        dismissed_raw.add_metric([cls], float(conf.get("dismissed_raw", 0)))
        dismissed_strata.add_metric([cls], float(conf.get("dismissed_strata", 0)))
        judged_coarse.add_metric([cls], float(conf.get("judged_coarse", 0)))
        judged_octave.add_metric([cls], float(conf.get("judged_octave", 0)))
        beyond = float(conf.get("unsupported_beyond", 0))
        unsupported.add_metric([cls, "rare"], float(conf.get("unsupported", 0)) - beyond)
        unsupported.add_metric([cls, "beyond"], beyond)
        pending.add_metric([cls], float(conf.get("pending", 0)))
    yield judged
    yield outside
    yield detections
    yield dismissed_raw
    yield dismissed_strata
    yield judged_coarse
    yield judged_octave
    yield unsupported
    yield pending


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=float(value))


def _counts(name: str, doc: str, label: str, counts: dict[str, int]) -> CounterMetricFamily:
    """One counter family with a sample per ``label`` value."""
    family = CounterMetricFamily(name, doc, labels=[label])
    for value, n in counts.items():
        family.add_metric([value], float(n))
    return family


def registry_for(sources: MetricSources) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(DaemonCollector(sources))
    return reg
