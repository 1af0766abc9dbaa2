"""The shadowd daemon: wires ingest, attribution, drift, the gate, alerts and jobs.

Data path (threads): receiver (zmq PULL, decode) -> pipeline (columns,
attribution) -> writer (one DuckDB connection).  Observers on the pipeline
buffer the warm-up window for calibration, feed the drift detectors and keep
the counters /metrics reads.  Scheduled jobs (APScheduler, UTC): gate
evaluation, share stability, health and alert resends, retention, export.

Lifecycle: ``start()`` opens the database (migrating it), resumes the newest
calibration for the running platform, binds the tap socket and starts the
threads; ``stop()`` stops receiving, drains every frame already queued,
flushes and closes.  ``serve()`` runs until SIGTERM/SIGINT (SIGHUP reloads
the config) and returns the exit code.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from alerts import catalog
from alerts.config import build_notifier
from alerts.notifier import Notifier
from shadowd.daemon import systemd_notify as notify
from shadowd.daemon.alert_rules import AlertRules
from shadowd.daemon.attributor import ModelAttributor
from shadowd.daemon.calibrator import (
    Calibration,
    CalibrationSettings,
    WarmupCalibrator,
    calibration_from_body,
    model_body,
    platform_key_string,
)
from shadowd.daemon.cgroup_memory import CgroupMemory, memory_bytes
from shadowd.daemon.config import Config
from shadowd.daemon.drift_watch import DriftWatch
from shadowd.daemon.gate_evidence import DaemonFacts
from shadowd.daemon.gatekeeper import GateKeeper, published_model
from shadowd.daemon.governor_status import GovernorFiles, governor_directory
from shadowd.daemon.http_server import ApiServer
from shadowd.daemon.jobs import daemon_jobs, reporting, reschedule, run_soon, start_jobs
from shadowd.daemon.metrics import IngestStats, MetricSources, registry_for
from shadowd.daemon.pipeline import IngestPipeline
from shadowd.daemon.receiver import FrameReceiver
from shadowd.daemon.refit import RegimeRefit
from shadowd.daemon.request_ids import RequestIdHasher, host_key
from shadowd.daemon.routes import ReportLimits, daemon_routes
from shadowd.daemon.service_stats import ServiceStats
from shadowd.daemon.stability import stability_from_db
from shadowd.daemon.status import WRITER_STALL_S, DaemonStatus
from shadowd.daemon.tenants import TenantRoster
from shadowd.daemon.window_bound import WindowBound
from storage.queries import known_runs, known_tenants
from storage.records import (
    latest_model_version,
    replace_model_body,
    resolve_drift_events,
    save_drift_events,
    save_model_version,
)
from storage.row_groups import Alignment
from storage.schema import migrate
from storage.writer import Writer

log = logging.getLogger("shadowd.daemon.service")
UMASK = 0o027
JOB_FAILING_AFTER = 3  # consecutive failures of one job before the JobFailing alert


def window_memory(config: Config) -> CgroupMemory | None:
    """The daemon's cgroup memory, read before each calibration, re-fit or stability window,
    with DuckDB's own ``memory_limit`` kept aside (``[calibration] memory_guard``; None: off)."""
    if not config.calibration.memory_guard:
        return None
    return CgroupMemory(reserve_bytes=memory_bytes(config.storage.memory_limit))


def running_platform(config: Config) -> dict[str, Any] | None:
    p = config.calibration.platform
    return p.as_key() if p is not None else None


class Daemon:
    """One shadowd instance: one database, one tap socket."""

    def __init__(
        self,
        config: Config,
        *,
        run_job: Callable[[Callable[[], None]], None] | None = None,
        flush_interval_s: float = 0.5,
    ) -> None:
        self.config = config
        self.started_at = time.time()
        self.writer = Writer(
            config.db,
            setup=migrate,
            flush_interval_s=flush_interval_s,
            memory_limit=config.storage.memory_limit,
            threads=config.storage.threads,
            alignment=Alignment(),
        )
        self.pipeline = IngestPipeline(self.writer)
        self.tenants = TenantRoster(config.tenants.allow, config.tenants.max_distinct)
        self.pipeline.prepare.append(self.tenants.fold)
        if config.privacy.hash_request_ids:
            key_file = config.privacy.request_id_key_file or f"{config.db}.request-id.key"
            self.pipeline.prepare.append(RequestIdHasher(host_key(key_file)))
        self.stats = IngestStats()
        self.service_stats = ServiceStats()
        self.drift = DriftWatch(self._on_drift)
        self.platform_key = running_platform(config)
        self.calibration: Calibration | None = None
        self.calibrated_at: float | None = None
        self.stability: dict[str, Any] | None = None
        self.receiver: FrameReceiver | None = None
        self.notifier: Notifier = build_notifier(config.alerts)
        self.window_bound = WindowBound(window_memory(config))
        self.rules = AlertRules(
            self.notifier,
            platform=lambda: self.running_platform_key or "unknown",
            calibration_max_age_s=config.calibration.max_age_s,
            window_cut=lambda: self.window_bound.last_memory_cut,
        )
        self.gatekeeper = GateKeeper(
            config.gate.policy,
            self.writer,
            self.facts,
            state_file=config.state_file,
            model=self.published_model,
        )
        self.gatekeeper.listeners.append(self.rules.on_decision)
        gov_dir = governor_directory(config.state_file)
        self.governors = GovernorFiles(gov_dir) if gov_dir else None  # engines' governors, for /metrics
        self.calibrator = self._new_calibrator(run_job)
        self.refit = RegimeRefit(
            window_bound=self.window_bound,
            current=lambda: self.calibration,
            cursor=self.writer.cursor,
            install=self.install_calibration,
            extend=self.extend_envelope,
            policy=lambda: self.gatekeeper.gate.policy,
            settings=lambda: self.calibrator.settings if self.calibrator else CalibrationSettings(),
            platform_key=lambda: self.platform_key,
            run_job=self.calibrator.run_job if self.calibrator else (lambda fn: fn()),
            enabled=config.calibration.refit and self.calibrator is not None,
        )
        self.pipeline.observers += [
            self._observe_calibration,
            self.drift.observe,
            self.stats.observe,
            self.service_stats.observe,
        ]
        self.jobs: Any = None
        self.http: Any = None
        self.job_errors = 0
        self._job_failures: dict[str, int] = {}  # job -> consecutive failures
        self.stall_s = 10.0  # ingest loop silent this long = wedged (watchdog stops pinging)
        self.writer_stall_s = WRITER_STALL_S  # rows waiting with no flush this long = wedged storage
        self._stopped = threading.Event()
        self._on_stop: list[Callable[[], None]] = []

    # -- wiring ---------------------------------------------------------------
    def _new_calibrator(self, run_job: Callable | None) -> WarmupCalibrator | None:
        if self.platform_key is None:
            log.warning(
                "no [calibration.platform] configured: attribution stays uncalibrated "
                "and the gate fails closed (unknown platform)"
            )
            return None
        c, d = self.config.calibration, self.config.drift
        settings = CalibrationSettings(
            holdout_fraction=c.holdout_fraction,
            target_false_alarm_rate=d.target_false_alarm_rate,
            detectors=d.detectors,
            drift_sim_steps=d.sim_steps,
            adwin_sim_steps=d.adwin_sim_steps,
            min_class_steps=d.min_class_steps,
            confirm_steps=d.confirm_steps,
            share_policy=c.policy,
            expected_tenants=c.tenants,
            max_window_rows=c.max_window_rows or None,
        )
        runner = run_job or (
            lambda fn: threading.Thread(target=fn, name="shadowd-calibrate", daemon=True).start()
        )
        return WarmupCalibrator(
            self.platform_key,
            c.warmup_steps,
            self.install_calibration,
            settings=settings,
            run_job=runner,
            window_bound=self.window_bound,
        )

    def _observe_calibration(self, cols: Any) -> None:
        if self.calibrator is not None:
            self.calibrator.observe(cols)

    @property
    def running_platform_key(self) -> str | None:
        return platform_key_string(self.platform_key) if self.platform_key else None

    def set_running_platform(self, key: dict[str, Any] | None) -> None:
        """The engine now runs on another platform (e.g. after a restart on new hardware)."""
        self.platform_key = key

    def install_calibration(self, cal: Calibration, *, save: bool = True, at_s: float | None = None) -> None:
        """Make ``cal`` the model in force: store it, resolve old drift, attribute with it."""
        at_s = time.time() if at_s is None else at_s
        if save:
            w = cal.model.fit_window
            self.writer.submit(
                lambda con: save_model_version(
                    con,
                    cal.model.version,
                    cal.platform_key,
                    model_body(cal),
                    w.get("steps"),
                    w.get("first_ts"),
                    w.get("last_ts"),
                )
            )
        self.writer.submit(lambda con: resolve_drift_events(con, at_s))
        self.drift.install(cal)
        self.pipeline.set_attributor(ModelAttributor(cal.model, self.config.calibration.policy))
        self.calibration, self.calibrated_at = cal, at_s
        if self.calibrator is not None and self.calibrator.state == "warming_up":
            self.calibrator.state = "done"  # a model is in force; no warm-up fit over it
        self.rules.on_calibrated()
        run_soon(self.jobs, "stability")  # the last result was under the model before this one
        log.info("model %s in force for %s", cal.model.version, cal.platform_key)

    def extend_envelope(self, cal: Calibration) -> None:
        """Design r43: the model in force again with its envelope widened (``shadowd.daemon.refit``):
        its stored body says so, and the envelope monitor counts from here on it; the model, its
        drift detectors, their state and the drift events stay as they are."""
        self.writer.submit(lambda con: replace_model_body(con, cal.model.version, model_body(cal)))
        self.drift.extend(cal.envelope)
        self.calibration = cal
        log.info("model %s: envelope extended", cal.model.version)

    def published_model(self) -> dict[str, Any] | None:
        """The model in force as the state file publishes it to the governor (None: uncalibrated)."""
        cal = self.calibration
        if cal is None or self.calibrated_at is None:
            return None
        c = self.config.calibration
        return published_model(
            cal.model.version,
            cal.platform_key,
            cal.model.llmvisor.to_dict(),
            c.policy,
            self.calibrated_at,
            c.max_age_s,
        )

    def facts(self) -> DaemonFacts:
        cal = self.calibration
        stab = None
        if self.stability and "llmvisor" in self.stability and self._stability_is_current(cal):
            stab = {
                k: {
                    "effect": v.get("effect"),
                    "ci_low": v.get("ci_low"),
                    "ci_high": v.get("ci_high"),
                    "computed_at": self.stability.get("computed_at"),
                    # how many steps over how long, and the window's most: how long a CI that
                    # straddles its limit takes to settle (``checks.rules._stability_wait``)
                    **{n: self.stability[n] for n in ("steps", "span_s", "max_steps") if n in self.stability},
                    **(
                        {"baseline": cal.stability_baseline[k]["effect"]}
                        if cal is not None and k in cal.stability_baseline
                        else {}
                    ),
                }
                for k, v in self.stability.items()
                if isinstance(v, dict) and "effect" in v
            }
        envelope = self.drift.state().get("envelope")
        blind = self.drift.blind_classes()
        return DaemonFacts(
            model_version=cal.model.version if cal else None,
            calibrated_platform_key=cal.platform_key if cal else None,
            running_platform_key=self.running_platform_key,
            stability=stab,
            envelope=envelope,
            calibrated_at_s=self.calibrated_at,
            watched_classes=tuple(c for c in cal.drift if c not in blind) if cal else (),
            unwatched_why={**(cal.unwatched if cal else {}), **blind},
            drift_partial=cal.partially_watched() if cal else None,
            drift_dull=cal.dull() if cal else None,
            calibrated_max_context=self._calibrated_max_context(cal),
            lineage=(*cal.lineage, cal.model.version) if cal else (),
            barely_held=cal.barely_held(self._min_class_steps()) if cal else None,
            scored_tenants=cal.scored_tenants if cal else (),
        )

    def _stability_is_current(self, cal: Calibration | None) -> bool:
        """A stability result speaks for the model it was computed under only: after a re-fit or
        a recalibration the old result is missing evidence until the next test, not a verdict."""
        version = (self.stability or {}).get("model_version")
        return cal is not None and (version is None or version == cal.model.version)

    def _min_class_steps(self) -> int:
        return (
            self.calibrator.settings if self.calibrator is not None else CalibrationSettings()
        ).min_class_steps

    def _calibrated_max_context(self, cal: Any) -> int | None:
        """The longest context the calibration window held (its envelope limit less the margin)."""
        if cal is None:
            return None
        settings = self.calibrator.settings if self.calibrator is not None else CalibrationSettings()
        return int(cal.envelope.max_context / (1.0 + settings.envelope_margin))

    def _on_drift(self, events: list[Any]) -> None:
        engine = None
        rows = [e.to_dict() for e in events]
        self.writer.submit(lambda con: save_drift_events(con, engine, rows))
        self.rules.on_drift(events)

    # -- jobs -----------------------------------------------------------------
    def evaluate_gate(self, now: float | None = None) -> dict[str, Any]:
        """One gate evaluation; then a re-fit if traffic left the calibration (``refit``)."""
        decision = self.gatekeeper.evaluate(now)
        self.refit.consider(decision)
        return decision

    def run_stability(self, now: float | None = None) -> dict[str, Any] | None:
        """Test share stability on the stored steps; ``now`` stamps the result on the clock the
        gate is evaluated on (the demo's simulated one; wall time by default), which judges its
        age against ``max_stability_age_s``."""
        cal = self.calibration
        if cal is None:
            return None
        rows, bound = self.window_bound.rows(None, loading=True)
        self.stability = stability_from_db(
            self.writer.cursor(),
            cal.model,
            policy=self.config.calibration.policy,
            max_rows=rows,
            n_boot=self.config.stability.n_boot,
        )
        cut = bool(self.stability.get("cut_for_rows"))
        self.window_bound.read("stability", int(self.stability.get("max_steps", 0)), rows, bound, cut=cut)
        self.stability["model_version"] = cal.model.version
        if now is not None:
            self.stability["computed_at"] = float(now)
        return self.stability

    def status(self) -> DaemonStatus:
        """The one snapshot ``/healthz``, ``/metrics``, the watchdog and the health job read."""
        rx, w = self.receiver, self.writer.stats
        now, mono = time.time(), time.monotonic()
        last_frame = rx.last_frame_monotonic if rx else 0.0
        cal = self.calibration
        return DaemonStatus(
            at_s=now,
            ingest_alive=rx is not None and rx.alive,
            seconds_since_ingest_loop=(mono - rx.last_loop_monotonic) if rx else None,
            stall_s=self.stall_s,
            writer_queue_depth=self.writer.queue_depth,
            seconds_since_writer_flush=(mono - w.last_flush_monotonic) if w.last_flush_monotonic else None,
            jobs_running=self.jobs is None or self.jobs.running,
            writer_rows_waiting=self.writer.rows_waiting,
            writer_stall_s=self.writer_stall_s,
            writer_job=w.job,
            seconds_since_job_progress=(mono - w.job_progress_monotonic) if w.job is not None else None,
            storage_reopens=w.reopens,
            steps_ingested=self.pipeline.steps_ingested,
            rows_ingested=self.pipeline.rows_ingested,
            frames_received=rx.frames_received if rx else 0,
            faults=dict(rx.faults) if rx else {},
            tap_dropped_frames=sum(d for _, d in rx.tracker.runs().values()) if rx else 0,
            tap_counters=rx.tracker.tap_counters() if rx else {},
            seconds_since_last_frame=(mono - last_frame)
            if last_frame
            else ((now - self.started_at) if rx else None),
            storage_errors=w.errors,
            last_storage_error=w.last_error,
            storage_rows_dropped=w.rows_dropped,
            job_errors=self.job_errors,
            calibration_state=self.calibrator.state if self.calibrator else "no platform",
            model_version=cal.model.version if cal else None,
            model_age_s=(now - self.calibrated_at) if self.calibrated_at else None,
            uptime_s=now - self.started_at,
        )

    def metric_sources(self) -> MetricSources:
        """What ``/metrics`` reads at scrape time: the status snapshot and the counters' owners."""
        return MetricSources(
            status=self.status,
            decision=lambda: self.gatekeeper.last,
            stats=self.stats,
            service=self.service_stats,
            drift=self.drift,
            tenants=self.tenants,
            http_refused=lambda: dict(self.http.refused) if self.http is not None else {},
            notifier=lambda: self.notifier,
            governors=self.governors,
            refits=lambda: {**self.refit.counts, **self.refit.extensions},
            window_cuts=self.window_bound.cuts,
            window_rows_affordable=lambda: self.window_bound.rows(None, loading=True)[0],
        )

    def health_tick(self) -> None:
        self.rules.tick(self.status())

    def healthy(self) -> bool:
        """For the systemd watchdog: ingest, storage and the job scheduler are making progress."""
        return self.status().healthy

    def count_job_error(self, job: str, exc: BaseException) -> None:
        self.job_errors += 1
        failures = self._job_failures[job] = self._job_failures.get(job, 0) + 1
        log.error("job %s failed (%d in a row): %s", job, failures, exc)
        if failures >= JOB_FAILING_AFTER:
            self.notifier.fire(
                catalog.job_failing(job=job, failures=failures, error=f"{type(exc).__name__}: {exc}")
            )

    def count_job_success(self, job: str) -> None:
        if self._job_failures.pop(job, 0):
            self.notifier.resolve(catalog.JOB_FAILING, {"job": job})

    def run_job_now(self, name: str) -> Any:
        """Run one scheduled job on the calling thread, reported as the scheduler reports it."""
        _, fn = self.job_table()[name]
        return reporting(name, fn, self.count_job_error, self.count_job_success)()

    def job_table(self) -> dict[str, tuple[float, Callable[[], Any]]]:
        """Every scheduled job: name -> (interval in seconds, what to run)."""
        return daemon_jobs(self.config, self.writer, self.evaluate_gate, self.run_stability, self.health_tick)

    # -- lifecycle -------------------------------------------------------------
    def start(self, *, http: bool = True, jobs: bool = True) -> None:
        os.umask(os.umask(UMASK) | UMASK)  # files it creates (database, WAL, exports): 0640 at most
        self.writer.start()
        self._resume_calibration()
        known = self.writer.submit(known_runs).result()
        cap = self.config.tenants.max_distinct
        for name in self.writer.submit(lambda con: known_tenants(con, cap)).result():
            self.tenants.label(name)
        self.tenants.folded.update(over_cap=0, not_allowed=0)
        self.receiver = FrameReceiver(
            self.config.listen,
            self.pipeline,
            known_runs=known,
            max_frame_bytes=self.config.tap.max_frame_bytes,
            clock_tolerance_s=self.config.tap.clock_tolerance_s,
        )
        self.receiver.start()
        if http:
            self._start_http()
        if jobs:
            self.jobs = start_jobs(self.job_table(), self.count_job_error, self.count_job_success)
        log.info("shadowd listening on %s, storing to %s", self.config.listen, self.config.db)

    def _resume_calibration(self) -> None:
        key = self.running_platform_key
        if key is None:
            return
        row = self.writer.submit(lambda con: latest_model_version(con, key)).result()
        if row is not None:
            cal = calibration_from_body(row[1])
            self.install_calibration(cal, save=False)
            log.info("resumed model %s", cal.model.version)

    def _start_http(self) -> None:
        rep = self.config.report
        routes = daemon_routes(
            self.status,
            lambda: self.gatekeeper.last,
            self.writer.cursor,
            ReportLimits(rep.default_window_s, rep.max_window_s),
            tenant_counters=self.stats.tenant_counters,
        )
        api = self.config.api
        self.http = ApiServer(
            self.config.http,
            routes,
            registry_for(self.metric_sources()),
            workers=api.workers,
            timeout_s=api.timeout_s,
            allowed_hosts=api.allowed_hosts,
        )
        self.http.start()

    def on_stop(self, fn: Callable[[], None]) -> None:
        self._on_stop.append(fn)

    def stop(self) -> None:
        """Drain queued frames, flush, close. Idempotent."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        for fn in reversed(self._on_stop):
            try:
                fn()
            except Exception:
                log.exception("shutdown hook failed")
        if self.jobs is not None:
            self.jobs.shutdown(wait=False)
        if self.receiver is not None:
            self.receiver.stop(drain=True)
        if self.http is not None:
            self.http.stop()
        self.writer.close()
        self.notifier.close(drain_s=2.0)
        log.info(
            "shadowd stopped: %d steps, %d request rows ingested",
            self.pipeline.steps_ingested,
            self.pipeline.rows_ingested,
        )

    def _replace_notifier(self, alerts: Any) -> None:
        """New sinks from now on (a revoked webhook or routing key stops being used); the new
        notifier takes over what is firing, the old one drains briefly off this thread."""
        try:
            new = build_notifier(alerts)
        except Exception as exc:  # validated at load; never lose alerting on a reload
            log.error("alerts config not applied, keeping the running sinks: %s", exc)
            return
        old, self.notifier = self.notifier, new
        self.rules.notifier = new
        carried = new.adopt(old)
        threading.Thread(
            target=old.close, kwargs={"drain_s": 2.0}, name="shadowd-old-notifier", daemon=True
        ).start()
        log.info(
            "alerts config reloaded: %d sinks, %d firing alerts carried over", len(new.counters()), carried
        )

    def serve(self, reload: Callable[[], Config | None] | None = None) -> int:
        """Run until SIGTERM or SIGINT; SIGHUP calls ``reload``. Returns the exit code."""
        wake, hup = threading.Event(), threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: wake.set())
        signal.signal(signal.SIGHUP, lambda *_: (hup.set(), wake.set()))
        self.start()
        watchdog = notify.Watchdog(
            self.healthy, describe=lambda: self.status().unhealthy_reason() or ""
        ).start()
        notify.ready(f"listening on {self.config.listen}")
        while True:
            wake.wait(1.0)
            if hup.is_set() and reload is not None:
                hup.clear()
                wake.clear()
                notify.reloading()
                new = reload()
                if new is not None:
                    self.apply_config(new)
                notify.ready("config reloaded" if new is not None else "config kept (reload failed)")
                continue
            if wake.is_set():
                break
        notify.stopping()
        watchdog.stop()
        self.stop()
        return 0

    def apply_config(self, new: Config) -> None:
        """Apply what can change while running (gate policy, platform, alerts routes, intervals)."""
        if (new.listen, new.db) != (self.config.listen, self.config.db):
            log.warning(
                "listen/db changes need a restart; keeping %s and %s", self.config.listen, self.config.db
            )
        self.gatekeeper.set_policy(new.gate.policy)
        self.platform_key = running_platform(new)
        cal = self.calibrator
        if cal is not None and new.calibration.tenants != cal.settings.expected_tenants:
            # The tenants the warm-up window waits for: used until the first fit, so a reload while
            # warming up takes effect at once (afterwards it matters for the next daemon start).
            cal.settings = dataclasses.replace(cal.settings, expected_tenants=new.calibration.tenants)
        if cal is not None and (new.calibration.max_window_rows or None) != cal.settings.max_window_rows:
            # The next window's bound, warm-up or re-fit (a fit already running keeps its own).
            cal.settings = dataclasses.replace(
                cal.settings, max_window_rows=new.calibration.max_window_rows or None
            )
        if new.calibration.memory_guard != self.config.calibration.memory_guard:
            self.window_bound.memory = window_memory(new)  # the next window's memory bound
        if new.alerts != self.config.alerts:
            self._replace_notifier(new.alerts)
        self.config = new
        if self.jobs is not None:
            reschedule(self.jobs, self.job_table(), self.count_job_error, self.count_job_success)
