"""The tap's cost-saving paths are exact: reused steady-decode columns and batched sends.

A real vLLM ``AsyncScheduler`` with the tap runs long decodes (the same running set step after
step, where the recorder reuses columns), arrivals and completions (where it must not), and
1 ms steps (shorter than the send interval, so frames leave in batches).  Every frame is
compared with what the scheduler itself scheduled.
"""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from shadowd.tap.frame import decode_frame, decode_message, encode_frame, is_batch
from shadowd.tap.sender import BATCH_FRAMES
from shadowd.twin.request_spec import RequestSpec

pytestmark = pytest.mark.usefixtures("vllm")


def test_reused_columns_and_batched_sends_are_exact(monkeypatch, llama_dir):
    from shadowd.sim.driver import EngineDriver
    from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler

    monkeypatch.setenv("SHADOWD_TAP", "ipc:///tmp/shadowd-nobody-listens.sock")
    monkeypatch.setenv("SHADOWD_TENANT_KEY", "tenant")
    sched = build_scheduler(SchedulerSpec(model_dir=llama_dir, max_num_seqs=16, num_blocks=2000))
    driver = EngineDriver(sched, lambda st: 1.0, vocab_size=128256)
    driver.record_steps = True
    tap = sched.shadowd_tap
    sent: list[bytes] = []
    tap.builder.send = lambda data, frames=1: sent.append(data) or True
    reused = [0]
    builder = tap.builder
    columns = builder.columns

    def counting(out, t0, t1, cands, slot):
        steady_before = builder._steady
        columns(out, t0, t1, cands, slot)
        if steady_before is not None and slot[0][2] is steady_before[1]:
            reused[0] += 1

    monkeypatch.setattr(builder, "columns", counting)
    reqs = [RequestSpec(0.0, "acme" if i % 2 else "beta", 40 + 7 * i, 120 + 10 * i) for i in range(8)]
    reqs += [RequestSpec(0.05 + 0.01 * i, "gamma", 300, 30) for i in range(4)]  # arrivals mid-run
    n = driver.run(reqs, max_steps=400)

    batches = [msgspec.msgpack.decode(m, type=list[msgspec.Raw]) if is_batch(m) else [m] for m in sent]
    frames = [decode_frame(bytes(b)) for batch in batches for b in batch]
    # Frames assembled from reused encoded parts are byte for byte what encode_frame makes.
    assert all(encode_frame(f) == bytes(b) for f, b in zip(frames, (b for batch in batches for b in batch)))
    assert [f for m in sent for f in decode_message(m)[0]] == frames
    assert len(frames) == n == len(driver.steps)
    for f, st in zip(frames, driver.steps):
        assert f.req_ids == st.req_ids
        assert f.tenants == st.tenants
        assert f.new_tokens == st.new_tokens.tolist()
        assert f.context_tokens == st.context_tokens.tolist()
        assert f.prompt_tokens == st.prompt_tokens.tolist()
        assert f.prefill == st.prefill.tolist()
    assert [f.step_seq for f in frames] == list(range(1, n + 1))
    assert reused[0] > n // 3, "steady decode steps did not reuse columns"
    assert any(len(b) > 1 for b in batches), "1 ms steps were not batched"
    assert max(len(b) for b in batches) <= BATCH_FRAMES
    latency = np.diff([f.t_done for f in frames]) / 1e6
    assert np.all(latency >= 0)
