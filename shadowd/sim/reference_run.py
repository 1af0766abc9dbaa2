"""A reference-engine run: the real vLLM scheduler, the kernel-table engine as its GPU.

``ReferenceRun`` wires the pieces every reference experiment needs (the
demo, the accuracy study, the checks' scenarios): a ``ReferenceEngine`` for a
platform/model/TP, a (tapped) vLLM scheduler whose KV cache is sized from the
platform's memory and the model the way vLLM sizes it, and an
``EngineDriver`` on simulated time whose step durations are the engine's
``T(batch)``.  Step records are kept so a run can be analysed without the
daemon, e.g. by ``step_batch()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from shadowd.paths import models_dir
from shadowd.sim.driver import EngineDriver, ScheduledStep
from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler
from shadowd.steps.batch import StepBatch
from shadowd.twin.model_shape import ModelShape
from shadowd.twin.request_spec import RequestSpec
from shadowd.twin.step_latency import ReferenceEngine
from shadowd.twin.workload import DEFAULT_TENANTS, build_workload


def model_dir(model: str) -> Path:
    """A model name under ``../shared/models`` or a directory holding ``config.json``."""
    p = Path(model)
    if (p / "config.json").exists():
        return p
    if (models_dir() / model / "config.json").exists():
        return models_dir() / model
    raise FileNotFoundError(
        f"no config.json for model {model!r} (a directory, or one of "
        f"{sorted(d.name for d in models_dir().iterdir())})"
    )


@dataclass
class RunSpec:
    """What to run; defaults are the demo's embedded default."""

    platform: str = "builtin"
    model: str = "llama-3.1-8b"
    tp: int = 1
    tenants: Sequence[str] = DEFAULT_TENANTS
    seed: int = 0
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    max_model_len: int = 32768
    kv_fraction: float = 1.0  # share of the vLLM-sized KV capacity the scheduler gets
    async_scheduling: bool = True
    record_steps: bool = True
    scheduler_cls: type | None = None  # a scheduler class (default: the tapped AsyncScheduler)
    extra: dict = field(default_factory=dict)

    def model_len(self, shape: ModelShape) -> int:
        """vLLM refuses a ``max_model_len`` beyond the model's positions (a 4k-context model)."""
        return min(self.max_model_len, shape.max_context)


class ReferenceRun:
    """Real scheduler + reference engine + driver for one ``RunSpec``."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.engine = ReferenceEngine(
            spec.platform,
            spec.model,
            spec.tp,
            seed=spec.seed,
            max_tokens=max(16384, spec.max_num_batched_tokens),
            max_batch=max(1024, spec.max_num_seqs),
        )
        shape: ModelShape = self.engine.model
        self.max_model_len = spec.model_len(shape)
        self.kv_capacity_tokens = shape.kv_capacity_tokens(self.engine.platform.memory_gib, spec.tp)
        self.num_blocks = max(64, int(self.kv_capacity_tokens * spec.kv_fraction) // 16)
        self.scheduler = build_scheduler(
            SchedulerSpec(
                model_dir=str(model_dir(spec.model)),
                async_scheduling=spec.async_scheduling,
                max_num_seqs=spec.max_num_seqs,
                max_num_batched_tokens=spec.max_num_batched_tokens,
                max_model_len=self.max_model_len,
                num_blocks=self.num_blocks,
            ),
            spec.scheduler_cls,
        )
        self.driver = EngineDriver(
            self.scheduler, self.step_time, async_scheduling=spec.async_scheduling, vocab_size=shape.vocab
        )
        self.driver.record_steps = spec.record_steps
        self.kv_usage: list[float] = []
        # Whole-step slowdown (host time included), as a degraded node or a thermal cap would
        # show it; ``engine.slowdown`` slows only the kernels.
        self.step_slowdown = 0.0

    def step_time(self, step: ScheduledStep) -> float:
        """The engine's latency for a step the scheduler formed (ms, with jitter)."""
        if self.spec.record_steps:
            self.kv_usage.append(float(self.scheduler.kv_cache_manager.usage))
        ms = self.engine.latency_ms(step.new_tokens, step.context_tokens, step.prefill)
        return ms * (1.0 + self.step_slowdown) if self.step_slowdown else ms

    def workload(
        self,
        tenants: Iterable[str] | None = None,
        *,
        limit: int | None = None,
        duration_s: float | None = None,
    ) -> list[RequestSpec]:
        return build_workload(
            tenants or self.spec.tenants,
            seed=self.spec.seed,
            limit=limit,
            duration_s=duration_s,
            max_context=self.max_model_len - 1024,
        )

    def run(
        self,
        steps: int,
        requests: Iterable[RequestSpec] | None = None,
        on_step: Callable[[int], None] | None = None,
    ) -> int:
        return self.driver.run(requests, max_steps=steps, on_step=on_step)

    def step_batch(self) -> StepBatch:
        """The recorded steps as a ``StepBatch`` (latency = the emulated GPU time)."""
        return driver_step_batch(self.driver)


def driver_step_batch(driver: Any) -> StepBatch:
    """A driver's recorded steps as a ``StepBatch`` (latency = the engine's time for the step)."""
    steps = driver.steps
    sizes = np.array([len(s.req_ids) for s in steps])
    cat = lambda name: np.concatenate([getattr(s, name) for s in steps])  # noqa: E731
    return StepBatch(
        latency_ms=np.array([s.duration_ms for s in steps]),
        req_step=np.repeat(np.arange(len(steps)), sizes),
        new_tokens=cat("new_tokens"),
        context_tokens=cat("context_tokens"),
        prompt_tokens=cat("prompt_tokens"),
        prefill=cat("prefill"),
        tenant=np.array([t for s in steps for t in s.tenants], dtype=object),
        req_id=np.array([r for s in steps for r in s.req_ids], dtype=object),
        step_seq=np.arange(1, len(steps) + 1),
    )
