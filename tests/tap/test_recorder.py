"""StepRecorder bookkeeping that the engine tests cannot easily provoke."""

from __future__ import annotations

from types import SimpleNamespace as NS

from shadowd.tap.frame import decode_message
from shadowd.tap.recorder import StepRecorder
from shadowd.tap.tenant import TenantResolver


def _out(ids: list[str]) -> NS:
    cached = NS(req_ids=ids, num_computed_tokens=[10] * len(ids), resumed_req_ids=set())
    return NS(
        total_num_scheduled_tokens=len(ids),
        scheduled_new_reqs=[],
        scheduled_cached_reqs=cached,
        scheduled_spec_decode_tokens={},
        num_scheduled_tokens=dict.fromkeys(ids, 1),
    )


def test_output_of_an_unseen_step_leaves_pending_steps_alone():
    """An output for a step the tap never saw scheduled must not shift later steps' columns."""
    reqs = {"a": NS(request_id="a", num_prompt_tokens=5, sampling_params=None, lora_request=None)}
    sent: list[bytes] = []
    rec = StepRecorder(
        lambda d, frames=1: sent.append(d) or True, engine_id="e", requests=reqs, tenants=TenantResolver()
    )
    unseen, first, second = _out(["a"]), _out(["a"]), _out(["a"])
    rec.on_schedule(first, 1, 2)
    rec.on_output(unseen, 3)  # e.g. scheduled before the tap was attached
    rec.on_schedule(second, 4, 5)
    rec.on_output(first, 6)
    rec.on_output(second, 7)
    frames = [f for m in sent for f in decode_message(m)[0]]
    assert [(f.step_seq, f.t_sched_start, f.t_done) for f in frames] == [(1, 1, 6), (2, 4, 7)]
    assert rec.dropped == 0


def test_output_skipping_a_step_counts_it_dropped():
    reqs = {"a": NS(request_id="a", num_prompt_tokens=5, sampling_params=None, lora_request=None)}
    sent: list[bytes] = []
    rec = StepRecorder(
        lambda d, frames=1: sent.append(d) or True, engine_id="e", requests=reqs, tenants=TenantResolver()
    )
    lost, kept = _out(["a"]), _out(["a"])
    rec.on_schedule(lost, 1, 2)
    rec.on_schedule(kept, 3, 4)
    rec.on_output(kept, 5)
    assert rec.dropped == 1 and [f.t_sched_start for m in sent for f in decode_message(m)[0]] == [3]


def _request(rid: str) -> NS:
    return NS(request_id=rid, num_prompt_tokens=5, sampling_params=None, lora_request=None, arrival_time=1.0)


def test_finishes_the_tap_never_saw_are_reconciled_within_the_slack():
    """Requests that leave the scheduler without ``_free_request`` (a vLLM change, a bug) must not
    grow the tap's state for ever: beyond ``RECONCILE_SLACK`` extra known requests, the ones the
    scheduler no longer holds are dropped and counted, and live ones are kept."""
    from shadowd.tap.recorder import RECONCILE_SLACK

    live = {"keep": _request("keep")}
    rec = StepRecorder(lambda d, frames=1: True, engine_id="e", requests=live, tenants=TenantResolver())
    rec.on_admit(live["keep"])
    lost = [_request(f"lost-{i}") for i in range(RECONCILE_SLACK + 5)]
    for i, r in enumerate(lost):
        live[r.request_id] = r
        rec.on_admit(r)
        out = _out(["keep"])
        rec.on_schedule(out, 2 * i, 2 * i + 1)
        del live[r.request_id]  # gone from the scheduler, no on_finish
        rec.on_output(out, 2 * i + 2)
        assert len(rec._tenant_of) <= len(live) + RECONCILE_SLACK + 1
    assert rec.missed_finishes == RECONCILE_SLACK + 1
    assert "keep" in rec._tenant_of and rec.dropped == 0
    assert len(rec._tenant_of) == len(rec._life) == len(rec._prompt_of)


def test_arrival_and_departure_between_steps_keep_their_order():
    """An id a client reuses: the first request finishes and a new one with the same id arrives
    before the next step.  Its record is the first one's, and the second stays known."""
    live: dict = {}
    sent: list[bytes] = []
    rec = StepRecorder(
        lambda d, frames=1: sent.append(d) or True, engine_id="e", requests=live, tenants=TenantResolver()
    )
    first, second = _request("x"), _request("x")
    first.arrival_time, second.arrival_time = 1.0, 2.0
    live["x"] = first
    rec.on_admit(first)
    first.status, first.num_output_tokens, first.num_preemptions = None, 0, 0
    rec.on_finish(first)
    live["x"] = second
    rec.on_admit(second)
    out = _out(["x"])
    rec.on_schedule(out, 1, 2)
    rec.on_output(out, 3)
    (frame,) = [f for m in sent for f in decode_message(m)[0]]
    assert [(r.req_id, r.arrival_wall_ns, r.finish_reason) for r in frame.requests] == [
        ("x", 1_000_000_000, "unknown")
    ]
    assert rec._life["x"][0] == 2_000_000_000
