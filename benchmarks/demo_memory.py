"""The demo's memory over a long run: what recording steps costs, and what a backlog costs.

Why: H48-swing-long (800,000 steps) was killed by the kernel's out-of-memory killer at 24 GB.
Two things grew with the run, and each is measured here on the engine alone (the real vLLM
scheduler and the reference engine, as the demo drives them), each arm in a process of its own:

- **Recorded steps.**  The demo kept every step's schedule to draw its Shapley truth at the end.
  It now records only the truth's sample, drawn before the run (``shadowd.demo.truth_sample``).
  Both ways on the same run: resident memory grown per engine step between two points.
- **Waiting requests.**  Offered load the engine cannot serve waits in vLLM's queue, each request
  holding its prompt's token ids.  The engine fed far more than it serves: resident memory
  against the prompt tokens waiting, fitted by least squares (bytes per waiting prompt token),
  which sizes the demo's ``--max-waiting-tokens`` stop
  (``shadowd.demo.spec.DEFAULT_MAX_WAITING_TOKENS``).

    .venv/bin/python -m benchmarks.run --only demo_memory
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np

from benchmarks.gate_scenarios import REPO
from shadowd.demo.spec import DEFAULT_MAX_WAITING_TOKENS

RECORD_TENANT = "a=synthetic:chat:30"  # tens of requests per batch, batches that change
BACKLOG_TENANT = "a=lengths:sharegpt:300"  # real prompt lengths, far beyond what the engine serves


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def _worker(arm: str, steps: int) -> None:
    """One arm in this process; prints one JSON line per checkpoint."""
    from shadowd.demo.truth_sample import TruthSample
    from shadowd.sim.reference_run import ReferenceRun, RunSpec

    tenant = BACKLOG_TENANT if arm == "backlog" else RECORD_TENANT
    run = ReferenceRun(RunSpec(tenants=(tenant,), seed=7, record_steps=arm != "backlog"))
    if arm == "sample":
        sample = TruthSample(first=steps // 2, planned=steps, k=120, seed=7)
        run.driver.keep_step = sample.__contains__
    run.driver.submit(run.workload(limit=steps * (40 if arm == "backlog" else 4)))
    every = max(1, steps // 12)
    done = 0
    while done < steps:
        done = run.run(min(steps, done + every))
        waiting, tokens = run.driver.backlog()
        point = {"steps": done, "rss_kib": _rss_kib(), "waiting": waiting, "waiting_tokens": tokens}
        point["recorded"] = len(run.driver.steps)
        print(json.dumps(point), flush=True)


def _arm(arm: str, steps: int) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.demo_memory", arm, str(steps)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def _per_step(points: list[dict[str, Any]]) -> float:
    """KiB grown per engine step over the run's second half (the engine filled by then)."""
    a, b = points[len(points) // 2], points[-1]
    return (b["rss_kib"] - a["rss_kib"]) / max(1, b["steps"] - a["steps"])


def run(quick: bool = False) -> dict[str, Any]:
    steps = 6000 if quick else 12000
    every, sample = _arm("every", steps), _arm("sample", steps)
    backlog = _arm("backlog", 1500 if quick else 3000)
    w = np.array([p["waiting"] for p in backlog[1:]], dtype=float)
    tok = np.array([p["waiting_tokens"] for p in backlog[1:]], dtype=float)
    r = np.array([p["rss_kib"] for p in backlog[1:]], dtype=float)
    return {
        "demo_memory": {
            "record_tenant": RECORD_TENANT,
            "steps": steps,
            "every_step_kib_per_step": _per_step(every),
            "truth_sample_kib_per_step": _per_step(sample),
            "every_step_recorded": every[-1]["recorded"],
            "truth_sample_recorded": sample[-1]["recorded"],
            "backlog_tenant": BACKLOG_TENANT,
            "backlog_steps": backlog[-1]["steps"],
            "waiting_max": int(w.max()),
            "waiting_tokens_max": int(tok.max()),
            "kib_per_waiting_request": float(np.polyfit(w, r, 1)[0]),
            "bytes_per_waiting_token": float(np.polyfit(tok, r, 1)[0] * 1024),
            "rss_mib_at_waiting_max": float(r.max() / 1024),
            "default_max_waiting_tokens": DEFAULT_MAX_WAITING_TOKENS,
        }
    }


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]))
