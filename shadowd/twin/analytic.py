"""The built-in analytic platform: a roofline from datasheet figures plus non-idealities.

Needs no file, so the demo runs anywhere; its platform key says ``analytic``.  Peak
figures (dense BF16 rate, HBM bandwidth, SM count, NVLink bandwidth per direction) are
the datasheet figures in :mod:`shadowd.twin.gpu_specs`.  What makes it behave like
hardware rather than a formula:

* **launch floor**: every kernel costs at least a few microseconds (CUDA-graph replay);
* **achievable fractions** (assumed constants, not measured here): tensor cores reach
  ``GEMM_EFF`` of peak only for deep GEMMs (``k / (k + 128)``), HBM ``HBM_EFF`` only
  for large transfers (``bytes / (bytes + HBM_HALF_BYTES)``), FlashAttention
  ``ATTN_EFF`` of peak;
* **tile padding and wave quantisation**: a GEMM runs ``ceil(m/tm) * ceil(n/128)`` tiles
  in ``ceil(tiles / SMs)`` waves, so one token past a tile or wave boundary costs a whole
  tile row or wave;
* **cached prefixes**: a chunk after p cached tokens does ``c (p + c/2)`` attention
  work instead of ``c^2 / 2``, at the better efficiency of the longer key range;
* **occupancy**: decode attention with few sequences x KV heads leaves SMs idle
  (flash-decoding splits help only up to 16 splits);
* host time and jitter at the scale Vidur measured (constants from
  :mod:`shadowd.twin.vidur_profiles`, embedded so no file is read).
"""

from __future__ import annotations

import numpy as np

from .gpu_specs import GpuSpec
from .vidur_profiles import NoiseScale

LAUNCH_MS = 0.004  # kernel floor under CUDA graphs (AIConfigurator tables: 4-12 us)
GEMM_EFF = 0.85
HBM_EFF = 0.85
HBM_HALF_BYTES = 2.0e6  # transfer size at which half the achievable bandwidth is reached
ATTN_EFF = 0.60
NVLINK_EFF = 0.70
ALLREDUCE_LATENCY_MS = 0.005
# Embedded from Vidur's codellama-34b CPU overheads (prepare inputs + sampler medians,
# linear in batch) and its operator spreads; see vidur_profiles.py for the derivation.
HOST_BASE_MS, HOST_PER_REQ_MS = 0.75, 0.0045
HOST_TAIL_BASE_MS, HOST_TAIL_PER_REQ_MS = 0.05, 0.0003
NOISE = NoiseScale(gpu_rel_std=0.015, comm_rel_std=0.01, host_tail_ms=0.06)


class AnalyticKernels:
    """Roofline kernel latencies for one :class:`GpuSpec`; same interface as the tables.

    >>> from shadowd.twin.gpu_specs import gpu_spec
    >>> k = AnalyticKernels(gpu_spec("h100_sxm"))
    >>> t = k.gemm_ms(np.array([1, 4096]), 4096, 4096)
    >>> bool(0.01 < t[0] < 0.03 and 0.13 < t[1] < 0.2)
    True
    """

    def __init__(self, spec: GpuSpec):
        self.spec = spec
        self.noise = NOISE

    # --- primitives ---------------------------------------------------------------------
    def _mem_ms(self, nbytes: np.ndarray, occupancy: np.ndarray | float = 1.0) -> np.ndarray:
        nbytes = np.asarray(nbytes, dtype=np.float64)
        bw = self.spec.hbm_tbps * 1e12 * HBM_EFF * nbytes / (nbytes + HBM_HALF_BYTES)
        return nbytes / (bw * np.minimum(1.0, occupancy) + 1e-30) * 1e3

    def _flops_ms(self, flops: np.ndarray, eff: np.ndarray | float) -> np.ndarray:
        return np.asarray(flops, dtype=np.float64) / (self.spec.bf16_tflops * 1e12 * eff) * 1e3

    # --- kernels ------------------------------------------------------------------------
    def gemm_ms(self, m: np.ndarray, n: int, k: int) -> np.ndarray:
        """Tile- and wave-quantised roofline GEMM."""
        m = np.maximum(np.asarray(m, dtype=np.float64), 1.0)
        tm = np.where(m <= 64, 64.0, 128.0)
        tn = 128.0
        tiles = np.ceil(m / tm) * np.ceil(n / tn)
        waves = np.ceil(tiles / self.spec.sms)
        flops = waves * self.spec.sms * tm * tn * k * 2.0  # idle tile slots still cost a wave
        compute = self._flops_ms(flops, GEMM_EFF * k / (k + 128.0))
        memory = self._mem_ms((m * k + k * n + m * n) * 2.0)
        return LAUNCH_MS + np.maximum(compute, memory)

    def _chunk_attention_ms(
        self, b: np.ndarray, c: np.ndarray, p: np.ndarray, heads: int, kv_heads: int, head_dim: int
    ) -> np.ndarray:
        """``b`` chunks of ``c`` query tokens over ``p`` cached + ``c`` causal keys, 128-row tiles."""
        tiles = b * np.ceil(c / 128.0) * heads
        waves = np.ceil(tiles / self.spec.sms)
        fill = tiles / (waves * self.spec.sms)
        keys = p + c
        flops = 4.0 * heads * head_dim * b * c * (p + (c + 1) / 2.0)
        compute = self._flops_ms(flops, ATTN_EFF * fill * keys / (keys + 256.0))
        memory = self._mem_ms(b * (c * 2 * heads + keys * 2 * kv_heads) * head_dim * 2.0)
        return LAUNCH_MS + np.maximum(compute, memory)

    def context_attention_ms(
        self, batch: np.ndarray, isl: np.ndarray, heads: int, kv_heads: int, head_dim: int
    ) -> np.ndarray:
        """Causal FlashAttention prefill without a cached prefix, a (batch x isl) grid."""
        b = np.asarray(batch, dtype=np.float64)[:, None]
        L = np.maximum(np.asarray(isl, dtype=np.float64), 1.0)[None, :]
        return self._chunk_attention_ms(b, L, np.zeros_like(L), heads, kv_heads, head_dim)

    def generation_attention_ms(
        self, batch: np.ndarray, kv_len: np.ndarray, heads: int, kv_heads: int, head_dim: int
    ) -> np.ndarray:
        """Decode attention reading every cached K and V once, a (batch x kv_len) grid."""
        b = np.asarray(batch, dtype=np.float64)[:, None]
        L = np.maximum(np.asarray(kv_len, dtype=np.float64), 1.0)[None, :]
        splits = np.clip(np.ceil(L / 512.0), 1.0, 16.0)
        occupancy = (b * kv_heads * splits / self.spec.sms) ** 0.7
        nbytes = b * L * kv_heads * head_dim * 2.0 * 2.0
        per_seq = 0.00005 * b  # block-table walk and softmax merge per sequence
        return LAUNCH_MS + self._mem_ms(nbytes, occupancy) + per_seq

    def allreduce_ms(self, elements: np.ndarray, gpus: int) -> np.ndarray:
        """Ring all-reduce over NVLink: latency + 2(n-1)/n of the message per link."""
        elements = np.asarray(elements, dtype=np.float64)
        if gpus <= 1:
            return np.zeros_like(elements)
        nbytes = elements * 2.0 * 2.0 * (gpus - 1) / gpus
        return ALLREDUCE_LATENCY_MS + nbytes / (self.spec.nvlink_gbps * 1e9 * NVLINK_EFF) * 1e3

    # --- what the tables leave to Vidur -------------------------------------------------
    def prefix_ratio(self, chunk: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        """This roofline's own chunk-after-prefix over cold-chunk time.

        Priced at Llama-3.1-8B's per-GPU attention shape (32 query, 8 KV heads of 128);
        the ratio depends on the shape only through the launch floor.
        """
        c = np.maximum(np.asarray(chunk, dtype=np.float64), 1.0)
        p = np.maximum(np.asarray(prefix, dtype=np.float64), 0.0)
        one = np.ones_like(c)
        warm = self._chunk_attention_ms(one, c, p, 32, 8, 128)
        cold = self._chunk_attention_ms(one, c, np.zeros_like(p), 32, 8, 128)
        return np.maximum(1.0, warm / cold)

    def elementwise_ms(self, m: np.ndarray, hidden: int, rope_width: int, ffn_width: int) -> np.ndarray:
        """RMSNorm x2, RoPE, SiLU-and-mul: memory-bound, each with a launch floor."""
        m = np.asarray(m, dtype=np.float64)
        total = np.zeros_like(m)
        for width, passes in ((hidden, 2.0), (hidden, 2.0), (rope_width, 2.0), (ffn_width, 1.5)):
            total += LAUNCH_MS + self._mem_ms(m * width * 2.0 * passes)
        return total

    def host_ms(self, batch: np.ndarray) -> np.ndarray:
        return HOST_BASE_MS + HOST_PER_REQ_MS * np.asarray(batch, dtype=np.float64)

    def host_tail_ms(self, batch: np.ndarray) -> np.ndarray:
        return HOST_TAIL_BASE_MS + HOST_TAIL_PER_REQ_MS * np.asarray(batch, dtype=np.float64)
