"""LLMVisor on a real GPU's step times: steps the real scheduler formed, timed on an H200.

Everything else in ``docs/accuracy.md`` scores LLMVisor on the reference engine, whose step times
are composed from kernel tables.  This study scores it on steps timed on a real GPU, which none of
the model's design choices ever saw (held out in the strongest sense: another source of truth).

1. ``export`` (here, CPU): the real vLLM scheduler runs the accuracy study's two load regimes
   (``benchmarks.accuracy_study.REGIMES``, ``saturated`` and ``light``) for llama-3.1-8b against
   the reference engine on the H200 kernel tables; every ``--stride``-th step's request rows
   (new tokens, KV history, whether the row samples) are written with the engine's noiseless
   parts for the same step.
2. ``benchmarks/gpu_step_timer.py`` (on the GPU machine, torch only) times each exported step as
   one forward pass of a random-weight decoder of the model's shape, captured as a CUDA graph.
3. ``analyze`` (here): per regime, LLMVisor and the token baseline are fitted on the first half of
   the timed steps and scored on the second (``shadowd.attribution.fit`` and
   ``accuracy_report``, unchanged), then across regimes (fit on one, score the other); and the
   reference engine's GPU time (its step time less host time) is set beside the measured one.

The measured CSV and the export are stored in ``docs/`` (``gpu-steps.csv``, ``gpu-steps.json.gz``),
so ``analyze`` regenerates ``docs/gpu.md`` and ``docs/gpu.json`` without a GPU.

    .venv/bin/python -m benchmarks.gpu_steps export
    python3 benchmarks/gpu_step_timer.py --steps docs/gpu-steps.json.gz --out $OUT/gpu-steps.csv  # on the GPU
    .venv/bin/python -m benchmarks.gpu_steps analyze
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
EXPORT_PATH = DOCS / "gpu-steps.json.gz"
MD_PATH, JSON_PATH = DOCS / "gpu.md", DOCS / "gpu.json"
PLATFORM = "h200_sxm"
MODEL = "llama-3.1-8b"
SIM_STEPS = {"saturated": 4200, "light": 7200}
SEEDS = {"saturated": 41, "light": 42}  # seeds no other study uses
# The regimes' rates are H100 llama-3.1-8b rates; the H200 serves more, so they are scaled up as the
# accuracy study scales its other pairs (``benchmarks.accuracy_study.CAPACITY``), chosen here before
# any timing so the saturated run fills the batch.
CAPACITY = 2.0
STRIDE = {"saturated": 10, "light": 12}  # sized so the timing fits one short GPU lease
CLASSES = ("prefill", "decode", "mixed", "all")
EXPORT_CMD = ".venv/bin/python -m benchmarks.gpu_steps export"
TIMER_CMD = "python3 benchmarks/gpu_step_timer.py --steps docs/gpu-steps.json.gz --out $OUT/gpu-steps.csv"
ANALYZE_CMD = ".venv/bin/python -m benchmarks.gpu_steps analyze"


def _case(regime: str):
    from benchmarks.accuracy_study import REGIMES, Case
    from shadowd.paths import data_dir

    platform = str(data_dir() / "kernels" / "aiconfigurator-vllm-0.14.0" / PLATFORM)
    tenants = tuple(f"{name}={trace}:{rate * CAPACITY:g}" for name, (trace, rate) in REGIMES[regime].items())
    return Case(platform, MODEL, regime, SIM_STEPS[regime], seed=SEEDS[regime], tenants=tenants)


def export(out: Path) -> dict[str, Any]:
    """Simulate both regimes and write every ``STRIDE``-th step (rows and the engine's parts)."""
    from benchmarks.accuracy_study import simulate
    from shadowd.sim.reference_run import model_dir

    steps: list[dict[str, Any]] = []
    for regime in SIM_STEPS:
        run, batch, kv = simulate(_case(regime))
        starts = np.searchsorted(batch.req_step, np.arange(batch.num_steps + 1))
        for s in range(0, batch.num_steps, STRIDE[regime]):
            rows = slice(starts[s], starts[s + 1])
            new, ctx = batch.new_tokens[rows], batch.context_tokens[rows]
            pre, prompt = batch.prefill[rows], batch.prompt_tokens[rows]
            parts = run.engine.breakdown(new, ctx, pre)
            steps.append(
                {
                    "id": f"{regime}-{s}",
                    "regime": regime,
                    "new": new.tolist(),
                    "ctx": ctx.tolist(),
                    "prefill": pre.tolist(),
                    "prompt": prompt.tolist(),
                    # a row samples a token when it decodes or its chunk ends the prompt
                    "sample": ((~pre) | (ctx + new >= prompt)).tolist(),
                    "tenant": batch.tenant[rows].tolist(),
                    "kv_usage": float(kv[s]) if s < len(kv) else None,
                    "engine_ms": {k: round(v, 5) for k, v in parts.items() if k.endswith("_ms")},
                    "padded": parts["padded_tokens"],  # the step's tokens padded to vLLM's graph size
                }
            )
        print(
            f"{regime}: {batch.num_steps} steps simulated, {len(range(0, batch.num_steps, STRIDE[regime]))} exported"
        )
    config = json.loads((model_dir(MODEL) / "config.json").read_text())
    doc = {
        "platform": PLATFORM,
        "model": MODEL,
        "config": config,
        "seed": 7,
        "command": EXPORT_CMD,
        "steps": steps,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt") as fh:
        json.dump(doc, fh, separators=(",", ":"))
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", type=Path, default=EXPORT_PATH)
    a = sub.add_parser("analyze")
    a.add_argument("--docs", type=Path, default=DOCS, help="where the stored timings are")
    a.add_argument("--export", type=Path, default=EXPORT_PATH)
    args = ap.parse_args(argv)
    if args.cmd == "export":
        export(args.out)
    else:
        from benchmarks.gpu_report import analyze

        analyze(args.export, args.docs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
