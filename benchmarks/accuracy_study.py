"""Accuracy of LLMVisor and the token baseline on the reference engine, and how fairly they divide.

Runs the real vLLM scheduler (CPU) against the reference engine's kernel-table step latencies
(:class:`shadowd.sim.reference_run.ReferenceRun`) on H100 and A100 tables for llama-3.1-8b and
qwen2.5-14b, three tenants from real traces (Azure code, Azure conversation, Mooncake conversation:
the long-context one), in two load regimes per platform/model:

* ``saturated`` (the paper's regime): high concurrency, KV cache filled towards its capacity as vLLM
  sizes it from GPU memory and model (``kv_fraction = 1``), chunked prefills mixed into big decode
  batches;
* ``light``: idle gaps between bursts, small batches, the memory-bound flat region, CUDA-graph
  padding, and the prefill-only steps that a saturated engine almost never forms.

Per run: fit both models on the first half of the steps, score the second half (out of sample),
per step class; per-tenant totals of LLMVisor (both fixed-term policies) and of the token split
against Monte Carlo Shapley values of the noiseless engine on steps spread over the scored window
(:func:`shadowd.sim.truth.tenant_truth_errors`); the targets of issue 8 checked run by run.  Also
the attribution cost per 256-request step (:func:`benchmarks.attribution_timing.time_attribution`).

    .venv/bin/python -m benchmarks.accuracy_study            # all runs (~6 min on 2 cores); writes
                                                       # docs/accuracy.md and docs/accuracy.json
    .venv/bin/python -m benchmarks.accuracy_study --quick    # the 2 CI-sized runs, printed; --out PREFIX
                                                       # to write them
    .venv/bin/python -m benchmarks.accuracy_study --held-out # the held-out runs (benchmarks/held_out_accuracy.py)
                                                       # added beside the stored development runs
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import share_misses, share_rows

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

CLASSES = ("prefill", "decode", "mixed", "all")
MIN_CLASS_STEPS = 100  # fewer scored steps in a class: its p99 is not held to the target
TARGETS = {"r2_all": 0.99, "p99_class": 0.10, "ratio_all_mixed": 2.0, "truth_tenant": 0.03}
PAPER = {  # the LLMVisor paper's headline figures (paper not in this repo): token / LLMVisor error ratios
    "prefill": {"p90": 2.5, "p99": 3.3},
    "decode": {"p90": 3.5, "p99": 4.4},
    "token_decode_r2_low": 0.78,
}

# Relative serving capacity of a platform/model (H100 llama-3.1-8b = 1): tenants' request rates are
# scaled by it so every pair lands in the same regime.
CAPACITY = {
    ("h100_sxm", "llama-3.1-8b"): 1.0,
    ("h100_sxm", "qwen2.5-14b"): 0.6,
    ("a100_sxm", "llama-3.1-8b"): 0.6,
    ("a100_sxm", "qwen2.5-14b"): 0.45,
}
REGIMES = {  # tenant -> (trace, request rate at capacity 1)
    "saturated": {
        "code": ("azure-code", 3.0),
        "conv": ("azure-conv", 6.0),
        "longctx": ("mooncake-conversation", 1.8),
    },
    "light": {
        "code": ("azure-code", 1.5),
        "conv": ("azure-conv", 0.1),
        "longctx": ("mooncake-conversation", 0.08),
    },
}
STEPS = {"saturated": 10000, "light": 16000}


@dataclass
class Case:
    platform: str
    model: str
    regime: str
    steps: int
    seed: int = 1
    truth_steps: int = 150
    permutations: int = 64
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    kv_fraction: float = 1.0
    tenants: tuple[str, ...] = field(default=())
    tp: int = 1

    def __post_init__(self) -> None:
        if not self.tenants:
            scale = CAPACITY.get((self.platform, self.model), 1.0)
            self.tenants = tuple(
                f"{name}={trace}:{rate * scale:g}" for name, (trace, rate) in REGIMES[self.regime].items()
            )

    @property
    def name(self) -> str:
        model = Path(self.model).name + (f" tp{self.tp}" if self.tp > 1 else "")
        return f"{Path(self.platform).name}/{model}/{self.regime}"

    @property
    def platform_key(self) -> dict[str, Any]:
        return {
            "gpu": Path(self.platform).name,
            "model": Path(self.model).name,
            "dtype": "bf16",
            "tp": self.tp,
            "pp": 1,
            "vllm": "0.33",
            "attention_backend": "reference-engine",
        }


def all_cases() -> list[Case]:
    return [Case(p, m, r, STEPS[r]) for (p, m) in CAPACITY for r in REGIMES]


def quick_cases() -> list[Case]:
    """The CI-sized runs of ``tests/sim/test_accuracy_reference.py``: the saturated one gets 35% of the
    KV capacity so that the cache fills within 4000 steps."""
    return [
        Case(
            "h100_sxm",
            "llama-3.1-8b",
            "saturated",
            4000,
            truth_steps=100,
            kv_fraction=0.35,
            tenants=("code=azure-code:6", "conv=azure-conv:6", "longctx=mooncake-conversation:1.8"),
        ),
        Case("h100_sxm", "llama-3.1-8b", "light", 6000, truth_steps=100),
    ]


# --- one run ------------------------------------------------------------------------------------
def simulate(case: Case):
    """Run the scheduler against the engine; returns (ReferenceRun, StepBatch, kv usage per step)."""
    from shadowd.sim.reference_run import ReferenceRun, RunSpec

    run = ReferenceRun(
        RunSpec(
            platform=case.platform,
            model=case.model,
            tp=case.tp,
            tenants=case.tenants,
            seed=case.seed,
            max_num_seqs=case.max_num_seqs,
            max_num_batched_tokens=case.max_num_batched_tokens,
            kv_fraction=case.kv_fraction,
        )
    )
    run.run(case.steps, run.workload(duration_s=7200.0))
    return run, run.step_batch(), np.asarray(run.kv_usage, dtype=np.float64)


def recomputes(batch) -> int:
    """Requests that ran prefill-like work again after decoding (vLLM preempted and recomputed them)."""
    decoded = set()
    count = 0
    for rid, pre in zip(batch.req_id.tolist(), batch.prefill.tolist()):
        if not pre:
            decoded.add(rid)
        elif rid in decoded:
            count += 1
            decoded.discard(rid)
    return count


def _pct(a: np.ndarray, qs=(50, 90, 99)) -> dict[str, float]:
    return {f"p{q}": float(np.percentile(a, q)) for q in qs} if len(a) else {}


def regime_figures(run, batch, kv: np.ndarray, later_mask: np.ndarray) -> dict[str, Any]:
    """What the run's load looked like: KV usage, concurrency, lengths, preemption."""
    kv_late = kv[later_mask] if len(kv) == len(later_mask) else kv[len(kv) // 2 :]
    size = batch.batch_size()
    tokens = batch.per_step_sum(batch.new_tokens.astype(np.float64))
    later_rows = later_mask[batch.req_step]
    ctx = (batch.context_tokens + batch.new_tokens)[later_rows]
    first = np.unique(batch.req_id[later_rows].astype(str), return_index=True)[1]
    prompts = batch.prompt_tokens[later_rows][first].astype(np.float64)
    return {
        "kv_capacity_tokens": int(run.kv_capacity_tokens),
        "kv_blocks": int(run.num_blocks),
        "kv_usage": {
            "peak": float(kv.max()),
            "median": float(np.median(kv)),
            "scored_peak": float(kv_late.max()),
            "scored_median": float(np.median(kv_late)),
            "scored_p90": float(np.percentile(kv_late, 90)),
            "scored_share_above_0.8": float(np.mean(kv_late > 0.8)),
        },
        "batch_size": {**_pct(size[later_mask]), "max": int(size[later_mask].max())},
        "tokens_per_step": _pct(tokens[later_mask]),
        "kv_len_per_row": {**_pct(ctx), "max": int(ctx.max())},
        "prompt_tokens": {
            **_pct(prompts),
            "max": int(prompts.max()),
            "cv": float(prompts.std() / prompts.mean()),
        },
        "recomputed_requests": recomputes(batch),
        "simulated_s": float(run.driver.elapsed_s),
        "steps_by_class": {c: int(np.sum(batch.kind[later_mask] == i)) for i, c in enumerate(CLASSES[:3])},
    }


def check_targets(acc: dict[str, Any], truth: dict[str, Any]) -> list[dict[str, Any]]:
    """Every target of issue 8 for one run: name, value, threshold, passed (None: too few steps)."""
    out: list[dict[str, Any]] = []

    def add(name, value, threshold, ok, note=""):
        out.append({"target": name, "value": value, "threshold": threshold, "passed": ok, "note": note})

    a = acc["all"]
    add(
        "llmvisor r2 (all)",
        a["llmvisor"]["r2"],
        f">= {TARGETS['r2_all']}",
        a["llmvisor"]["r2"] is not None and a["llmvisor"]["r2"] >= TARGETS["r2_all"],
    )
    for c in CLASSES:
        n = acc[c]["steps"]
        p99 = acc[c]["llmvisor"]["p99"]
        enough = n >= MIN_CLASS_STEPS
        add(
            f"llmvisor p99 ({c})",
            p99,
            f"<= {TARGETS['p99_class']}",
            (p99 <= TARGETS["p99_class"]) if enough and p99 is not None else None,
            "" if enough else f"{n} steps < {MIN_CLASS_STEPS}: reported, not held",
        )
    for c in ("all", "mixed"):
        for q in ("p90", "p99"):
            r = acc[c]["ratio"][q]
            add(
                f"token/llmvisor {q} ({c})",
                r,
                f">= {TARGETS['ratio_all_mixed']}",
                (r >= TARGETS["ratio_all_mixed"])
                if r is not None and acc[c]["steps"] >= MIN_CLASS_STEPS
                else None,
            )
    for c in CLASSES:
        for q in ("p50", "p90", "p99"):
            lv, tb = acc[c]["llmvisor"][q], acc[c]["token_baseline"][q]
            if lv is None or tb is None:
                continue
            held = acc[c]["steps"] >= 30
            add(
                f"token not better {q} ({c})",
                tb / lv if lv > 0 else None,
                ">= 1",
                (tb >= lv) if held else None,
                "" if held else "fewer than 30 steps",
            )
    for pol, res in truth["llmvisor_policies"].items():
        e = res["tenant_error_max"]
        add(
            f"shapley tenant error ({pol})",
            e,
            f"<= {TARGETS['truth_tenant']}",
            (e <= TARGETS["truth_tenant"]) if pol == "equal" else None,
            "" if pol == "equal" else "the other policy: reported, not a target",
        )
    return out


@dataclass
class Fitted:
    """One simulated run split into its fit window and its scored window, with the fitted version."""

    run: Any
    batch: Any
    kv: np.ndarray
    earlier: Any
    later: Any
    version: Any
    seconds: float


def fit_case(case: Case) -> Fitted:
    """Simulate, then fit both models on the first half of the steps."""
    from shadowd.attribution import fit
    from shadowd.attribution.accuracy import split_window

    t0 = time.perf_counter()
    run, batch, kv = simulate(case)
    t_sim = time.perf_counter() - t0
    earlier, later = split_window(batch, 0.5)
    return Fitted(run, batch, kv, earlier, later, fit(earlier, case.platform_key), t_sim)


def run_case(case: Case, log=print) -> dict[str, Any]:
    """Simulate, fit on the first half, score the second, compare with Shapley; one JSON-able dict."""
    from shadowd.attribution.accuracy import accuracy_report
    from shadowd.sim.truth import tenant_truth_errors

    t0 = time.perf_counter()
    f = fit_case(case)
    run, batch, kv, earlier, later, version, t_sim = (
        f.run,
        f.batch,
        f.kv,
        f.earlier,
        f.later,
        f.version,
        f.seconds,
    )
    later_mask = np.arange(batch.num_steps) >= earlier.num_steps
    report = accuracy_report(version, later, "equal")
    att = version.attribute(later, "equal")
    t1 = time.perf_counter()
    truth = tenant_truth_errors(
        run.engine, later, att, sample_steps=case.truth_steps, seed=case.seed, permutations=case.permutations
    )
    t_truth = time.perf_counter() - t1
    result = {
        "case": {**asdict(case), "tenants": list(case.tenants), "name": case.name},
        "regime": regime_figures(run, batch, kv, later_mask),
        "fit_steps": earlier.num_steps,
        "scored_steps": later.num_steps,
        "model_version": version.version,
        "coefficients": version.llmvisor.to_dict(),
        "token_baseline": version.token_baseline.to_dict(),
        "accuracy": report["accuracy"],
        "tenants": report["tenants"],
        "truth": truth,
        "seconds": {"simulate": t_sim, "truth": t_truth, "total": time.perf_counter() - t0},
    }
    result["targets"] = check_targets(report["accuracy"], truth)
    log(
        f"{case.name}: {batch.num_steps} steps in {t_sim:.0f} s; "
        f"KV peak {result['regime']['kv_usage']['peak']:.2f}; " + summary_line(result)
    )
    return result


def summary_line(r: dict[str, Any]) -> str:
    a = r["accuracy"]["all"]
    missed = [t["target"] for t in r["targets"] if t["passed"] is False]
    return (
        f"all R² {a['llmvisor']['r2']:.4f}, p99 {a['llmvisor']['p99']:.3f}, token ratio p90/p99 "
        f"{a['ratio']['p90']:.1f}/{a['ratio']['p99']:.1f}, Shapley tenant err "
        f"{r['truth']['llmvisor']['tenant_error_max']:.4f} (token "
        f"{r['truth']['token_baseline']['tenant_error_max']:.3f}); "
        + ("all targets met" if not missed else "MISSED: " + ", ".join(missed))
    )


def attribution_cost() -> dict[str, Any]:
    from benchmarks.attribution_timing import time_attribution

    return time_attribution(steps=2000, requests_per_step=256, repeats=5)


# --- the document -------------------------------------------------------------------------------
def _f(x: Any, nd: int = 3, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{100 * x:.{max(nd - 2, 1)}f}%" if pct else f"{x:.{nd}f}"


def accuracy_table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| run | class | steps | LLMVisor R² | p50 | p90 | p99 | token R² | p50 | p90 | p99 "
        "| ratio p90 | ratio p99 |",
        "|" + "---|" * 13,
    ]
    for r in results:
        for c in CLASSES:
            a = r["accuracy"][c]
            lv, tb, ra = a["llmvisor"], a["token_baseline"], a["ratio"]
            lines.append(
                f"| {r['case']['name']} | {c} | {a['steps']} | {_f(lv['r2'], 4)} | {_f(lv['p50'], 3, True)} "
                f"| {_f(lv['p90'], 3, True)} | {_f(lv['p99'], 3, True)} | {_f(tb['r2'], 3)} "
                f"| {_f(tb['p50'], 3, True)} | {_f(tb['p90'], 3, True)} | {_f(tb['p99'], 3, True)} "
                f"| {_f(ra['p90'], 1)}× | {_f(ra['p99'], 1)}× |"
            )
    return lines


def paper_table(results: list[dict[str, Any]]) -> list[str]:
    def span(cls: str, q: str, saturated_only: bool = False) -> str:
        vals = [
            r["accuracy"][cls]["ratio"][q]
            for r in results
            if r["accuracy"][cls]["steps"] >= MIN_CLASS_STEPS
            and r["accuracy"][cls]["ratio"][q]
            and (not saturated_only or r["case"]["regime"] == "saturated")
        ]
        return f"{min(vals):.1f}–{max(vals):.1f}×" if vals else "– (no class with enough steps)"

    # R² only means something where the class's latencies vary: runs where LLMVisor explains ≥ 95%
    dec_r2 = [
        r["accuracy"]["decode"]["token_baseline"]["r2"]
        for r in results
        if r["accuracy"]["decode"]["token_baseline"]["r2"] is not None
        and (r["accuracy"]["decode"]["llmvisor"]["r2"] or 0) >= 0.95
    ]
    return [
        "| figure | paper | here, all runs | here, saturated runs |",
        "|---|---|---|---|",
        f"| prefill: token/LLMVisor p90 | {PAPER['prefill']['p90']}× | {span('prefill', 'p90')} | "
        f"{span('prefill', 'p90', True)} |",
        f"| prefill: token/LLMVisor p99 | {PAPER['prefill']['p99']}× | {span('prefill', 'p99')} | "
        f"{span('prefill', 'p99', True)} |",
        f"| decode: token/LLMVisor p90 | {PAPER['decode']['p90']}× | {span('decode', 'p90')} | "
        f"{span('decode', 'p90', True)} |",
        f"| decode: token/LLMVisor p99 | {PAPER['decode']['p99']}× | {span('decode', 'p99')} | "
        f"{span('decode', 'p99', True)} |",
        f"| mixed: token/LLMVisor p90 | – | {span('mixed', 'p90')} | {span('mixed', 'p90', True)} |",
        f"| mixed: token/LLMVisor p99 | – | {span('mixed', 'p99')} | {span('mixed', 'p99', True)} |",
        f"| all: token/LLMVisor p90 | – | {span('all', 'p90')} | {span('all', 'p90', True)} |",
        f"| all: token/LLMVisor p99 | – | {span('all', 'p99')} | {span('all', 'p99', True)} |",
        f"| token-baseline decode R² (runs where LLMVisor's decode R² ≥ 0.95) | as low as "
        f"{PAPER['token_decode_r2_low']} | {min(dec_r2):.2f}–{max(dec_r2):.2f} | – |"
        if dec_r2
        else f"| token-baseline decode R² | as low as {PAPER['token_decode_r2_low']} | – | – |",
    ]


def summary_table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| run | KV peak / median (scored) | LLMVisor R² (all) | LLMVisor p99: prefill / decode / "
        "mixed / all | token ÷ LLMVisor p90, p99: all · mixed | tenant error vs Shapley: LLMVisor "
        "· token | targets |",
        "|" + "---|" * 7,
    ]
    for r in results:
        a, g, t = r["accuracy"], r["regime"]["kv_usage"], r["truth"]
        p99 = " / ".join(
            _f(a[c]["llmvisor"]["p99"], 3, True) + ("" if a[c]["steps"] >= MIN_CLASS_STEPS else "\\*")
            for c in CLASSES
        )
        missed = sum(1 for x in r["targets"] if x["passed"] is False)
        lines.append(
            f"| {r['case']['name']} | {g['peak']:.0%} / {g['scored_median']:.0%} | "
            f"{_f(a['all']['llmvisor']['r2'], 4)} | {p99} | {_f(a['all']['ratio']['p90'], 1)}×, "
            f"{_f(a['all']['ratio']['p99'], 1)}× · {_f(a['mixed']['ratio']['p90'], 1)}×, "
            f"{_f(a['mixed']['ratio']['p99'], 1)}× | {t['llmvisor']['tenant_error_max']:.2%} · "
            f"{t['token_baseline']['tenant_error_max']:.1%} | "
            + ("met" if not missed else f"**{missed} missed**")
            + " |"
        )
    return lines + [
        "",
        f"\\* fewer than {MIN_CLASS_STEPS} scored steps in the class: reported, not held to the p99 target.",
    ]


def regime_table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| run | KV capacity (tokens) | KV peak | KV median (scored) | KV p90 (scored) "
        "| scored steps with KV > 80% | batch p50 / p90 / max | tokens/step p50 / p90 "
        "| prompt p50 / p90 / max (CV) | KV length per row p50 / p99 | recomputed requests "
        "| simulated s |",
        "|" + "---|" * 12,
    ]
    for r in results:
        g = r["regime"]
        kv, bs, tk, pr, kl = (
            g["kv_usage"],
            g["batch_size"],
            g["tokens_per_step"],
            g["prompt_tokens"],
            g["kv_len_per_row"],
        )
        lines.append(
            f"| {r['case']['name']} | {g['kv_capacity_tokens']:,} | {kv['peak']:.0%} | "
            f"{kv['scored_median']:.0%} | {kv['scored_p90']:.0%} | {kv['scored_share_above_0.8']:.0%} | "
            f"{bs['p50']:.0f} / {bs['p90']:.0f} / {bs['max']} | {tk['p50']:.0f} / {tk['p90']:.0f} | "
            f"{pr['p50']:.0f} / {pr['p90']:.0f} / {pr['max']} ({pr['cv']:.2f}) | "
            f"{kl['p50']:.0f} / {kl['p99']:.0f} | {g['recomputed_requests']} | {g['simulated_s']:.0f} |"
        )
    return lines


def truth_table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| run | steps / requests sampled | LLMVisor `equal` max tenant error | per tenant "
        "| LLMVisor `pro_rata` | token split | token per tenant | request error p50 / p90: "
        "LLMVisor `equal` · token |",
        "|" + "---|" * 8,
    ]
    for r in results:
        t = r["truth"]
        eq, pr, tb = t["llmvisor_policies"]["equal"], t["llmvisor_policies"]["pro_rata"], t["token_baseline"]
        per = lambda d: ", ".join(f"{k} {v['error']:.2%}" for k, v in d["per_tenant"].items())  # noqa: E731
        lines.append(
            f"| {r['case']['name']} | {t['steps']} / {t['requests']} | {eq['tenant_error_max']:.2%} | "
            f"{per(eq)} | {pr['tenant_error_max']:.2%} | {tb['tenant_error_max']:.2%} | {per(tb)} | "
            f"{eq['request_error_p50']:.1%} / {eq['request_error_p90']:.1%} · "
            f"{tb['request_error_p50']:.1%} / {tb['request_error_p90']:.1%} |"
        )
    return lines


WHY = {  # what a miss of each kind has come from in these runs (see the module docs of attribution)
    "llmvisor p99": (
        "The steps behind these p99s are lone prompt chunks of a few hundred tokens reaching an idle "
        "engine (prefill-only, or beside one or two decodes). The engine prices GEMMs from the "
        "measured tables at the tile-rounded token count, a step function of the step's *total* "
        "tokens, and the A100 tables jump far more at a tile boundary than the H100 tables: a lone "
        "chunk just below a boundary runs about as fast as a decode step, one just above it much "
        "slower. No additive per-request term follows a step function of the batch total, and the "
        "breakpoint search, dominated by thousands of decode steps, puts the segment boundary (the "
        "run's breakpoint, under \"The model\" below) above the jump. The H100 runs' steps of the "
        "same kind meet the target. The class p99 sits on a handful of steps (the p99 of a few "
        "hundred steps is one of its worst few)."
    ),
    "token not better": (
        "A prefill-only step here is one chunk at an idle engine, where a token count *is* the right "
        "model (T ≈ γ0 + γ1·N for one request), and the token baseline fits that class on its own, "
        "while LLMVisor fits all classes jointly with one breakpoint (and meets the same GEMM tile "
        f"step as above). The class has under {MIN_CLASS_STEPS} scored steps, so its p90 is itself "
        "uncertain by about the margin."
    ),
    "shapley": (
        "Shapley values average a request's marginal cost over hypothetical sub-batches; a linear "
        "model fitted on step totals learns the marginal cost in the real batch. They differ where "
        "T is far from additive (GEMM flat below the knee, decode attention floored by its longest "
        "sequence)."
    ),
    "llmvisor r2": (
        "R² over a window of near-identical step latencies is small even at small relative error "
        "(the variance to explain is small); read the relative errors."
    ),
    "token/llmvisor": ("The token baseline's per-class line is close to the truth in this class."),
}


def misses(results: list[dict[str, Any]]) -> list[str]:
    out, kinds = [], []
    for r in results:
        for t in r["targets"]:
            if t["passed"] is False:
                out.append(
                    f"- **{r['case']['name']}**: {t['target']} = {_f(t['value'], 4)} "
                    f"(target {t['threshold']})."
                )
                kinds += [k for k in WHY if t["target"].startswith(k) and k not in kinds]
    if out:
        out += [""] + [f"*{k}*: {WHY[k]}" for k in kinds]
    return out


def held_out_line(doc: dict[str, Any]) -> list[str]:
    """One line near the top per held-out set the stored study has."""
    out = []
    for h in held_out_parts(doc):
        held = [t for t in h["targets"] if t["passed"] is not None]
        met = sum(1 for t in held if t["passed"])
        name = h["set"].replace("_", "-")
        out += [
            "",
            f"**Held-out runs, {name} (issue 15, `{h['command'].split(' -m ')[-1]}`): {met} of "
            f'{len(held)} held checks met** — section "Held-out runs: {name}" below.',
        ]
    return out


def held_out_share_line(doc: dict[str, Any]) -> list[str]:
    """The held-out studies' in-run per-tenant share errors vs Shapley (multi-request steps)
    counted together: the gate judges step latency, which has a live truth (the measured step);
    a tenant's share has none, so these offline studies are where its error is seen."""
    in_run = [
        (h["set"], t)
        for h in held_out_parts(doc)
        for t in h["targets"]
        if t["target"].startswith("shapley tenant error")
        and not t["where"].startswith("fit ")
        and t["passed"] is not None
    ]
    if not in_run:
        return []
    over = sorted((t["value"], s, t["where"]) for s, t in in_run if not t["passed"])
    line = (
        f"**Per-tenant share error vs Shapley on the held-out studies' own runs** (multi-request "
        f"steps, scored in run): {len(over)} of {len(in_run)} runs above the 3 % target"
    )
    if over:
        value, s, where = over[-1]
        line += f", the largest {_f(value, 3, True)} ({where}, {s.replace('_', '-')})"
    line += "." + share_misses.summary(doc)
    line += (
        " The gate judges step latency against the measured step; a tenant's share has no live "
        "truth, so its error is seen here, offline, not by the gate."
    )
    return ["", line]


def held_out_cross_line(doc: dict[str, Any]) -> list[str]:
    """The held-out studies' cross-regime p99 checks against what the gate would vouch for: a
    version fitted on one regime scores the other, but the gate judges it only on steps inside
    the envelope it calibrated (sets scored since that column was stored)."""
    held = missed = unvouched = inside_held = inside_met = 0
    gate_passes = []  # per step class, inside the envelope: missed 10 % p99 yet within the gate's limits
    sets = []
    for h in held_out_parts(doc):
        for x in h["cross"]:
            if "accuracy_inside" not in x:
                continue
            sets += [h["set"]] if h["set"] not in sets else []
            for c in CLASSES:
                a, e = x["accuracy"][c], x["envelope"][c]
                if a["steps"] >= MIN_CLASS_STEPS and a["llmvisor"]["p99"] is not None:
                    held += 1
                    if a["llmvisor"]["p99"] > TARGETS["p99_class"]:
                        missed += 1
                        unvouched += e["outside_gate_envelope"] == 1.0
                i = (x["accuracy_inside"] or {}).get(c)
                if i and i["steps"] >= MIN_CLASS_STEPS and i["llmvisor"]["p99"] is not None:
                    inside_held += 1
                    inside_met += i["llmvisor"]["p99"] <= TARGETS["p99_class"]
                    if c != "all" and i["llmvisor"]["p99"] > TARGETS["p99_class"]:
                        gate_passes.append(gate_accuracy_passes(c, i["llmvisor"]))
    if not sets:
        return []
    names = ", ".join(s.replace("held_out_", "") for s in sets)
    return [
        "",
        f"**Across regimes, against what the gate would vouch for** (held-out sets {names}, scored "
        f"with the gate's envelope): {missed} of {held} cross-regime p99 checks missed, {unvouched} "
        f"of them on a class whose every scored step lay outside the envelope the daemon would "
        f"calibrate from the fit window, which the gate would not vouch for. "
        + (
            f"On the steps inside it, {inside_met} of {inside_held} classes (all steps counted as "
            f"one) with at least {MIN_CLASS_STEPS} such steps met the {TARGETS['p99_class']:.0%} "
            f"p99 target."
            if inside_held
            else f"No class had {MIN_CLASS_STEPS} scored steps inside it."
        )
        + gate_limits_sentence(gate_passes),
    ]


def gate_accuracy_passes(step_class: str, llmvisor: dict[str, Any]) -> bool:
    """Whether the gate's own accuracy check (its default per-class p90 and p99 limits,
    ``checks.policy.GatePolicy``) would pass these error quantiles."""
    from checks.policy import GatePolicy

    p = GatePolicy()
    return llmvisor["p90"] <= p.max_p90_error[step_class] and llmvisor["p99"] <= p.max_p99_error[step_class]


def gate_limits_sentence(gate_passes: list[bool]) -> str:
    """The misses inside the envelope read against the gate's accuracy limits, which are looser
    than the study's p99 target: a miss the gate would pass is one it could vouch for."""
    from checks.policy import GatePolicy

    if not gate_passes:
        return ""
    p = GatePolicy()
    limits = "; ".join(
        f"{c} p90 ≤ {p.max_p90_error[c]:.0%}, p99 ≤ {p.max_p99_error[c]:.0%}" for c in p.max_p90_error
    )
    n, k = len(gate_passes), sum(gate_passes)
    return (
        f" The gate's own accuracy limits ({limits}: `checks.policy.GatePolicy`) are looser than "
        f"that target: of the {n} step classes (prefill, decode or mixed) that missed it inside "
        f"the envelope, {k} lay within them (the gate's accuracy check would not have refused "
        f"them) and {n - k} beyond them."
    )


def held_out_parts(doc: dict[str, Any]) -> list[dict[str, Any]]:
    from benchmarks.held_out_accuracy import SETS

    return [doc[key] for _, _, key in SETS.values() if doc.get(key)]


def saturated_figures(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Longest prompt, prompt-length CV range and KV peak over the saturated runs (prose figures)."""
    sat = [r["regime"] for r in results if r["case"]["regime"] == "saturated"] or [
        r["regime"] for r in results
    ]
    cvs = [g["prompt_tokens"]["cv"] for g in sat]
    lo, hi = f"{min(cvs):.2f}", f"{max(cvs):.2f}"
    return {
        "prompt_max": max(g["prompt_tokens"]["max"] for g in sat),
        "cv": lo if lo == hi else f"{lo}–{hi}",
        "kv_peak": f"{max(g['kv_usage']['peak'] for g in sat):.0%}",
    }


def jitter_spread(results: list[dict[str, Any]]) -> str:
    """Each platform's GPU-kernel jitter σ, read from its noise profile (an input of the engine)."""
    from shadowd.twin.platform import load_platform

    out = []
    for name in dict.fromkeys(Path(r["case"]["platform"]).name for r in results):
        noise = getattr(load_platform(name).kernels, "noise", None)
        if noise is not None:
            out.append(f"{name} {noise.gpu_rel_std:.1%}")
    return ", ".join(out) or "–"


def render(doc: dict[str, Any]) -> str:
    from benchmarks.held_out_accuracy import render_held_out

    results = doc["runs"]
    cost = doc["attribution_cost"]
    held = [t for r in results for t in r["targets"] if t["passed"] is not None]
    met = sum(1 for t in held if t["passed"])
    not_held = [
        f"{r['case']['name']} {t['target']}"
        for r in results
        for t in r["targets"]
        if t["passed"] is None and t["target"].startswith("llmvisor p99")
    ]
    miss = misses(results)
    sat, quick = saturated_figures(results), quick_cases()
    cmd = "`.venv/bin/python -m benchmarks.accuracy_study" + (" --quick`" if doc["quick"] else "`")
    parts = [
        "# Attribution accuracy on the reference engine",
        "",
        f"Generated by {cmd} ({doc['seconds']:.0f} s on {doc['cpus']} CPU cores); the figures are "
        "in `docs/accuracy.json` too. Every run drives the **real vLLM 0.33 scheduler** (CPU) with the "
        "reference engine's step latencies from **measured kernel tables** (AIConfigurator vLLM 0.14 "
        "GEMM/attention/all-reduce tables plus Vidur's prefix, host and noise profiles; "
        "see `docs/reference-engine.md`), jitter at the measured scale included. Both models are "
        "fitted on the first half of a run's steps and scored on the second half (**out of sample**). "
        "Relative error is `|T̂ − T| / T` per step.",
        "",
        f"**Targets (issue 8): {met} of {len(held)} held checks met**"
        + (" — all of them." if met == len(held) else f"; missed: {len(held) - met} (below)."),
        *held_out_line(doc),
        *held_out_share_line(doc),
        *held_out_cross_line(doc),
        "",
        *summary_table(results),
        "",
        "## Runs",
        "",
        "Two platforms (H100-SXM and A100-SXM tables) × two models (llama-3.1-8b, qwen2.5-14b; "
        "TP 1, bf16) × two load regimes. `max_num_seqs` 256, `max_num_batched_tokens` 2048 "
        "(vLLM's chunked-prefill default), `max_model_len` 32768, prefix caching on, async scheduling. "
        "The KV cache is sized as vLLM sizes it (`gpu_memory_utilization` 0.9 of the GPU's memory, "
        "minus weights and activation peak) and given **whole** to the scheduler (`kv_fraction` 1). "
        "Three tenants from real traces, arrival times rescaled to a rate (req/s) scaled by the "
        "pair's serving capacity:",
        "",
        "| regime | code (Azure 2023 code) | conv (Azure 2023 conversation) "
        "| longctx (Mooncake conversation, real prefix sharing) | steps |",
        "|---|---|---|---|---|",
    ]
    for regime, tenants in REGIMES.items():
        parts.append(
            f"| {regime} | "
            + " | ".join(f"{rate:g}" for _, rate in tenants.values())
            + f" × capacity | {STEPS[regime]:,} |"
        )
    parts += [
        "",
        "Capacity: " + ", ".join(f"{p}/{m} {c:g}" for (p, m), c in CAPACITY.items()) + ".",
        "",
        "* **saturated** is the paper's regime: high concurrency, KV usage high for most of the "
        f"scored window, prompts up to {sat['prompt_max']:,} tokens (coefficient of variation "
        f"{sat['cv']}). Arrivals outrun "
        f"the engine at times: the waiting queue grows, the cache peaks at {sat['kv_peak']} and vLLM preempts "
        "(recomputed requests are counted). Under vLLM V1's "
        "chunked prefill a busy engine schedules every prompt chunk beside running decodes, so the "
        "**prefill-only class is (almost) empty** here: prompt work is in the mixed class.",
        "* **light**: arrivals with idle gaps. This regime has the prefill-only steps (a prompt "
        "arriving at an idle engine), small decode batches in the memory-bound flat region, and "
        "CUDA-graph padding.",
        "",
        "### Load reached (KV usage = vLLM's `kv_cache_manager.usage`, per step)",
        "",
        *regime_table(results),
        "",
        "## Accuracy, out of sample, per step class",
        "",
        f"Per-class R² is weak where a class's latencies barely vary (decode at a near-fixed batch size): "
        f"read the relative errors there. A class with fewer than {MIN_CLASS_STEPS} scored steps is "
        "reported but its p99 (then close to its maximum) is not held to the target.",
        "",
        *accuracy_table(results),
        "",
        "### Beside the paper",
        "",
        *paper_table(results),
        "",
        "How our regime differs from the paper's: (1) **vLLM V1 chunked prefill**: the paper classifies "
        "steps as prefill or decode; here most prompt work runs inside mixed steps (a 2048-token "
        "budget shared with the running decodes), so our prefill-only class is small and comes from "
        "the light regime, and the mixed class — which the paper does not report — carries the "
        "comparison that matters. (2) The token baseline is given a separate linear model **per step "
        "class**, fitted with the same 1/T weighting and NNLS as LLMVisor; a single token model would "
        "do worse on mixed steps. (3) Step times come from measured kernel tables composed by the "
        "reference engine, not from timing a GPU: kernel-to-kernel overlap, clock and thermal effects "
        "are absent, and the jitter is the measured per-kernel spread (the platforms' Vidur noise "
        f"profiles: {jitter_spread(results)} log-normal σ, plus a host-time tail), which sets "
        "LLMVisor's error floor (a p99 of |relative error| near 2.6σ; the held-out section's "
        "noise-free rows show the floor directly). (4) The decode class here spans batch sizes 1–256 and contexts to 32k in one fit, "
        "which is what makes a token count (it sees only the batch size in decode) fail: the "
        "saturated runs' decode steps carry the most KV.",
        "",
    ]
    if miss:
        parts += ["### Targets missed, by how much, and why", "", *miss, ""]
    if not_held:
        parts += [
            "Classes too small to hold to the p99 target (reported above): " + "; ".join(not_held) + ".",
            "",
        ]
    parts += [
        "## Against the ground truth: per-tenant totals vs Shapley values",
        "",
        "On steps spread over each scored window (one drawn from each of equal runs of steps), the "
        "Shapley value of every request in the noiseless engine's `T` (Monte Carlo, 64 antithetic "
        "permutations with the fixed step cost taken out exactly; `shadowd.twin.ground_truth`), "
        "rescaled per step to the measured latency so that both sides divide the same total. "
        "Compared: LLMVisor's shares of the measured latency (`llmvisor_measured_ms`) under both "
        "fixed-term policies, and the token split (`vtc_ms`). Tenant error = "
        "`|Σ attributed − Σ Shapley| / Σ Shapley` over the sampled steps; the max over tenants is the "
        "demo's `attribution_truth.<llmvisor|token_baseline>.tenant_error_max` "
        f"(`shadowd.sim.truth.tenant_truth_errors`). Target: LLMVisor ≤ {TARGETS['truth_tenant']:.0%} "
        "(default policy `equal`).",
        "",
        *truth_table(results),
        "",
        "`equal` (the floor β₀ in equal parts — the Shapley value of a cost paid once per non-empty "
        "batch — and the rest of T̂ by price, see below) tracks the ground truth; `pro_rata` "
        "(everything in proportion to θ·φ) loads the fixed term onto the requests with the most work "
        "(long prompts, long contexts) and is off by far more: it is reported, not recommended. "
        "The token split misses in both directions: it charges a prompt chunk by tokens alone "
        "(ignoring the attention to its cached prefix) and a decode "
        "2 tokens regardless of its KV length.",
        "",
        *share_misses.section(doc),
        *share_rows.section(doc),
        *(line for h in held_out_parts(doc) for line in render_held_out(h)),
        "## Attribution cost",
        "",
        f"`benchmarks.attribution_timing.time_attribution`: {cost['steps']} synthetic steps of "
        f"{cost['requests_per_step']:.0f} requests, best of 5, full `ModelVersion.attribute` "
        f"(LLMVisor prediction and shares under the policy, measured-latency normalisation, token "
        f"prediction and split): **{cost['us_per_step']:.1f} µs per 256-request step** (target ≤ 20 µs); "
        f"the token baseline alone {cost['token_baseline_us_per_step']:.1f} µs, ratio "
        f"{cost['ratio_to_token_baseline']:.1f}×. This machine's other load inflates these figures.",
        "",
        "## The model (choices in `shadowd/attribution/llmvisor.py`)",
        "",
        "Additive per-request linear model with non-negative coefficients (NNLS, rows weighted by 1/T), "
        "so every share is ≥ 0 and a step's shares add up to T̂. Prefill-like rows "
        "`(p, c, p², p·c, 1)`, decode rows `(c, 1, extra draft tokens)`; two segments split at a "
        "searched token breakpoint (memory-bound / compute-bound), each with its own β and θ. "
        "Breakpoints found per run: "
        + ", ".join(
            f"{r['case']['name']} {r['coefficients']['breakpoint_tokens']:.0f}"
            if r["coefficients"]["breakpoint_tokens"] is not None
            else f"{r['case']['name']} –"
            for r in results
        )
        + ". "
        + doc["model_note"],
        "",
        "## Reproduce",
        "",
        "```",
        ".venv/bin/python -m benchmarks.accuracy_study          # this page and docs/accuracy.json",
        ".venv/bin/python -m benchmarks.accuracy_study --quick  # the two CI-sized runs, printed",
        ".venv/bin/python -m benchmarks.accuracy_study --held-out  # the held-out runs, added to both files",
        ".venv/bin/python -m benchmarks.accuracy_study --render docs/accuracy.json   # page from stored figures",
        ".venv/bin/python -m pytest -q tests/sim/test_accuracy_reference.py   # the CI-sized check",
        "```",
        "",
        f"The CI-sized check runs H100/llama-3.1-8b only: a saturated run of {quick[0].steps:,} steps "
        f"({quick[0].kv_fraction:.0%} of the vLLM-sized KV capacity, so that the cache fills within the "
        "run; the Azure code tenant at a higher rate so that its bursty trace has requests in the "
        f"scored window) and a light run of {quick[1].steps:,} steps, and asserts every target above. "
        "Weaker models (the plain `equal` split, one segment, no `p²` and `p·c` terms) failed some "
        "of its assertions during development; those runs were not stored, so no figures are given "
        "for them here.",
        "",
    ]
    return "\n".join(parts)


MODEL_NOTE = (
    "How the default `equal` policy divides a step (`shadowd/attribution/shares.py`); the latency "
    "model (T̂, the coefficients and the own-work shares θ·φ that the stability check judges) is "
    "the same under every policy. (1) The fixed term divided in equal parts is the memory-bound "
    "floor F = min(β₀, T̂), not a compute-bound segment's own intercept β₁, which is the line's "
    "extrapolation to zero tokens (β₁ ≈ β₀ − slope·breakpoint), below the cost of running any step. "
    "(2) The rest, T̂ − F, is divided by price: θ·φ for prefill-like rows (the step's segment), the "
    "memory-bound θ₀·φ for decode-like rows, whose one token costs GEMM time only because a prompt "
    "chunk made the step compute-bound; the compute-bound premium thus falls on the prefill-like "
    "work that caused it. `pro_rata` divides all of T̂ in proportion to θ·φ. The policy was chosen "
    "against the Shapley values of the development runs above; the held-out section scores it on "
    "runs it was not chosen on. Not added, because no additive per-request term can carry them: the "
    "GEMM tile steps of the step's total token count (a step function of the batch total, which "
    "sets the prefill p99 of the light A100 runs) and CUDA-graph padding (smaller steps of the same "
    "kind). A separate prefix-attention term is not needed: `c` and `p·c` carry it."
)


def held_out_sets() -> list[str]:
    """The held-out sets the held-out study can run (``benchmarks.held_out_accuracy.SETS``)."""
    from benchmarks.held_out_accuracy import SETS

    return list(SETS)


def held_out_main(out: str, log, set_name: str = "held_out_2") -> int:
    """Run the held-out study of ``set_name`` and store it beside the development runs."""
    from benchmarks.held_out_accuracy import SETS, held_out_study

    path = Path(out + ".json")
    if not path.exists():
        raise SystemExit(f"{path} missing: run the development study first (without --held-out)")
    doc = json.loads(path.read_text())
    key = SETS[set_name][2]
    doc[key] = held_out_study(log=log, set_name=set_name)
    doc["model_note"] = MODEL_NOTE
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n")
    Path(out + ".md").write_text(render(doc))
    log(f"wrote {out}.md and {out}.json ({key})")
    return 1 if any(t["passed"] is False for t in doc[key]["targets"]) else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the two CI-sized H100 llama runs, printed")
    ap.add_argument(
        "--held-out",
        action="store_true",
        help="the held-out runs (docs/validation.md's held-out set 2), added to the stored study",
    )
    ap.add_argument(
        "--held-out-set",
        default="held_out_2",
        choices=sorted(held_out_sets()),
        help="which held-out set of docs/validation.md (with --held-out)",
    )
    ap.add_argument("--out", help="path prefix for .md/.json (default docs/accuracy; none with --quick)")
    ap.add_argument("--only", help="run only cases whose name contains this")
    ap.add_argument("--render", metavar="JSON", help="only re-render the page from a results JSON")
    args = ap.parse_args(argv)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    if args.render:
        doc = json.loads(Path(args.render).read_text())
        doc["model_note"] = MODEL_NOTE
        out = args.out or str(Path(args.render).with_suffix(""))
        Path(out + ".md").write_text(render(doc))
        print(f"wrote {out}.md", file=sys.stderr)
        return 0
    if args.held_out:
        return held_out_main(args.out or "docs/accuracy", log, args.held_out_set)
    cases = quick_cases() if args.quick else all_cases()
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    t0 = time.perf_counter()
    results = [run_case(c, log=log) for c in cases]
    doc = {
        "quick": args.quick,
        "runs": results,
        "attribution_cost": attribution_cost(),
        "targets": TARGETS,
        "paper": PAPER,
        "min_class_steps": MIN_CLASS_STEPS,
        "cpus": os.cpu_count(),
        "model_note": MODEL_NOTE,
    }
    doc["seconds"] = time.perf_counter() - t0
    out = args.out or (None if args.quick else "docs/accuracy")
    if out and Path(out + ".json").exists():  # keep the held-out runs a development re-run did not touch
        from benchmarks.held_out_accuracy import SETS

        stored = json.loads(Path(out + ".json").read_text())
        for key in [k for _, _, k in SETS.values()] + ["share_rows"]:
            if key in stored:
                doc[key] = stored[key]
    text = render(doc)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out + ".md").write_text(text)
        Path(out + ".json").write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n")
        print(f"wrote {out}.md and {out}.json", file=sys.stderr)
    else:
        print(text)
    failed = [t for r in results for t in r["targets"] if t["passed"] is False]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
