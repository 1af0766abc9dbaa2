"""A calibration window's memory, per request row: what a fit, a re-fit and a stability baseline hold.

Why: H48-swing-long was killed by the out-of-memory killer a second time, late in the run, with
the demo's own growth fixed (``benchmarks/demo_memory.py``).  The daemon's re-fit loads its whole
window of steps (``ReFitter._refit_window``), up to the widened warm-up window, with every request
row; under overload a step holds a few hundred rows, so a window's rows run to tens of millions,
and everything done with them scales per row.  Measured here, per request row, on a stored demo
log of saturated, changing batches (the real vLLM scheduler, tap and daemon):

- **Loading the window** (``load_batch``): with request ids, as before, and without, as the fit
  paths now read it.  Peak while loading and what stays held.
- **The stability baseline** (``stability_of``, which ``calibrate`` runs on its whole window):
  shape buckets as one label string per row, as before, and as codes
  (``checks.shape_bucket_codes``); both give the same report, which is checked here.
- **A whole calibration** (``calibrate``): peak above the loaded window.

Each arm runs in a process of its own; peaks are ``tracemalloc``'s (numpy's arrays and Python's
objects; DuckDB's own buffers are bounded by its ``memory_limit`` and not counted).

    .venv/bin/python -m benchmarks.run --only window_memory
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from benchmarks.gate_scenarios import REPO

TENANTS = ("a=lengths:sharegpt:40", "b=servegen:18:10", "c=lengths:arxiv:3")  # saturated, changing
SEED = 3


def _demo_log(path: str, steps: int) -> None:
    cmd = [
        sys.executable,
        "-m",
        "shadowd.cli",
        "demo",
        "--steps",
        str(steps),
        "--seed",
        str(SEED),
        "--db",
        path,
    ]
    for t in TENANTS:
        cmd += ["--tenant", t]
    subprocess.run(cmd, check=True, cwd=REPO, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _peak(fn) -> tuple[Any, int, int]:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = fn()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, peak - base, held - base


def _worker(arm: str, path: str) -> None:
    """One arm in this process; prints one JSON line."""

    import checks
    from shadowd.daemon.calibrator import calibrate
    from shadowd.daemon.stability import stability_of
    from shadowd.steps.log_reader import Window, load_batch, open_db

    con = open_db(path, read_only=True)
    con.execute("SET threads = 1")  # as the daemon's writer connection (``storage.threads``)
    if arm in ("load_ids", "load_no_ids"):
        batch, peak, held = _peak(lambda: load_batch(con, Window(), request_ids=arm == "load_ids"))
        print(json.dumps({"rows": batch.num_requests, "steps": batch.num_steps, "peak": peak, "held": held}))
        return
    batch = load_batch(con, Window(), request_ids=False)
    if arm == "calibrate":
        _, peak, _ = _peak(lambda: calibrate(batch, {"platform": "window_memory"}))
        print(json.dumps({"rows": batch.num_requests, "peak": peak}))
        return
    att = calibrate(batch, {"platform": "window_memory"}).model.attribute(batch)
    if arm == "stability_labels":  # one label string per row, as before shape_bucket_codes
        codes = checks.shape_bucket_codes
        checks.shape_bucket_codes = lambda *a: codes(*a).per_row()  # type: ignore[assignment]
    rep, peak, _ = _peak(lambda: stability_of(batch, att, n_boot=100, seed=1))
    rep.pop("computed_at")
    print(json.dumps({"rows": batch.num_requests, "peak": peak, "report": repr(rep)}))


def _arm(arm: str, path: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.window_memory", arm, path],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(out.stdout.splitlines()[-1])


def run(quick: bool = False) -> dict[str, Any]:
    steps = 2000 if quick else 4000
    with tempfile.TemporaryDirectory(prefix="window-memory-") as d:
        path = os.path.join(d, "log.duckdb")
        _demo_log(path, steps)
        arms = {
            a: _arm(a, path)
            for a in ("load_ids", "load_no_ids", "stability_labels", "stability_codes", "calibrate")
        }
    rows = arms["load_ids"]["rows"]
    per_row = lambda arm, key="peak": arms[arm][key] / rows  # noqa: E731
    return {
        "window_memory": {
            "tenants": list(TENANTS),
            "seed": SEED,
            "steps": arms["load_ids"]["steps"],
            "rows": rows,
            "load_ids_peak_b_per_row": per_row("load_ids"),
            "load_ids_held_b_per_row": per_row("load_ids", "held"),
            "load_no_ids_peak_b_per_row": per_row("load_no_ids"),
            "load_no_ids_held_b_per_row": per_row("load_no_ids", "held"),
            "stability_labels_peak_b_per_row": per_row("stability_labels"),
            "stability_codes_peak_b_per_row": per_row("stability_codes"),
            "stability_reports_equal": arms["stability_labels"]["report"]
            == arms["stability_codes"]["report"],
            "calibrate_peak_b_per_row": per_row("calibrate"),
            **_shipped(),
        }
    }


def _shipped() -> dict[str, Any]:
    """The shipped configuration's widest warm-up window (steps) and the unit's memory cap: what
    the per-row figures are read against (``systemd/shadowd.service``, ``CalibrationConfig``)."""
    import re

    from shadowd.daemon.calibrator import CalibrationSettings
    from shadowd.daemon.config import CalibrationConfig

    unit = (REPO / "systemd" / "shadowd.service").read_text()
    cap = re.search(r"^MemoryMax=(\d+)M$", unit, re.M)
    return {
        "widest_window_steps": int(
            CalibrationConfig().warmup_steps * CalibrationSettings().max_window_factor
        ),
        "unit_memory_max_mib": int(cap.group(1)) if cap else None,
    }


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2])
