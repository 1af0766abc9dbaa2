"""What the residual did before each drift alarm of a run (a development tool for issue 15).

Design r6's misses on held-out set 6 were Page-Hinkley alarms on decode residuals of healthy
engines. The detectors see each class's standardised residual relative to a baseline of time
constant ``detrend_steps`` (``checks.detrend``), so wander slower than that is absorbed and what
trips them is a shift of the residual mean, larger than the calibration's ``allowance``, that
lasts tens of steps. This study reads one engine's run from its DuckDB (``shadowd demo --db``)
and, per step class, at each residual alarm (at the step it was detected: since design r8 the
event itself comes when the detection is confirmed) and at a grid of positions for comparison, measures
the *lead* (the mean residual of the last ``recent`` class steps minus that of the ``before``
steps preceding them) and the *after* shift (the next ``recent`` steps against the same
``before`` steps): a real fault's shift lasts. Beside them: how batch size and the longest
context moved over the lead, the lead's correlation with the batch-size change over the grid,
and the mean residual by batch-size bucket (the model's bias as the composition moves, which a
detector allowance must cover).

    .venv/bin/python -m shadowd.cli demo ... --db /tmp/run.duckdb --json > /dev/null
    .venv/bin/python -m benchmarks.alarm_study /tmp/run.duckdb            # add --json for JSON
    .venv/bin/python -m benchmarks.alarm_study /tmp/run.duckdb --calibration-bias

With ``--calibration-bias`` each judged step's residual first has its batch-size bucket's mean
residual over the model's calibration window taken off (the window's steps are re-attributed
under the stored model): what the alarms would look like against a composition-matched
baseline, the candidate for a next design.

It reads only the steps, step_requests, model_versions and drift_events tables; it writes nothing.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import duckdb
import numpy as np

RESIDUAL = ("page_hinkley", "adwin")
RECENT, BEFORE, GRID = 100, 400, 100
BATCH_EDGES = (1, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024)  # requests per step


def load(db: str) -> dict[str, Any]:
    """Judged steps (a model's prediction present) in order, their composition, calibrations, alarms."""
    con = duckdb.connect(db, read_only=True)
    try:
        steps = con.execute(
            """SELECT s.step_seq, s.kind, s.latency_ms, s.predicted_ms, s.model_version, s.num_requests,
                      r.max_context
               FROM steps s LEFT JOIN (
                   SELECT step_seq, max(context_tokens + new_tokens) AS max_context
                   FROM step_requests GROUP BY step_seq) r USING (step_seq)
               WHERE s.predicted_ms IS NOT NULL ORDER BY s.step_seq"""
        ).fetchnumpy()
        bodies = dict(con.execute("SELECT version, body FROM model_versions").fetchall())
        # Since design r8 an event is raised when its detection is confirmed, some steps later;
        # the study looks at the residual around the detection itself.
        alarms = sorted(
            (json.loads(details or "{}").get("detected_step_seq", step), detector, cls)
            for step, detector, cls, details in con.execute(
                "SELECT step_seq, detector, step_class, details FROM drift_events WHERE detector IN (?, ?)",
                list(RESIDUAL),
            ).fetchall()
        )
    finally:
        con.close()
    return {
        "steps": steps,
        "calibrations": {v: json.loads(b).get("drift", {}) for v, b in bodies.items()},
        "alarms": alarms,
    }


def calibration_bias(db: str) -> dict[tuple[str, str], dict[int, float]]:
    """Per (model version, class): the mean residual of each batch-size bucket (by its lower
    edge; buckets with at least 100 steps) over the steps from the version's fit window up to the
    first step it judged: its calibration window, re-attributed under the stored model."""
    from shadowd.daemon.calibrator import calibration_from_body
    from shadowd.steps.batch import KIND_NAMES
    from shadowd.steps.log_reader import load_batch, open_db

    con = open_db(db, read_only=True)
    try:
        batch = load_batch(con)
        versions = con.execute(
            "SELECT v.version, v.body, min(s.step_seq) FROM model_versions v JOIN steps s "
            "ON s.model_version = v.version GROUP BY v.version, v.body"
        ).fetchall()
    finally:
        con.close()
    out: dict[tuple[str, str], dict[int, float]] = {}
    for version, body, first_judged in versions:
        cal = calibration_from_body(body)
        start = int(cal.model.fit_window.get("first_step_seq") or 0)
        win = batch.select_steps((batch.step_seq >= start) & (batch.step_seq < first_judged))
        r = win.latency_ms / cal.model.attribute(win).predicted_ms - 1.0  # only the window's steps
        sizes = win.batch_size()
        for code, cls in enumerate(KIND_NAMES):
            mine = win.kind == code
            out[(version, cls)] = {b["batch_from"]: b["mean"] for b in _by_batch(r[mine], sizes[mine])}
    return out


def _bucket(batch: np.ndarray) -> np.ndarray:
    """Each batch size's bucket, by the bucket's lower edge."""
    edges = np.asarray(BATCH_EDGES)
    return edges[np.clip(np.searchsorted(edges, batch, side="right") - 1, 0, len(edges) - 1)]


def _shift(
    r: np.ndarray, comp: dict[str, np.ndarray], i: int, recent: int, before: int
) -> dict[str, float] | None:
    """At class-step index ``i``: the mean of the ``recent`` steps ending there (*lead*) and of the
    ``recent`` steps after it (*after*), each minus the mean of the ``before`` steps preceding the
    lead window, for the residual and (lead only) each composition column; None if the run is
    too short on either side."""
    lo, mid, hi, end = i + 1 - recent - before, i + 1 - recent, i + 1, i + 1 + recent
    if lo < 0 or end > len(r):
        return None
    base = float(np.nanmean(r[lo:mid]))
    out = {"lead": float(np.nanmean(r[mid:hi])) - base, "after": float(np.nanmean(r[hi:end])) - base}
    for name, x in comp.items():
        out[f"d_{name}"] = float(np.nanmean(x[mid:hi]) - np.nanmean(x[lo:mid]))
    return out


def _r2(y: np.ndarray, x: np.ndarray) -> float:
    """R² of ``y`` on the columns of ``x`` with an intercept (least squares)."""
    ok = np.isfinite(y) & np.isfinite(x).all(axis=1)
    if ok.sum() <= x.shape[1] + 2:
        return float("nan")
    a = np.column_stack([np.ones(ok.sum()), x[ok]])
    coef, *_ = np.linalg.lstsq(a, y[ok], rcond=None)
    resid = y[ok] - a @ coef
    return float(1.0 - resid.var() / y[ok].var()) if y[ok].var() > 0 else float("nan")


def _floats(x: Any) -> np.ndarray:
    """A numeric column as floats, NULL (a masked entry) as NaN."""
    return np.ma.filled(np.ma.asarray(x).astype(float), np.nan)


def _by_batch(r: np.ndarray, batch: np.ndarray, min_steps: int = 100) -> list[dict[str, float]]:
    """Mean residual per batch-size bucket (buckets with at least ``min_steps`` steps): the
    model's bias as the composition moves, which a detector allowance must cover."""
    out = []
    for lo, hi in zip(BATCH_EDGES, BATCH_EDGES[1:]):
        m = (batch >= lo) & (batch < hi) & np.isfinite(r)
        if m.sum() >= min_steps:
            out.append({"batch_from": lo, "batch_to": hi, "steps": int(m.sum()), "mean": float(r[m].mean())})
    return out


def _class_study(data: dict[str, Any], cls: str, recent: int, before: int, every: int) -> dict[str, Any]:
    s = data["steps"]
    mine = s["kind"] == cls
    seq, version = s["step_seq"][mine], s["model_version"][mine]
    r = _floats(s["latency_ms"])[mine] / _floats(s["predicted_ms"])[mine] - 1.0
    comp = {"batch": _floats(s["num_requests"])[mine], "max_context": _floats(s["max_context"])[mine]}
    bias = data.get("bias")
    if bias is not None:  # a composition-matched baseline: each bucket's calibration-window mean off
        buckets = _bucket(comp["batch"])
        for v in set(version.tolist()):
            for lo, mean in bias.get((v, cls), {}).items():
                r[(version == v) & (buckets == lo)] -= mean
    allowance = {
        v: float(data["calibrations"].get(v, {}).get(cls, {}).get("allowance") or np.nan)
        for v in set(version.tolist())
    }
    grid = [g for i in range(0, len(r), every) if (g := _shift(r, comp, i, recent, before))]
    alarms = []
    for step, detector, alarm_cls in data["alarms"]:
        i = int(np.searchsorted(seq, step, side="right")) - 1  # the class's last step at or before it
        if alarm_cls == cls and i >= 0 and (sh := _shift(r, comp, i, recent, before)):
            alarms.append(
                {"step_seq": int(step), "detector": detector, "allowance": allowance[version[i]], **sh}
            )
    lead = np.array([g["lead"] for g in grid])
    after = np.array([g["after"] for g in grid])
    known = [a for a in allowance.values() if np.isfinite(a)]  # NaN: the class was not watched
    allow = float(np.median(known)) if known else float("nan")
    for a in alarms:  # where the alarm's shifts fall among the grid's (the healthy run's null)
        a["lead_rank"] = float(np.mean(np.abs(lead) < abs(a["lead"])))
        a["after_rank"] = float(np.mean(np.abs(after) < abs(a["after"])))
    x = np.array([[g["d_batch"], g["d_max_context"]] for g in grid]).reshape(len(grid), 2)
    return {
        "judged_steps": int(mine.sum()),
        "allowance": {v: round(a, 5) for v, a in allowance.items()},
        "residual_sd": float(np.nanstd(r)),
        "positions": len(grid),
        "lead_sd": float(np.std(lead)) if len(grid) else float("nan"),
        "lead_beyond_allowance": float(np.mean(np.abs(lead) > allow)) if len(grid) else float("nan"),
        "after_beyond_allowance": float(np.mean(np.abs(after) > allow)) if len(grid) else float("nan"),
        "lead_r2_on_composition": _r2(lead, x),
        "lead_corr_batch_change": float(np.corrcoef(lead, x[:, 0])[0, 1]) if len(grid) > 2 else float("nan"),
        "mean_by_batch": _by_batch(r, comp["batch"]),
        "alarms": alarms,
    }


def study(
    data: dict[str, Any], recent: int = RECENT, before: int = BEFORE, every: int = GRID
) -> dict[str, Any]:
    """Per step class: the shifts over a grid of positions (every ``every`` class steps) and at
    each residual alarm."""
    classes = sorted(set(data["steps"]["kind"].tolist()))
    return {
        "windows": {"recent": recent, "before": before, "every": every},
        "calibration_bias_removed": data.get("bias") is not None,
        "classes": {c: _class_study(data, c, recent, before, every) for c in classes},
    }


def _print(res: dict[str, Any]) -> None:
    w = res["windows"]
    if res["calibration_bias_removed"]:
        print("residuals less their batch-size bucket's mean over the calibration window")
    print(
        f"shifts: mean residual of {w['recent']} class steps (lead: up to the position; after: past it) minus the {w['before']} before the lead"
    )
    for cls, c in res["classes"].items():
        print(
            f"{cls}: {c['judged_steps']} judged steps, residual sd {c['residual_sd']:.4f}, allowance {c['allowance']}; "
            f"over {c['positions']} positions lead sd {c['lead_sd']:.4f}, beyond the allowance: lead "
            f"{100 * c['lead_beyond_allowance']:.2f}%, after {100 * c['after_beyond_allowance']:.2f}%; "
            f"lead R² on composition changes {c['lead_r2_on_composition']:.3f}"
        )
        print(
            f"  lead vs batch-size change: correlation {c['lead_corr_batch_change']:+.3f}; mean residual by batch size: "
            + ", ".join(
                f"{b['batch_from']}-{b['batch_to'] - 1}: {b['mean']:+.4f} ({b['steps']})"
                for b in c["mean_by_batch"]
            )
        )
        for a in c["alarms"]:
            print(
                f"  {a['detector']} at {a['step_seq']}: lead {a['lead']:+.4f} (|lead| above {100 * a['lead_rank']:.1f}% of "
                f"positions), after {a['after']:+.4f} (above {100 * a['after_rank']:.1f}%), batch {a['d_batch']:+.1f}, "
                f"longest context {a['d_max_context']:+.0f} tokens"
            )


def main(argv: list[str]) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m benchmarks.alarm_study", description=__doc__.split("\n")[0])
    ap.add_argument("db")
    ap.add_argument("--recent", type=int, default=RECENT)
    ap.add_argument("--before", type=int, default=BEFORE)
    ap.add_argument("--every", type=int, default=GRID)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--calibration-bias", action="store_true", help="take each bucket's calibration-window mean off"
    )
    args = ap.parse_args(argv)
    if min(args.recent, args.before, args.every) < 1:
        ap.error("--recent, --before and --every are step counts >= 1")
    data = load(args.db)
    if args.calibration_bias:
        data["bias"] = calibration_bias(args.db)
    result = study(data, args.recent, args.before, args.every)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        _print(result)


if __name__ == "__main__":
    main(sys.argv[1:])
