"""The reference engine: step latency ``T(batch)`` of one vLLM engine step on a platform.

A step is one forward pass over the scheduled requests.  Its time is assembled from
the kernels the step really launches, each priced at its real per-GPU shape:

* per layer, the QKV, O, gate+up and down GEMMs at m = the step's token count, padded
  to vLLM's CUDA-graph size (:mod:`~shadowd.twin.cuda_graphs`), plus the element-wise
  operators between them and, for TP > 1, two all-reduces of ``m x hidden``;
* the LM head at m = the number of scheduled requests (vLLM 0.33 computes one logit
  row per request, ``logits_indices = query_start_loc[1:] - 1``, and drops the sampled
  token of a partial prefill afterwards);
* decode attention from the measured (batch, KV) surface: each sequence costs
  ``A(b, L_i) / b`` (exact for uniform batches), never less than one sequence of the
  longest KV alone (its CTAs finish last); a FULL-graph decode step also pays for its
  padding slots;
* prefill attention at the batch's root-mean-square chunk length (causal work grows
  with the square), times the work-weighted ratio a cached prefix adds (Vidur grid);
* host time inside the step (prepare inputs, sampler) by batch size;
* jitter, if asked: log-normal on GPU and on communication time at the measured
  relative spread, plus an exponential host tail; seeded, so runs repeat.

Nothing here is linear in the token counts: GEMMs are flat then stepped, attention is
quadratic in a chunk and saturating in the batch, padding jumps.  ``slowdown`` makes
every kernel slower by ``1 + slowdown`` (drift injection); host time is unchanged.

>>> e = ReferenceEngine("builtin", "llama-3.1-8b", seed=1)
>>> one = e.latency_ms([1], [1024], [False], jitter=False)
>>> many = e.latency_ms([1] * 128, [4096] * 128, [False] * 128, jitter=False)
>>> bool(5 < one < 12 and many > 1.5 * one)
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .cuda_graphs import MAX_CAPTURE_SIZE, padding_table
from .model_shape import ModelShape
from .platform import Platform, load_platform

ArrayLike = Sequence[int] | Sequence[bool] | np.ndarray

_KV_NODES = np.arange(1.0, 21.0)  # log2 KV length: 2 .. 1M tokens
_ISL_NODES = np.arange(0.0, 19.0)  # log2 chunk length: 1 .. 256k tokens
_RATIO_C_STEPS = 4  # prefix-ratio grid: quarter octaves in chunk length
_RATIO_P_STEP = 128.0  # ... and 128-token steps in prefix length
_RATIO_P_MAX = 131072.0


def _interp_unit(row: list[float], x: float) -> float:
    """``np.interp`` at ``x`` on nodes 0, 1, 2, ... (``_ISL_NODES``), clamped, in plain floats."""
    if x <= 0.0:
        return row[0]
    j = int(x)
    if j >= len(row) - 1:
        return row[-1]
    w = x - j
    return row[j] * (1.0 - w) + row[j + 1] * w


class ReferenceEngine:
    """``T(batch)`` for one platform, model and TP degree; tables precomputed at construction."""

    def __init__(
        self,
        platform: Platform | str = "builtin",
        model: ModelShape | str = "llama-3.1-8b",
        tp: int = 1,
        *,
        seed: int = 0,
        jitter: bool = True,
        slowdown: float = 0.0,
        max_tokens: int = 16384,
        max_batch: int = 1024,
    ):
        self.platform = platform if isinstance(platform, Platform) else load_platform(platform)
        self.model = model if isinstance(model, ModelShape) else ModelShape.resolve(model)
        self.tp = int(tp)
        self.shape = self.model.per_gpu(self.tp)
        self.jitter = jitter
        self.slowdown = float(slowdown)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._noise = self.platform.kernels.noise
        self._build_token_tables(max_tokens)
        self._build_request_tables(max_batch)
        self._build_attention(max_batch)
        self._build_prefix_ratio()

    # --- construction -------------------------------------------------------------------
    def _build_token_tables(self, max_tokens: int) -> None:
        k, g = self.platform.kernels, self.shape
        m = np.arange(max_tokens + 1, dtype=np.float64)
        m[0] = 1.0
        gemm = (
            k.gemm_ms(m, g.qkv_out, g.hidden)
            + k.gemm_ms(m, g.hidden, g.o_in)
            + k.gemm_ms(m, g.gate_up_out, g.hidden)
            + k.gemm_ms(m, g.hidden, g.down_in)
        )
        elementwise = k.elementwise_ms(m, g.hidden, (g.heads + g.kv_heads) * g.head_dim, g.down_in)
        allreduce = 2.0 * k.allreduce_ms(m * g.hidden, self.tp) if self.tp > 1 else np.zeros_like(m)
        parts = {"gemm": gemm, "elementwise": elementwise, "allreduce": allreduce}
        for v in parts.values():
            v *= g.layers
            v[0] = 0.0
        self._token_parts = parts
        self._compute_lut = gemm + elementwise
        self._comm_lut = allreduce
        self._pad = padding_table(max_tokens)
        self._max_tokens = max_tokens

    def _build_request_tables(self, max_batch: int) -> None:
        k, g = self.platform.kernels, self.shape
        n = np.arange(max_batch + 1, dtype=np.float64)
        lm = k.gemm_ms(np.maximum(n, 1.0), g.vocab_out, g.hidden)
        if self.tp > 1:  # logits gathered to the driver rank
            lm = lm + k.allreduce_ms(np.maximum(n, 1.0) * g.vocab_out, self.tp)
        lm[0] = 0.0
        self._lm_lut = lm
        self._host_lut = np.where(n > 0, k.host_ms(np.maximum(n, 1.0)), 0.0)
        self._host_tail_lut = np.where(n > 0, k.host_tail_ms(np.maximum(n, 1.0)), 0.0)
        self._max_batch = max_batch

    def _build_attention(self, max_batch: int) -> None:
        k, g = self.platform.kernels, self.shape
        b = np.arange(max_batch + 1, dtype=np.float64)
        b[0] = 1.0
        dec = k.generation_attention_ms(b, 2.0**_KV_NODES, g.heads, g.kv_heads, g.head_dim)
        pre = k.context_attention_ms(b, 2.0**_ISL_NODES, g.heads, g.kv_heads, g.head_dim)
        self._dec_log = np.log(dec)
        self._pre_log = np.log(pre)
        self._pre_rows = self._pre_log.tolist()
        self._max_attn_batch = max_batch

    def _build_prefix_ratio(self) -> None:
        c = 2.0 ** (np.arange(0, 15 * _RATIO_C_STEPS + 1) / _RATIO_C_STEPS)
        p = np.arange(0.0, _RATIO_P_MAX + _RATIO_P_STEP, _RATIO_P_STEP)
        cc, pp = np.meshgrid(c, p, indexing="ij")
        self._ratio = self.platform.kernels.prefix_ratio(cc.ravel(), pp.ravel()).reshape(cc.shape)
        self._ratio_rows = self._ratio.tolist()

    def _ensure(self, tokens: int, batch: int) -> None:
        if tokens > self._max_tokens:
            self._build_token_tables(max(tokens, 2 * self._max_tokens))
        if batch > self._max_batch:
            self._build_request_tables(max(batch, 2 * self._max_batch))
        if batch > self._max_attn_batch:
            self._build_attention(max(batch, 2 * self._max_attn_batch))

    def reseed(self, seed: int) -> None:
        """Restart the jitter stream: the same seed gives the same sequence of latencies."""
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    # --- pieces -------------------------------------------------------------------------
    def _prefix_ratio(self, c: np.ndarray, p: np.ndarray) -> np.ndarray:
        x = np.clip(np.log2(np.maximum(c, 1)) * _RATIO_C_STEPS, 0, self._ratio.shape[0] - 1.000001)
        y = np.clip(p / _RATIO_P_STEP, 0, self._ratio.shape[1] - 1.000001)
        i, j = x.astype(np.int64), y.astype(np.int64)
        wx, wy = x - i, y - j
        r = self._ratio
        return (r[i, j] * (1 - wy) + r[i, j + 1] * wy) * (1 - wx) + (
            r[i + 1, j] * (1 - wy) + r[i + 1, j + 1] * wy
        ) * wx

    def _decode_attention(self, kv: np.ndarray, uniform: bool) -> float:
        nd = kv.shape[0]
        b_run = int(self._pad[nd]) if uniform and nd <= MAX_CAPTURE_SIZE else nd
        row = self._dec_log[b_run]
        total = float(np.exp(np.interp(np.log2(kv), _KV_NODES, row)).sum())
        if b_run > nd:  # padding slots of a FULL graph
            total += (b_run - nd) * math.exp(row[0])
        alone = math.exp(np.interp(math.log2(int(kv.max())), _KV_NODES, self._dec_log[1]))
        return max(total / b_run, alone)

    def _prefill_attention(self, c: np.ndarray, p: np.ndarray) -> float:
        B = c.shape[0]
        l_eff = math.sqrt(float(np.dot(c, c)) / B)
        cold = math.exp(np.interp(math.log2(max(l_eff, 1.0)), _ISL_NODES, self._pre_log[B]))
        if not p.any():
            return cold
        w = np.exp(np.interp(np.log2(c), _ISL_NODES, self._pre_log[1]))
        return cold * float(np.dot(w, self._prefix_ratio(c, p))) / float(w.sum())

    def _prefill_attention_few(self, c: list[int], p: list[int]) -> float:
        """:meth:`_prefill_attention` in plain floats: a step holds only a few prefills."""
        B = len(c)
        l_eff = math.sqrt(sum(x * x for x in c) / B)
        cold = math.exp(_interp_unit(self._pre_rows[B], math.log2(max(l_eff, 1.0))))
        if not any(p):
            return cold
        row1, ratio = self._pre_rows[1], self._ratio_rows
        top_i, top_j = len(ratio) - 1.000001, len(ratio[0]) - 1.000001
        num = den = 0.0
        for cc, pp in zip(c, p):
            w = math.exp(_interp_unit(row1, math.log2(cc)))
            r = 1.0
            if pp > 0:
                x = min(max(math.log2(cc) * _RATIO_C_STEPS, 0.0), top_i)
                y = min(pp / _RATIO_P_STEP, top_j)
                i, j = int(x), int(y)
                wx, wy = x - i, y - j
                lo, hi = ratio[i], ratio[i + 1]
                r = (lo[j] * (1 - wy) + lo[j + 1] * wy) * (1 - wx) + (hi[j] * (1 - wy) + hi[j + 1] * wy) * wx
            num += w * r
            den += w
        return cold * num / den

    def _parts(self, new: np.ndarray, ctx: np.ndarray, pre: np.ndarray) -> tuple[float, ...]:
        """(linear compute, all-reduce, LM head, decode attention, prefill attention, host) in ms."""
        n = new.shape[0]
        m = int(new.sum())
        self._ensure(m, n)
        any_pre = bool(pre.any())
        m_run = self._pad[m]
        attn_d = attn_p = 0.0
        if any_pre:
            dec = ~pre
            if dec.any():
                attn_d = self._decode_attention(ctx[dec] + new[dec], uniform=False)
            idx = np.flatnonzero(pre)
            if idx.shape[0] <= 16:
                attn_p = self._prefill_attention_few(new[idx].tolist(), ctx[idx].tolist())
            else:
                attn_p = self._prefill_attention(new[idx].astype(np.float64), ctx[idx].astype(np.float64))
        else:
            attn_d = self._decode_attention(ctx + new, uniform=True)
        layers = self.shape.layers
        return (
            self._compute_lut[m_run],
            self._comm_lut[m_run],
            self._lm_lut[n],
            layers * attn_d,
            layers * attn_p,
            self._host_lut[n],
        )

    # --- public -------------------------------------------------------------------------
    def latency_ms(
        self,
        new_tokens: ArrayLike,
        context_tokens: ArrayLike,
        prefill: ArrayLike,
        *,
        jitter: bool | None = None,
    ) -> float:
        """Step latency in ms; ``jitter=False`` gives the noiseless ground-truth value.

        ``new_tokens[i]``: tokens request i processes this step; ``context_tokens[i]``:
        tokens already in its KV cache before the step; ``prefill[i]``: prefill-like work.
        """
        new = np.asarray(new_tokens, dtype=np.int64)
        if new.shape[0] == 0:
            return 0.0
        ctx = np.asarray(context_tokens, dtype=np.int64)
        pre = np.asarray(prefill, dtype=bool)
        lin, comm, lm, attn_d, attn_p, host = self._parts(new, ctx, pre)
        scale = 1.0 + self.slowdown
        gpu = (lin + lm + attn_d + attn_p) * scale
        comm = comm * scale
        if not (self.jitter if jitter is None else jitter):
            return float(gpu + comm + host)
        z = self._rng.standard_normal(2)
        sg, sc = self._noise.gpu_rel_std, self._noise.comm_rel_std
        tail = self._host_tail_lut[new.shape[0]]
        return float(
            gpu * math.exp(sg * z[0] - 0.5 * sg * sg)
            + comm * math.exp(sc * z[1] - 0.5 * sc * sc)
            + host
            + (self._rng.exponential(tail) if tail > 0 else 0.0)
        )

    def expected_ms(self, new_tokens: ArrayLike, context_tokens: ArrayLike, prefill: ArrayLike) -> float:
        """The noiseless step latency (ground truth); never draws from the jitter stream."""
        return self.latency_ms(new_tokens, context_tokens, prefill, jitter=False)

    def breakdown(
        self, new_tokens: ArrayLike, context_tokens: ArrayLike, prefill: ArrayLike
    ) -> dict[str, float]:
        """Noiseless latency by component (ms), with ``total_ms`` and the padded token count."""
        new = np.asarray(new_tokens, dtype=np.int64)
        if new.shape[0] == 0:
            return {"total_ms": 0.0}
        ctx = np.asarray(context_tokens, dtype=np.int64)
        pre = np.asarray(prefill, dtype=bool)
        lin, comm, lm, attn_d, attn_p, host = self._parts(new, ctx, pre)
        m_run = int(self._pad[int(new.sum())])
        s = 1.0 + self.slowdown
        out = {
            "gemm_ms": float(self._token_parts["gemm"][m_run] * s),
            "elementwise_ms": float(self._token_parts["elementwise"][m_run] * s),
            "allreduce_ms": float(comm * s),
            "lm_head_ms": float(lm * s),
            "attention_decode_ms": float(attn_d * s),
            "attention_prefill_ms": float(attn_p * s),
            "host_ms": float(host),
        }
        out["total_ms"] = float(sum(out.values()))
        out["tokens"] = int(new.sum())
        out["padded_tokens"] = m_run
        return out

    def subset_latency_ms(
        self, new_tokens: ArrayLike, context_tokens: ArrayLike, prefill: ArrayLike, masks: np.ndarray
    ) -> np.ndarray:
        """Noiseless ``T`` of many sub-batches at once: ``masks[s, i]`` puts request i in subset s.

        The same formulas as :meth:`latency_ms`, vectorised over subsets, for marginal
        costs and Shapley values.  An empty subset costs 0.
        """
        new = np.asarray(new_tokens, dtype=np.int64)
        ctx = np.asarray(context_tokens, dtype=np.int64)
        pre = np.asarray(prefill, dtype=bool)
        masks = np.asarray(masks, dtype=bool)
        mf = masks.astype(np.float64)
        n_s = masks.sum(axis=1)
        m_s = masks.astype(np.int64) @ new
        self._ensure(int(m_s.max(initial=0)), int(n_s.max(initial=0)))
        m_run = self._pad[m_s]
        dec = ~pre
        nd_s = masks[:, dec].sum(axis=1)
        npre_s = n_s - nd_s
        attn_d = np.zeros(masks.shape[0])
        if dec.any():
            kv = (ctx[dec] + new[dec]).astype(np.float64)
            lk = np.log2(kv)
            j = np.clip(np.searchsorted(_KV_NODES, lk, side="right") - 1, 0, len(_KV_NODES) - 2)
            w = np.clip(lk - _KV_NODES[j], 0.0, 1.0)
            uniform = npre_s == 0
            small = nd_s <= MAX_CAPTURE_SIZE
            b_run = np.where(uniform & small, self._pad[np.minimum(nd_s, self._max_tokens)], nd_s)
            # each sequence's A(b, L_i) for every batch size that occurs, then gather
            b_used, b_inv = np.unique(b_run, return_inverse=True)
            rows = self._dec_log[b_used]
            per_seq = np.exp(rows[:, j] * (1.0 - w) + rows[:, j + 1] * w)
            total = np.einsum("sd,sd->s", per_seq[b_inv], mf[:, dec]) + (b_run - nd_s) * np.exp(
                rows[b_inv, 0]
            )
            kv_max = np.where(masks[:, dec], kv, 1.0).max(axis=1)
            alone = np.exp(np.interp(np.log2(kv_max), _KV_NODES, self._dec_log[1]))
            attn_d = np.where(nd_s > 0, np.maximum(total / np.maximum(b_run, 1), alone), 0.0)
        attn_p = np.zeros(masks.shape[0])
        if pre.any():
            c = new[pre].astype(np.float64)
            p = ctx[pre].astype(np.float64)
            mp = mf[:, pre]
            B = np.maximum(npre_s, 1)
            l_eff = np.sqrt((mp @ (c * c)) / B)
            le = np.log2(np.maximum(l_eff, 1.0))
            jj = np.clip(np.searchsorted(_ISL_NODES, le, side="right") - 1, 0, len(_ISL_NODES) - 2)
            ww = np.clip(le - _ISL_NODES[jj], 0.0, 1.0)
            cold = np.exp(self._pre_log[B, jj] * (1 - ww) + self._pre_log[B, jj + 1] * ww)
            wt = np.exp(np.interp(np.log2(c), _ISL_NODES, self._pre_log[1]))
            ratio = np.where(p > 0, self._prefix_ratio(c, p), 1.0)
            num, den = mp @ (wt * ratio), mp @ wt
            attn_p = np.where(npre_s > 0, cold * num / np.maximum(den, 1e-30), 0.0)
        layers = self.shape.layers
        s = 1.0 + self.slowdown
        gpu = (
            self._compute_lut[m_run] + self._comm_lut[m_run] + self._lm_lut[n_s] + layers * (attn_d + attn_p)
        ) * s
        return np.where(n_s > 0, gpu + self._host_lut[n_s], 0.0)
