"""What a healthy engine's drift events are when its load swings: held-out 30's long run.

``H30-swing-long`` (``benchmarks/gate_matrix.py``) runs a stationary reference engine, nothing
injected, with load swinging between light and saturated; under design r32 its gate confirmed
decode drift events and paged.  Every step's latency comes from the same engine, so each event is
a shift of the *model's* error or of the jitter, not of the engine.  This study says which, from
the run's own DuckDB file (``--db``), on the decode steps a model scored:

* the events the residual detectors confirmed, with the mean batch size of their windows;
* per event, the shift its confirmation window shows *within* design r31's composition strata
  (batch size, KV tokens in half octaves: ``checks.stratum``), as measured and noise-free (each step's latency recomputed by the
  reference engine without jitter, from the requests it carried): where the noise-free shift
  matches the measured one, the model's own error moved, inside strata the confirmation treats
  as like with like; and the same shift within design r34's strata;
* what inside a stratum the model's error follows: the share of its within-stratum variance
  (noise-free, each stratum's mean taken out) that one more composition feature explains.

The held-out row's verdicts are ``docs/validation.md``'s; this only explains them.  The run is
held-out 30's, so the design it suggested (r34) was confirmed on a set declared after it.
``docs/swing_drift.md`` was made from the row's run under r32 (``--db``); without ``--db`` the
row runs here under the design in force, whose events may differ.

Design r37 came from the same question asked of another row: F34-step8's healthy engine, under
r34, confirmed a decode drift event before its armed fault.  ``--scenario`` and ``--contrast``
name any two rows; the study then also gives the shift within r37's strata (r34's, cut at r31's
quarter octaves too) and the model's noise-free error per batch size inside the CUDA graphs
above 8 (``docs/graph_strata.md``).

    .venv/bin/python -m benchmarks.swing_drift_study --db RUN.duckdb  # reads that row's --db run
    .venv/bin/python -m benchmarks.swing_drift_study                  # runs the row first (long)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.size_strata_study import REPO, _run, write
from checks import size_stratum, stratum

COMMAND = ".venv/bin/python -m benchmarks.swing_drift_study"
SCENARIO = "H30-swing-long"
CONTRAST = "F30-step8"  # the same engine and tenants, slowed 8 % at step 7,000
MIN_STRATUM = 20  # steps a stratum needs on both sides of an event to count in its shift
FEATURE_MIN_STRATUM = 200  # steps a stratum needs to count in the within-stratum regression


def _decode_steps(con: Any) -> dict[str, np.ndarray]:
    """Per decode step a model scored: step, version index, size, KV, measured error and the
    requests' contexts (for the noise-free recompute and the features)."""
    rows = con.execute(
        """SELECT s.step_seq, s.model_version, s.num_requests, s.latency_ms, s.predicted_ms,
                  list(r.new_tokens ORDER BY r.req_id), list(r.context_tokens ORDER BY r.req_id),
                  list(r.phase <> 'decode' ORDER BY r.req_id)
           FROM steps s JOIN step_requests r USING (engine_id, run_id, step_seq)
           WHERE s.kind = 'decode' AND s.predicted_ms > 0
           GROUP BY ALL ORDER BY s.step_seq"""
    ).fetchall()
    versions = {v: i for i, v in enumerate(dict.fromkeys(r[1] for r in rows))}
    return {
        "step": np.array([r[0] for r in rows]),
        "version": np.array([versions[r[1]] for r in rows]),
        "size": np.array([r[2] for r in rows]),
        "measured": np.array([r[3] / r[4] - 1 for r in rows]),
        "predicted": np.array([r[4] for r in rows]),
        "requests": [(r[5], r[6], r[7]) for r in rows],
        "versions": list(versions),
    }


def _noise_free(name: str, d: dict[str, Any]) -> np.ndarray:
    from benchmarks.gate_scenarios import scenario
    from shadowd.twin.step_latency import ReferenceEngine

    s = scenario(name)
    shared = os.environ.get("SHADOWD_SHARED", str(REPO.parent / "shared"))
    engine = ReferenceEngine(
        s.platform.replace("$SHADOWD_SHARED", shared), str(REPO / s.model), s.tp, jitter=False
    )
    return np.array([engine.latency_ms(*req) / p - 1 for req, p in zip(d["requests"], d["predicted"])])


def _features(d: dict[str, Any]) -> dict[str, np.ndarray]:
    """Composition features inside a stratum (beyond its size and KV half octave)."""
    from shadowd.twin.cuda_graphs import padding_table

    ctx = [np.asarray(c, dtype=float) for _, c, _ in d["requests"]]
    kv = np.array([c.sum() for c in ctx])
    size = d["size"]
    return {
        "kv": kv,
        "batch size": size.astype(float),
        "CUDA graph size / batch size": padding_table(int(size.max()))[size] / size,
        "kv position in its half octave": 2 * np.log2(np.maximum(kv, 1.0)) % 1.0,
        "longest context / mean context": np.array([c.max() / max(c.mean(), 1.0) for c in ctx]),
        "longest context": np.array([c.max() for c in ctx]),
        "contexts over 8k tokens": np.array([(c > 8192).sum() for c in ctx], dtype=float),
    }


def _events(con: Any) -> list[dict[str, Any]]:
    rows = con.execute(
        """SELECT step_seq, detector, step_class, details FROM drift_events
           WHERE detector IN ('page_hinkley', 'adwin') ORDER BY step_seq"""
    ).fetchall()
    out = []
    for step, detector, cls, details in rows:
        det = json.loads(details or "{}")
        out.append(
            {
                "step": int(step),
                "detector": detector,
                "class": cls,
                "direction": det.get("direction"),
                "detected_step": int(det.get("detected_step_seq", step)),
                "details": {k: v for k, v in det.items() if isinstance(v, int | float | str)},
            }
        )
    return out


def _shift_within_strata(
    keys: np.ndarray, err: np.ndarray, before: np.ndarray, after: np.ndarray, memory: int | None = None
) -> tuple[float | None, float]:
    """Step-weighted mean over strata of (mean after - mean before), strata with enough steps on
    both sides; and the share of the after-window those strata cover.  With ``memory``, a
    stratum's *before* is its last ``memory`` steps (as design r31's confirmation keeps it)."""
    num = den = 0.0
    for k in np.unique(keys[after]):
        a, b = after & (keys == k), np.flatnonzero(before & (keys == k))
        if memory is not None:
            b = b[-memory:]
        if a.sum() >= MIN_STRATUM and len(b) >= MIN_STRATUM:
            w = float(a.sum())
            num += w * float(err[a].mean() - err[b].mean())
            den += w
    return (num / den if den else None), den / max(float(after.sum()), 1.0)


def _event_shifts(
    events: list[dict[str, Any]],
    d: dict[str, Any],
    keys: np.ndarray,
    finer: np.ndarray,
    noise_free: np.ndarray,
    cut: np.ndarray,
) -> list[dict[str, Any]]:
    """Per decode event: the shift of its confirmation window within strata, measured and
    noise-free, against the same strata's last steps before it (as many as the confirmation
    window's) under the same model version; and, measured, within design r34's strata
    (``finer``: batch sizes by the CUDA graph they run at) and r37's (``cut``)."""
    step = d["step"]
    out = []
    for e in events:
        if e["class"] != "decode":
            continue
        at = e["detected_step"]
        after = (step >= at) & (step <= e["step"])  # the confirmation window
        same = d["version"] == (d["version"][after][0] if after.any() else -1)
        before = (step < at) & same
        memory = int(e["details"].get("confirm_steps", after.sum()))
        m, cover = _shift_within_strata(keys, d["measured"], before, after, memory)
        n, _ = _shift_within_strata(keys, noise_free, before, after, memory)
        m2, cover2 = _shift_within_strata(finer, d["measured"], before, after, memory)
        m3, cover3 = _shift_within_strata(cut, d["measured"], before, after, memory)
        out.append(
            {
                **{k: e[k] for k in ("step", "detector", "direction")},
                "lasting_shift": e["details"].get("lasting_shift"),
                "strata_lasting_shift": e["details"].get("strata_lasting_shift"),
                "detected_step": at,
                "window_steps": int(after.sum()),
                "window_mean_batch": float(d["size"][after].mean()) if after.any() else None,
                "measured_shift_within_strata": m,
                "noise_free_shift_within_strata": n,
                "strata_cover": cover,
                "finer_measured_shift": m2,
                "finer_cover": cover2,
                "cut_measured_shift": m3,
                "cut_cover": cover3,
            }
        )
    return out


def _within_stratum_r2(keys: np.ndarray, y: np.ndarray, feats: dict[str, np.ndarray]) -> dict[str, Any]:
    """Share of the within-stratum variance of ``y`` each feature explains (a straight line in
    the feature per stratum, strata with ``FEATURE_MIN_STRATUM`` steps)."""
    total = 0.0
    explained = dict.fromkeys(feats, 0.0)
    for k in np.unique(keys):
        m = keys == k
        if m.sum() < FEATURE_MIN_STRATUM:
            continue
        yc = y[m] - y[m].mean()
        total += float((yc**2).sum())
        for name, f in feats.items():
            x = f[m] - f[m].mean()
            sxx = float((x**2).sum())
            if sxx > 0:
                explained[name] += float((x @ yc) ** 2 / sxx)
    return {
        "within_stratum_std": float(np.sqrt(total / max(len(y), 1))),
        "explained_share": {k: (v / total if total else None) for k, v in explained.items()},
    }


def _phases(d: dict[str, Any], noise_free: np.ndarray, keys: np.ndarray, block: int) -> list[dict[str, Any]]:
    """Per block of ``block`` decode steps: mean batch size and the mean noise-free error within
    strata (each step less its stratum's mean over the run)."""
    centred = noise_free.copy()
    for k in np.unique(keys):
        m = keys == k
        centred[m] -= noise_free[m].mean()
    out = []
    for i in range(0, len(centred), block):
        sl = slice(i, i + block)
        out.append(
            {
                "first_step": int(d["step"][sl][0]),
                "mean_batch": float(d["size"][sl].mean()),
                "noise_free_within_strata": float(centred[sl].mean()),
            }
        )
    return out


def _inside_graphs(d: dict[str, Any], noise_free: np.ndarray) -> list[dict[str, Any]]:
    """Per batch size from 9 to 32 (the CUDA graphs of 16, 24 and 32): decode steps scored and
    the model's mean noise-free error, where the model's price grows with the batch and the
    engine's GEMMs cost the same up to the graph's edge (design r37)."""
    from shadowd.twin.cuda_graphs import padding_table

    graph = padding_table(32)
    out = []
    for b in range(9, 33):
        m = d["size"] == b
        if m.any():
            out.append(
                {
                    "batch": b,
                    "graph": int(graph[b]),
                    "steps": int(m.sum()),
                    "noise_free": float(noise_free[m].mean()),
                }
            )
    return out


def _cell(batch: int, octaves: bool) -> str:
    """The batch sizes that share ``batch``'s r34 (or, with ``octaves``, r37) size stratum."""
    key = size_stratum(stratum(batch, 1.0, True, octaves))
    same = [b for b in range(1, 513) if size_stratum(stratum(b, 1.0, True, octaves)) == key]
    return f"{same[0]}-{same[-1]}" if len(same) > 1 else str(same[0])


def _scheme(decode: dict[str, Any]) -> str:
    if decode.get("octave_strata"):
        return "r37 (CUDA graphs cut at quarter octaves)"
    return "r34 (CUDA graphs)" if decode.get("graph_strata") else "r31 (quarter octaves)"


def study(name: str, db: str) -> dict[str, Any]:
    """The figures of row ``name`` from its run in ``db`` (run here first if the file is absent)."""
    import duckdb

    import checks
    from benchmarks.gate_scenarios import scenario

    if not Path(db).exists():
        _run(name, db)
    con = duckdb.connect(db, read_only=True)
    d = _decode_steps(con)
    feats = _features(d)
    kv_tokens = feats.pop("kv")
    keys = np.array([checks.stratum(b, kv) for b, kv in zip(d["size"], kv_tokens)])
    finer = np.array([checks.stratum(b, kv, graph=True) for b, kv in zip(d["size"], kv_tokens)])
    cut = np.array([stratum(b, kv, True, True) for b, kv in zip(d["size"], kv_tokens)])
    noise_free = _noise_free(name, d)
    events = _events(con)
    body = json.loads(con.execute("SELECT body FROM model_versions ORDER BY created_at").fetchone()[0])
    decode = body.get("drift", {}).get("decode", {})
    return {
        "strata": _scheme(decode),
        "scenario": name,
        "scenario_command": scenario(name).command("RUN.duckdb"),
        "decode_steps_scored": len(d["step"]),
        "model_versions": len(d["versions"]),
        "events": _event_shifts(events, d, keys, finer, noise_free, cut),
        "inside_graphs": _inside_graphs(d, noise_free),
        "other_events": [e for e in events if e["class"] != "decode"],
        "error_std": {
            "measured": float(d["measured"].std()),
            "noise_free": float(noise_free.std()),
            "jitter": float(((1 + d["measured"]) / (1 + noise_free) - 1).std()),
        },
        "within_stratum": _within_stratum_r2(keys, noise_free, feats),
        "phases": _phases(d, noise_free, keys, 20000),
    }


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.2f} %"


def _events_table(doc: dict[str, Any], label: str) -> list[str]:
    rows = []
    for e in doc["events"]:
        rows.append(
            f"| {label} | {e['step']} | {e['detected_step']} | {e['detector']} {e['direction']} | "
            f"{_pct(e['lasting_shift'])} | {_pct(e['measured_shift_within_strata'])} | "
            f"{_pct(e['noise_free_shift_within_strata'])} | {100 * e['strata_cover']:.0f} % | "
            f"{e['window_mean_batch']:.1f} | {_pct(e['finer_measured_shift'])} | "
            f"{100 * e['finer_cover']:.0f} % | {_pct(e['cut_measured_shift'])} | {100 * e['cut_cover']:.0f} % |"
        )
    return rows or [f"| {label} | no decode drift event | | | | | | | | | | | |"]


def render(doc: dict[str, Any]) -> str:
    run, fault = doc["run"], doc["contrast"]
    a_label, b_label = run["scenario"], fault["scenario"]
    if a_label == b_label:  # one row run under two designs
        a_label, b_label = (
            f"{x['scenario']} (run with {x['strata'].split()[0]} strata)" for x in (run, fault)
        )
    lines = [
        f"# A healthy engine's drift events: what they are ({run['scenario']})",
        "",
        "Generated by `" + doc["command"] + "` (" + doc["finished_at"] + "); do not edit by hand.",
        "",
        f"Row `{run['scenario']}` of `benchmarks/gate_matrix.py`, run as `{run['scenario_command']}`: "
        "a stationary reference engine (a fault row's up to its fault), whose verdicts are in "
        "`docs/validation.md`.  "
        f"Beside it, row `{fault['scenario']}` (`{fault['scenario_command']}`), whose engine does slow down.  "
        "*Noise-free*: each decode step's latency recomputed by the reference engine without jitter, "
        "from the requests it carried, so its error is the model's own; a slower engine moves the "
        "measured error and leaves the noise-free one where it was.  *Within strata*: the "
        "confirmation window's mean error less the mean of the same design r31 strata (batch size, "
        "KV tokens in half octaves: `checks.stratum`) before the detection under the same model "
        "version (each stratum's last steps before it, as many as the window holds, as the "
        f"confirmation keeps them), step-weighted over strata with {MIN_STRATUM} steps on both "
        "sides (*cover*: the window's share in those strata).  *r34 strata*: the same with batch "
        "sizes above 8 taken by the CUDA graph vLLM runs them at (`checks.stratum(..., graph=True)`): "
        "design r34, built on H30-swing-long, so confirmed only on a set declared after it.  "
        "*r37 strata*: r34's cut at r31's quarter octaves too (`checks.stratum(..., True, True)`): "
        "design r37, built on F34-step8's healthy engine.",
        "",
        f"Confirmation strata in force: {run['scenario']}, design {run['strata']}; "
        f"{fault['scenario']}, design {fault['strata']}.  "
        f"{run['scenario']}: {run['decode_steps_scored']} decode steps scored by {run['model_versions']} "
        f"model version(s); error standard deviation measured {100 * run['error_std']['measured']:.2f} %, "
        f"noise-free {100 * run['error_std']['noise_free']:.2f} %, jitter "
        f"{100 * run['error_std']['jitter']:.2f} %.",
        "",
        "| run | event at step | detected at | detector | lasting shift (confirmation) | "
        "within strata, measured | within strata, noise-free | cover | mean batch in window | "
        "r34 strata, measured | r34 cover | r37 strata, measured | r37 cover |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *_events_table(run, a_label),
        *_events_table(fault, b_label),
        "",
        "## What the model's error follows inside a stratum",
        "",
        "The noise-free error less its stratum's mean, regressed per stratum (strata with "
        f"{FEATURE_MIN_STRATUM} steps or more) on one more feature of the step's composition at a "
        "time: the share of that within-stratum variance the feature explains.",
        "",
        f"| feature | {a_label} | {b_label} |",
        "|---|---:|---:|",
    ]
    a, b = run["within_stratum"], fault["within_stratum"]
    for name in a["explained_share"]:
        x, y = a["explained_share"][name], b["explained_share"].get(name)
        lines.append(
            f"| {name} | {'–' if x is None else f'{100 * x:.0f} %'} | {'–' if y is None else f'{100 * y:.0f} %'} |"
        )
    lines += [
        f"| *within-stratum standard deviation (noise-free)* | {100 * a['within_stratum_std']:.2f} % | "
        f"{100 * b['within_stratum_std']:.2f} % |",
        "",
        f"## {run['scenario']}: load and the model's error within strata, block by block",
        "",
        "Blocks of 20,000 scored decode steps; the noise-free error less its stratum's mean over the "
        "run, averaged over the block.",
        "",
        "| first step | mean batch size | noise-free error within strata |",
        "|---:|---:|---:|",
    ]
    for p in run["phases"]:
        lines.append(f"| {p['first_step']} | {p['mean_batch']:.1f} | {_pct(p['noise_free_within_strata'])} |")
    lines += [
        "",
        f"## {run['scenario']}: the model's error inside the CUDA graphs of 16, 24 and 32",
        "",
        "Per batch size: the decode steps scored and the model's mean noise-free error.  The "
        "engine runs every batch's GEMMs at the graph's size, so their cost is flat up to the edge; "
        "the model's grows with the batch.  One r34 stratum holds a whole graph; r37 cuts it at "
        "r31's quarter octaves.",
        "",
        "| batch size | CUDA graph | decode steps | noise-free error | r34 stratum | r37 stratum |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for g in run["inside_graphs"]:
        lines.append(
            f"| {g['batch']} | {g['graph']} | {g['steps']} | {_pct(g['noise_free'])} | "
            f"{_cell(g['batch'], False)} | {_cell(g['batch'], True)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default=SCENARIO, help="the healthy row whose drift events are studied")
    ap.add_argument("--contrast", default=CONTRAST, help="a row whose engine does slow down")
    ap.add_argument("--db", help="the --scenario row's run with --db (made here if absent)")
    ap.add_argument("--contrast-db", help="the --contrast row's run with --db (made here if absent)")
    ap.add_argument("--out", default=str(REPO / "docs" / "swing_drift"))
    args = ap.parse_args(argv)
    import tempfile

    from benchmarks.machine import machine

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="swing-drift-") as tmp:
        doc = {
            "command": " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])]),
            "run": study(args.scenario, args.db or f"{tmp}/run.duckdb"),
            "contrast": study(args.contrast, args.contrast_db or f"{tmp}/contrast.duckdb"),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            "wall_seconds": time.perf_counter() - t0,
            "machine": machine(),
        }
    write(Path(args.out), doc, render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
