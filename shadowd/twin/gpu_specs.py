"""Public datasheet figures for the GPUs the reference engine knows.

Used by the analytic ("builtin") platform and to size the KV cache the way vLLM
does.  Sources: NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989.4 TFLOP/s dense
BF16, 3.35 TB/s HBM3, 80 GB, NVLink 900 GB/s bidirectional, 132 SMs); NVIDIA A100
datasheet (SXM4 80 GB: 312 TFLOP/s dense BF16, 2,039 GB/s HBM2e, NVLink 600 GB/s,
108 SMs); NVIDIA H200 datasheet (SXM: 989 TFLOP/s dense BF16, 4.8 TB/s HBM3e,
141 GB, NVLink 900 GB/s, 132 SMs).  Dense figures, i.e. without 2:4 sparsity.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    """Peak figures of one GPU; non-idealities are the analytic platform's business."""

    name: str
    bf16_tflops: float  # dense tensor-core peak
    hbm_tbps: float  # HBM bandwidth, TB/s
    memory_gib: float  # device memory, GiB as vLLM sees it
    sms: int  # streaming multiprocessors (wave quantisation)
    nvlink_gbps: float  # per direction, GB/s

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where the roofline turns from memory- to compute-bound."""
        return self.bf16_tflops * 1e12 / (self.hbm_tbps * 1e12)


GPU_SPECS: dict[str, GpuSpec] = {
    "h100_sxm": GpuSpec("h100_sxm", 989.4, 3.35, 79.1, 132, 450.0),
    "a100_sxm": GpuSpec("a100_sxm", 312.0, 2.039, 79.1, 108, 300.0),
    "h200_sxm": GpuSpec("h200_sxm", 989.4, 4.8, 139.8, 132, 450.0),
}

_ALIASES = {"h100": "h100_sxm", "a100": "a100_sxm", "h200": "h200_sxm"}


def gpu_spec(name: str) -> GpuSpec:
    """The spec for ``name`` (``h100_sxm``, ``h100``, ...).

    >>> gpu_spec("h100").hbm_tbps
    3.35
    """
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in GPU_SPECS:
        raise KeyError(f"unknown GPU {name!r}; known: {', '.join(sorted(GPU_SPECS))}")
    return GPU_SPECS[key]
