"""The layout rules the build enforces: import contracts (import-linter), lint and format (ruff),
and the shape of the tree (folders are the architecture's boxes, no colliding module names).
See docs/architecture.md for the rules and why they hold."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PACKAGES = ("shadowd", "checks", "storage", "alerts")
TOP_LEVEL_ALLOWED = {"__init__", "cli", "paths"}
MAX_OTHER_TOP_LEVEL = 2
SAME_ROLE_BASENAMES = {
    "__init__",
    "config",  # each component's settings: tap, governor, daemon, alerts
    "plugin",  # the vllm.general_plugins entry point of each in-engine package: tap, governor
    "vllm",  # the scheduler mixins of each in-engine package: tap, governor
}


def _run(*cmd: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_import_contracts_hold():
    out = _run(str(BIN / "lint-imports"))
    assert out.returncode == 0, out.stdout[-4000:]
    assert "broken" in out.stdout and "0 broken" in out.stdout


def test_a_forbidden_import_breaks_the_contracts(tmp_path):
    """A leaf importing shadowd must fail the build, not pass unnoticed."""
    for name in (*PACKAGES, "pyproject.toml"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    gate = tmp_path / "checks" / "gate.py"
    gate.write_text(gate.read_text() + "\nimport shadowd.daemon.service  # noqa\n")
    out = _run(str(BIN / "lint-imports"), cwd=tmp_path)
    assert out.returncode != 0
    assert "BROKEN" in out.stdout and "checks.gate -> shadowd" in out.stdout


def test_ruff_lint_and_format_pass():
    lint = _run(str(BIN / "ruff"), "check", ".")
    assert lint.returncode == 0, lint.stdout[-4000:]
    fmt = _run(str(BIN / "ruff"), "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout[-4000:]


def test_shadowd_top_level_holds_only_the_entry_points():
    modules = {p.stem for p in (REPO / "shadowd").glob("*.py")}
    others = modules - TOP_LEVEL_ALLOWED
    assert len(others) <= MAX_OTHER_TOP_LEVEL, f"modules directly in shadowd/: {sorted(others)}"


def test_no_two_modules_share_a_name_unless_same_role():
    names = Counter(
        p.stem
        for pkg in (*PACKAGES, "benchmarks")
        for p in (REPO / pkg).rglob("*.py")
        if "__pycache__" not in p.parts
    )
    clashes = {n for n, c in names.items() if c > 1} - SAME_ROLE_BASENAMES
    assert not clashes, f"module names used twice: {sorted(clashes)}"


def test_tests_mirror_the_packages_without_prefixes():
    for path in (REPO / "tests").rglob("test_*.py"):
        folder = path.parent.name
        if folder != "tests":
            assert not path.stem.startswith(f"test_{folder}_"), f"{path}: the folder already says {folder}"
