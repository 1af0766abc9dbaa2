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

from shadowd.tap.frame import decode_frame, is_batch
from shadowd.tap.recorder import MAX_REQ_ID_LEN, short_id
from shadowd.twin.request_spec import RequestSpec

pytestmark = pytest.mark.usefixtures("vllm")
TENANTS = ("acme", "beta", "gamma")


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


def test_records_exact_under_churn(monkeypatch, llama_dir):
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.request import RequestStatus

    from shadowd.sim.driver import EngineDriver
    from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler

    monkeypatch.setenv("SHADOWD_TAP", "ipc:///tmp/shadowd-nobody-listens.sock")
    n_admitted, steps = 24, 320
    sched = build_scheduler(
        SchedulerSpec(
            model_dir=llama_dir, max_num_seqs=n_admitted, max_num_batched_tokens=768, num_blocks=700
        )
    )
    tap = sched.shadowd_tap
    sent: list[bytes] = []
    tap._send = lambda data, frames=1: sent.append(data) or True
    driver = EngineDriver(sched, lambda st: 1.0, vocab_size=128256)
    rng = np.random.default_rng(7)
    prompts = iter(_prompts(4000, seed=7))
    long_id = "L" * 300

    def arrive(i: int) -> None:
        req = driver.make_request(RequestSpec(0.0, TENANTS[i % 3], next(prompts), int(rng.integers(8, 41))))
        if i == 5:
            req.request_id = long_id
        sched.add_request(req)

    made = 0
    truth: list[list[tuple]] = []
    queue = []
    aborted = 0
    for step in range(steps):
        while sched.get_num_unfinished_requests() < n_admitted:  # arrivals before every step
            arrive(made)
            made += 1
        if step % 23 == 22:  # a client goes away: abort one running and one waiting request
            victims = [sched.running[0].request_id] + [r.request_id for r in list(sched.waiting)[:1]]
            aborted += len(sched.finish_requests(victims, RequestStatus.FINISHED_ABORTED))
        out = sched.schedule()
        if out.total_num_scheduled_tokens:
            rows = _truth(sched, out)
            truth.append(rows)
            final = [c + k >= sched.requests[r].num_tokens for r, _, k, c, *_ in rows]
            ids = [r[0] for r in rows]
            mro = ModelRunnerOutput(
                req_ids=ids,
                req_id_to_index={r: i for i, r in enumerate(ids)},
                sampled_token_ids=[[7] if f else [] for f in final],
            )
        else:
            mro = ModelRunnerOutput(req_ids=[], req_id_to_index={}, sampled_token_ids=[])
        queue.append((out, mro))
        if len(queue) == 2:
            sched.update_from_output(*queue.pop(0))
    while queue:
        sched.update_from_output(*queue.pop(0))
    tap.flush()

    frames = [
        decode_frame(bytes(b))
        for m in sent
        for b in (msgspec.msgpack.decode(m, type=list[msgspec.Raw]) if is_batch(m) else [m])
    ]
    assert len(frames) == len(truth) == tap.step_seq
    assert tap.dropped == 0
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
    ids_per_step = [[r[0] for r in rows] for rows in truth]
    changed = sum(a != b for a, b in zip(ids_per_step, ids_per_step[1:]))
    assert changed >= 0.6 * (len(truth) - 1), "the batch did not change on most steps"
    assert made - n_admitted >= 4 * steps // 20  # many arrivals (and as many finishes)
    all_rows = [r for rows in truth for r in rows]
    assert any(r[3] < r[4] and r[3] + r[2] < r[4] for r in all_rows), "no chunked prefill"
    assert tap.preempted > 0 and any(r[7] > 0 for r in all_rows), "no preemption"
    assert any(r[6] and r[7] > 0 for r in all_rows), "no recompute after preemption"
    assert aborted >= 10
    assert tap.ids_truncated == 1 and any(short_id(long_id) in f.req_ids for f in frames)
    assert len(short_id(long_id)) == MAX_REQ_ID_LEN
    # Per-request state went with the request: only live requests are known.
    assert set(tap._tenant_of) <= set(sched.requests)
    assert tap.missed_finishes == 0
