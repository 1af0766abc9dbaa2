"""One demo run: reference engine + real scheduler + tap -> daemon, driven in chunks.

Between chunks of engine steps the run lets the daemon catch up (no frame is
dropped for want of patience), applies due injections, and evaluates the
gate on simulated time, as the daemon's scheduled job would in production.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from shadowd.daemon.config import Config, Platform
from shadowd.daemon.gate_evidence import class_accuracy
from shadowd.daemon.service import Daemon
from shadowd.demo.progress import NoProgress, Progress
from shadowd.demo.spec import DemoSpec, Injection, demo_policy
from shadowd.demo.step_slices import StepSlices
from shadowd.demo.truth_sample import TruthSample
from shadowd.govern.ledger import ATTRIBUTED
from shadowd.sim.reference_run import ReferenceRun
from shadowd.twin.request_spec import RequestSpec
from shadowd.twin.step_latency import ReferenceEngine
from shadowd.twin.workload import TenantSpec, load_stream

CATCH_UP_TIMEOUT_S = 120.0  # without a step observed: the daemon is stuck, not slow


class BacklogError(RuntimeError):
    """The offered load outgrew the engine: more prompt tokens wait than ``DemoSpec.max_waiting_tokens``."""


class DemoRun:
    def __init__(self, spec: DemoSpec, workdir: Path, *, progress: bool = False) -> None:
        self.spec = spec
        self.workdir = workdir
        self.progress = Progress(spec.steps) if progress else NoProgress()
        self.endpoint = f"ipc://{workdir}/tap.sock"
        self.db = spec.db_path or str(workdir / "demo.duckdb")
        self.injected: list[dict[str, Any]] = []
        self.decisions: list[dict[str, Any]] = []
        self.decision_steps: list[int] = []  # engine steps done at each decision
        self.governor_windows: list[dict[str, Any]] = []  # per stretch between decisions (--govern)
        self.policy_note = ""
        self.unfired: list[Injection] = []
        self.backlog = {"peak_waiting": 0, "peak_waiting_tokens": 0}  # checked per chunk of steps
        self.truth_sample = TruthSample(
            first=spec.warmup_steps + spec.settle_steps,
            planned=spec.steps,
            k=spec.truth_steps,
            seed=spec.seed,
        )

    # -- set-up ----------------------------------------------------------------
    def _reference(self) -> ReferenceRun:
        """The engine, its scheduler tapped through the same environment variables an operator sets."""
        s = self.spec
        env = {
            "SHADOWD_TAP": self.endpoint,
            "SHADOWD_ENGINE_ID": "demo-engine",
            "SHADOWD_TAP_HWM": "200000",
            "SHADOWD_TENANT_KEY": "tenant",
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            return ReferenceRun(
                s.run_spec(record_steps=True, scheduler_cls=self._governed_class() if s.govern else None)
            )
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def _governed_class(self) -> type:
        """The tapped scheduler with the governor on, reading this demo's gate state file."""
        from shadowd.govern.config import GovernConfig
        from shadowd.govern.vllm import GovernedAsyncScheduler  # imports vLLM: only with --govern

        config = GovernConfig(mode="on", state_file=str(self.workdir / "gate.json"), poll_interval_s=0.0)
        return type("DemoGovernedScheduler", (GovernedAsyncScheduler,), {"governor_config": config})

    def _hand_over(self, ref: ReferenceRun, daemon: Daemon) -> None:
        """Point the governor at this daemon's platform and at simulated time (the gate's state
        file is dated on it), as a governor in the real engine reads the real clock."""
        gov = getattr(ref.scheduler, "shadowd_governor", None)
        if gov is None:
            return
        gov.reader.platform_key = daemon.running_platform_key or ""
        gov.reader.clock = lambda: self._sim_now(ref)
        gov.ledger.clock = lambda: self._sim_now(ref)

    def _governor_window(self, ref: ReferenceRun, before: dict[str, int] | None) -> dict[str, Any] | None:
        """Steps the governor charged by each counter since ``before``, and what it follows now."""
        gov = getattr(ref.scheduler, "shadowd_governor", None)
        if gov is None:
            return None
        now = dict(gov.steps_charged)
        charged = {k: v - (before or {}).get(k, 0) for k, v in now.items()}
        following = "attributed" if gov.kind() == ATTRIBUTED else "vtc"
        return {"charged": charged, "totals": now, "following": following, "reason": gov.verdict.reason}

    def _platform(self, engine: ReferenceEngine) -> Platform:
        import vllm

        return Platform(
            gpu=engine.platform.key,
            model=engine.model.name,
            dtype="bf16",
            tp=self.spec.tp,
            vllm=vllm.__version__,
            attention_backend="reference-engine",
        )

    def _config(self, engine: ReferenceEngine, sim_s_per_step: float) -> Config:
        base = Config.default()
        policy, self.policy_note = demo_policy(self.spec, sim_s_per_step)
        return dataclasses.replace(
            base,
            listen=self.endpoint,
            db=self.db,
            http="127.0.0.1:0",
            state_file=str(self.workdir / "gate.json"),
            alerts=self.spec.alerts or {"sinks": {"log": {"type": "log"}}},
            calibration=dataclasses.replace(
                base.calibration, warmup_steps=self.spec.warmup_steps, platform=self._platform(engine)
            ),
            gate=dataclasses.replace(base.gate, policy=policy),
            drift=dataclasses.replace(base.drift, min_class_steps=150),
        )

    # -- the run -----------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        ref = self._reference()
        ref.driver.keep_step = self.truth_sample.__contains__  # not every step: memory stays flat
        # A short probe of the engine's step time sizes the demo's duration minimum.
        probe = ref.engine.expected_ms(np.ones(64, dtype=np.int64), np.full(64, 1500), np.zeros(64, bool))
        daemon = Daemon(self._config(ref.engine, probe / 1e3), run_job=lambda fn: fn())
        workload = self._workload(ref)
        # The engine starts empty; calibrate on traffic at its working point, not on the ramp-up,
        # and (design r11) on a window that holds every tenant the run starts with, as an operator
        # would list them in [calibration] tenants; tenants injected later stay newcomers.
        daemon.calibrator.settings = dataclasses.replace(
            daemon.calibrator.settings,
            settle_steps=self.spec.settle_steps,
            max_window_factor=self.spec.max_window_factor,
            expected_tenants=tuple(sorted({r.tenant for r in workload})),
        )
        daemon.start(http=False, jobs=False)
        # Ingest cut at fixed steps, not at the receiver's timed batches: the run is repeatable.
        self.slices = daemon.receiver.consume = StepSlices(daemon.pipeline)
        self._hand_over(ref, daemon)
        # The engine runs on simulated time, ahead of the wall clock: the daemon's receipt time (its
        # bound on a frame's date) reads the same clock, as the gate's "now" does (_sim_now).
        daemon.receiver.wall_clock = lambda: self._sim_now(ref)
        try:
            time.sleep(0.2)  # PUSH connects to the bound PULL
            ref.driver.submit(workload)
            self._drive(ref, daemon)
            result = self._result(ref, daemon)
        finally:
            self.slices.flush()
            daemon.stop()
        result["wall_seconds"] = time.perf_counter() - t0
        result.update(self._after_stop())
        return result

    def _workload(self, ref: ReferenceRun) -> list[RequestSpec]:
        return self.spec.requests(max_context=ref.max_model_len - 1024)

    def _drive(self, ref: ReferenceRun, daemon: Daemon) -> None:
        spec = self.spec
        pending = list(spec.injects)
        done = 0
        while done < spec.steps:
            target = min(spec.steps, done + spec.gate_every, *(i.step for i in pending if i.step > done))
            done = ref.run(target)
            self._check_backlog(ref, done)
            window = self._governor_window(
                ref, self.governor_windows[-1]["totals"] if self.governor_windows else None
            )
            if window is not None:
                window["until_step"] = done
                self.governor_windows.append(window)
            for inj in [i for i in pending if self._due(i, done)]:
                self._inject(inj, ref, daemon, done)
                pending.remove(inj)
            self._catch_up(ref, daemon)
            if daemon.calibration is not None:
                stale = (daemon.stability or {}).get("model_version") != daemon.calibration.model.version
                now = self._sim_now(ref)  # the gate's clock, and so the stability result's
                if stale or len(self.decisions) % 5 == 0:  # a new model in force: test it now
                    daemon.run_stability(now=now)
                self.decisions.append(daemon.evaluate_gate(now=now))
                self.decision_steps.append(done)
            self._show(done, daemon)
            if done < target:  # the workload ran dry
                break
        self.unfired = pending  # armed injections whose gate never said GO in time
        self.progress.finish()

    def _check_backlog(self, ref: ReferenceRun, done: int) -> None:
        """Stop with the reason, not minutes later in the out-of-memory killer's hands.  Summing
        the waiting prompts once per chunk costs a fraction of the chunk's scheduling."""
        waiting, tokens = ref.driver.backlog()
        self.backlog["peak_waiting"] = max(self.backlog["peak_waiting"], waiting)
        self.backlog["peak_waiting_tokens"] = max(self.backlog["peak_waiting_tokens"], tokens)
        if tokens > self.spec.max_waiting_tokens:
            raise BacklogError(
                f"the offered load outgrew the engine: {waiting} requests ({tokens} prompt tokens) "
                f"waiting at engine step {done} ({ref.driver.elapsed_s:.0f} simulated s), over "
                f"--max-waiting-tokens {self.spec.max_waiting_tokens}; a backlog that does not drain "
                "holds every waiting prompt in memory"
            )

    def _due(self, inj: Injection, done: int) -> bool:
        """Due at its step; an armed one only once the latest verdict is GO."""
        if inj.step > done:
            return False
        return not inj.armed or bool(self.decisions and self.decisions[-1]["verdict"] == "GO")

    def _sim_now(self, ref: ReferenceRun) -> float:
        tap = ref.scheduler.shadowd_tap
        return tap.wall_clock() / 1e9

    def _catch_up(self, ref: ReferenceRun, daemon: Daemon) -> None:
        tap = ref.scheduler.shadowd_tap
        deadline = 0.0
        # Observed, not only stored: the calibrator and the drift watch see a batch after it is
        # stored, and a gate evaluated in between would depend on thread timing (the same run
        # calibrated by one evaluation or the next).
        self.slices.cut(tap.step_seq)
        seen = -1
        while (now := daemon.pipeline.steps_observed + tap.dropped_total) < tap.step_seq:
            if now > seen:  # still moving: a loaded machine is slow, not stuck
                seen, deadline = now, time.monotonic() + CATCH_UP_TIMEOUT_S
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the daemon did not keep up with the demo engine: no step observed for "
                    f"{CATCH_UP_TIMEOUT_S:.0f} s ({now} of {tap.step_seq})"
                )
            if tap.dropped_total:  # a slice's last frame may never come: hand over what is held
                self.slices.flush()
            time.sleep(0.01)
        while daemon.calibrator is not None and daemon.calibrator.state == "calibrating":
            time.sleep(0.05)
        daemon.writer.flush()

    def _inject(self, inj: Injection, ref: ReferenceRun, daemon: Daemon, done: int) -> None:
        if inj.kind == "slowdown":
            ref.engine.slowdown = float(inj.value)
        elif inj.kind == "step-slowdown":
            ref.step_slowdown = float(inj.value)
        elif inj.kind == "platform":
            old = ref.engine
            ref.engine = ReferenceEngine(
                inj.value,
                old.model,
                old.tp,
                seed=self.spec.seed + 1,
                max_tokens=max(16384, ref.spec.max_num_batched_tokens),
                max_batch=max(1024, ref.spec.max_num_seqs),
            )
            daemon.set_running_platform(self._platform(ref.engine).as_key())
        elif inj.kind == "tenant":
            t = TenantSpec.parse(inj.value)
            ref.driver.submit(
                load_stream(
                    t, seed=self.spec.seed, limit=self.spec.steps, max_context=ref.max_model_len - 1024
                )
            )
        self.injected.append(
            {
                "kind": inj.kind,
                "value": inj.value,
                "step": done,
                "armed_at": inj.step if inj.armed else None,
                "sim_time_s": ref.driver.elapsed_s,
            }
        )

    def _show(self, done: int, daemon: Daemon) -> None:
        verdict = self.decisions[-1]["verdict"] if self.decisions else "-"
        state = daemon.calibrator.state if daemon.calibrator else "-"
        self.progress.update(done, f"calibration {state}, gate {verdict}")

    # -- results ---------------------------------------------------------------------
    def _result(self, ref: ReferenceRun, daemon: Daemon) -> dict[str, Any]:
        tap = ref.scheduler.shadowd_tap
        con = daemon.writer.cursor()
        steps, requests = con.execute(
            "SELECT count(*), (SELECT count(DISTINCT req_id) FROM step_requests) FROM steps"
        ).fetchone()
        tenants = [
            r[0] for r in con.execute("SELECT DISTINCT tenant FROM step_requests ORDER BY 1").fetchall()
        ]
        last = (
            self.decisions[-1]
            if self.decisions
            else {"verdict": "INCONCLUSIVE", "reason": "never calibrated", "checks": []}
        )
        out: dict[str, Any] = {
            "steps": int(steps),
            "requests": int(requests),
            "tenants": tenants,
            "platform": ref.engine.platform.key,
            "model": ref.engine.model.name,
            "tp": self.spec.tp,
            "seed": self.spec.seed,
            "warmup_steps": self.spec.warmup_steps,
            "settle_steps": self.spec.settle_steps,
            "horizon_steps": self.spec.horizon_steps,
            "simulated_seconds": ref.driver.elapsed_s,
            # The engine's backlog: requests and their prompt tokens waiting, at the most (per chunk
            # of 200 steps), and requests waiting at the end.
            "backlog": {**self.backlog, "waiting_at_end": len(ref.scheduler.waiting)},
            "frames_stored": int(steps),
            "frames_dropped": int(tap.dropped_total),
            "policy_note": self.policy_note
            + (
                f"; accuracy evidence required for the step classes carrying >= "
                f"{daemon.gatekeeper.min_class_share:.0%} of attributed steps: "
                f"{', '.join(daemon.gatekeeper.required_classes)}"
            ),
            "injections": self.injected,
            "injections_unfired": [
                {"kind": i.kind, "value": i.value, "armed_at": i.step} for i in self.unfired
            ],
            "loads": [f"{t}={p.kind}:{p.low:g}:{p.high:g}:{p.seconds:g}" for t, p in self.spec.loads],
            "verdict": last["verdict"],
            "reason": last.get("reason"),
            "checks": last.get("checks", []),
            "advantage": (last.get("details") or {}).get("advantage", {}),
            "gate_history": [
                {
                    "evaluated_at": d["evaluated_at"],
                    "step": step,
                    "verdict": d["verdict"],
                    "causes": {c["name"]: c["status"] for c in d.get("checks", []) if c["status"] != "pass"},
                }
                for d, step in zip(self.decisions, self.decision_steps)
            ],
            "check_reasons": _first_reasons(self.decisions),
            "db": self.spec.db_path,
        }
        gov = getattr(ref.scheduler, "shadowd_governor", None)
        if gov is not None:  # --govern: what admission followed, stretch by stretch
            out["governor"] = {
                "switches": dict(gov.switches),
                "errors": gov.errors,
                "windows": [
                    {k: w[k] for k in ("until_step", "charged", "following", "reason")}
                    for w in self.governor_windows
                ],
            }
        if daemon.calibration is not None:
            version = daemon.calibration.model.version
            out["model_version"] = version
            lineage = [*daemon.calibration.lineage, version]
            out["model_lineage"] = lineage
            out["accuracy"] = _accuracy_json(class_accuracy(con, lineage, window_s=1e12))
            truth = self._truth(ref, daemon)
            if truth is not None:
                out["attribution_truth"] = truth
            if daemon.stability:
                out["stability"] = {
                    k: v
                    for k, v in daemon.stability.items()
                    if k in ("llmvisor", "llmvisor_total", "token_baseline", "rows")
                }
        step_at = {d["evaluated_at"]: step for d, step in zip(self.decisions, self.decision_steps)}
        out["refits"] = [{**r.to_dict(), "step": step_at.get(r.at_s)} for r in daemon.refit.history]
        out["window_cuts"] = daemon.window_bound.cuts()  # windows narrower than the design asks
        out["drift_events"] = [
            {"step_seq": r[0], "detector": r[1], "step_class": r[2], "statistic": r[3], **_confirmed(r[4])}
            for r in con.execute(
                "SELECT step_seq, detector, step_class, statistic, details FROM drift_events ORDER BY step_seq"
            ).fetchall()
        ]
        residual = daemon.drift.state().get("residual") or {}
        out["alarm_confirmation"] = {  # design r8: detections confirmed, dismissed, pending
            cls: c["confirmation"] for cls, c in residual.get("classes", {}).items() if "confirmation" in c
        }
        return out

    def _truth(self, ref: ReferenceRun, daemon: Daemon) -> dict[str, Any] | None:
        try:
            from shadowd.sim.truth import tenant_truth_errors
        except ImportError:
            return None
        positions = self.truth_sample.positions(ref.driver.steps_run)
        if positions.size == 0:
            return None
        batch = ref.step_batch()  # the recorded steps only
        chosen = np.zeros(batch.num_steps, dtype=bool)
        chosen[positions] = True
        scored = batch.select_steps(chosen)
        attribution = daemon.calibration.model.attribute(scored, daemon.config.calibration.policy)
        # Every chosen step is scored, in order: the sample was drawn before the run.
        return tenant_truth_errors(
            ref.engine, scored, attribution, sample_steps=scored.num_steps, seed=self.spec.seed
        )

    def _after_stop(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.spec.html_path:
            import duckdb

            from shadowd.reports.html import write_html
            from shadowd.reports.model import collect

            con = duckdb.connect(self.db, read_only=True)
            try:
                data = collect(con, title="shadowd demo")
            finally:
                con.close()
            write_html(data, self.spec.html_path)
            out["html"] = self.spec.html_path
        return out


def _confirmed(details: str | None) -> dict[str, Any]:
    """Where a confirmed residual alarm was detected and the shift that lasted (design r8)."""
    d = json.loads(details) if details else {}
    return {k: d[k] for k in ("detected_step_seq", "lasting_shift") if k in d}


def _first_reasons(decisions: list[dict[str, Any]]) -> dict[str, str]:
    """Per check that ever failed or was inconclusive, the first reason it gave."""
    out: dict[str, str] = {}
    for d in decisions:
        for c in d.get("checks", []):
            if c["status"] != "pass":
                out.setdefault(f"{c['name']}:{c['status']}", c.get("reason") or "")
    return out


def _accuracy_json(acc: dict[str, dict]) -> dict[str, Any]:
    """Per-class figures in the report's JSON shape."""
    out = {}
    for cls in ("prefill", "decode", "mixed", "all"):
        a = acc.get(cls)
        if a is None:
            out[cls] = {"steps": 0, "llmvisor": None, "token_baseline": None}
            continue
        out[cls] = {
            "steps": a["steps"],
            "llmvisor": {"r2": a["r2"], "p50": a["p50"], "p90": a["p90"], "p99": a["p99"]},
            "token_baseline": {"p50": a["baseline_p50"], "p90": a["baseline_p90"], "p99": a["baseline_p99"]},
        }
    return out


def run_demo(spec: DemoSpec, *, progress: bool = False) -> dict[str, Any]:
    """Run the scenario; returns the JSON-able result (``shadowd demo --json``)."""
    with tempfile.TemporaryDirectory(prefix="shadowd-demo-") as tmp:
        return DemoRun(spec, Path(tmp), progress=progress).run()
