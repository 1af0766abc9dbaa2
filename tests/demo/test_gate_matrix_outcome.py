"""Which fault rows of the gate's matrix count as tests (benchmarks/gate_document.py ``outcome``).

A fault row tests the gate only if the gate was GO when the fault began: a run that paged on
healthy traffic before its fault (F9-step15 in docs/validation.md) ends NO_GO whatever the
fault does, so its end says nothing about the fault.
"""

from __future__ import annotations

from benchmarks.gate_document import outcome


def _fault_row(episodes: list[dict], final: str = "NO_GO", first_go: int | None = 5427) -> dict:
    scenario = {"expect": "fault", "fault_step": 7000, "injects": ["step-slowdown:0.15@7000"]}
    return {
        "scenario": scenario,
        "final": final,
        "first_go_step": first_go,
        "episodes": episodes,
        "drift_delay_steps": 255,
    }


CALIBRATING = {"verdict": "INCONCLUSIVE", "first_step": 3216, "last_step": 5226}


def test_a_fault_met_by_a_gate_that_was_go_is_a_test_and_met():
    after = {"verdict": "NO_GO", "first_step": 7403, "last_step": 9001}
    assert outcome(_fault_row([CALIBRATING, after])) == (True, "")


def test_a_page_before_the_fault_makes_the_row_not_a_test():
    paged = {"verdict": "NO_GO", "first_step": 6231, "last_step": 9001}
    met, why = outcome(_fault_row([CALIBRATING, paged]))
    assert not met and why == "not a test: the gate was NO_GO from step 6231, before the fault"


def test_an_episode_that_ended_before_the_fault_does_not_count_against_it():
    blip = {"verdict": "INCONCLUSIVE", "first_step": 6000, "last_step": 6400}
    after = {"verdict": "NO_GO", "first_step": 7201, "last_step": 9001}
    assert outcome(_fault_row([CALIBRATING, blip, after])) == (True, "")


def test_a_gate_never_go_before_the_fault_is_not_a_test():
    met, why = outcome(_fault_row([], first_go=7202))
    assert not met and why.startswith("not a test: the gate was never GO")


def test_a_fault_row_that_ends_go_says_so_even_when_it_is_not_a_test():
    """Held-out 14's F14-step5 under design r14 ended GO after its fault without ever being GO
    before it: not a test, and the gate vouching for a slowed engine all the same."""
    met, why = outcome(_fault_row([], final="GO", first_go=7001))
    assert (
        not met
        and why == "ended GO with the fault in force; not a test: the gate was never GO before the fault"
    )


def _late_fault_row(fault_at: int, first_go: int = 11624) -> dict:
    """A 12,000-step armed fault run that was GO from ``first_go`` and ended GO, its fault fired at
    ``fault_at`` (held-out 45's F45-step15 and held-out 39's F39-step8)."""
    row = _fault_row([CALIBRATING], final="GO", first_go=first_go)  # episodes: not-GO stretches
    row["scenario"] = {**row["scenario"], "steps": 12000, "injects": ["step-slowdown:0.15@go:7000"]}
    return {**row, "fault_at": fault_at}


def test_a_fault_that_ends_go_soon_after_it_began_is_a_miss_that_says_how_soon():
    met, why = outcome(_late_fault_row(11825))
    assert not met and why == (
        "ended GO 175 steps after the fault began, when the run ended (a drift event may take 500)"
    )
    met, why = outcome(_late_fault_row(12001))
    assert not met and why == (
        "ended GO: the fault fired at the run's last evaluation (step 12,001), so no step ran with it"
    )
    met, why = outcome(_late_fault_row(8000, first_go=7500))
    assert not met and why == "ended GO"


def test_a_re_run_keeps_what_it_replaced_on_record_but_not_the_same_row_twice(tmp_path):
    """``--merge`` after ``--from-partial`` stored a row while its run went on: that row is not
    superseded by itself (the scenario read back has lists where the run has tuples); a real
    re-run keeps the row it replaced, saying whether the scenario had changed."""
    import json

    from benchmarks.gate_matrix import _superseded

    scenario = {"name": "H1-ramp", "loads": ("ramp:0.3:3:300",), "steps": 6000}
    row = {"scenario": scenario, "design": "r9", "final": "GO"}
    out = tmp_path / "validation"
    out.with_suffix(".json").write_text(json.dumps({"rows": [row], "superseded_rows": [row]}))
    assert _superseded(out, [row]) == []
    again = {**row, "final": "INCONCLUSIVE"}
    kept = _superseded(out, [again])
    assert [r["final"] for r in kept] == ["GO", "GO"]
    assert kept[-1]["superseded_by"] == "a re-run of the same scenario"
    longer = {**row, "scenario": {**scenario, "steps": 9000}}
    assert "superseded_by" not in _superseded(out, [longer])[-1]
    sliced = {**row, "ingest": "steps"}  # the same scenario, its ingest cut at fixed steps
    assert _superseded(out, [sliced])[-1]["superseded_by"].endswith("cut at fixed steps (repeatable)")


def _armed_row(episodes: list[dict], fault_at: int | None, unfired: bool = False) -> dict:
    row = _fault_row(episodes)
    row["scenario"]["injects"] = ["step-slowdown:0.15@go:7000"]
    return {**row, "fault_at": fault_at, "fault_unfired": unfired}


def test_an_armed_fault_is_judged_from_where_it_fired():
    """Held-out 32's faults fire at the first GO from step 7000 on: an INCONCLUSIVE spell that
    spans 7000 but ended before the fault fired does not make the row 'not a test'."""
    spell = {"verdict": "INCONCLUSIVE", "first_step": 6030, "last_step": 7638}
    after = {"verdict": "NO_GO", "first_step": 8040, "last_step": 12001}
    assert outcome(_armed_row([CALIBRATING, spell, after], fault_at=7839)) == (True, "")
    # Judged from the scenario's 7000, the same row would not have been a test.
    assert not outcome({**_armed_row([CALIBRATING, spell, after], 7839), "fault_at": 7000})[0]


def test_an_armed_fault_that_never_fired_is_not_a_test():
    met, why = outcome(_armed_row([CALIBRATING], fault_at=None, unfired=True))
    assert not met and why == (
        "not a test: the gate never said GO from step 7000 on (the armed fault never fired)"
    )
    # F34-step8: its healthy engine paged before the fault could fire; the row says so first.
    paged = {**_armed_row([CALIBRATING], fault_at=None, unfired=True), "pages_after_first_go": 34}
    met, why = outcome(paged)
    assert not met and why.startswith(
        "34 NO_GO evaluations after the first GO on the healthy engine; not a test"
    )


def test_an_evaluation_at_the_fault_step_comes_after_the_fault():
    """The demo injects, then evaluates: F32-platform's NO_GO at the step its armed swap fired is
    the swap's doing (its not-GO delay), not a page on a healthy engine."""
    from benchmarks.gate_matrix import summarise
    from benchmarks.gate_scenarios import Scenario

    s = Scenario(
        "F-platform", "held_out_32", "fault", "swap", "p", "m", 1, (), 12000, 1, ("platform:x@go:7000",)
    )
    hist = [
        {"step": 6830, "verdict": "GO", "causes": {}},
        {"step": 7001, "verdict": "NO_GO", "causes": {"platform": "fail"}},
    ]
    result = {"verdict": "NO_GO", "steps": 12001, "gate_history": hist, "injections": [{"step": 7001}]}
    row = summarise(s, result)
    assert row["fault_at"] == 7001 and row["pages_after_first_go"] == 0 and row["not_go_delay_steps"] == 0
