"""Accuracy and shares on held-out data: the accuracy study's method on runs it was never tuned on.

The runs come from the held-out set 2 that ``benchmarks/gate_scenarios.py`` declares
(``docs/validation.md``): its platform (H200 tables), model (qwen2.5-72b, public config under
``benchmarks/models``) at its tensor parallelism, its tenants (ServeGen clients, traces) at their
declared rates, and seeds from its range, in the two load regimes its swing scenario moves between (the
tenants' rates x3 and x0.3, named ``saturated`` and ``light`` here as there). Nothing in LLMVisor,
the token baseline or the share policy is chosen on these runs: the study only scores.

Per run, the dev study's code path (:func:`benchmarks.accuracy_study.fit_case`: ``ReferenceRun``,
``fit`` on the first half, ``accuracy_report`` on the second):

* per step class, R² and relative-error p50/p90/p99 of LLMVisor and of the token baseline;
* per-tenant share error vs Shapley values of the noiseless engine
  (:func:`shadowd.sim.truth.tenant_truth_errors`) on steps of two or more requests, where the
  division is a question, and over all steps (one-request steps are exact by construction);
* the noise-free row: the same steps timed by the noiseless engine, fitted and scored the same
  way, so the jitter's part of the error is visible.

Across runs: the version fitted on one run's first half scores the other run's second half
(saturated -> light and light -> saturated), with what the fit window held (steps per class, and
how many scored steps lie beyond its batch-size, token and KV range, and how many outside the
envelope the daemon would calibrate from it, below as well as beyond) beside it, and the accuracy on
the steps inside that envelope: what the gate would vouch for.

    .venv/bin/python -m benchmarks.accuracy_study --held-out   # adds the held-out tables to
                                                               # docs/accuracy.md and .json
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.accuracy_study import (
    CLASSES,
    MIN_CLASS_STEPS,
    TARGETS,
    Case,
    Fitted,
    _f,
    fit_case,
    regime_figures,
)

REPO = Path(__file__).resolve().parent.parent
HELD_OUT_SET = "held_out_2"  # the default set; ``SETS`` lists every set the study can run
REGIME_RATE = {"saturated": 3.0, "light": 0.3}  # the swing scenario's two ends
SEEDS = {"saturated": 301, "light": 302}  # from the set's declared range
# set -> (its base in benchmarks/gate_scenarios.py, the seeds of its two runs, the doc key)
SETS = {
    "held_out_2": ("HELD2_BASE", SEEDS, "held_out"),
    "held_out_4": ("HELD4_BASE", {"saturated": 511, "light": 512}, "held_out_4"),
    "held_out_7": ("HELD7_BASE", {"saturated": 811, "light": 812}, "held_out_7"),
    "held_out_8": ("HELD8_BASE", {"saturated": 911, "light": 912}, "held_out_8"),
    "held_out_9": ("HELD9_BASE", {"saturated": 1011, "light": 1012}, "held_out_9"),
    "held_out_10": ("HELD10_BASE", {"saturated": 1111, "light": 1112}, "held_out_10"),
    "held_out_11": ("HELD11_BASE", {"saturated": 1211, "light": 1212}, "held_out_11"),
    "held_out_12": ("HELD12_BASE", {"saturated": 1311, "light": 1312}, "held_out_12"),
    "held_out_13": ("HELD13_BASE", {"saturated": 1411, "light": 1412}, "held_out_13"),
    "held_out_14": ("HELD14_BASE", {"saturated": 1511, "light": 1512}, "held_out_14"),
    "held_out_15": ("HELD15_BASE", {"saturated": 1611, "light": 1612}, "held_out_15"),
    "held_out_16": ("HELD16_BASE", {"saturated": 1711, "light": 1712}, "held_out_16"),
    "held_out_17": ("HELD17_BASE", {"saturated": 1811, "light": 1812}, "held_out_17"),
    "held_out_18": ("HELD18_BASE", {"saturated": 1911, "light": 1912}, "held_out_18"),
    "held_out_19": ("HELD19_BASE", {"saturated": 2011, "light": 2012}, "held_out_19"),
    "held_out_20": ("HELD20_BASE", {"saturated": 2111, "light": 2112}, "held_out_20"),
    "held_out_21": ("HELD21_BASE", {"saturated": 2211, "light": 2212}, "held_out_21"),
    "held_out_22": ("HELD22_BASE", {"saturated": 2311, "light": 2312}, "held_out_22"),
    "held_out_23": ("HELD23_BASE", {"saturated": 2411, "light": 2412}, "held_out_23"),
    "held_out_24": ("HELD24_BASE", {"saturated": 2511, "light": 2512}, "held_out_24"),
    "held_out_25": ("HELD25_BASE", {"saturated": 2611, "light": 2612}, "held_out_25"),
    "held_out_26": ("HELD26_BASE", {"saturated": 2711, "light": 2712}, "held_out_26"),
    "held_out_27": ("HELD27_BASE", {"saturated": 2811, "light": 2812}, "held_out_27"),
    "held_out_28": ("HELD28_BASE", {"saturated": 2911, "light": 2912}, "held_out_28"),
    "held_out_29": ("HELD29_BASE", {"saturated": 3011, "light": 3012}, "held_out_29"),
    "held_out_30": ("HELD30_BASE", {"saturated": 3111, "light": 3112}, "held_out_30"),
    "held_out_31": ("HELD31_BASE", {"saturated": 3211, "light": 3212}, "held_out_31"),
    "held_out_32": ("HELD32_BASE", {"saturated": 3311, "light": 3312}, "held_out_32"),
    "held_out_33": ("HELD33_BASE", {"saturated": 3411, "light": 3412}, "held_out_33"),
    "held_out_34": ("HELD34_BASE", {"saturated": 3511, "light": 3512}, "held_out_34"),
    "held_out_35": ("HELD35_BASE", {"saturated": 3611, "light": 3612}, "held_out_35"),
    "held_out_36": ("HELD36_BASE", {"saturated": 3711, "light": 3712}, "held_out_36"),
    "held_out_37": ("HELD37_BASE", {"saturated": 3811, "light": 3812}, "held_out_37"),
    "held_out_38": ("HELD38_BASE", {"saturated": 3911, "light": 3912}, "held_out_38"),
    "held_out_39": ("HELD39_BASE", {"saturated": 4011, "light": 4012}, "held_out_39"),
    "held_out_40": ("HELD40_BASE", {"saturated": 4111, "light": 4112}, "held_out_40"),
    "held_out_41": ("HELD41_BASE", {"saturated": 4211, "light": 4212}, "held_out_41"),
    "held_out_42": ("HELD42_BASE", {"saturated": 4311, "light": 4312}, "held_out_42"),
    "held_out_43": ("HELD43_BASE", {"saturated": 4411, "light": 4412}, "held_out_43"),
    "held_out_44": ("held_out_44", {"saturated": 4511, "light": 4512}, "held_out_44"),  # ACCURACY_ONLY
    "held_out_45": ("HELD45_BASE", {"saturated": 4611, "light": 4612}, "held_out_45"),
    "held_out_46": ("HELD46_BASE", {"saturated": 4711, "light": 4712}, "held_out_46"),
    "held_out_47": ("HELD47_BASE", {"saturated": 4811, "light": 4812}, "held_out_47"),
    "held_out_48": ("HELD48_BASE", {"saturated": 4911, "light": 4912}, "held_out_48"),
    "held_out_49": ("HELD49_BASE", {"saturated": 5011, "light": 5012}, "held_out_49"),
    "held_out_50": ("HELD50_BASE", {"saturated": 5111, "light": 5112}, "held_out_50"),
    "held_out_51": ("HELD51_BASE", {"saturated": 5211, "light": 5212}, "held_out_51"),
    "held_out_52": ("HELD52_BASE", {"saturated": 5311, "light": 5312}, "held_out_52"),
    "held_out_53": ("HELD53_BASE", {"saturated": 5411, "light": 5412}, "held_out_53"),
    "held_out_54": ("HELD54_BASE", {"saturated": 5511, "light": 5512}, "held_out_54"),
    "held_out_55": ("HELD55_BASE", {"saturated": 5611, "light": 5612}, "held_out_55"),
}
# Sets declared for the accuracy study alone (no gate-matrix rows): set -> (base, declaration).
# Written, with the set's entry in ``SETS``, before any run of the set.  The gate matrix's own
# held-out 44 (``benchmarks/gate_protocol.py``), declared later for design r43, is another set of
# runs: the same model, other tenants and seeds.
ACCURACY_ONLY = {
    "held_out_44": (
        dict(
            platform="$SHADOWD_SHARED/data/kernels/aiconfigurator-vllm-0.14.0/h200_sxm",
            model="benchmarks/models/stablelm-3b-4e1t",
            tp=1,
            tenants=("a=azure-code:3", "b=lengths:arxiv:1", "c=servegen:13:12"),
        ),
        "declared on 2026-12-06 in `benchmarks/held_out_accuracy.py` (`ACCURACY_ONLY`), an "
        "accuracy-only set with no gate-matrix rows, after the model-Shapley share candidate "
        "(`shadowd/attribution/model_shapley.py`) was written and scored on the share misses of "
        "sets 4-43 (its development evidence), and before any run of this set: runs that played "
        "no part in proposing it. Model stablelm-3b-4e1t tp1 (after the public config of Stability "
        "AI's StableLM 3B 4E1T, added for this set as benchmarks/models/stablelm-3b-4e1t; never run "
        "before but for a 300-step machinery check on the H100 tables, figures not read): full "
        "multi-head attention at 2.8B parameters. Tenants: the Azure 2023 code trace at 3 req/s, "
        "arXiv-summarisation lengths at 1 req/s, ServeGen client 13 at 12 req/s (every source used "
        "before; this mix, model and rates not). Seeds 4511 (saturated) and 4512 (light). What it "
        "tests: runs and tenants above the 3 % share target under model Shapley against `equal` "
        "on the same runs; two runs can refute the candidate more than confirm it",
    ),
}
STEPS = {"saturated": 10000, "light": 16000}
CROSS = (("saturated", "light"), ("light", "saturated"))  # (fit on, score on)
COMMAND = ".venv/bin/python -m benchmarks.accuracy_study --held-out"


def _scaled(tenant: str, factor: float) -> str:
    """``name=servegen:<client>:<rate>`` with its rate times ``factor``."""
    head, rate = tenant.rsplit(":", 1)
    return f"{head}:{float(rate) * factor:g}"


def held_out_cases(
    steps: dict[str, int] | None = None, truth_steps: int = 150, set_name: str = HELD_OUT_SET
) -> list[Case]:
    """The held-out runs, built from the set ``benchmarks/gate_scenarios.py`` declares (or, for an
    accuracy-only set, ``ACCURACY_ONLY``)."""
    from benchmarks import gate_scenarios

    steps = steps or STEPS
    base_name, seeds, _ = SETS[set_name]
    base = ACCURACY_ONLY[base_name][0] if base_name in ACCURACY_ONLY else getattr(gate_scenarios, base_name)
    return [
        Case(
            Path(base["platform"]).name,
            str(REPO / base["model"]),
            regime,
            steps[regime],
            seed=seeds[regime],
            truth_steps=truth_steps,
            tenants=tuple(_scaled(t, rate) for t in base["tenants"]),
            tp=base["tp"],
        )
        for regime, rate in REGIME_RATE.items()
    ]


def dev_runs_of(cases: list[Case]) -> list[str]:
    """Names of the held-out cases that share platform, model and TP with a development run."""
    from benchmarks.accuracy_study import all_cases, quick_cases

    dev = {(c.platform, Path(c.model).name, c.tp) for c in all_cases() + quick_cases()}
    return [c.name for c in cases if (c.platform, Path(c.model).name, c.tp) in dev]


# --- one run -------------------------------------------------------------------------------------
def noiseless(fitted: Fitted):
    """The run's steps with each latency replaced by the noiseless engine's ``T`` of that step."""
    b, engine = fitted.batch, fitted.run.engine
    ends = np.searchsorted(b.req_step, np.arange(b.num_steps + 1), side="left")
    t = np.array(
        [
            engine.expected_ms(b.new_tokens[lo:hi], b.context_tokens[lo:hi], b.prefill[lo:hi])
            for lo, hi in zip(ends[:-1], ends[1:])
        ]
    )
    return replace(b, latency_ms=t, kind=b.kind)


def multi_request(batch):
    """The steps that carry two or more requests."""
    return batch.select_steps(batch.batch_size() >= 2)


def share_errors(engine, version, batch, case: Case) -> dict[str, Any]:
    """Shapley comparison over all scored steps and over the multi-request ones only."""
    from shadowd.sim.truth import tenant_truth_errors

    out = {}
    for name, part in (("all_steps", batch), ("multi_request", multi_request(batch))):
        out[name] = tenant_truth_errors(
            engine,
            part,
            version.attribute(part, "equal"),
            sample_steps=case.truth_steps,
            seed=case.seed,
            permutations=case.permutations,
            model=version.llmvisor,  # the model's own Shapley values beside the policies
        )
        out[name]["scored_steps"] = part.num_steps
        out[name]["tenants_sampled"] = sum(
            1 for v in out[name]["llmvisor"]["per_tenant"].values() if v["shapley_ms"] > 0
        )
    return out


def bounds(fitted: Fitted) -> dict[str, Any]:
    """Each tenant's attributed time on the multi-request scored steps and the range that
    coefficients fitting the window as well would give it (``shadowd.attribution.share_bounds``)."""
    from shadowd.attribution.share_bounds import share_bounds

    found = share_bounds(fitted.version, fitted.earlier, multi_request(fitted.later))
    return {t: b.to_dict() for t, b in found.items()}


def noise_free(fitted: Fitted, case: Case) -> dict[str, Any]:
    """Fit and score the same steps with noiseless latencies (the jitter floor)."""
    from shadowd.attribution import fit
    from shadowd.attribution.accuracy import accuracy_report, split_window

    earlier, later = split_window(noiseless(fitted), 0.5)
    version = fit(earlier, case.platform_key)
    return {
        "accuracy": accuracy_report(version, later, "equal")["accuracy"],
        "shares": share_errors(fitted.run.engine, version, later, case)["multi_request"],
    }


def held_out_run(case: Case, fitted: Fitted, log=print) -> dict[str, Any]:
    from shadowd.attribution.accuracy import accuracy_report

    t0 = time.perf_counter()
    later_mask = np.arange(fitted.batch.num_steps) >= fitted.earlier.num_steps
    result = {
        "case": {**asdict(case), "tenants": list(case.tenants), "name": case.name},
        "regime": regime_figures(fitted.run, fitted.batch, fitted.kv, later_mask),
        "fit_steps": fitted.earlier.num_steps,
        "scored_steps": fitted.later.num_steps,
        "model_version": fitted.version.version,
        "coefficients": fitted.version.llmvisor.to_dict(),
        "accuracy": accuracy_report(fitted.version, fitted.later, "equal")["accuracy"],
        "shares": share_errors(fitted.run.engine, fitted.version, fitted.later, case),
        "share_bounds": bounds(fitted),
        "noise_free": noise_free(fitted, case),
    }
    result["seconds"] = {"simulate": fitted.seconds, "score": time.perf_counter() - t0}
    log(f"held out {case.name}: {fitted.batch.num_steps} steps, simulated in {fitted.seconds:.0f} s")
    return result


# --- across runs ---------------------------------------------------------------------------------
def envelope(fit_window, scored, inside: np.ndarray) -> dict[str, Any]:
    """Per class: fit-window steps, the share of scored steps beyond the fit window's range, and
    the share outside the gate's envelope (``inside``: per scored step, inside it).

    Beyond = more requests, new tokens or KV tokens in the step than any fit step had: one-sided.
    Outside = what the gate would refuse to vouch for, above or below (its floors on batch size
    and tokens per step, and the decode-only steps' own range, ``checks.WorkloadEnvelope``): a
    light run's small decode batches lie below a saturated window, not beyond it.
    """
    f, s = fit_window.composition(), scored.composition()
    beyond = np.zeros(scored.num_steps, dtype=bool)
    for k in ("batch_size", "new_tokens", "kv_tokens"):
        beyond |= s[k] > f[k].max(initial=0.0)
    out = {}
    for i, c in enumerate(CLASSES):
        m = np.ones(scored.num_steps, bool) if c == "all" else scored.kind == i
        out[c] = {
            "fit_steps": int(fit_window.num_steps if c == "all" else np.sum(fit_window.kind == i)),
            "scored_steps": int(m.sum()),
            "beyond_envelope": float(beyond[m].mean()) if m.any() else None,
            "outside_gate_envelope": float((~inside[m]).mean()) if m.any() else None,
        }
    return out


def gate_inside(fit_window, scored) -> np.ndarray:
    """Per scored step, inside the envelope the daemon would calibrate from ``fit_window``
    (``window_envelope`` with the daemon's settings; the fit window is its own fit part)."""
    from shadowd.daemon.calibrator import window_envelope
    from shadowd.daemon.refit import inside_envelope

    return inside_envelope(scored, window_envelope(fit_window, fit_window))


def cross_regime(fitted: dict[str, Fitted], cases: dict[str, Case]) -> list[dict[str, Any]]:
    from shadowd.attribution.accuracy import accuracy_report

    out = []
    for src, dst in CROSS:
        if src not in fitted or dst not in fitted:
            continue
        a, b = fitted[src], fitted[dst]
        inside = gate_inside(a.earlier, b.later)
        vouched = b.later.select_steps(inside)
        out.append(
            {
                "fit_on": src,
                "score_on": dst,
                "model_version": a.version.version,
                "accuracy": accuracy_report(a.version, b.later, "equal")["accuracy"],
                "envelope": envelope(a.earlier, b.later, inside),
                # the steps the gate would vouch for: those inside the envelope it would calibrate
                "accuracy_inside": accuracy_report(a.version, vouched, "equal")["accuracy"]
                if vouched.num_steps
                else None,
                # every step of the other run is out of sample for this version
                "shares": share_errors(b.run.engine, a.version, b.batch, cases[dst])["multi_request"],
            }
        )
    return out


# --- targets -------------------------------------------------------------------------------------
def _p99_targets(where: str, acc: dict[str, Any], why) -> list[dict[str, Any]]:
    out = []
    for c in CLASSES:
        n, p99 = acc[c]["steps"], acc[c]["llmvisor"]["p99"]
        held = n >= MIN_CLASS_STEPS and p99 is not None
        ok = (p99 <= TARGETS["p99_class"]) if held else None
        out.append(
            {
                "where": where,
                "target": f"llmvisor p99 ({c})",
                "value": p99,
                "threshold": f"≤ {TARGETS['p99_class']:.0%}",
                "passed": ok,
                "note": (why(c) if ok is False else "")
                if held
                else f"{n} steps < {MIN_CLASS_STEPS}: reported, not held",
            }
        )
    return out


def _why_in_run(run: dict[str, Any]):
    def why(c: str) -> str:
        nf = run["noise_free"]["accuracy"][c]["llmvisor"]["p99"]
        if nf is None:
            return "no noise-free figure"
        cause = (
            "the model's form, not the jitter" if nf > TARGETS["p99_class"] else "the jitter takes it over"
        )
        return f"noise-free p99 {_f(nf, 3, True)}: {cause}"

    return why


def _why_cross(x: dict[str, Any]):
    def why(c: str) -> str:
        e = x["envelope"][c]
        said = (
            f"the {x['fit_on']} fit window held {e['fit_steps']} {c} steps; "
            f"{_f(e['beyond_envelope'], 2, True)} of the scored {c} steps lie beyond its envelope"
        )
        if e.get("outside_gate_envelope") is None:
            return said
        inside = (x.get("accuracy_inside") or {}).get(c) or {}
        n = inside.get("steps", 0)
        p99 = (inside.get("llmvisor") or {}).get("p99") if n >= MIN_CLASS_STEPS else None
        vouched = (
            f"p99 on the {n} inside it {_f(p99, 3, True)}"
            if p99 is not None
            else f"{n} inside it, too few to score ({MIN_CLASS_STEPS})"
        )
        return f"{said}, {_f(e['outside_gate_envelope'], 2, True)} outside the gate's: {vouched}"

    return why


def held_out_targets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 15's held-out targets: p99 per class (in run and across runs), shares on multi steps."""
    out: list[dict[str, Any]] = []
    for r in doc["runs"]:
        name = r["case"]["name"]
        out += _p99_targets(name, r["accuracy"], _why_in_run(r))
        nf = r["noise_free"]["shares"]["llmvisor"]["tenant_error_max"]
        out.append(_share_target(name, r["shares"]["multi_request"], f"noise-free {_f(nf, 3, True)}"))
    for x in doc["cross"]:
        where = f"fit {x['fit_on']} -> score {x['score_on']}"
        out += _p99_targets(where, x["accuracy"], _why_cross(x))
        beyond = _f(x["envelope"]["all"]["beyond_envelope"], 2, True)
        why = f"a version fitted on the {x['fit_on']} run ({beyond} of the scored half beyond its envelope)"
        out.append(_share_target(where + " (whole run)", x["shares"], why))
    return out


def _share_target(where: str, s: dict[str, Any], why: str) -> dict[str, Any]:
    """Per-tenant share error on multi-request steps; a window with one tenant tests nothing."""
    e, limit = s["llmvisor"]["tenant_error_max"], TARGETS["truth_tenant"]
    one = s["tenants_sampled"] < 2
    return {
        "where": where,
        "target": "shapley tenant error, multi-request steps (equal)",
        "value": e,
        "threshold": f"≤ {limit:.0%}",
        "passed": None if one or e is None else e <= limit,
        "note": (
            f"{s['tenants_sampled']} tenant in the sampled steps: its total is the whole latency, "
            "exact by construction; not a test"
        )
        if one
        else (why if e is not None and e > limit else ""),
    }


# --- the whole held-out study --------------------------------------------------------------------
def held_out_study(
    cases: list[Case] | None = None, log=print, set_name: str = HELD_OUT_SET
) -> dict[str, Any]:
    """Run, score and judge the held-out cases; the set's part of ``docs/accuracy.json``."""
    t0 = time.perf_counter()
    cases = cases if cases is not None else held_out_cases(set_name=set_name)
    fitted = {c.regime: fit_case(c) for c in cases}
    runs = [held_out_run(c, fitted[c.regime], log) for c in cases]
    doc = {
        "set": set_name,
        "command": COMMAND + ("" if set_name == HELD_OUT_SET else f" --held-out-set {set_name}"),
        "runs": runs,
        "cross": cross_regime(fitted, {c.regime: c for c in cases}),
        "shares_dev_runs": dev_runs_of(cases),
    }
    doc["targets"] = held_out_targets(doc)
    doc["seconds"] = time.perf_counter() - t0
    return doc


# --- the document --------------------------------------------------------------------------------
def _acc_row(label: str, cls: str, a: dict[str, Any]) -> str:
    lv, tb, ra = a["llmvisor"], a["token_baseline"], a["ratio"]
    held = "" if a["steps"] >= MIN_CLASS_STEPS else "\\*"
    return (
        f"| {label} | {cls} | {a['steps']}{held} | {_f(lv['r2'], 4)} | {_f(lv['p50'], 3, True)} "
        f"| {_f(lv['p90'], 3, True)} | {_f(lv['p99'], 3, True)} | {_f(tb['r2'], 3)} "
        f"| {_f(tb['p50'], 3, True)} | {_f(tb['p90'], 3, True)} | {_f(tb['p99'], 3, True)} "
        f"| {_f(ra['p90'], 1)}× | {_f(ra['p99'], 1)}× |"
    )


ACC_HEAD = [
    "| scored | class | steps | LLMVisor R² | p50 | p90 | p99 | token R² | p50 | p90 | p99 "
    "| token ÷ LLMVisor p90 | p99 |",
    "|" + "---|" * 13,
]


def _shares_row(label: str, s: dict[str, Any]) -> str:
    lv, tb = s["llmvisor"], s["token_baseline"]
    ms = (s.get("model_shapley") or {}).get("tenant_error_max")  # measured from 2026-12-06 on
    per = ", ".join(f"{k} {v['error']:.2%}" for k, v in lv["per_tenant"].items() if v["error"] is not None)
    return (
        f"| {label} | {s['scored_steps']} | {s['steps']} / {s['requests']} | {s['tenants_sampled']} "
        f"| {_f(lv['tenant_error_max'], 4, True)} | {per or '–'} | {_f(tb['tenant_error_max'], 3, True)} "
        f"| {_f(ms, 3, True)} | {_f(lv['request_error_p50'], 3, True)} / {_f(lv['request_error_p90'], 3, True)} |"
    )


def _regime_notes(runs: list[dict[str, Any]]) -> list[str]:
    """What the runs did not reach: a full KV cache, every tenant in the scored window."""
    out = []
    for r in runs:
        g, name = r["regime"], r["case"]["name"]
        if r["case"]["regime"] == "saturated" and g["kv_usage"]["scored_median"] < 0.8:
            out.append(
                f"- {name}: the scored window did not fill the KV cache (median "
                f"{g['kv_usage']['scored_median']:.0%}, peak {g['kv_usage']['peak']:.0%} over the run): "
                "the name follows the protocol's rate multiple, not the load reached."
            )
        seen, declared = r["shares"]["all_steps"]["tenants_sampled"], len(r["case"]["tenants"])
        if seen < declared:
            out.append(
                f"- {name}: {seen} of its {declared} tenants in the sampled scored steps (the others "
                "had no request running in any of them)."
            )
    return (["What the runs did and did not reach:", "", *out]) if out else []


def _p99_inside(x: dict[str, Any], c: str) -> str:
    if x.get("accuracy_inside", False) is False:
        return "—"
    a = (x["accuracy_inside"] or {}).get(c) or {"steps": 0, "llmvisor": {"p99": None}}
    return f"{_f(a['llmvisor']['p99'], 1, True)} ({a['steps']})"


def render_held_out(h: dict[str, Any]) -> list[str]:
    """The held-out section of docs/accuracy.md."""
    held = [t for t in h["targets"] if t["passed"] is not None]
    met = sum(1 for t in held if t["passed"])
    runs = h["runs"]
    c0 = runs[0]["case"]
    parts = [
        f"## Held-out runs: {h['set'].replace('_', '-')}",
        "",
        f"Generated by `{h['command']}` ({h['seconds']:.0f} s); figures in `docs/accuracy.json` "
        f"under `{SETS[h['set']][2]}`. The runs come from **{h['set'].replace('_', '-')}**"
        + (
            f", {ACCURACY_ONLY[h['set']][1]}"
            if h["set"] in ACCURACY_ONLY
            else " of `docs/validation.md` (declared in `benchmarks/gate_scenarios.py`)"
        )
        + f": platform `{c0['platform']}`, model "
        f"`{Path(c0['model']).name}` at TP {c0['tp']}, its tenants at their "
        "declared rates times the swing scenario's two ends, seeds from its range. None of "
        "LLMVisor's terms, the token baseline, the breakpoint search or the share policy was chosen "
        "on them: this section only scores. Same method as above: fit on the first half of a run, "
        "score the second half. "
        + (
            "Platform, model and TP differ from every development run above."
            if not h["shares_dev_runs"]
            else "**Shares platform, model and TP with a development run:** "
            + ", ".join(h["shares_dev_runs"])
        ),
        "",
        f"**Held-out targets (issue 15): {met} of {len(held)} held checks met**"
        + (" — all of them." if met == len(held) else f"; missed: {len(held) - met} (below)."),
        "Targets: LLMVisor p99 ≤ "
        f"{TARGETS['p99_class']:.0%} on every class with ≥ {MIN_CLASS_STEPS} scored steps (in the run "
        f"and across runs); LLMVisor's per-tenant share error vs Shapley ≤ {TARGETS['truth_tenant']:.0%} "
        "on multi-request steps. The token baseline's ratios are reported, not judged.",
        "",
        "| run | tenants | seed | steps | KV peak / median (scored) | batch p50 / p90 / max (scored) "
        "| scored steps prefill / decode / mixed | simulated s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        g, c = r["regime"], r["case"]
        bs, k = g["batch_size"], g["steps_by_class"]
        parts.append(
            f"| {c['name']} | {', '.join(c['tenants'])} | {c['seed']} | {c['steps']:,} "
            f"| {g['kv_usage']['peak']:.0%} / {g['kv_usage']['scored_median']:.0%} "
            f"| {bs['p50']:.0f} / {bs['p90']:.0f} / {bs['max']} "
            f"| {k['prefill']} / {k['decode']} / {k['mixed']} | {g['simulated_s']:.0f} |"
        )
    parts += ["", *_regime_notes(runs)]
    parts += [
        "",
        "### Accuracy per step class, out of sample (measured and noise-free)",
        "",
        "*noise-free*: the same steps timed by the noiseless engine (`jitter=False`), fitted and "
        "scored the same way: the error left there is the model's; the rest is the engine's jitter. "
        f"\\* fewer than {MIN_CLASS_STEPS} scored steps: reported, not held to the p99 target.",
        "",
        *ACC_HEAD,
    ]
    for r in runs:
        for label, acc in ((r["case"]["name"], r["accuracy"]), ("  noise-free", r["noise_free"]["accuracy"])):
            parts += [_acc_row(label, c, acc[c]) for c in CLASSES]
    parts += [
        "",
        "### Across regimes: fitted on one run, scored on the other",
        "",
        "The version fitted on one run's first half scores the other run's second half. *fit steps*: "
        "steps of the class in the fit window; *beyond*: scored steps with more requests, new "
        "tokens or KV tokens than any step of the fit window (one-sided); *outside*: scored steps "
        "outside the envelope the daemon would calibrate from that window, above or below it (what "
        "the gate would not vouch for); *p99 inside*: LLMVisor's p99 on the scored steps inside it "
        "(their count in brackets). — : the set was scored before these two columns existed.",
        "",
        "| fit on → scored on | class | fit steps | beyond | outside | p99 inside | scored steps "
        "| LLMVisor R² | p50 | p90 | p99 | token R² | p50 | p90 | p99 | token ÷ LLMVisor p90 | p99 |",
        "|" + "---|" * 17,
    ]
    for x in h["cross"]:
        for c in CLASSES:
            e = x["envelope"][c]
            row = _acc_row(f"{x['fit_on']} → {x['score_on']}", c, x["accuracy"][c])
            head, rest = row.split(f" | {c} | ", 1)
            beyond = _f(e["beyond_envelope"], 2, True)
            outside = _f(e["outside_gate_envelope"], 2, True) if "outside_gate_envelope" in e else "—"
            parts.append(
                f"{head} | {c} | {e['fit_steps']} | {beyond} | {outside} | {_p99_inside(x, c)} | {rest}"
            )
    parts += [
        "",
        "### Shares vs Shapley",
        "",
        "Per-tenant totals of LLMVisor's shares of the measured latency (`equal`) against Shapley "
        "values of the noiseless engine, rescaled per step to the measured latency (as above). "
        "*multi-request*: only steps of two or more requests, where the division is a question "
        "(a one-request step's share is its whole latency, exact by construction); *all steps*: the "
        "same over every scored step; *noise-free*: multi-request steps of the noise-free fit; "
        "*fitted on X, whole Y run*: the version fitted on run X divides every multi-request step "
        "of run Y (all of it out of sample for that version). With one tenant in the sampled steps "
        "the per-tenant figure is exact by construction and is not held to the target; the "
        "per-request error still measures the division. *model Shapley max*: the same steps "
        "divided as the Shapley values of the fitted model's own step latency over sub-batches "
        "(`shadowd/attribution/model_shapley.py`), a candidate policy, not the one in force; a "
        "dash where the study was stored before it was measured.",
        "",
        "| run, steps | scored steps | sampled steps / requests | tenants in them "
        "| LLMVisor max tenant error | per tenant | token split max | model Shapley max "
        "| LLMVisor request error p50 / p90 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        n = r["case"]["name"]
        parts += [
            _shares_row(f"{n}, multi-request", r["shares"]["multi_request"]),
            _shares_row(f"{n}, all steps", r["shares"]["all_steps"]),
            _shares_row(f"{n}, multi-request, noise-free", r["noise_free"]["shares"]),
        ]
    parts += [
        _shares_row(f"fitted on {x['fit_on']}, whole {x['score_on']} run, multi-request", x["shares"])
        for x in h["cross"]
    ]
    missed = [t for t in h["targets"] if t["passed"] is False]
    parts += ["", "### Held-out targets missed, by how much, and why", ""]
    parts += (
        [
            f"- **{t['where']}**: {t['target']} = {_f(t['value'], 3, True)} (target {t['threshold']})"
            + (f"; {t['note']}." if t["note"] else ".")
            for t in missed
        ]
        if missed
        else ["None."]
    )
    not_held = [f"{t['where']} {t['target']} ({t['note']})" for t in h["targets"] if t["passed"] is None]
    if not_held:
        parts += ["", "Not held (reported above):", "", *(f"- {x}" for x in not_held)]
    return parts + [""]
