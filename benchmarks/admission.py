"""docs/admission.json and docs/admission.md: the governor's cost and the replays, generated.

    .venv/bin/python -m benchmarks.govern_cost                        # cost section
    .venv/bin/python -m benchmarks.admission --replay noisy-neighbour # a replay section (10 min)
    .venv/bin/python -m benchmarks.admission --replay decode-heavy
    .venv/bin/python -m benchmarks.admission --recorded-demo 4000     # recorded replay of a demo DB
    .venv/bin/python -m benchmarks.admission --render                 # re-render the .md and pages

Each section is stored with the command that produced it, when, and the machine; the .md is
rendered from the JSON only (figures are never written by hand), with the fixed prose of
``docs/admission.md``'s template below; so is each replay's ``shadowd replay --html`` page
(``docs/admission-<section>.html``), for results stored with their per-window series.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.machine import machine

ROOT = Path(__file__).resolve().parent.parent
JSON_PATH = ROOT / "docs" / "admission.json"
MD_PATH = ROOT / "docs" / "admission.md"


MAX_HISTORY = 10


def store_section(name: str, data: Any, argv: list[str], *, keep_history: bool = False) -> None:
    """Replace section ``name``; with ``keep_history`` the replaced run is kept (its meta and data,
    the last ``MAX_HISTORY``) so the document can set runs on machines of different speed side by
    side (the governor's cost: ``benchmarks/govern_cost.py``)."""
    doc = json.loads(JSON_PATH.read_text()) if JSON_PATH.exists() else {"sections": {}}
    old = doc["sections"].get(name)
    doc["sections"][name] = {
        "meta": {
            "command": ".venv/bin/python -m " + " ".join([_module(argv[0])] + argv[1:]),
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "loadavg": os.getloadavg(),
            "machine": machine(),
        },
        "data": data,
    }
    if keep_history and old is not None:
        earlier = [*old.get("history", []), {"meta": old["meta"], "data": old["data"]}]
        doc["sections"][name]["history"] = earlier[-MAX_HISTORY:]
    JSON_PATH.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    render_docs(doc)
    print(f"wrote {JSON_PATH.relative_to(ROOT)} and {MD_PATH.relative_to(ROOT)}", file=sys.stderr)


def render_docs(doc: dict[str, Any]) -> None:
    """docs/admission.md and the replays' HTML pages beside it, from the stored results only."""
    from benchmarks.admission_doc import pages, render
    from shadowd.reports.html import write_atomic

    MD_PATH.write_text(render(doc))
    for name, text in pages(doc).items():
        write_atomic(str(MD_PATH.parent / name), text)


def _module(path: str) -> str:
    p = Path(path).resolve()
    try:
        return ".".join(p.relative_to(ROOT).with_suffix("").parts)
    except ValueError:
        return path


def _recorded_demo(steps: int) -> dict[str, Any]:
    """A demo run (FCFS) recorded to a fresh database, then ``shadowd replay --db`` on it; FCFS
    again with the reference engine as the oracle, to tell the model's error from the rest."""
    import tempfile

    from shadowd.demo.scenario import run_demo
    from shadowd.demo.spec import DemoSpec
    from shadowd.replay.recorded import replay_recorded

    with tempfile.TemporaryDirectory(prefix="shadowd-recorded-") as tmp:
        db = str(Path(tmp) / "demo.duckdb")
        run_demo(DemoSpec.build(db_path=db, steps=steps))
        result = replay_recorded(db)
        reference = replay_recorded(db, oracle="reference", policies=("fcfs",))["fidelity"]
    result["db"] = f"<demo database, {steps} steps>"
    return {"demo_steps": steps, "replay": result, "reference_fidelity": reference}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replay", choices=["noisy-neighbour", "decode-heavy"])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--pairs", type=int, default=8, help="ordering pairs per step for the Shapley census")
    ap.add_argument("--recorded-demo", type=int, metavar="STEPS", help="record a demo, replay its database")
    ap.add_argument("--render", action="store_true")
    a = ap.parse_args(argv)
    if a.render:
        render_docs(json.loads(JSON_PATH.read_text()))
        return 0
    if a.replay:
        from shadowd.replay.replay import replay

        result = replay(a.replay, minutes=a.minutes, pairs=a.pairs)
        store_section(f"replay:{a.replay}", result, ["benchmarks/admission.py"] + argv)
        return 0
    if a.recorded_demo:
        store_section("recorded", _recorded_demo(a.recorded_demo), ["benchmarks/admission.py"] + argv)
        return 0
    ap.error("nothing to do: --replay NAME, --recorded-demo STEPS or --render")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
