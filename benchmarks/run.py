"""Run shadowd's benchmarks; write docs/benchmarks.json and the table in docs/benchmarks.md.

    .venv/bin/python -m benchmarks.run                 # everything (~6 min on 2 cores)
    .venv/bin/python -m benchmarks.run --quick         # shorter runs, same figures, more noise
    .venv/bin/python -m benchmarks.run --only ingest   # one benchmark (repeatable); others keep
                                                       # their last recorded figures
    .venv/bin/python -m benchmarks.run --render        # re-render the .md from the .json

Benchmarks run one after another, never concurrently (they pin processes to CPUs 0 and 1).
Each figure is stored with the command that produced it, when, the load average around it,
and the machine (CPUs, CPU model, RAM, versions).  ``--no-write`` only prints.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.machine import machine
from benchmarks.report import render

ROOT = Path(__file__).resolve().parent.parent
JSON_PATH = ROOT / "docs" / "benchmarks.json"
MD_PATH = ROOT / "docs" / "benchmarks.md"

# name -> module with ``run(quick) -> {key: data}``; in the order they run.
BENCHMARKS: dict[str, str] = {
    "tap_cost": "benchmarks.tap_cost",
    "attribution": "benchmarks.attribution_cost",
    "ingest": "benchmarks.ingest",
    "duckdb_append": "benchmarks.duckdb_append",
    "storage": "benchmarks.storage_size",
    "overload": "benchmarks.overload",
    "kill9": "benchmarks.kill9",
    "gate_eval": "benchmarks.gate_eval",
    "retention": "benchmarks.retention_cost",
    "stability": "benchmarks.stability_cost",
    "demo_memory": "benchmarks.demo_memory",
    "window_memory": "benchmarks.window_memory",
}

PENDING: dict[str, dict[str, Any]] = {}  # figures not measured yet: name -> note


def _command(name: str | None, quick: bool) -> str:
    return (
        ".venv/bin/python -m benchmarks.run"
        + (" --quick" if quick else "")
        + (f" --only {name}" if name else "")
    )


def run_one(name: str, quick: bool, only: bool) -> dict[str, Any]:
    module = importlib.import_module(BENCHMARKS[name])
    fn: Callable[[bool], dict] = module.run
    load0, t0 = os.getloadavg(), time.monotonic()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    data = _in_scratch(fn, quick)
    meta = {
        "command": _command(name if only else None, quick),
        "benchmark": name,
        "quick": quick,
        "started_at": started,
        "duration_s": round(time.monotonic() - t0, 1),
        "load_avg_before": [round(x, 2) for x in load0],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
    }
    return {key: {"meta": meta, "data": value} for key, value in data.items()}


def _in_scratch(fn: Callable[[bool], dict], quick: bool) -> dict:
    """Run one benchmark with its temporary files (databases of up to a few GB, sockets) in a
    directory of its own, removed afterwards: a benchmark run leaves nothing behind."""
    old_env, old_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="shd-bench-") as scratch:
        os.environ["TMPDIR"], tempfile.tempdir = scratch, scratch  # and the processes it starts
        try:
            return fn(quick)
        finally:
            tempfile.tempdir = old_dir
            if old_env is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = old_env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs (noisier figures)")
    ap.add_argument("--only", action="append", choices=sorted(BENCHMARKS), help="run only these")
    ap.add_argument("--no-write", action="store_true", help="print the JSON, write nothing")
    ap.add_argument("--render", action="store_true", help="only re-render docs/benchmarks.md from the JSON")
    a = ap.parse_args(argv)
    if a.render:
        MD_PATH.write_text(render(json.loads(JSON_PATH.read_text())))
        return 0
    names = a.only or list(BENCHMARKS)
    results: dict[str, Any] = {}
    if JSON_PATH.exists() and a.only:
        results = json.loads(JSON_PATH.read_text()).get("results", {})
    for name in names:
        print(f"[benchmarks] {name} ...", file=sys.stderr, flush=True)
        results.update(run_one(name, a.quick, only=bool(a.only)))
        if not a.no_write:  # write as we go: a late failure keeps the earlier figures
            _write(results)
    for key, value in PENDING.items():
        results.setdefault(key, {"meta": {"command": None}, "data": value})
    if a.no_write:
        print(json.dumps(results, indent=1))
    else:
        _write(results)
        print(f"wrote {JSON_PATH.relative_to(ROOT)} and {MD_PATH.relative_to(ROOT)}", file=sys.stderr)
    return 0


def _write(results: dict[str, Any]) -> None:
    doc = {"machine": machine(), "results": results}
    for key, value in PENDING.items():
        doc["results"].setdefault(key, {"meta": {"command": None}, "data": value})
    JSON_PATH.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    MD_PATH.write_text(render(doc))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
