"""What Vidur's profiles add to the AIConfigurator tables: prefix cost, small ops, host, noise.

Vidur (Microsoft, MIT licence) profiled vLLM operators with min/max/mean/median/std.
The reference engine takes from it only what the AIConfigurator tables lack:

* the **ratio** a cached prefix adds to a prefill chunk's attention
  (``a100/llama-2-70b_tp2_attention.csv``, the only chunk x prefix grid; its absolute
  times are ~2.5x today's kernels, so only the ratio is used);
* the element-wise operators between GEMMs (RMSNorm x2, RoPE, SiLU-and-mul) per token
  count (``*_mlp.csv``), rescaled to the model's widths;
* host-side time inside a step, prepare-inputs + sampler medians by batch size
  (``a100/codellama-34b_tp2_cpu_overheads.csv``), and its tail (mean - median);
* run-to-run jitter: the relative std of the summed per-layer operators (``*_mlp.csv``)
  and of NCCL all-reduce (``h100/dgx_all_reduce.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .csv_columns import read_columns
from .interpolation import loglog_interp

MLP_FILES = {"h100": "h100/llama-2-7b_mlp.csv", "a100": "a100/meta-llama-3-8b_mlp.csv"}
PREFIX_FILE = "a100/llama-2-70b_tp2_attention.csv"
CPU_FILE = "a100/codellama-34b_tp2_cpu_overheads.csv"
ALLREDUCE_FILE = "h100/dgx_all_reduce.csv"
ELEMENTWISE_OPS = ("input_layernorm", "post_attention_layernorm", "attn_rope", "mlp_act")


@dataclass(frozen=True)
class NoiseScale:
    """Measured spread of a step: relative std of GPU kernels and of all-reduce; host tail (ms)."""

    gpu_rel_std: float
    comm_rel_std: float
    host_tail_ms: float  # mean - median of host time at a typical batch


class VidurProfiles:
    """Vidur-derived pieces for one GPU family (``h100`` or ``a100``; H200 uses ``h100``)."""

    def __init__(self, directory: str | Path, gpu: str):
        self.directory = Path(directory)
        family = "a100" if gpu.lower().startswith("a100") else "h100"
        self.family = family
        self.mlp_file = self.directory / MLP_FILES[family]

    # --- cached prefix ------------------------------------------------------------------
    @cached_property
    def _prefix_grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Chunk axis, prefix step, ratio grid (regular in prefix), slope per chunk row."""
        c = read_columns(self.directory / PREFIX_FILE)
        sel = (c["is_prefill"] == "True") & (c["batch_size"] == 1)
        chunk, prefix = c["prefill_chunk_size"][sel], c["kv_cache_size"][sel]
        t = c["time_stats.attn_prefill.median"][sel]
        chunks = np.unique(chunk)
        step = 32.0
        p_axis = np.arange(0.0, 4096.0 + step, step)
        grid = np.full((len(chunks), len(p_axis)), np.nan)
        slopes = np.zeros(len(chunks))
        for i, cc in enumerate(chunks):
            row = chunk == cc
            base = t[row & (prefix == 0)]
            if base.size == 0:
                continue
            ps, rs = prefix[row], t[row] / base[0]
            order = np.argsort(ps)
            ps, rs = ps[order], rs[order]
            upto = p_axis <= ps[-1]
            grid[i, upto] = np.interp(p_axis[upto], ps, rs)
            if ps[-1] >= 1024:  # slope of the upper half: the linear, work-bound regime
                half = ps >= ps[-1] / 2
                slopes[i] = max(0.0, np.polyfit(ps[half], rs[half], 1)[0])
        # rows with too short a prefix range: the cost per cached token scales as 1/chunk
        for i in range(len(chunks)):
            if slopes[i] == 0.0 and i > 0:
                slopes[i] = slopes[i - 1] * chunks[i - 1] / chunks[i]
        for i in range(len(chunks)):
            last = np.flatnonzero(~np.isnan(grid[i]))
            if last.size == 0:
                grid[i] = 1.0 + slopes[i] * p_axis
                continue
            j = last[-1]
            grid[i, j + 1 :] = grid[i, j] + slopes[i] * (p_axis[j + 1 :] - p_axis[j])
        return chunks, p_axis, grid, slopes

    @cached_property
    def _prefix_range(self) -> np.ndarray:
        """Largest measured prefix per chunk row of the grid."""
        c = read_columns(self.directory / PREFIX_FILE)
        sel = (c["is_prefill"] == "True") & (c["batch_size"] == 1)
        chunks = np.unique(c["prefill_chunk_size"][sel])
        return np.array([c["kv_cache_size"][sel][c["prefill_chunk_size"][sel] == x].max() for x in chunks])

    def prefix_ratio(self, chunk: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        """Attention time of a chunk after ``prefix`` cached tokens over the cold chunk's.

        Interpolated in log(chunk) and linearly in prefix on the measured grid; linear in
        the prefix beyond it (attention work grows linearly in the keys attended).
        """
        chunks, p_axis, grid, slopes = self._prefix_grid
        c = np.clip(np.asarray(chunk, dtype=np.float64), chunks[0], None)
        p = np.maximum(np.asarray(prefix, dtype=np.float64), 0.0)
        lc = np.log(c)
        lch = np.log(chunks)
        i = np.clip(np.searchsorted(lch, lc, side="right") - 1, 0, len(chunks) - 2)
        w = np.clip((lc - lch[i]) / (lch[i + 1] - lch[i]), 0.0, 1.0)
        # beyond the last chunk with a full prefix range, the prefix costs less per token, as 1/chunk
        good = int(np.flatnonzero(self._prefix_range >= 1024)[-1])
        big = c > chunks[good]
        step = p_axis[1] - p_axis[0]
        j = np.minimum((p / step).astype(np.int64), len(p_axis) - 2)
        f = np.clip(p / step - j, 0.0, None)

        def at(row: np.ndarray) -> np.ndarray:
            inside = grid[row, j] * (1 - np.minimum(f, 1)) + grid[row, j + 1] * np.minimum(f, 1)
            over = grid[row, -1] + slopes[row] * (p - p_axis[-1])
            return np.where(p > p_axis[-1], over, inside)

        r = at(i) * (1 - w) + at(i + 1) * w
        if np.any(big):
            r_big = 1.0 + slopes[good] * chunks[good] / c * p
            r = np.where(big, r_big, r)
        return np.maximum(r, 1.0)

    # --- element-wise operators ---------------------------------------------------------
    @cached_property
    def _mlp(self) -> dict[str, np.ndarray]:
        c = read_columns(self.mlp_file)
        sel = c["num_tensor_parallel_workers"] == 1
        tokens = c["num_tokens"][sel]
        order = np.argsort(tokens, kind="stable")
        tokens = tokens[order]
        uniq, first = np.unique(tokens, return_index=True)
        out = {"tokens": uniq}
        for op in ELEMENTWISE_OPS:
            out[op] = np.maximum(c[f"time_stats.{op}.median"][sel][order][first], 1e-4)
        out["n_embd"] = float(c["n_embd"][0])
        out["n_expanded_embd"] = float(c["n_expanded_embd"][0])
        out["rope_width"] = float((c["n_head"][0] + c["n_kv_head"][0]) * c["n_embd"][0] / c["n_head"][0])
        return out

    def elementwise_ms(self, m: np.ndarray, hidden: int, rope_width: int, ffn_width: int) -> np.ndarray:
        """RMSNorm x2 + RoPE + SiLU-and-mul of one layer for ``m`` tokens.

        Memory-bound, so an op on width w at m tokens costs what the profiled op cost
        at ``m * w / w_profiled`` tokens (the launch floor stays).
        """
        t = self._mlp
        m = np.asarray(m, dtype=np.float64)
        scale = {
            "input_layernorm": hidden / t["n_embd"],
            "post_attention_layernorm": hidden / t["n_embd"],
            "attn_rope": rope_width / t["rope_width"],
            "mlp_act": ffn_width / t["n_expanded_embd"],
        }
        total = np.zeros_like(m)
        for op in ELEMENTWISE_OPS:
            total += loglog_interp(m * scale[op], t["tokens"], t[op], slope=1.0)
        return total

    # --- host ---------------------------------------------------------------------------
    @cached_property
    def _host_fit(self) -> tuple[np.ndarray, np.ndarray]:
        c = read_columns(self.directory / CPU_FILE)
        b = c["batch_size"]
        median = c["prepare_inputs_e2e_median"] + c["sampler_e2e_median"]
        mean = c["prepare_inputs_e2e_mean"] + c["sampler_e2e_mean"]
        return np.polyfit(b, median, 1), np.polyfit(b, np.maximum(mean - median, 0.0), 1)

    def host_ms(self, batch: np.ndarray) -> np.ndarray:
        """Host time inside a step (prepare inputs + sampler), linear fit in batch size."""
        (slope, icpt), _ = self._host_fit
        return icpt + slope * np.asarray(batch, dtype=np.float64)

    def host_tail_ms(self, batch: np.ndarray) -> np.ndarray:
        """Mean minus median of host time: the scale of its right tail."""
        _, (slope, icpt) = self._host_fit
        return np.maximum(icpt + slope * np.asarray(batch, dtype=np.float64), 0.0)

    # --- noise --------------------------------------------------------------------------
    @cached_property
    def noise(self) -> NoiseScale:
        c = read_columns(self.mlp_file)
        ops = [
            k[len("time_stats.") : -len(".mean")]
            for k in c
            if k.startswith("time_stats.") and k.endswith(".mean")
        ]
        mean = sum(c[f"time_stats.{o}.mean"] for o in ops)
        std = sum(c[f"time_stats.{o}.std"] for o in ops)
        ar = read_columns(self.directory / ALLREDUCE_FILE)
        ar_rel = ar["time_stats.all_reduce.std"] / ar["time_stats.all_reduce.mean"]
        return NoiseScale(
            gpu_rel_std=float(np.nanmedian(std / mean)),
            comm_rel_std=float(np.nanmedian(ar_rel)),
            host_tail_ms=float(self.host_tail_ms(np.array([32.0]))[0]),
        )
