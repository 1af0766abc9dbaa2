"""A platform: where kernel latencies come from (measured tables or the analytic roofline).

``load_platform`` accepts ``builtin`` (analytic H100 SXM), ``builtin:<gpu>``, a short GPU
name with measured tables (``h100_sxm``, ``a100``), or a directory in the
AIConfigurator layout.  Both kinds answer the same questions (:class:`KernelSource`),
so the engine never knows which one it has; the platform ``key`` says it.

>>> p = load_platform("builtin")
>>> p.key, p.source, p.gpu
('analytic:h100_sxm', 'analytic', 'h100_sxm')
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from shadowd.paths import data_dir

from .analytic import AnalyticKernels
from .gpu_specs import GPU_SPECS, gpu_spec
from .kernel_tables import REQUIRED_FILES, KernelTables
from .vidur_profiles import NoiseScale, VidurProfiles

DEFAULT_TABLES = "aiconfigurator-vllm-0.14.0"


class KernelSource(Protocol):
    """Latencies (ms) of the kernels one engine step is made of, on one GPU."""

    noise: NoiseScale

    def gemm_ms(self, m: np.ndarray, n: int, k: int) -> np.ndarray: ...
    def context_attention_ms(
        self, batch: np.ndarray, isl: np.ndarray, heads: int, kv_heads: int, head_dim: int
    ) -> np.ndarray: ...
    def generation_attention_ms(
        self, batch: np.ndarray, kv_len: np.ndarray, heads: int, kv_heads: int, head_dim: int
    ) -> np.ndarray: ...
    def allreduce_ms(self, elements: np.ndarray, gpus: int) -> np.ndarray: ...
    def prefix_ratio(self, chunk: np.ndarray, prefix: np.ndarray) -> np.ndarray: ...
    def elementwise_ms(self, m: np.ndarray, hidden: int, rope_width: int, ffn_width: int) -> np.ndarray: ...
    def host_ms(self, batch: np.ndarray) -> np.ndarray: ...
    def host_tail_ms(self, batch: np.ndarray) -> np.ndarray: ...


class MeasuredKernels:
    """AIConfigurator tables for GEMM/attention/all-reduce, Vidur for the rest."""

    def __init__(self, tables: KernelTables, vidur: VidurProfiles):
        self.tables, self.vidur = tables, vidur
        self.gemm_ms = tables.gemm_ms
        self.context_attention_ms = tables.context_attention_ms
        self.generation_attention_ms = tables.generation_attention_ms
        self.allreduce_ms = tables.allreduce_ms
        self.prefix_ratio = vidur.prefix_ratio
        self.elementwise_ms = vidur.elementwise_ms
        self.host_ms = vidur.host_ms
        self.host_tail_ms = vidur.host_tail_ms

    @property
    def noise(self) -> NoiseScale:
        return self.vidur.noise


@dataclass(frozen=True)
class Platform:
    """One GPU type with its kernel source; ``key`` names it stably (``source:gpu``)."""

    gpu: str
    source: str
    kernels: KernelSource = field(compare=False, repr=False)
    directory: Path | None = None

    @property
    def key(self) -> str:
        return f"{self.source}:{self.gpu}"

    @property
    def memory_gib(self) -> float:
        """Device memory (datasheet), for sizing the KV cache."""
        return gpu_spec(self.gpu).memory_gib if self.gpu in GPU_SPECS else 79.1

    def fingerprint(self) -> str:
        """Content hash of the tables (or of the analytic constants): changes when data does."""
        h = hashlib.sha256(self.key.encode())
        if self.directory is not None:
            for name in REQUIRED_FILES:
                h.update((self.directory / name).read_bytes())
        else:
            h.update(repr(gpu_spec(self.gpu)).encode())
        return h.hexdigest()[:16]


def _gpu_from_dir(directory: Path) -> str:
    name = directory.name.lower()
    for gpu in GPU_SPECS:
        if name.startswith(gpu.split("_")[0]):
            return gpu
    return name


@lru_cache(maxsize=16)
def load_platform(spec: str | Path = "builtin") -> Platform:
    """Resolve a platform spec: ``builtin[:gpu]``, a GPU name with tables, or a directory."""
    text = str(spec)
    if text == "builtin" or text.startswith("builtin:"):
        gpu = gpu_spec(text.split(":", 1)[1] if ":" in text else "h100_sxm").name
        return Platform(gpu=gpu, source="analytic", kernels=AnalyticKernels(gpu_spec(gpu)))
    directory = Path(text)
    if not directory.is_dir():
        name = gpu_spec(text).name if text.lower() in {"h100", "a100", "h200"} | set(GPU_SPECS) else text
        directory = data_dir() / "kernels" / DEFAULT_TABLES / name
    if not directory.is_dir():
        raise FileNotFoundError(
            f"platform {text!r}: no such directory, and not a GPU with tables "
            f"under {data_dir() / 'kernels' / DEFAULT_TABLES}"
        )
    gpu = _gpu_from_dir(directory)
    kernels = MeasuredKernels(KernelTables(directory), VidurProfiles(data_dir() / "kernels" / "vidur", gpu))
    return Platform(gpu=gpu, source=directory.parent.name, kernels=kernels, directory=directory.resolve())
