"""The reference engine ("twin"): step latencies real GPUs would produce, with ground truth.

No GPU is needed: measured kernel tables (or a datasheet roofline) price every kernel
of a vLLM step, so the real scheduler can be driven with realistic step durations and
per-request ground truth (marginal costs, Shapley values) is defined.  See
``docs/reference-engine.md`` for how its figures compare with measured anchors.
"""

from __future__ import annotations

from .ground_truth import marginal_costs, shapley_estimates, shapley_exact, shapley_values
from .model_shape import GpuShape, ModelShape
from .platform import KernelSource, Platform, load_platform
from .request_spec import BLOCK_TOKENS, RequestSpec
from .step_command import twin_step
from .step_latency import ReferenceEngine
from .step_samples import sample_steps, token_count_fit
from .workload import DEFAULT_TENANTS, TenantSpec, build_workload, load_stream, merge_streams

__all__ = [
    "BLOCK_TOKENS",
    "DEFAULT_TENANTS",
    "GpuShape",
    "KernelSource",
    "ModelShape",
    "Platform",
    "ReferenceEngine",
    "RequestSpec",
    "TenantSpec",
    "build_workload",
    "load_platform",
    "load_stream",
    "marginal_costs",
    "merge_streams",
    "sample_steps",
    "shapley_estimates",
    "shapley_exact",
    "shapley_values",
    "token_count_fit",
    "twin_step",
]
