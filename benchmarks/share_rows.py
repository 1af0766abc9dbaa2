"""Held-out share misses, row class by row class: which rows' attributed time parts from the truth.

``benchmarks/share_misses.py`` found that most held-out share misses persist on the noiseless
engine (the model's own error, not the jitter) and that the fit's window pinned their
coefficients (not a window that failed to identify them).  This study asks where inside the
step the split goes wrong.  For each tenant that section lists beyond the truth's noise, the
run is simulated again from its own declaration and seed, fitted and scored on the noiseless
engine as the study's noise-free refit is, and on the same sampled steps as the study (its
``truth_steps`` spread over the multi-request steps, the same permutations and seed) each row's
attributed time is set beside its Shapley value, summed by row class: prompt chunks by size and
decode rows by context, over every tenant's rows of the run and over the missing tenant's own,
under ``equal`` (in force) and under the model's own Shapley values (a candidate,
:mod:`shadowd.attribution.model_shapley`).  A class whose ratio sits away from 1 for every
tenant alike is the split's; a tenant made mostly of one such class misses by it, while a
tenant with rows on both sides of it can cancel.

    .venv/bin/python -m benchmarks.share_rows            # every miss; stores "share_rows" in
                                                         # docs/accuracy.json, re-renders accuracy.md
    .venv/bin/python -m benchmarks.share_rows --only held_out_13   # the misses of one set, printed
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

# Row classes: prompt chunks by the tokens they carry, decode rows by the context they read.
PREFILL_EDGES = (256, 1024)
DECODE_EDGES = (1000, 4000)
DOC = Path("docs/accuracy")


def _classes(prefill: np.ndarray, new: np.ndarray, ctx: np.ndarray) -> dict[str, np.ndarray]:
    """Each row class's mask over the rows."""
    lo, hi = PREFILL_EDGES
    dlo, dhi = DECODE_EDGES
    decode = ~prefill
    return {
        f"prompt chunk < {lo}": prefill & (new < lo),
        f"prompt chunk {lo}-{hi - 1}": prefill & (new >= lo) & (new < hi),
        f"prompt chunk ≥ {hi}": prefill & (new >= hi),
        f"decode, context < {dlo}": decode & (ctx < dlo),
        f"decode, context {dlo}-{dhi - 1}": decode & (ctx >= dlo) & (ctx < dhi),
        f"decode, context ≥ {dhi}": decode & (ctx >= dhi),
    }


def _ratios(att: np.ndarray, shap: np.ndarray, model: np.ndarray, masks: dict[str, np.ndarray]) -> list:
    """Per non-empty class: rows, its share of the truth given, attributed ÷ Shapley under both."""
    total = shap.sum()
    out = []
    for name, m in masks.items():
        s = shap[m].sum()
        if not m.any() or s <= 0:
            continue
        out.append(
            {
                "class": name,
                "rows": int(m.sum()),
                "truth_share": float(s / total),
                "equal": float(att[m].sum() / s),
                "model_shapley": float(model[m].sum() / s),
            }
        )
    return out


def class_ratios(
    engine, version, part, tenant: str, sample_steps: int, permutations: int, seed: int
) -> dict[str, Any]:
    """``tenant``'s signed errors and every row class's ratios on ``part`` (multi-request scored
    steps), sampled as ``shadowd.sim.truth.tenant_truth_errors`` samples them."""
    from shadowd.sim.truth import model_shapley_rows, spread_sample, step_shapley, tenant_index

    steps = spread_sample(part.num_steps, sample_steps, seed)
    rows, shap, _ = step_shapley(engine, part, steps, permutations=permutations, seed=seed)
    att = version.attribute(part, "equal").llmvisor_measured_ms[rows]
    model = model_shapley_rows(version.llmvisor, part, steps, seed)
    names, inv = tenant_index(part)
    mine = inv[rows] == list(names).index(tenant)
    masks = _classes(part.prefill[rows].astype(bool), part.new_tokens[rows], part.context_tokens[rows])
    return {
        "error_equal": float(att[mine].sum() / shap[mine].sum() - 1),
        "error_model_shapley": float(model[mine].sum() / shap[mine].sum() - 1),
        "all_rows": _ratios(att, shap, model, masks),
        "tenant_rows": _ratios(att[mine], shap[mine], model[mine], {k: m[mine] for k, m in masks.items()}),
    }


def rows_of_miss(set_name: str, run: str, tenant: str) -> dict[str, Any]:
    """One miss, row class by row class, on the noiseless engine (see the module docstring)."""
    from benchmarks.accuracy_study import fit_case
    from benchmarks.held_out_accuracy import held_out_cases, multi_request, noiseless
    from shadowd.attribution import fit
    from shadowd.attribution.accuracy import split_window

    case = next(c for c in held_out_cases(set_name=set_name) if c.name == run)
    t0 = time.perf_counter()
    fitted = fit_case(case)
    earlier, later = split_window(noiseless(fitted), 0.5)
    version = fit(earlier, case.platform_key)
    found = class_ratios(
        fitted.run.engine,
        version,
        multi_request(later),
        tenant,
        case.truth_steps,
        case.permutations,
        case.seed,
    )
    return {
        "set": set_name,
        "run": run,
        "tenant": tenant,
        **found,
        "breakpoint_tokens": version.llmvisor.to_dict()["breakpoint_tokens"],
        "seconds": time.perf_counter() - t0,
    }


def study(doc: dict[str, Any], only: str | None = None, log=print, jobs: int = 2) -> list[dict[str, Any]]:
    """Every miss beyond the truth's noise that ``share_misses`` lists (of set ``only``, if given)."""
    from benchmarks import share_misses

    todo = [
        (m["set"], m["run"], m["tenant"])
        for m in share_misses.misses(doc)
        if m["beyond_noise"] is True and (not only or m["set"] == only)
    ]
    with ProcessPoolExecutor(max_workers=jobs) as pool:  # each miss its own simulation
        out = list(pool.map(rows_of_miss, *zip(*todo))) if todo else []
    for r in out:
        log(f"{r['set']} {r['run']} {r['tenant']}: equal {r['error_equal']:+.1%} in {r['seconds']:.0f} s")
    return out


# --- rendering -----------------------------------------------------------------------------------
def _cell(c: dict[str, Any] | None) -> str:
    if c is None:
        return "–"
    return f"{c['equal']:.3f} · {c['model_shapley']:.3f} ({100 * c['truth_share']:.0f}%)"


def section(doc: dict[str, Any]) -> list[str]:
    """docs/accuracy.md's section, from the stored ``share_rows`` (none stored: nothing)."""
    stored = doc.get("share_rows")
    if not stored:
        return []
    found = stored["misses"]
    classes = list(_classes(np.zeros(0, bool), np.zeros(0), np.zeros(0)))
    head = "| set | run | tenant | rows | error: `equal` · model Shapley | " + " | ".join(classes) + " |"
    lines = [
        "## Held-out share misses, row class by row class",
        "",
        "Where inside the step the split of a miss goes wrong (`benchmarks/share_rows.py`). Each "
        "tenant of the table above beyond the truth's noise, its run simulated again from its "
        "declaration and seed, fitted and scored on the noiseless engine (the model's own error), "
        "on the study's own sampled steps. Per row class, attributed time ÷ Shapley value under "
        "`equal` · under the model's own Shapley values, and in brackets the class's part of the "
        "truth in those rows; a ratio above 1 is time charged beyond the truth. *all*: every "
        "tenant's rows of the run; *tenant*: the missing tenant's own.",
        "",
        head,
        "|---|---|---|---|---|" + "---|" * len(classes),
    ]
    for r in found:
        for who, key in (("all", "all_rows"), ("tenant", "tenant_rows")):
            by = {c["class"]: c for c in r[key]}
            err = (
                f"{100 * r['error_equal']:+.1f}% · {100 * r['error_model_shapley']:+.1f}%"
                if who == "tenant"
                else ""
            )
            lines.append(
                f"| {r['set'].replace('_', '-')} | {r['run']} | {r['tenant']} | {who} | {err} | "
                + " | ".join(_cell(by.get(k)) for k in classes)
                + " |"
            )
    return [*lines, "", *reading(found), "", f"Command: `{stored['command']}` ({stored['at']}).", ""]


def reading(found: list[dict[str, Any]]) -> list[str]:
    """What the table says, counted from it: how the small prompt chunks fare, over every
    tenant's rows and for the misses whose truth lies mostly in them."""
    small = f"prompt chunk < {PREFILL_EDGES[0]}"
    runs = [c for r in found for c in r["all_rows"] if c["class"] == small]
    if not runs:
        return []
    line = (
        f"Over every tenant's rows, prompt chunks under {PREFILL_EDGES[0]} tokens are charged above "
        f"their Shapley value under `equal` in {sum(c['equal'] > 1 for c in runs)} of the "
        f"{len(runs)} runs that carry them (ratio {min(c['equal'] for c in runs):.2f}-"
        f"{max(c['equal'] for c in runs):.2f}), and under the model's own Shapley values in "
        f"{sum(c['model_shapley'] > 1 for c in runs)}; the model's Shapley values are the closer to "
        f"1 in {sum(abs(c['model_shapley'] - 1) < abs(c['equal'] - 1) for c in runs)}."
    )
    mostly = [
        r for r in found if any(c["class"] == small and c["truth_share"] >= 0.5 for c in r["tenant_rows"])
    ]
    if mostly:
        errs = [r["error_equal"] for r in mostly]
        model = ", ".join(f"{100 * r['error_model_shapley']:+.1f}%" for r in mostly)
        line += (
            f" {len(mostly)} of the {len(found)} misses are tenants whose truth lies mostly in such "
            f"chunks; `equal` charges {sum(e > 0 for e in errs)} of them above the truth "
            f"({100 * min(errs):+.1f}% to {100 * max(errs):+.1f}%), the model's Shapley values "
            f"{model}."
        )
    return [line]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="one held-out set (e.g. held_out_13): printed, not stored")
    ap.add_argument("--jobs", type=int, default=2, help="misses simulated at once")
    a = ap.parse_args(argv)
    from benchmarks.accuracy_study import MODEL_NOTE, render

    path = DOC.with_suffix(".json")
    doc = json.loads(path.read_text())
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    found = study(doc, a.only, log, a.jobs)
    if a.only:
        print(json.dumps(found, indent=1))
        return 0
    doc["share_rows"] = {
        "command": ".venv/bin/python -m benchmarks.share_rows",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "misses": found,
    }
    doc["model_note"] = MODEL_NOTE
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n")
    DOC.with_suffix(".md").write_text(render(doc))
    log(f"wrote {path} and {DOC.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
