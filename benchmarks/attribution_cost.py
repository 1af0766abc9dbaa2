"""Attribution µs per step (256 requests), and its cost relative to the token baseline alone.

``benchmarks.attribution_timing.time_attribution``: synthetic vLLM-like steps of
256 requests (``shadowd.attribution.synthetic_steps``), a model version fitted on
them (not timed), then ``ModelVersion.attribute`` over all steps at once, as
the daemon does per ingest batch; best of a few repeats, per step.
"""

from __future__ import annotations

import json
import os
import sys

TARGET_US = 20.0  # benchmarks/attribution_timing.py's stated target per 256-request step


def run(quick: bool = False) -> dict:
    from benchmarks.attribution_timing import time_attribution

    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    try:
        r = time_attribution(steps=500 if quick else 2000, requests_per_step=256, repeats=3 if quick else 7)
    finally:
        os.sched_setaffinity(0, old)
    r = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
    r["target_us"] = TARGET_US
    r["met"] = r["us_per_step"] <= TARGET_US
    return {"attribution": r}


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=1))
