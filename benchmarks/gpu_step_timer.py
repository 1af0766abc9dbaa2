"""Time engine steps the real vLLM scheduler formed on a real GPU: the device half of ``gpu_steps``.

The reference engine composes step latencies from measured kernel tables; this script asks the
question those tables cannot answer, on a GPU: how long does a *whole* step take, for the batch
compositions the scheduler really forms, when one model's layers run back to back?  It builds a
decoder of the model's shape from its ``config.json`` with random bf16 weights (no checkpoint, no
tokenizer, nothing downloaded), and for each exported step runs one forward pass over the step's
request rows the way a vLLM worker does: the projections and MLP on all of the step's tokens at
once, variable-length FlashAttention (``aten._flash_attention_forward``, the op that
``torch.nn.attention.varlen`` wraps) over each row's KV history plus its new tokens
(bottom-right aligned, grouped-query), new K/V written into a KV buffer, and
the LM head only on rows that sample a token.  Each step is captured as a CUDA graph (vLLM replays
graphs too, so host launch overhead is not what is timed) and replayed; CUDA events time the
replays.  If capture fails the step is timed eagerly and the row says so.

It imports only torch (which the device image has), writes one CSV row per step as it
goes and stops at ``--budget-s``, so a cut-off run still leaves both regimes (steps are timed in a
shuffled order).  ``--device cpu --tiny`` runs the same code path on a small model without a GPU,
to check the indexing before device time is spent.

    python3 benchmarks/gpu_step_timer.py --steps docs/gpu-steps.json.gz --out $OUT/gpu-steps.csv
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

# v1: every row through the causal varlen call, no padding.  v2: decode rows first through
# FlashAttention's one-query path, tokens padded to vLLM's CUDA-graph sizes, as vLLM runs them.
ENGINES = ("v2", "v1")
ENGINE = ENGINES[0]
REPS = 3  # timed replays per step, after one warm replay
KV_BUFFER_TOKENS = 2_000_000  # per K and V; larger than any step's KV history in the export


@dataclass(frozen=True)
class Shape:
    hidden: int
    inter: int
    heads: int
    kv_heads: int
    layers: int
    vocab: int
    theta: float

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @classmethod
    def from_config(cls, cfg: dict, tiny: bool = False) -> Shape:
        s = cls(
            cfg["hidden_size"],
            cfg["intermediate_size"],
            cfg["num_attention_heads"],
            cfg["num_key_value_heads"],
            cfg["num_hidden_layers"],
            cfg["vocab_size"],
            float(cfg.get("rope_theta", 10000.0)),
        )
        if tiny:  # the same structure, small enough for a CPU check
            return cls(256, 512, 8, 2, 2, 1000, s.theta)
        return s


class Decoder:
    """Random-weight decoder layers of one shape, and a KV buffer they read and write."""

    def __init__(self, shape: Shape, device: str, kv_tokens: int) -> None:
        self.s = shape
        self.device = device
        dt = torch.bfloat16
        d, hd = shape.hidden, shape.head_dim
        qkv = (shape.heads + 2 * shape.kv_heads) * hd

        def w(o: int, i: int) -> torch.Tensor:
            return torch.empty(o, i, device=device, dtype=dt).normal_(0, 0.02)

        self.layers = [
            dict(
                n1=torch.ones(d, device=device, dtype=dt),
                qkv=w(qkv, d),
                o=w(d, shape.heads * hd),
                n2=torch.ones(d, device=device, dtype=dt),
                gu=w(2 * shape.inter, d),
                down=w(d, shape.inter),
            )
            for _ in range(shape.layers)
        ]
        self.norm = torch.ones(d, device=device, dtype=dt)
        self.lm_head = w(shape.vocab, d)
        self.kv_tokens = kv_tokens
        self.k = torch.empty(kv_tokens, shape.kv_heads, hd, device=device, dtype=dt).normal_(0, 1)
        self.v = torch.empty(kv_tokens, shape.kv_heads, hd, device=device, dtype=dt).normal_(0, 1)
        self.x_pool = torch.empty(16384, shape.hidden, device=device, dtype=dt).normal_(0, 1)
        self.inv_freq = 1.0 / (
            shape.theta ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd)
        )


def attention(q, k, v, cu_q, cu_k, max_q, max_k, device, causal=True):
    """Variable-length attention, bottom-right aligned (a row's new tokens see its history).

    One-query rows need no mask; ``causal=False`` lets FlashAttention take its decode path there
    (query heads of a KV head packed together, the KV split across blocks), as vLLM's backend does.
    """
    if device == "cuda":
        return _aten_flash(q, k, v, cu_q, cu_k, max_q, max_k, causal)
    return reference_attention(q, k, v, cu_q, cu_k)


def reference_attention(q, k, v, cu_q, cu_k):
    """SDPA per row with an explicit bottom-right causal mask and KV heads repeated (the check)."""
    out = torch.empty_like(q)
    rep = q.shape[1] // k.shape[1]
    for i in range(cu_q.numel() - 1):
        qs, qe, ks, ke = int(cu_q[i]), int(cu_q[i + 1]), int(cu_k[i]), int(cu_k[i + 1])
        qi = q[qs:qe].transpose(0, 1).float()
        ki = k[ks:ke].repeat_interleave(rep, 1).transpose(0, 1).float()
        vi = v[ks:ke].repeat_interleave(rep, 1).transpose(0, 1).float()
        nq, nk = qe - qs, ke - ks
        pos = torch.arange(nk, device=q.device)[None, :]
        mask = pos <= (torch.arange(nq, device=q.device)[:, None] + nk - nq)
        out[qs:qe] = F.scaled_dot_product_attention(qi, ki, vi, attn_mask=mask).transpose(0, 1).to(q.dtype)
    return out


def _aten_flash(q, k, v, cu_q, cu_k, max_q, max_k, causal=True):
    """PyTorch's varlen FlashAttention op (what ``torch.nn.attention.varlen`` wraps)."""
    return torch.ops.aten._flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, causal, False)[0]


DECODE_CAUSAL = [False]


def check_flash() -> dict:
    """Both attention calls against the masked SDPA reference, and the decode path's speed.

    A mixed step (causal chunks beside one-query rows) and a decode step (no causal flag) must match
    the reference; one 32k-token one-query row is timed with and without the causal flag, to show
    whether the decode path (KV split across blocks) is taken.
    """
    g = torch.Generator(device="cuda").manual_seed(1)
    cu = lambda xs: torch.tensor([0, *torch.tensor(xs).cumsum(0).tolist()], device="cuda", dtype=torch.int32)  # noqa: E731
    out = {}
    for name, new, ctx, causal in (
        ("mixed", [5, 1, 1, 3], [0, 40, 7, 20], True),
        ("decode", [1, 1, 1], [40, 7, 300], False),
    ):
        klen = [c + n for c, n in zip(ctx, new)]
        q = torch.randn(sum(new), 32, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(sum(klen), 8, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(sum(klen), 8, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        ref = reference_attention(q, k, v, cu(new), cu(klen))
        got = _aten_flash(q, k, v, cu(new), cu(klen), max(new), max(klen), causal)
        out[f"attention_max_abs_err_{name}"] = (got.float() - ref.float()).abs().max().item()
    n = 32768
    q = torch.randn(1, 32, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(n, 8, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    for causal in (True, False):
        args = (q, k, k, cu([1]), cu([n]), 1, n, causal)
        for _ in range(3):
            _aten_flash(*args)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(20):
            _aten_flash(*args)
        b.record()
        b.synchronize()
        out[f"decode_32k_row_us_causal_{causal}"] = round(1e3 * a.elapsed_time(b) / 20, 1)
    if out["attention_max_abs_err_mixed"] > 0.05:
        raise RuntimeError(f"FlashAttention does not match the reference: {out}")
    if out["attention_max_abs_err_decode"] > 0.05:  # keep timing, with the causal call for decode rows
        DECODE_CAUSAL[0] = True
    out["decode_causal"] = DECODE_CAUSAL[0]
    return out


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class StepInputs:
    """Static device tensors for one step (what a CUDA graph of the step reads).

    Rows are put decode-first, as vLLM's attention backends order a batch, so the one-token rows go
    through FlashAttention's decode path in one call and the prompt chunks through the causal path
    in another.  ``padded`` rows (vLLM pads a step's tokens to its CUDA-graph size) run through the
    projections and MLP but not attention.
    """

    def __init__(
        self,
        m: Decoder,
        new: list[int],
        ctx: list[int],
        sample: list[bool],
        padded: int = 0,
        engine: str = ENGINE,
    ) -> None:
        dev, s = m.device, m.s
        v2 = engine == "v2"
        order = sorted(range(len(new)), key=lambda i: v2 and new[i] != 1)  # decode rows first, stable
        new, ctx, sample = [new[i] for i in order], [ctx[i] for i in order], [sample[i] for i in order]
        self.t = t = sum(new)
        self.nd = nd = sum(1 for n in new if n == 1) if v2 else 0  # v1: every row in the causal call
        klen = [c + n for c, n in zip(ctx, new)]
        self.total_k = sum(klen)
        if self.total_k > m.kv_tokens:
            raise ValueError(f"step needs {self.total_k} KV tokens > buffer {m.kv_tokens}")
        cu_q, cu_k, write, pos = [0], [0], [], []
        for n, c, kl in zip(new, ctx, klen):
            write.extend(range(cu_k[-1] + c, cu_k[-1] + kl))  # new rows' K/V land after their history
            pos.extend(range(c, c + n))
            cu_q.append(cu_q[-1] + n)
            cu_k.append(cu_k[-1] + kl)
        i32 = dict(device=dev, dtype=torch.int32)
        kd = cu_k[nd]
        self.decode = (
            torch.tensor(cu_q[: nd + 1], **i32),
            torch.tensor(cu_k[: nd + 1], **i32),
            1,
            max(klen[:nd], default=0),
        )
        self.chunks = (
            torch.tensor([q - nd for q in cu_q[nd:]], **i32),
            torch.tensor([k - kd for k in cu_k[nd:]], **i32),
            max(new[nd:], default=0),
            max(klen[nd:], default=0),
        )
        self.kd = kd
        self.write = torch.tensor(write, device=dev, dtype=torch.long)
        freqs = torch.tensor(pos, device=dev, dtype=torch.float32)[:, None] * m.inv_freq[None, :]
        self.cos = freqs.cos().to(torch.bfloat16)[:, None, :]
        self.sin = freqs.sin().to(torch.bfloat16)[:, None, :]
        self.sample = torch.tensor(
            [cu_q[i + 1] - 1 for i, f in enumerate(sample) if f], device=dev, dtype=torch.long
        )
        self.rows = max(padded, t) if v2 else t
        self.x = m.x_pool[
            : self.rows
        ].clone()  # no random draw per step (a failed capture would poison the RNG)
        # Each layer reads its own stretch of the buffer, so a small step's KV is not served from L2.
        span = m.kv_tokens - self.total_k + 1
        self.base = [(layer * self.total_k) % span for layer in range(s.layers)]


def step_attention(m: Decoder, si: StepInputs, q, kb, vb) -> torch.Tensor:
    """Decode rows in one call (no causal flag: FlashAttention's one-query path), chunks in another."""
    if si.nd == si.t:
        return attention(q, kb, vb, *si.decode, m.device, causal=DECODE_CAUSAL[0])
    if si.nd == 0:
        return attention(q, kb, vb, *si.chunks, m.device)
    d = attention(q[: si.nd], kb[: si.kd], vb[: si.kd], *si.decode, m.device, causal=DECODE_CAUSAL[0])
    c = attention(q[si.nd :], kb[si.kd :], vb[si.kd :], *si.chunks, m.device)
    return torch.cat((d, c))


def forward(m: Decoder, si: StepInputs) -> torch.Tensor:
    s = m.s
    hd, nq, nk = s.head_dim, s.heads, s.kv_heads
    x, t = si.x, si.t
    pad = si.rows - t
    for layer, w in enumerate(m.layers):
        h = F.rms_norm(x, (s.hidden,), w["n1"], 1e-5)
        q, k, v = (h @ w["qkv"].t())[:t].split([nq * hd, nk * hd, nk * hd], dim=-1)
        q = rope(q.reshape(-1, nq, hd), si.cos, si.sin)
        k = rope(k.reshape(-1, nk, hd), si.cos, si.sin)
        b = si.base[layer]
        kb, vb = m.k[b : b + si.total_k], m.v[b : b + si.total_k]
        kb.index_copy_(0, si.write, k)
        vb.index_copy_(0, si.write, v.reshape(-1, nk, hd))
        a = step_attention(m, si, q, kb, vb).reshape(-1, nq * hd)
        if pad:
            a = F.pad(a, (0, 0, 0, pad))
        x = x + a @ w["o"].t()
        h = F.rms_norm(x, (s.hidden,), w["n2"], 1e-5)
        g, u = (h @ w["gu"].t()).chunk(2, dim=-1)
        x = x + (F.silu(g) * u) @ w["down"].t()
    h = F.rms_norm(x[si.sample], (s.hidden,), m.norm, 1e-5)
    return h @ m.lm_head.t()


def time_step(m: Decoder, si: StepInputs, reps: int) -> tuple[str, list[float]]:
    """Replay the step's graph ``reps`` times after one warm replay; ms per replay (CUDA events)."""
    forward(m, si)  # eager warm-up: kernel selection, workspaces
    torch.cuda.synchronize()
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):  # its own pool, released with the graph
            forward(m, si)
        run, mode = g.replay, "graph"
    except Exception as exc:  # noqa: BLE001 - measured eagerly instead, and said so
        print(f"capture failed ({type(exc).__name__}: {exc}); eager", file=sys.stderr)
        torch.cuda.synchronize()
        g, mode = None, "eager"

        def run() -> None:
            forward(m, si)

    run()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    del g
    return mode, out


def device_facts() -> dict:
    facts = {"torch": torch.__version__}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        facts.update(gpu=p.name, sms=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1))
        try:
            q = "clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu,driver_version"
            facts["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout.strip()
        except Exception as exc:  # noqa: BLE001
            facts["nvidia_smi"] = f"unavailable: {exc}"
    return facts


def gemm_tflops(device: str) -> float:
    """A reference figure for the device: an 8192-cube bf16 product, mean of 10 after 3 warm-ups."""
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ a
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ a
    torch.cuda.synchronize()
    return 10 * 2 * 8192**3 / (time.perf_counter() - t0) / 1e12


COLUMNS = (
    "step_id",
    "regime",
    "mode",
    "ms_median",
    "ms_min",
    "ms_max",
    "rows",
    "tokens",
    "padded",
    "kv_tokens",
)


def load_steps(path: str, limit: int = 0) -> tuple[dict, list[dict]]:
    """(the export document, its steps in a fixed shuffled order: both regimes, all sizes, spread
    over the run, so a run cut off at its budget still holds a sample of every kind)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        doc = json.load(fh)
    steps = list(doc["steps"])
    random.Random(doc.get("seed", 0)).shuffle(steps)
    return doc, steps[:limit] if limit else steps


def measure(m: Decoder, st: dict, engine: str, reps: int) -> list:
    """One CSV row for one exported step (CUDA: graph replays; CPU: one checked eager pass)."""
    si = StepInputs(m, st["new"], st["ctx"], st["sample"], st.get("padded", 0), engine)
    if m.device == "cuda":
        mode, ms = time_step(m, si, reps)
    else:
        t0 = time.perf_counter()
        logits = forward(m, si)
        ms, mode = [1e3 * (time.perf_counter() - t0)], "cpu"
        assert logits.shape[0] == sum(st["sample"]) and torch.isfinite(logits.float()).all()
    ms.sort()
    med = ms[len(ms) // 2]
    return [st["id"], st["regime"], mode, f"{med:.4f}", f"{ms[0]:.4f}", f"{ms[-1]:.4f}",
            len(st["new"]), sum(st["new"]), si.rows, si.total_k]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", required=True, help="the JSON written by `benchmarks.gpu_steps export`")
    ap.add_argument("--out", required=True, help="CSV to write (facts go beside it as .json)")
    ap.add_argument("--reps", type=int, default=REPS)
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="a small model of the same structure (CPU check)")
    ap.add_argument("--engine", choices=ENGINES, default=ENGINE, help="how a step is run (see ENGINES)")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    doc, steps = load_steps(args.steps, args.limit)
    shape = Shape.from_config(doc["config"], tiny=args.tiny)
    torch.manual_seed(0)
    m = Decoder(shape, args.device, KV_BUFFER_TOKENS if not args.tiny else 1_000_000)
    facts = {
        "engine": args.engine,
        "reps": args.reps,
        "shape": shape.__dict__,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **device_facts(),
    }
    if args.device == "cuda":
        facts.update(check_flash())
        print(json.dumps(facts), flush=True)
        facts["gemm_tflops"] = round(gemm_tflops(args.device), 1)
    out = Path(args.out)
    done = 0
    with out.open("w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(COLUMNS)
        for st in steps:
            if time.perf_counter() - t_start > args.budget_s:
                break
            wr.writerow(measure(m, st, args.engine, args.reps))
            f.flush()  # a run cut off by its lease keeps every row timed so far
            done += 1
    facts.update(timed_steps=done, exported_steps=len(steps), seconds=round(time.perf_counter() - t_start, 1))
    if args.device == "cuda":
        facts["at_end"] = device_facts().get("nvidia_smi")
    out.with_suffix(".json").write_text(json.dumps(facts, indent=1))
    print(json.dumps(facts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
