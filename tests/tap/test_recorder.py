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
