"""The front door: a user error is one clear line and exit 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "shadowd.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("demo", "--platform", "/nonexistent"), "no such directory"),
        (("demo", "--tenant", "x=nofile.csv"), "no such file"),
        (("report", "--db", "/nonexistent.duckdb"), "database does not exist"),
        (("report", "--db", "/tmp/x.duckdb", "--daemon", "http://127.0.0.1:9"), "exactly one of"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(args, says):
    out = _cli(*args)
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and says in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_verbose_shows_the_traceback():
    out = _cli("-v", "report", "--db", "/nonexistent.duckdb")
    assert out.returncode != 0 and "Traceback" in out.stderr
