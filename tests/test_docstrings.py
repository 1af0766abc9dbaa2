"""Docstrings say why and name the benchmark; measured figures live only in the generated docs.

Every docstring (module, class, function) of ``shadowd``, ``checks``, ``storage`` and ``alerts`` is
read from the source with ``ast`` (nothing is imported) and searched for a number with a unit of
time, size, share or speed (µs, %, MB/GiB, rows/s, B/row, ×).  Doctest examples are skipped: a
figure an example computes is checked by running it.  A figure that is not a measurement of ours
(a datasheet figure, a stated confidence level, a config syntax example, a generator's own input)
is allowed only by an entry of ``ALLOWED`` that says why; everything else fails the test, naming
the module and the figure.  A measured figure belongs in ``docs/*.md``, written by the benchmark
that measures it, and the docstring names that benchmark.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("shadowd", "checks", "storage", "alerts")

FIGURE = re.compile(
    r"(?<![\w.])[~≈]?\d[\d,._]*(\.\d+)?\s*"
    r"(µs|us\b|%|MB\b|MiB\b|GB\b|GiB\b|KiB\b|rows/s|B/row|M rows/s|×)"
)

# (module, phrase, reason): a figure is allowed where it lies inside a match of ``phrase`` (a
# regular expression, matched against the module's docstrings with whitespace runs read as one
# space).  Only figures that are not our measurements belong here.
ALLOWED: tuple[tuple[str, str, str], ...] = (
    (
        "shadowd.twin.gpu_specs",
        r"NVIDIA \w+ (Tensor Core GPU )?datasheet \([^)]*\)",
        "NVIDIA's datasheet figures, the inputs the analytic platform and KV sizing start from",
    ),
    (
        "shadowd.daemon.config",
        r"``256MB`` or ``2GiB``",
        "syntax examples of a DuckDB memory-size setting",
    ),
    (
        "shadowd.attribution.synthetic_steps",
        r"\(20% prefill-only, 40% decode-only, 40% mixed\)",
        "the generator's own step-kind mix, an input (its p=(0.2, 0.4, 0.4))",
    ),
    (
        "checks.threshold_search",
        r"95 %",
        "the stated confidence level of the false-alarm bound (checks.resample.poisson_upper)",
    ),
    (
        "checks.drift_calibration",
        r"95 % upper bound",
        "the stated confidence level of the stored false-alarm bound",
    ),
    (
        "checks.share_stability",
        r"0\.10 ≈ ±10 %",
        "how to read the effect size's unit, not a result",
    ),
    (
        "shadowd.replay.outcome",
        r"95% intervals?",
        "the stated confidence level of the replay's Monte Carlo intervals (``*_ci95``), an input",
    ),
    (
        "shadowd.replay.replay",
        r"95% intervals",
        "the stated confidence level of the replay's Monte Carlo intervals, an input",
    ),
    (
        "storage.writer",
        r"80% of the host's RAM \(its documented default\)",
        "DuckDB's documented default memory_limit, not a measurement of ours",
    ),
)


def prose(doc: str) -> str:
    """``doc`` without its doctest examples (``>>>``/``...`` lines and their expected output)."""
    out, in_example = [], False
    for line in doc.splitlines():
        s = line.strip()
        if s.startswith((">>>", "...")):
            in_example = True
            continue
        if in_example:
            if not s:
                in_example = False
            continue
        out.append(line)
    return " ".join(" ".join(out).split())


def docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [d for n in ast.walk(tree) if isinstance(n, kinds) and (d := ast.get_docstring(n, clean=False))]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def figures(text: str, allowed: list[str] = ()) -> list[str]:
    """Figures in ``text`` that no ``allowed`` pattern covers."""
    spans = [m.span() for pattern in allowed for m in re.finditer(pattern, text)]
    return [
        m.group(0)
        for m in FIGURE.finditer(text)
        if not any(a <= m.start() and m.end() <= b for a, b in spans)
    ]


def modules() -> dict[str, list[str]]:
    """Every module of the packages, by dotted name, with its docstrings' prose."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = [prose(d) for d in docstrings(path)]
    return found


@pytest.fixture(scope="module")
def prose_by_module() -> dict[str, list[str]]:
    return modules()


def test_no_measured_figure_in_a_docstring(prose_by_module):
    stray = {}
    for name, texts in prose_by_module.items():
        allowed = [pattern for module, pattern, _ in ALLOWED if module == name]
        hits = [f for text in texts for f in figures(text, allowed)]
        if hits:
            stray[name] = hits
    assert not stray, (
        f"measured figures belong in the generated docs/*.md; name the benchmark instead: {stray}"
    )


@pytest.mark.parametrize(("module", "pattern", "reason"), ALLOWED, ids=[a[0] for a in ALLOWED])
def test_every_allowance_is_still_used(prose_by_module, module, pattern, reason):
    assert reason
    texts = prose_by_module.get(module)
    assert texts is not None, f"{module} no longer exists"
    covered = [m.group(0) for text in texts for m in re.finditer(pattern, text)]
    assert any(FIGURE.search(c) for c in covered), f"stale allowance: {pattern!r} in {module}"


def test_the_checker_finds_figures_and_skips_examples():
    doc = """Cheap appends (0.74 µs per row, ~10× faster; 60 MB, 80%, 1.2M rows/s).

    >>> cost = 0.74   # µs, computed: 5 %
    >>> print(f"{cost} µs")
    0.74 µs

    Again 3.6%/5.9% here.
    """
    assert figures(prose(doc)) == ["0.74 µs", "~10×", "60 MB", "80%", "1.2M rows/s", "3.6%", "5.9%"]
    assert figures(prose(doc), [r"\(0\.74 µs[^)]*\)"]) == ["3.6%", "5.9%"]
    assert figures("step 12 of 300, version 0.3, 2 ms") == []
