"""The confusion matrix's note on a new-tenant fault that ended GO (benchmarks/gate_document.py).

Without it the row only says "ended GO"; the note says whether the newcomer carried enough of
the time for the gate's new-tenant check to see it, from the row's own Shapley truth.
"""

from __future__ import annotations

from benchmarks.gate_document import _newcomer_note


def _row(per_tenant: dict[str, float] | None) -> dict:
    truth = (
        None
        if per_tenant is None
        else {"llmvisor": {"per_tenant": {k: {"shapley_ms": v} for k, v in per_tenant.items()}}}
    )
    return {"scenario": {"injects": ["tenant:heavy=lengths:arxiv:1@7000"]}, "truth": truth}


def test_a_sampled_newcomer_gets_its_share_of_the_time_against_the_limit():
    note = _newcomer_note(_row({"a": 60.0, "b": 38.0, "heavy": 2.0}))
    assert "'heavy' carried 2.0% of the Shapley time" in note and "limit is 5%" in note


def test_a_newcomer_outside_the_sample_barely_arrived():
    assert "barely arrived" in _newcomer_note(_row({"a": 60.0, "b": 40.0}))


def test_a_newcomer_that_never_ran_gets_no_note_beside_its_outcome():
    row = _row({"a": 60.0, "b": 40.0})
    row["tenants_run"] = ["a", "b"]
    assert _newcomer_note(row) == ""


def test_other_faults_and_rows_without_truth_get_no_note():
    assert _newcomer_note(_row(None)) == ""
    row = _row({"a": 1.0})
    row["scenario"]["injects"] = ["step-slowdown:0.08@7000"]
    assert _newcomer_note(row) == ""
