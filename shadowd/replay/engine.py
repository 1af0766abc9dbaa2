"""One policy's run: the real vLLM scheduler (governed or not) on the reference engine.

The scheduler's KV cache is sized from the platform's memory the way vLLM sizes it (as
:class:`shadowd.sim.reference_run.ReferenceRun` does); the governor, when on, reads a real gate
state file (:mod:`shadowd.govern.handoff`), and its ledger runs on the simulated clock.  The run
stops at the arrival horizon: what is still queued then is reported as unserved, not waited for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shadowd.govern.config import GovernConfig, TenantPolicy
from shadowd.govern.vllm import GovernedAsyncScheduler
from shadowd.replay.lifecycle import ServiceDriver
from shadowd.sim.driver import ScheduledStep
from shadowd.sim.reference_run import driver_step_batch, model_dir
from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler
from shadowd.steps.batch import StepBatch
from shadowd.twin.request_spec import RequestSpec
from shadowd.twin.step_latency import ReferenceEngine

POLICIES = ("fcfs", "vtc", "llmvisor")


@dataclass(frozen=True)
class EngineSetup:
    platform: str = "h100"
    model: str = "llama-3.1-8b"
    tp: int = 1
    seed: int = 0
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    max_model_len: int = 32768


class HorizonDriver(ServiceDriver):
    """Stops scheduling at ``stop_ns`` (the steps in flight finish)."""

    stop_ns: int | None = None

    def _step(self) -> bool:
        if self.stop_ns is not None and self.clock() >= self.stop_ns:
            while self._queue:
                self._finish_oldest()
            return False
        return super()._step()


def governor_config(
    policy: str, weights: dict[str, float], state_file: str, platform_key: str
) -> GovernConfig:
    mode = {"fcfs": "off", "vtc": "vtc", "llmvisor": "on"}[policy]
    return GovernConfig(
        mode=mode,
        state_file=state_file,
        platform_key=platform_key,
        tenants=TenantPolicy(weights=dict(weights)),
        poll_interval_s=0.0,  # simulated time runs far ahead of the wall clock
    )


def run_policy(
    setup: EngineSetup,
    engine: ReferenceEngine,
    requests: list[RequestSpec],
    config: GovernConfig,
    horizon_s: float,
    step_ms: Callable[[ScheduledStep], float] | None = None,
) -> HorizonDriver:
    """Drive ``requests`` through a fresh scheduler under ``config`` until ``horizon_s``.

    ``step_ms`` replaces the engine's step time (a calibrated model as the latency oracle); the
    engine still sizes the KV cache."""
    shape = engine.model
    num_blocks = max(64, int(shape.kv_capacity_tokens(engine.platform.memory_gib, setup.tp)) // 16)
    cls = type("ReplayScheduler", (GovernedAsyncScheduler,), {"governor_config": config})
    sched = build_scheduler(
        SchedulerSpec(
            model_dir=str(model_dir(setup.model)),
            max_num_seqs=setup.max_num_seqs,
            max_num_batched_tokens=setup.max_num_batched_tokens,
            max_model_len=setup.max_model_len,
            num_blocks=num_blocks,
        ),
        cls,
    )
    driver = HorizonDriver(
        sched,
        step_ms or (lambda st: engine.latency_ms(st.new_tokens, st.context_tokens, st.prefill)),
        vocab_size=shape.vocab,
    )
    driver.record_steps = True
    driver.stop_ns = driver.clock() + int(horizon_s * 1e9)
    gov = sched.shadowd_governor
    if gov is not None:  # caps and lifts on simulated time
        gov.ledger.clock = lambda: driver.clock() / 1e9
    driver.run(requests, max_steps=10**9)
    return driver


def step_batch(driver: ServiceDriver) -> StepBatch:
    """The run's steps as a ``StepBatch`` (latency = the engine's time for the step)."""
    return driver_step_batch(driver)


def governor_status(driver: ServiceDriver) -> dict[str, Any] | None:
    gov = getattr(driver.scheduler, "shadowd_governor", None)
    return None if gov is None else gov.status()
