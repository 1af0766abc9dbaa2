"""Measured vLLM kernel latencies (AIConfigurator layout) at arbitrary shapes.

A platform directory holds ``gemm_perf.csv``, ``context_attention_perf.csv``,
``generation_attention_perf.csv`` and ``custom_allreduce_perf.csv`` as collected by
NVIDIA AIConfigurator for vLLM 0.14.0 (bf16 rows; latency in ms, one kernel call,
CUDA graphs).  The grids are not full products and rarely contain a real model's
shape (e.g. n = 28672 for Llama-3.1-8B's gate+up), so this module interpolates in
log space between the measured points, which carry the real kernel-selection cliffs
and wave steps.  Between grid points in m it also rounds m up to the GEMM tile height
(64 rows below 1024 tokens, 128 above), as cuBLAS/CUTLASS pad the last tile, so the
staircase does not melt into a straight line.

Data: ``kernels/aiconfigurator-vllm-0.14.0/<gpu>/`` (Apache-2.0, NVIDIA
AIConfigurator); see the shared ``MANIFEST.tsv`` for commit and checksums.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import numpy as np

from .csv_columns import read_columns
from .interpolation import extend_axis, fill_by_scaling, interp_rows, loglog_interp

GEMM_FILE = "gemm_perf.csv"
CONTEXT_FILE = "context_attention_perf.csv"
GENERATION_FILE = "generation_attention_perf.csv"
ALLREDUCE_FILE = "custom_allreduce_perf.csv"
REQUIRED_FILES = (GEMM_FILE, CONTEXT_FILE, GENERATION_FILE, ALLREDUCE_FILE)

TABLE_HEAD_DIM = 128


def tile_rounded_m(m: np.ndarray) -> np.ndarray:
    """Round token counts up to the GEMM tile height (rows a kernel really computes).

    >>> tile_rounded_m(np.array([1, 100, 300, 1500])).tolist()
    [1, 100, 320, 1536]
    """
    m = np.asarray(m, dtype=np.int64)
    q = np.where(m > 1024, 128, np.where(m > 128, 64, 1))
    return -(-m // q) * q


class KernelTables:
    """Lazily loaded, cached measured kernel tables of one GPU."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        missing = [f for f in REQUIRED_FILES if not (self.directory / f).exists()]
        if missing:
            raise FileNotFoundError(f"{self.directory} lacks kernel tables: {', '.join(missing)}")

    # --- GEMM -------------------------------------------------------------------------
    @cached_property
    def _gemm(self) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
        c = read_columns(self.directory / GEMM_FILE)
        keep = np.ones(len(c["m"]), dtype=bool)
        if "gemm_dtype" in c:
            keep &= c["gemm_dtype"] == "bfloat16"
        m, n, k, lat = (c[x][keep] for x in ("m", "n", "k", "latency"))
        curves: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        order = np.lexsort((m, k, n))
        m, n, k, lat = m[order], n[order], k[order], lat[order]
        keys = np.stack([n, k], axis=1)
        starts = np.flatnonzero(np.r_[True, np.any(keys[1:] != keys[:-1], axis=1)])
        for s, e in zip(starts, np.r_[starts[1:], len(m)]):
            mm, ll = m[s:e], lat[s:e]
            _, uniq = np.unique(mm, return_index=True)  # duplicate rows: keep the first
            curves[(int(n[s]), int(k[s]))] = (mm[uniq], despike(mm[uniq], ll[uniq]))
        return curves

    @cached_property
    def _gemm_axes(self) -> tuple[np.ndarray, np.ndarray]:
        ns = np.array(sorted({n for n, _ in self._gemm}), dtype=np.float64)
        ks = np.array(sorted({k for _, k in self._gemm}), dtype=np.float64)
        return ns, ks

    def gemm_ms(self, m: np.ndarray, n: int, k: int) -> np.ndarray:
        """Latency of an (m x k) @ (k x n) bf16 GEMM for each token count in ``m``."""
        m_eff = tile_rounded_m(np.maximum(np.asarray(m), 1)).astype(np.float64)
        ns, ks = self._gemm_axes
        total_w, acc = 0.0, np.zeros_like(m_eff)
        # beyond the measured n/k range the work (and time) grows linearly
        scale = (max(n, ns[-1]) / ns[-1]) * (max(k, ks[-1]) / ks[-1])
        for nn, wn in _bracket(ns, n):
            for kk, wk in _bracket(ks, k):
                curve = self._gemm.get((int(nn), int(kk)))
                if curve is None or wn * wk == 0.0:
                    continue
                at_corner = loglog_interp(m_eff, curve[0], curve[1], slope=1.0)
                acc += wn * wk * np.log(at_corner * scale)
                total_w += wn * wk
        if total_w == 0.0:
            raise ValueError(f"no GEMM measurements near n={n}, k={k} in {self.directory}")
        return np.exp(acc / total_w)

    # --- attention ----------------------------------------------------------------------
    @cached_property
    def _context(self) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]:
        return _attention_surfaces(self.directory / CONTEXT_FILE, length_col="isl", length_offset=0)

    @cached_property
    def _generation(self) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]:
        # generation rows: `step` = KV history, the kernel attends over step + 1 tokens
        return _attention_surfaces(self.directory / GENERATION_FILE, length_col="step", length_offset=1)

    def context_attention_ms(
        self, batch: np.ndarray, isl: np.ndarray, heads: int, kv_heads: int, head_dim: int
    ) -> np.ndarray:
        """Prefill attention (no cached prefix) of ``batch`` sequences of ``isl`` tokens; a grid.

        Saturated corners the collector skipped scale with the work: linearly in the
        batch, quadratically in the sequence length.
        """
        return (
            sum(
                w * _grid_query(surf, batch, isl, batch_power=1.0, length_power=2.0, length_max=2.0**18)
                for surf, w in _surfaces_for_heads(self._context, heads, kv_heads)
            )
            * head_dim
            / TABLE_HEAD_DIM
        )

    def generation_attention_ms(
        self, batch: np.ndarray, kv_len: np.ndarray, heads: int, kv_heads: int, head_dim: int
    ) -> np.ndarray:
        """Decode attention of ``batch`` sequences each attending over ``kv_len`` tokens; a grid."""
        return (
            sum(
                w * _grid_query(surf, batch, kv_len, batch_power=1.0, length_power=1.0, length_max=2.0**20)
                for surf, w in _surfaces_for_heads(self._generation, heads, kv_heads)
            )
            * head_dim
            / TABLE_HEAD_DIM
        )

    # --- all-reduce ---------------------------------------------------------------------
    @cached_property
    def _allreduce(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        c = read_columns(self.directory / ALLREDUCE_FILE)
        keep = np.ones(len(c["latency"]), dtype=bool)
        if "backend" in c:
            graph = c["backend"] == "vllm_graph"
            keep &= graph if graph.any() else keep
        out = {}
        for g in np.unique(c["num_gpus"][keep]):
            sel = keep & (c["num_gpus"] == g)
            order = np.argsort(c["message_size"][sel])
            out[int(g)] = (c["message_size"][sel][order], c["latency"][sel][order])
        return out

    def allreduce_ms(self, elements: np.ndarray, gpus: int) -> np.ndarray:
        """vLLM custom all-reduce (CUDA-graph backend) of ``elements`` bf16 values over ``gpus``.

        ``message_size`` in the AIConfigurator table counts elements, not bytes.
        """
        if gpus <= 1:
            return np.zeros(np.shape(elements))
        table = self._allreduce
        g = gpus if gpus in table else max(table)
        size, lat = table[g]
        return loglog_interp(
            np.maximum(np.asarray(elements, dtype=np.float64), size[0]), size, lat, slope=1.0
        )


SPIKE_FACTOR = 1.5


def despike(m: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Replace isolated collection glitches in one GEMM's latency-vs-m curve.

    A cell is a glitch when more work is much *faster*: it exceeds the next larger m
    by ``SPIKE_FACTOR`` (or, for the largest m, exceeds linear growth from the
    previous cell by that factor).  It is replaced by the log-space interpolation of
    its neighbours.  Ordinary cliffs and wave steps (a few tens of percent, or a
    non-monotone dip) are kept.  In the H100 table this removes e.g. n=4096, k=8192,
    m=8192 at 2.96 ms (m=4096: 0.32 ms) and n=8192, k=16384, m=2048 at 2.36 ms
    (m=4096: 1.23 ms).

    >>> despike(np.array([1., 2., 4., 8.]), np.array([1., 5., 2., 4.])).round(3).tolist()
    [1.0, 1.414, 2.0, 4.0]
    """
    lat = lat.astype(np.float64, copy=True)
    for i in range(1, len(lat)):
        if i + 1 < len(lat):
            if lat[i] > SPIKE_FACTOR * lat[i + 1]:
                w = np.log(m[i] / m[i - 1]) / np.log(m[i + 1] / m[i - 1])
                lat[i] = np.exp(np.log(lat[i - 1]) * (1 - w) + np.log(lat[i + 1]) * w)
        elif lat[i] > SPIKE_FACTOR * lat[i - 1] * m[i] / m[i - 1]:
            lat[i] = lat[i - 1] * m[i] / m[i - 1]
    return lat


def _bracket(axis: np.ndarray, x: float) -> list[tuple[float, float]]:
    """The (grid value, weight) pairs that interpolate ``x`` in log space on ``axis``."""
    if x <= axis[0]:
        return [(axis[0], 1.0)]
    if x >= axis[-1]:
        return [(axis[-1], 1.0)]
    i = int(np.searchsorted(axis, x, side="right")) - 1
    lo, hi = axis[i], axis[i + 1]
    if x == lo:
        return [(lo, 1.0)]
    w = (np.log(x) - np.log(lo)) / (np.log(hi) - np.log(lo))
    return [(lo, 1.0 - w), (hi, w)]


def _attention_surfaces(path: Path, *, length_col: str, length_offset: int):
    """Per (heads, kv_heads): batch axis, length axis and a (NaN-holed) latency grid."""
    c = read_columns(path)
    keep = np.ones(len(c["latency"]), dtype=bool)
    for col, val in (("attn_dtype", "bfloat16"), ("kv_cache_dtype", "bfloat16")):
        if col in c:
            keep &= c[col] == val
    if "head_dim" in c:
        keep &= c["head_dim"] == TABLE_HEAD_DIM
    h, kv = c["num_heads"][keep], c["num_key_value_heads"][keep]
    b, length, lat = c["batch_size"][keep], c[length_col][keep] + length_offset, c["latency"][keep]
    out = {}
    for hh, kk in sorted(set(zip(h.astype(int), kv.astype(int)))):
        sel = (h == hh) & (kv == kk)
        bs, ls = np.unique(b[sel]), np.unique(length[sel])
        grid = np.full((len(bs), len(ls)), np.nan)
        grid[np.searchsorted(bs, b[sel]), np.searchsorted(ls, length[sel])] = lat[sel]
        out[(hh, kk)] = (bs.astype(np.float64), ls.astype(np.float64), grid)
    return out


def _surfaces_for_heads(surfaces, heads: int, kv_heads: int) -> list[tuple[tuple, float]]:
    """Measured surfaces and weights that make up (heads, kv_heads); a weight carries any scaling.

    Work grows linearly in query heads at fixed KV heads, so an unmeasured head count
    is the linear blend of its measured neighbours (or the nearest one, scaled); a
    missing KV-head count is taken from the same GQA ratio and scaled by the KV heads.
    """
    if (heads, kv_heads) in surfaces:
        return [(surfaces[(heads, kv_heads)], 1.0)]
    same_kv = sorted(h for h, k in surfaces if k == kv_heads)
    if same_kv:
        lo = max([h for h in same_kv if h <= heads], default=None)
        hi = min([h for h in same_kv if h >= heads], default=None)
        if lo is not None and hi is not None:
            w = (heads - lo) / (hi - lo)
            return [(surfaces[(lo, kv_heads)], 1.0 - w), (surfaces[(hi, kv_heads)], w)]
        near = lo if lo is not None else hi
        return [(surfaces[(near, kv_heads)], heads / near)]
    ratio = heads / kv_heads
    best = min(surfaces, key=lambda hk: (abs(hk[0] / hk[1] - ratio), abs(hk[1] - kv_heads)))
    return [(surfaces[best], kv_heads / best[1])]


def _grid_query(
    surface, batch, length, *, batch_power: float, length_power: float, length_max: float
) -> np.ndarray:
    """Evaluate a filled, extended surface at every (batch, length) pair; a 2-D array."""
    bs, ls, grid = surface
    grid = fill_by_scaling(grid, bs, axis=0, power=batch_power)  # missing large batches
    grid = fill_by_scaling(grid, ls, axis=1, power=length_power)  # missing long rows
    ls, grid = extend_axis(ls, grid, length_max, power=length_power, axis=1)
    log_rows = interp_rows(
        np.log(np.maximum(np.asarray(batch, dtype=np.float64), 1.0)),
        np.log(bs),
        np.log(grid),
        slope=batch_power,
    )
    lq = np.log(np.maximum(np.asarray(length, dtype=np.float64), ls[0]))
    lls = np.log(ls)
    out = np.empty((log_rows.shape[0], len(lq)))
    for i, row in enumerate(log_rows):
        out[i] = np.interp(lq, lls, row)
    return np.exp(out)
