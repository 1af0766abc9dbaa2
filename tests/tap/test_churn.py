"""The tap's records stay exact on a busy engine whose batch changes every step.

A real vLLM ``AsyncScheduler`` with the tap, driven in the engine's pipelined order (schedule
N+1, then N's output), is refilled before every step with requests of short outputs (8-40
tokens) and prompt lengths drawn from the Azure 2023 conversation trace, with a small token
budget (chunked prefills) and a small KV cache (preemptions), aborts of running and waiting
requests, and one over-long request id.  Each frame is compared, row by row, with what the
scheduler itself did in that step, read from its requests right after ``schedule()``.
"""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from shadowd.tap.builder import MAX_REQ_ID_LEN, short_id
from shadowd.tap.frame import decode_frame, is_batch
from shadowd.twin.request_spec import RequestSpec

pytestmark = pytest.mark.usefixtures("vllm")
TENANTS = ("acme", "beta", "gamma")
LONG_ID = "L" * 300


def _prompts(count: int, seed: int) -> list[int]:
    from shadowd.paths import data_dir
    from shadowd.twin.traces import load_azure

    trace = load_azure(data_dir() / "traces/azure-2023/AzureLLMInferenceTrace_conv.csv", "t", limit=4000)
    lengths = np.array([min(r.prompt_tokens, 1500) for r in trace])
    return np.random.default_rng(seed).choice(lengths, count).tolist()


def _truth(sched, out) -> list[tuple]:
    """The step as the scheduler did it, from its requests (read just after ``schedule()``)."""
    ids = [r.req_id for r in out.scheduled_new_reqs] + list(out.scheduled_cached_reqs.req_ids)
    rows = []
    for rid in ids:
        req = sched.requests[rid]
        k = out.num_scheduled_tokens[rid]
        ctx = req.num_computed_tokens - k  # the scheduler advanced it by this step's tokens
        p = req.num_prompt_tokens
        rows.append(
            (
                rid,
                req.sampling_params.extra_args["tenant"],
                k,
                ctx,
                p,
                0,
                ctx < p or k > 1,
                req.num_preemptions,
            )
        )
    return rows


class _Run:
    """What one churn run produced: the frames, and the truth about every step and request."""

    def __init__(self) -> None:
        self.truth: list[list[tuple]] = []  # per non-empty step: its rows, from the scheduler
        self.requests: dict[str, object] = {}  # every request made, by id
        self.first_token: dict[str, int] = {}  # request id -> step whose output gave its first token
        self.aborted: set[str] = set()
        self.made = 0
        self.frames: list = []


def _drive(monkeypatch, llama_dir, steps: int = 320, n_admitted: int = 24, encoder: str = "thread") -> tuple:
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.request import RequestStatus

    from shadowd.sim.driver import EngineDriver
    from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler

    monkeypatch.setenv("SHADOWD_TAP", "ipc:///tmp/shadowd-nobody-listens.sock")
    monkeypatch.setenv("SHADOWD_TENANT_KEY", "tenant")  # the workload's gateway sets it
    monkeypatch.setenv("SHADOWD_TAP_ENCODER", encoder)
    sched = build_scheduler(
        SchedulerSpec(
            model_dir=llama_dir, max_num_seqs=n_admitted, max_num_batched_tokens=768, num_blocks=450
        )
    )
    tap = sched.shadowd_tap
    sent: list[bytes] = []
    tap.builder.send = lambda data, frames=1: sent.append(data) or True
    driver = EngineDriver(sched, lambda st: 1.0, vocab_size=128256)
    rng = np.random.default_rng(7)
    prompts = iter(_prompts(4000, seed=7))
    run = _Run()

    def arrive(i: int) -> None:
        req = driver.make_request(RequestSpec(0.0, TENANTS[i % 3], next(prompts), int(rng.integers(8, 41))))
        if i == 5:
            req.request_id = LONG_ID
        run.requests[req.request_id] = req
        sched.add_request(req)

    def update(out, mro, seq) -> None:
        before = {r: run.requests[r].num_output_tokens for r in mro.req_ids}
        sched.update_from_output(out, mro)
        for r, k in before.items():
            if k == 0 and run.requests[r].num_output_tokens > 0:
                run.first_token.setdefault(r, seq)

    queue = []
    for step in range(steps + 2000):  # then no more arrivals: run until every request is done
        if step >= steps and not sched.has_requests() and not queue:
            break
        while step < steps and sched.get_num_unfinished_requests() < n_admitted:  # arrivals every step
            arrive(run.made)
            run.made += 1
        if step % 23 == 22 and step < steps:  # a client goes away: abort one running and one waiting request
            victims = [sched.running[0].request_id] + [r.request_id for r in list(sched.waiting)[:1]]
            run.aborted |= {
                r.request_id for r in sched.finish_requests(victims, RequestStatus.FINISHED_ABORTED)
            }
        out = sched.schedule()
        seq = 0
        if out.total_num_scheduled_tokens:
            rows = _truth(sched, out)
            run.truth.append(rows)
            seq = len(run.truth)
            final = [c + k >= sched.requests[r].num_tokens for r, _, k, c, *_ in rows]
            ids = [r[0] for r in rows]
            mro = ModelRunnerOutput(
                req_ids=ids,
                req_id_to_index={r: i for i, r in enumerate(ids)},
                sampled_token_ids=[[7] if f else [] for f in final],
            )
        else:
            mro = ModelRunnerOutput(req_ids=[], req_id_to_index={}, sampled_token_ids=[])
        queue.append((out, mro, seq))
        if len(queue) == 2 or not out.total_num_scheduled_tokens:
            update(*queue.pop(0))
    while queue:
        update(*queue.pop(0))
    tap.flush()
    run.frames = [
        decode_frame(bytes(b))
        for m in sent
        for b in (msgspec.msgpack.decode(m, type=list[msgspec.Raw]) if is_batch(m) else [m])
    ]
    return sched, tap, run


@pytest.mark.parametrize("encoder", ["thread", "inline"])
def test_records_exact_under_churn(monkeypatch, llama_dir, encoder):
    """Frames built on the encoder thread (the engine's default) and inline are both exact."""
    sched, tap, run = _drive(monkeypatch, llama_dir, encoder=encoder)
    assert (tap._worker is not None) == (encoder == "thread")
    frames, truth, made, aborted, steps, n_admitted = (
        run.frames,
        run.truth,
        run.made,
        len(run.aborted),
        320,
        24,
    )
    assert len(frames) == len(truth) == tap.step_seq
    assert tap.dropped == 0 and tap.builder.dropped == 0
    for seq, (f, rows) in enumerate(zip(frames, truth), start=1):
        want = [(short_id(r[0]) if len(r[0]) > MAX_REQ_ID_LEN else r[0], *r[1:]) for r in rows]
        got = list(
            zip(
                f.req_ids,
                f.tenants,
                f.new_tokens,
                f.context_tokens,
                f.prompt_tokens,
                f.spec_tokens,
                f.prefill,
                f.preemptions,
            )
        )
        assert got == want, f"step {seq} differs"
        assert f.step_seq == seq

    # The workload really was churn, with everything the sparse and incremental paths must get right.
    ids_per_step = [[r[0] for r in rows] for rows in truth[:steps]]  # the churn phase
    changed = sum(a != b for a, b in zip(ids_per_step, ids_per_step[1:]))
    assert changed >= 0.5 * (len(ids_per_step) - 1), "the batch did not change on most steps"
    assert made - n_admitted >= 4 * steps // 20  # many arrivals (and as many finishes)
    all_rows = [r for rows in truth for r in rows]
    assert any(r[3] < r[4] and r[3] + r[2] < r[4] for r in all_rows), "no chunked prefill"
    assert tap.preempted > 0 and any(r[7] > 0 for r in all_rows), "no preemption"
    assert any(r[6] and r[7] > 0 for r in all_rows), "no recompute after preemption"
    assert aborted >= 10
    assert tap.ids_truncated == 1 and any(short_id(LONG_ID) in f.req_ids for f in frames)
    assert len(short_id(LONG_ID)) == MAX_REQ_ID_LEN
    # Per-request state went with the request: only live requests are known.
    assert set(tap.builder._tenant_of) <= set(sched.requests) and set(tap._life) <= set(sched.requests)
    assert tap.missed_finishes == 0


def test_lifecycle_once_per_request_matches_the_scheduler(monkeypatch, llama_dir):
    """Each finished request's lifecycle comes once, and says what the scheduler did with it."""
    from shadowd.tap.frame import RequestRecord

    sched, tap, run = _drive(monkeypatch, llama_dir)
    frames = run.frames
    records = [(f.step_seq, r) for f in frames for r in f.requests or ()]
    by_id = {r.req_id: (seq, r) for seq, r in records}
    assert len(by_id) == len(records), "a request's lifecycle came more than once"
    finished = {rid for rid, req in run.requests.items() if req.is_finished()}
    wire = {(short_id(rid) if len(rid) > MAX_REQ_ID_LEN else rid): rid for rid in run.requests}
    assert {wire[w] for w in by_id} == finished == set(run.requests)  # every request, once
    first_sched: dict[str, int] = {}
    for seq, rows in enumerate(run.truth, start=1):
        for row in rows:
            first_sched.setdefault(row[0], seq)

    for w, (seq, r) in by_id.items():
        rid = wire[w]
        req = run.requests[rid]
        assert r.arrival_wall_ns == int(req.arrival_time * 1e9)
        assert r.tenant == req.sampling_params.extra_args["tenant"]
        assert r.first_sched_seq == first_sched.get(rid, 0), rid
        assert r.first_token_seq == run.first_token.get(rid, 0), rid
        if r.first_sched_seq:
            assert r.t_first_sched == frames[r.first_sched_seq - 1].t_sched_start
        if r.first_token_seq:
            assert r.t_first_token == frames[r.first_token_seq - 1].t_done
            assert r.first_sched_seq <= r.first_token_seq
        assert r.prompt_tokens == req.num_prompt_tokens
        assert r.output_tokens == req.num_output_tokens
        assert r.preemptions == req.num_preemptions
        assert r.finish_reason == ("abort" if rid in run.aborted else "length")
        if r.first_token_seq:
            assert r.t_first_token <= r.t_finish
        # carried by the frame of the step at whose output it finished, or the next one
        assert seq >= max(r.first_sched_seq, r.first_token_seq)

    recs = [r for _, r in records]
    assert sum(r.finish_reason == "abort" for r in recs) == len(run.aborted) >= 10
    assert any(r.finish_reason == "abort" and r.first_sched_seq == 0 for r in recs), "no abort while waiting"
    assert any(r.finish_reason == "abort" and r.first_sched_seq > 0 for r in recs), "no abort while running"
    assert any(r.preemptions > 0 and r.finish_reason == "length" for r in recs), (
        "no preempted request finished"
    )
    assert sum(r.finish_reason == "length" for r in recs) >= 80
    assert tap.records_dropped == 0
    # Counts, stamps and labels only: no prompt text or token ids can travel in a record.
    assert RequestRecord.__struct_fields__ == (
        "req_id", "tenant", "arrival_wall_ns", "first_sched_seq", "t_first_sched", "first_token_seq",
        "t_first_token", "t_finish", "prompt_tokens", "output_tokens", "preemptions", "finish_reason",
    )  # fmt: skip
