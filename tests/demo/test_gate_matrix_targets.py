"""The first section of docs/validation.md: the design in force against issue 15's targets on the
held-out sets it was not built on (benchmarks/gate_targets.py), counted from the stored rows.

A row of another design, of a set the design was built on, or of the development set must not
count; a fault run that was not a test (the gate was not GO when it began) must not count as a
caught fault; a long run's bound above 1e-5 must show as missed.
"""

from __future__ import annotations

from benchmarks.gate_designs import BUILT_ON
from benchmarks.gate_document import blocker_table
from benchmarks.gate_targets import held_out_rows, section

DULL = (
    "inconclusive: drift (no unresolved drift events, but the detectors would not raise a real "
    "slowdown in time (decode: a 5% slowdown raised not within 1200 judged steps))"
)


def _row(name: str, set_: str, expect: str, final: str, **kw) -> dict:
    row = {
        "design": kw.pop("design", "r41"),
        "final": final,
        "final_reason": kw.pop("reason", "all 13 checks pass"),
        "first_go_step": kw.pop("first_go", 5000),
        "pages_after_first_go": kw.pop("pages", 0),
        "episodes": kw.pop("episodes", []),
        "fault_at": kw.pop("fault_at", 7000 if expect == "fault" else None),
        "drift_delay_steps": kw.pop("delay", None),
        "false_alarms": 0,
        "judged_steps": kw.pop("judged", 3000),
        "false_alarm_upper95": kw.pop("bound", 1e-3),
        "scenario": {"name": name, "set": set_, "expect": expect, "injects": kw.pop("injects", [])},
    }
    assert not kw
    return row


ROWS = [
    _row("H1-steady", "held_out_90", "healthy", "GO"),
    _row("H1-swing", "held_out_90", "healthy", "INCONCLUSIVE", reason=DULL, first_go=None),
    _row("H1-ramp", "held_out_91", "healthy", "INCONCLUSIVE", reason=DULL, first_go=6000),
    _row("H1-swing-long", "held_out_91", "healthy", "GO", judged=400_000, bound=7.5e-6),
    _row("F1-step8", "held_out_90", "fault", "NO_GO", injects=["step-slowdown:0.08@go:7000"], delay=230),
    _row("F1-step5", "held_out_91", "fault", "GO", injects=["step-slowdown:0.05@go:7000"]),
    # not a test: the gate was never GO before the fault
    _row("F1-step15", "held_out_91", "fault", "NO_GO", injects=["step-slowdown:0.15"], first_go=None),
    # not counted: another design, a set the design was built on, the development set
    _row("H0-steady", "held_out_90", "healthy", "NO_GO", design="r40", pages=3),
    _row("H38-x", BUILT_ON[0], "healthy", "NO_GO", pages=2),
    _row("H-dev", "development", "healthy", "INCONCLUSIVE", reason=DULL),
]


def test_only_the_design_in_force_on_its_own_held_out_sets_counts():
    names = {r["scenario"]["name"] for r in held_out_rows(ROWS, "r41")}
    assert names == {"H1-steady", "H1-swing", "H1-ramp", "H1-swing-long", "F1-step8", "F1-step5", "F1-step15"}


def test_each_target_is_counted_from_the_rows():
    text = "\n".join(section(ROWS, "r41"))
    assert "held-out sets 90, 91" in text and "(7 runs)" in text
    assert (
        "| 2 of 4 ended GO; the rest's last evaluation named: drift: detectors too dull 2 | missed |" in text
    )
    assert "| 3 of 4; first GO at engine step median 5,000, range 5,000-6,000 | reported |" in text
    assert "| 0 of 4 healthy runs paged | met |" in text
    # F1-step5 ended GO on a GO gate: a miss; F1-step15 was never a test
    assert "1 of 2 tests (missed: F1-step5: ended GO" in text
    assert "1 of 3 fault runs not a test" in text
    assert "| 1 of 1 (steps after the fault: 230) | met |" in text
    assert "1 of 1 within (H1-swing-long: 0 in 400,000 judged steps, bound 7.5e-06) | met |" in text


def test_a_page_a_slow_detection_and_a_loose_bound_are_missed():
    rows = [
        _row("H2-steady", "held_out_92", "healthy", "GO", pages=1),
        _row("H2-swing-long", "held_out_92", "healthy", "GO", judged=100_000, bound=3e-5),
        _row("F2-step8", "held_out_92", "fault", "NO_GO", injects=["step-slowdown:0.08@go:7000"], delay=None),
    ]
    text = "\n".join(section(rows, "r41"))
    assert "| 1 of 2 ended GO" in text and "| 1 of 2 healthy runs paged | missed |" in text
    assert "| 0 of 1 (steps after the fault: none) | missed |" in text
    assert "0 of 1 within (H2-swing-long" in text and "bound 3.0e-05) | missed |" in text


def test_no_rows_of_the_design_no_section():
    assert section(ROWS, "r99") == []


def test_reaching_go_is_judged_within_the_evidence_time():
    """The issue's healthy target: GO within the evidence time, no page once GO.  A short swing
    that never said GO is judged by its set's 30,000-step row (the evidence time where load moves);
    a row that ended INCONCLUSIVE after its first GO meets it; one that paged does not, nor does a
    short swing whose 30,000-step row never said GO either."""
    rows = [
        _row("H3-steady", "held_out_93", "healthy", "INCONCLUSIVE", reason=DULL, first_go=4000),
        _row("H3-swing", "held_out_93", "healthy", "INCONCLUSIVE", reason=DULL, first_go=None),
        _row("H3-swing-30k", "held_out_93", "healthy", "GO", first_go=20100),
        _row("H3-ramp", "held_out_93", "healthy", "GO", first_go=5000),
    ]
    text = "\n".join(section(rows, "r41"))
    assert "H3-swing by H3-swing-30k (GO at step 20,100)) | 4 of 4 | met |" in text
    assert "| 2 of 4 ended GO;" in text and "(stricter: the last evaluation GO)" in text
    rows[2] = _row("H3-swing-30k", "held_out_93", "healthy", "INCONCLUSIVE", reason=DULL, first_go=None)
    rows[3] = _row("H3-ramp", "held_out_93", "healthy", "GO", first_go=5000, pages=2)
    text = "\n".join(section(rows, "r41"))
    assert "H3-swing by H3-swing-30k (never GO)) | 1 of 4 | missed |" in text


def test_a_row_that_failed_to_run_counts_as_missed_not_as_a_crash():
    """A row whose run errored (no verdict, none of the counts) is counted and missed."""
    failed = {
        "design": "r41",
        "final": "ERROR",
        "error": "the engine did not start",
        "scenario": {"name": "H4-steady", "set": "held_out_94", "expect": "healthy", "injects": []},
    }
    rows = [failed, _row("H4-ramp", "held_out_94", "healthy", "GO")]
    text = "\n".join(section(rows, "r41"))
    assert "| 1 of 2 | missed |" in text and "| 1 of 2 ended GO" in text
    table = blocker_table(rows)  # the page's table of what kept healthy rows from GO
    assert table[-1].startswith("| r41 | 2 | 1 | 1 | 0 |"), table


def test_a_declared_long_row_not_run_reads_as_unmeasured_not_met():
    from benchmarks.gate_targets import false_alarm_lines

    short = [r for r in ROWS if not r["scenario"]["name"].endswith("-long")]
    (line,) = false_alarm_lines(short, ("H1-swing-long",))
    assert "no long run yet (declared, not run: H1-swing-long)" in line and line.endswith("| not measured |")
    (line,) = false_alarm_lines(ROWS, ("H1-swing-long", "H2-swing-long"))
    assert "declared, not run: H2-swing-long" in line and line.endswith("| not all measured |")
    (line,) = false_alarm_lines(ROWS, ("H1-swing-long",))
    assert line.endswith("| met |")
    assert false_alarm_lines(short) == []
