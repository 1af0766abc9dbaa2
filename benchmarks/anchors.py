"""The reference engine's figures beside measured anchors (``docs/reference-engine.md``).

Run ``.venv/bin/python -m benchmarks.anchors`` to regenerate the tables in the doc
(``--json`` for machine-readable rows).  Anchors, all under ``anchors/`` in the shared
data, none produced by this project:

* AIConfigurator ``silicon_sample.csv`` (NVIDIA, Apache-2.0): end-to-end TPOT of real
  runs.  Llama-3.1-8B bf16 on H100 exists only for TensorRT-LLM 1.0; Qwen3-32B bf16 on
  H100 for vLLM 0.12 (TP2/TP4).
* Sarathi-Serve (Microsoft, Apache-2.0): Yi-34B TP2 on A100 80GB *PCIe*: batch times
  of decode batches (figure 2), single prefills (figure 2) and table 2's three batches.
* Splitwise (MIT): Llama-2-70B on A100/H100, prompt time (batch 1) and per-iteration
  decode time by batch, 2023 engine.
* inference-sim ``enriched_steps.parquet`` (Apache-2.0): real vLLM steps on H100,
  CodeLlama-34B TP2 and Llama-2-70B TP4; ``cycle_time_us`` per decode-only step,
  bucketed by batch size (KV per request from the KV-cache usage of the step).

Shapes of models not in ``shared/models`` are the public Hugging Face configs
(Qwen/Qwen3-32B, 01-ai/Yi-34B, meta-llama/Llama-2-70b-hf, codellama/CodeLlama-34b-hf).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass

import numpy as np

from shadowd.paths import data_dir
from shadowd.twin.model_shape import ModelShape
from shadowd.twin.step_latency import ReferenceEngine

QWEN3_32B = ModelShape(
    "qwen3-32b",
    hidden=5120,
    layers=64,
    heads=64,
    kv_heads=8,
    head_dim=128,
    intermediate=25600,
    vocab=151936,
    max_context=40960,
)
YI_34B = ModelShape(
    "yi-34b",
    hidden=7168,
    layers=60,
    heads=56,
    kv_heads=8,
    head_dim=128,
    intermediate=20480,
    vocab=64000,
    max_context=4096,
)
LLAMA2_70B = ModelShape(
    "llama-2-70b",
    hidden=8192,
    layers=80,
    heads=64,
    kv_heads=8,
    head_dim=128,
    intermediate=28672,
    vocab=32000,
    max_context=4096,
)
CODELLAMA_34B = ModelShape(
    "codellama-34b",
    hidden=8192,
    layers=48,
    heads=64,
    kv_heads=8,
    head_dim=128,
    intermediate=22016,
    vocab=32000,
    max_context=16384,
)

BATCH_TOKEN_BUDGET = 8192  # vLLM's default max_num_batched_tokens for the API server


@dataclass
class AnchorRow:
    """One measured figure and what the engine says for the same shape."""

    source: str
    case: str
    measured_ms: float
    tables_ms: float
    builtin_ms: float

    @property
    def ratio_tables(self) -> float:
        return self.tables_ms / self.measured_ms

    @property
    def ratio_builtin(self) -> float:
        return self.builtin_ms / self.measured_ms


def _engines(gpu: str, model: ModelShape, tp: int) -> tuple[ReferenceEngine, ReferenceEngine]:
    return (
        ReferenceEngine(gpu, model, tp, jitter=False),
        ReferenceEngine(f"builtin:{gpu}", model, tp, jitter=False),
    )


def decode_step(e: ReferenceEngine, batch: int, kv: int) -> float:
    return e.expected_ms([1] * batch, [kv] * batch, [False] * batch)


def tpot_estimate(e: ReferenceEngine, isl: int, osl: int, concurrency: int) -> float:
    """Steady-state time per output token at a fixed concurrency.

    The decode step of ``concurrency`` requests at their mean KV (``isl + osl/2``), plus
    the other requests' prefills, which join decode steps in chunks of the token budget:
    ``(concurrency - 1) / osl`` prefills land in each step on average.
    """
    kv = isl + osl // 2
    step = decode_step(e, concurrency, kv)
    if concurrency == 1:
        return step
    others = concurrency - 1
    base = decode_step(e, others, kv)
    extra, done = 0.0, 0
    while done < isl:
        chunk = min(BATCH_TOKEN_BUDGET - others, isl - done)
        extra += (
            e.expected_ms([chunk] + [1] * others, [done] + [kv] * others, [True] + [False] * others) - base
        )
        done += chunk
    return step + others / osl * extra


def silicon_rows() -> list[AnchorRow]:
    path = data_dir() / "anchors/aiconfigurator/silicon_sample.csv"
    rows = list(csv.DictReader(open(path)))
    out: list[AnchorRow] = []
    cases = [
        ("meta-llama/Llama-3.1-8B-Instruct", "trtllm", "llama-3.1-8b", (1, 2)),
        ("Qwen/Qwen3-32B", "/vllm/", QWEN3_32B, (2, 4)),
    ]
    for model_path, backend, shape, tps in cases:
        model = ModelShape.resolve(shape) if isinstance(shape, str) else shape
        for tp in tps:
            tables, builtin = _engines("h100_sxm", model, tp)
            for r in rows:
                if (
                    r["model_path"] != model_path
                    or r["system"] != "h100_sxm"
                    or r["precision"]
                    or int(r["tp_size"]) != tp
                    or r["mode"] != "agg"
                    or (backend not in r["backend"] and backend not in r["silicon_data_source"])
                ):
                    continue
                isl, osl, conc = int(r["isl"]), int(r["osl"]), int(r["batch_size"])
                if conc > 64 or isl > 4096:
                    continue
                label = "TRT-LLM 1.0" if backend == "trtllm" else "vLLM 0.12"
                out.append(
                    AnchorRow(
                        f"AIConfigurator silicon, {model.name} TP{tp}, {label}",
                        f"TPOT isl={isl} osl={osl} c={conc}",
                        float(r["silicon_tpot_ms"]),
                        tpot_estimate(tables, isl, osl, conc),
                        tpot_estimate(builtin, isl, osl, conc),
                    )
                )
    return out


def sarathi_rows(decode_kv: int = 1024) -> list[AnchorRow]:
    tables, builtin = _engines("a100_sxm", YI_34B, 2)
    base = data_dir() / "anchors/sarathi-serve"
    src = "Sarathi-Serve, Yi-34B TP2, A100 PCIe"
    out = []
    for r in csv.DictReader(open(base / "figure-2_decode.csv")):
        b = int(float(r["batch_size"]))
        out.append(
            AnchorRow(
                src,
                f"decode batch {b} (KV~{decode_kv}, assumed)",
                float(r["batch_execution_time"]) * 1e3,
                decode_step(tables, b, decode_kv),
                decode_step(builtin, b, decode_kv),
            )
        )
    for r in csv.DictReader(open(base / "figure-2_prefill.csv")):
        n = int(float(r["batch_num_prefill_tokens"]))
        out.append(
            AnchorRow(
                src,
                f"prefill {n}",
                float(r["batch_execution_time"]) * 1e3,
                tables.expected_ms([n], [0], [True]),
                builtin.expected_ms([n], [0], [True]),
            )
        )
    for r in csv.DictReader(open(base / "table-2_results.csv")):
        p, d = int(float(r["batch_num_prefill_tokens"])), int(float(r["batch_num_decode_tokens"]))
        new = ([p] if p else []) + [1] * d
        ctx = ([0] if p else []) + [decode_kv] * d
        pre = ([True] if p else []) + [False] * d
        out.append(
            AnchorRow(
                src,
                f"table 2: {p} prefill + {d} decode tokens",
                float(r["batch_execution_time"]),
                tables.expected_ms(new, ctx, pre),
                builtin.expected_ms(new, ctx, pre),
            )
        )
    return out


def chunking_rows() -> list[AnchorRow]:
    """Sarathi-Serve figure 9a: a prompt prefilled in chunks vs in one go (relative time, x1000).

    Tests the cached-prefix cost: every chunk after the first attends over a prefix.
    The figure's one-shot times match figure 2's Yi-34B TP2 prefills, so that shape is used.
    """
    tables, builtin = _engines("a100_sxm", YI_34B, 2)

    def chunked(e: ReferenceEngine, length: int, chunk: int) -> float:
        total, done = 0.0, 0
        while done < length:
            n = min(chunk, length - done)
            total += e.expected_ms([n], [done], [True])
            done += n
        return total / e.expected_ms([length], [0], [True])

    out = []
    for r in csv.DictReader(open(data_dir() / "anchors/sarathi-serve/figure-9_chunking-overhead.csv")):
        length, chunk = int(r["prefill_length"]), int(r["chunk_size"])
        if chunk >= length:
            continue
        out.append(
            AnchorRow(
                "Sarathi-Serve figure 9a, Yi-34B TP2, chunked / one-shot prefill time x1000",
                f"prompt {length} in chunks of {chunk}",
                float(r["prefill_execution_time_relative"]) * 1e3,
                chunked(tables, length, chunk) * 1e3,
                chunked(builtin, length, chunk) * 1e3,
            )
        )
    return out


def splitwise_rows() -> list[AnchorRow]:
    rows = list(csv.DictReader(open(data_dir() / "anchors/splitwise/perf_model.csv")))
    out = []
    for hw, gpu in (("a100-80gb", "a100_sxm"), ("h100-80gb", "h100_sxm")):
        for tp in (2, 4, 8):
            sel = [
                r
                for r in rows
                if r["model"] == "llama2-70b" and r["hardware"] == hw and int(r["tensor_parallel"]) == tp
            ]
            if not sel:
                continue
            tables, builtin = _engines(gpu, LLAMA2_70B, tp)
            src = f"Splitwise, Llama-2-70B TP{tp}, {hw}"
            groups: dict[tuple[int, int], list[tuple[float, float]]] = {}
            for r in sel:
                if r["token_size"] != "128":
                    continue
                groups.setdefault((int(r["prompt_size"]), int(r["batch_size"])), []).append(
                    (float(r["prompt_time"]), float(r["token_time"]))
                )
            for (prompt, batch), vals in sorted(groups.items()):
                prompt_t, token_t = (float(np.median([v[i] for v in vals])) for i in (0, 1))
                if batch == 1 and prompt in (512, 2048, 8192):
                    out.append(
                        AnchorRow(
                            src,
                            f"prompt {prompt}",
                            prompt_t,
                            tables.expected_ms([prompt], [0], [True]),
                            builtin.expected_ms([prompt], [0], [True]),
                        )
                    )
                if prompt == 512 and batch in (1, 8, 32):
                    kv = prompt + 64
                    out.append(
                        AnchorRow(
                            src,
                            f"decode iteration, batch {batch}",
                            token_t,
                            decode_step(tables, batch, kv),
                            decode_step(builtin, batch, kv),
                        )
                    )
    return out


def inference_sim_rows() -> list[AnchorRow]:
    """Median measured cycle time of decode-only steps per batch-size bucket vs the engine."""
    import duckdb

    path = data_dir() / "anchors/inference-sim/enriched_steps.parquet"
    q = f"""
        select model, tp, "batch.num_decode_reqs" as d, "queue.running_depth" as running,
               "kv.usage_gpu_ratio" * "kv.blocks_total_gpu" * 16 as kv_tokens, cycle_time_us
        from '{path}'
        where cycle_time_us > 2000 and cycle_time_us < 200000
          and "batch.num_prefill_reqs" = 0 and "batch.num_decode_reqs" > 0
    """
    rows = duckdb.connect().sql(q).fetchall()
    out = []
    for name, shape, tp in (("codellama-34b", CODELLAMA_34B, 2), ("llama-2-70b", LLAMA2_70B, 4)):
        tables, builtin = _engines("h100_sxm", shape, tp)
        sel = [r for r in rows if r[0].startswith(name) and r[1] == tp]
        for lo, hi in ((1, 16), (17, 32), (33, 64), (65, 128), (129, 512)):
            bucket = [r for r in sel if lo <= r[2] <= hi]
            if len(bucket) < 20:
                continue
            measured = float(np.median([r[5] for r in bucket])) / 1e3
            est_t, est_b = [], []
            for _, _, d, running, kv_tokens, _ in bucket:
                kv = max(1, int(kv_tokens / max(running, d)))
                est_t.append(decode_step(tables, d, kv))
                est_b.append(decode_step(builtin, d, kv))
            out.append(
                AnchorRow(
                    f"inference-sim, {name} TP{tp}, H100, vLLM",
                    f"decode-only steps, batch {lo}-{hi} (n={len(bucket)})",
                    measured,
                    float(np.median(est_t)),
                    float(np.median(est_b)),
                )
            )
    return out


def weight_floor_ms(model: ModelShape, tp: int, gpu: str) -> float:
    """bf16 weight bytes per GPU over the datasheet HBM bandwidth: no decode step is faster."""
    from shadowd.twin.gpu_specs import gpu_spec

    return model.weight_bytes() / tp / (gpu_spec(gpu).hbm_tbps * 1e12) * 1e3


def plausibility() -> str:
    """Issue 3's plausibility cases for llama-3.1-8b (and qwen2.5-14b), per platform."""
    cases = [
        ("1 decode, KV 1k", [1], [1024], [False]),
        ("prefill 2048", [2048], [0], [True]),
        ("1 decode, KV 4k", [1], [4096], [False]),
        ("128 decodes, KV 4k", [1] * 128, [4096] * 128, [False] * 128),
        ("chunk 512 cold", [512], [0], [True]),
        ("chunk 512 after 3072 cached", [512], [3072], [True]),
    ]
    engines = [
        (f"{m} {p} TP{tp}", ReferenceEngine(p, m, tp, jitter=False))
        for m, p, tp in (
            ("llama-3.1-8b", "h100_sxm", 1),
            ("llama-3.1-8b", "builtin", 1),
            ("llama-3.1-8b", "a100_sxm", 1),
            ("llama-3.1-8b", "h100_sxm", 2),
            ("qwen2.5-14b", "h100_sxm", 1),
            ("qwen2.5-14b", "builtin", 1),
        )
    ]
    lines = ["| case | " + " | ".join(n for n, _ in engines) + " |", "|---|" + "---:|" * len(engines)]
    for label, *args in cases:
        lines.append(f"| {label} | " + " | ".join(f"{e.expected_ms(*args):.2f}" for _, e in engines) + " |")
    return "\n".join(lines)


def call_timing(repeats: int = 5, calls: int = 2000) -> str:
    """Best-of-``repeats`` microseconds per ``latency_ms`` call (jitter on), H100 tables."""
    import time

    e = ReferenceEngine("h100_sxm", "llama-3.1-8b", seed=0)
    rng = np.random.default_rng(0)
    lines = [
        "| requests | decode-only us/call | mixed (2 chunks, one after a prefix) us/call |",
        "|---:|---:|---:|",
    ]
    for n in (32, 256):
        ctx = rng.integers(100, 8000, n)
        dec = (np.ones(n, dtype=np.int64), ctx, np.zeros(n, dtype=bool))
        new = np.ones(n, dtype=np.int64)
        new[:2] = (384, 128)
        pre = np.zeros(n, dtype=bool)
        pre[:2] = True
        mctx = ctx.copy()
        mctx[0] = 0
        best = []
        for args in (dec, (new, mctx, pre)):
            runs = []
            for _ in range(repeats):
                t = time.perf_counter()
                for _ in range(calls):
                    e.latency_ms(*args)
                runs.append((time.perf_counter() - t) / calls * 1e6)
            best.append(min(runs))
        lines.append(f"| {n} | {best[0]:.0f} | {best[1]:.0f} |")
    return "\n".join(lines)


def token_fit_table(steps: int = 600, seed: int = 11) -> str:
    """R^2 and p90 error of a token-count-only latency fit on sampled engine steps (noiseless)."""
    from shadowd.twin.step_samples import sample_steps, token_count_fit

    lines = ["| platform | class | R^2 | p90 rel. error |", "|---|---|---:|---:|"]
    for platform in ("h100_sxm", "builtin", "a100_sxm"):
        report = token_count_fit(
            sample_steps(
                ReferenceEngine(platform, "llama-3.1-8b", jitter=False), steps, seed=seed, jitter=False
            )
        )
        for name, (r2, p90) in report.items():
            lines.append(f"| {platform} | {name} | {r2:.3f} | {p90:.1%} |")
    return "\n".join(lines)


def all_rows() -> list[AnchorRow]:
    return silicon_rows() + sarathi_rows() + chunking_rows() + splitwise_rows() + inference_sim_rows()


def to_markdown(rows: list[AnchorRow]) -> str:
    lines = []
    source = None
    for r in rows:
        if r.source != source:
            source = r.source
            lines += [
                "",
                f"**{source}**",
                "",
                "| case | measured ms | engine (tables) ms | ratio | engine (builtin) ms | ratio |",
                "|---|---:|---:|---:|---:|---:|",
            ]
        lines.append(
            f"| {r.case} | {r.measured_ms:.1f} | {r.tables_ms:.1f} | {r.ratio_tables:.2f} "
            f"| {r.builtin_ms:.1f} | {r.ratio_builtin:.2f} |"
        )
    return "\n".join(lines).lstrip()


def summary(rows: list[AnchorRow]) -> str:
    """Median engine/measured ratio per anchor source."""
    by: dict[str, list[AnchorRow]] = {}
    for r in rows:
        by.setdefault(r.source, []).append(r)
    lines = [
        "| anchor | rows | median ratio (tables) | range | median ratio (builtin) | range |",
        "|---|---:|---:|---|---:|---|",
    ]
    for src, rs in by.items():
        t = np.array([r.ratio_tables for r in rs])
        b = np.array([r.ratio_builtin for r in rs])
        lines.append(
            f"| {src} | {len(rs)} | {np.median(t):.2f} | {t.min():.2f}-{t.max():.2f} "
            f"| {np.median(b):.2f} | {b.min():.2f}-{b.max():.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.anchors", description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print anchor rows as JSON")
    ap.add_argument("--skip-timing", action="store_true", help="omit the per-call timing table")
    args = ap.parse_args(argv)
    rows = all_rows()
    if args.json:
        json.dump(
            [dict(vars(r), ratio_tables=r.ratio_tables, ratio_builtin=r.ratio_builtin) for r in rows],
            sys.stdout,
            indent=1,
        )
        print()
    else:
        print("## Plausibility (noiseless ms)\n")
        print(plausibility())
        print("\n## Token-count fit on engine steps (llama-3.1-8b, 600 sampled steps)\n")
        print(token_fit_table())
        if not args.skip_timing:
            print("\n## Cost of one T() call\n")
            print(call_timing())
        print("\n## bf16 weight-streaming floor of a decode step (ms)\n")
        for name, shape, tp, gpu in (
            ("codellama-34b", CODELLAMA_34B, 2, "h100_sxm"),
            ("llama-2-70b", LLAMA2_70B, 4, "h100_sxm"),
            ("yi-34b", YI_34B, 2, "a100_sxm"),
        ):
            print(f"- {name} TP{tp} {gpu}: {weight_floor_ms(shape, tp, gpu):.1f}")
        print("\n## Anchors: summary\n")
        print(summary(rows))
        print("\n## Anchors: rows\n")
        print(to_markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
