"""One CI-sized run of each replay, shared by the JSON and HTML tests (each run costs tens of seconds).

* ``noisy_replay``: ``shadowd replay --scenario noisy-neighbour --minutes 1.5 --json --html``;
* ``recorded_replay``: a recorded demo database (FCFS, 1000 steps), then ``shadowd replay --db
  --json --html`` on it.
Both return ``(the JSON result, the HTML page's path)``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from shadowd.cli import main


def _run(args: list[str], page: Path) -> tuple[dict, Path]:
    res = CliRunner().invoke(main, [*args, "--json", "--html", str(page)])
    assert res.exit_code == 0, res.output
    return json.loads(res.output[res.output.index("{") :]), page


@pytest.fixture(scope="session")
def noisy_replay(vllm, tmp_path_factory) -> tuple[dict, Path]:
    page = tmp_path_factory.mktemp("replay") / "noisy.html"
    args = ["replay", "--scenario", "noisy-neighbour", "--minutes", "1.5", "--pairs", "4"]
    return _run(args, page)


@pytest.fixture(scope="session")
def demo_db(vllm, tmp_path_factory) -> str:
    from shadowd.demo.scenario import run_demo
    from shadowd.demo.spec import DemoSpec

    path = str(tmp_path_factory.mktemp("recorded") / "demo.duckdb")
    run_demo(DemoSpec.build(db_path=path, steps=1000))
    return path


@pytest.fixture(scope="session")
def recorded_replay(demo_db, tmp_path_factory) -> tuple[dict, Path]:
    return _run(["replay", "--db", demo_db], tmp_path_factory.mktemp("replay") / "recorded.html")
