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
        assert len(rec._life) <= len(live) + RECONCILE_SLACK + 1
    assert rec.missed_finishes == RECONCILE_SLACK + 1
    assert "keep" in rec._life and rec.dropped == 0
    assert set(rec.builder._tenant_of) == set(rec._life) == set(rec.builder._prompt_of)


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


def _wait(cond, timeout: float = 5.0) -> bool:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.005)
    return cond()


def test_encoder_thread_sends_without_the_engine_thread_and_close_sends_the_rest():
    """Threaded: the hooks only queue; the encoder thread builds and sends the frames by itself,
    and ``close`` stops it and passes on what was still queued."""
    live = {"a": _request("a")}
    sent: list[bytes] = []
    rec = StepRecorder(
        lambda d, frames=1: sent.append(d) or True,
        engine_id="e",
        requests=live,
        tenants=TenantResolver(),
        threaded=True,
    )
    rec.on_admit(live["a"])
    for i in range(5):
        out = _out(["a"])
        rec.on_schedule(out, 10 * i, 10 * i + 1)
        rec.on_output(out, 10 * i + 5)  # nothing in flight after it: the frame is due at once
    assert _wait(lambda: sum(len(decode_message(m)[0]) for m in sent) == 5)
    assert rec.encoder_cpu_ns > 0 and rec._worker.is_alive()
    worker = rec._worker
    out = _out(["a"])
    rec.on_schedule(out, 100, 101)
    rec.on_output(out, 105)
    rec.close()
    assert not worker.is_alive()
    frames = [f for m in sent for f in decode_message(m)[0]]
    assert [f.step_seq for f in frames] == [1, 2, 3, 4, 5, 6] and rec.dropped_total == 0


def test_a_stalled_encoder_costs_dropped_steps_then_the_tap_not_the_engine(monkeypatch):
    """If the encoder cannot keep up, the queue is bounded: steps beyond ``MAX_QUEUED_EVENTS``
    are dropped and counted, and beyond four times that the tap turns itself off.  The engine's
    hooks never raise and the tap's memory stays bounded."""
    import shadowd.tap.recorder as recorder_mod

    monkeypatch.setattr(recorder_mod, "MAX_QUEUED_EVENTS", 50)
    live = {"a": _request("a")}
    rec = StepRecorder(
        lambda d, frames=1: True, engine_id="e", requests=live, tenants=TenantResolver(), threaded=True
    )
    rec._worker.stop()  # a stalled encoder: nothing drains the queue
    rec.on_admit(live["a"])
    for i in range(60):
        out = _out(["a"])
        rec.on_schedule(out, i, i)
        rec.on_output(out, i)
    assert len(rec._events) <= 51 and rec.dropped >= 30  # steps dropped (a queued step keeps its frame)
    for i in range(200):  # admissions and finishes still queue, up to 4x the bound
        r = _request(f"r{i}")
        r.status, r.num_output_tokens, r.num_preemptions = None, 0, 0
        rec.on_admit(r)
        rec.on_finish(r)
    assert rec._off and not rec._events and len(rec._life) <= 1
    rec.on_admit(_request("late"))  # off: the hooks do nothing, and never raise
    assert "late" not in rec._life


def test_an_encoder_error_costs_one_frame_not_the_thread():
    """A frame the builder cannot build (here: its send raises) is counted; the thread goes on."""
    live = {"a": _request("a")}
    calls: list[int] = []

    def send(data, frames=1):
        calls.append(frames)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return True

    rec = StepRecorder(send, engine_id="e", requests=live, tenants=TenantResolver(), threaded=True)
    rec.on_admit(live["a"])
    for i in range(3):
        out = _out(["a"])
        rec.on_schedule(out, 10 * i, 10 * i + 1)
        rec.on_output(out, 10 * i + 5)
        assert _wait(lambda n=i: len(calls) == n + 1)
    assert rec.builder.dropped == 1 and rec.dropped_total == 1 and rec._worker.is_alive()
    rec.close()


def test_the_encoder_thread_ends_with_its_recorder():
    """A scheduler dropped without ``shutdown`` (tests, a failed start) must not leave a thread
    polling for ever, nor keep the scheduler's requests alive through it."""
    import gc

    rec = StepRecorder(
        lambda d, frames=1: True, engine_id="e", requests={}, tenants=TenantResolver(), threaded=True
    )
    worker = rec._worker
    del rec
    gc.collect()
    assert _wait(lambda: not worker.is_alive(), timeout=2.0)
