"""The GPU step study (``benchmarks.gpu_steps``): its stored doc, and its timer's bookkeeping on CPU.

The timings themselves need a GPU machine, which CI never has; what CI can hold to account is that
``docs/gpu.md`` is what the analysis of the stored timings renders, that every exported step the
timer reads is one the real scheduler formed, and that the timer's row order, KV offsets and
padding give the same attention as one masked reference call over the step.
"""

from __future__ import annotations

import csv
import gzip
import json

import pytest
import torch

from benchmarks import gpu_step_timer as timer
from benchmarks.gpu_report import render
from benchmarks.gpu_steps import EXPORT_PATH, JSON_PATH, MD_PATH


def test_the_gpu_doc_is_what_its_stored_result_renders():
    assert MD_PATH.read_text() == render(json.loads(JSON_PATH.read_text()))


def test_every_timed_step_is_an_exported_step_with_its_rows():
    with gzip.open(EXPORT_PATH, "rt") as fh:
        steps = {s["id"]: s for s in json.load(fh)["steps"]}
    result = json.loads(JSON_PATH.read_text())
    for run in result["runs"].values():
        with open(MD_PATH.parent / run["timings"].removeprefix("docs/")) as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == run["timed_steps"] > 0
        for r in rows:
            s = steps[r["step_id"]]
            assert int(r["rows"]) == len(s["new"]) and int(r["tokens"]) == sum(s["new"])
            assert int(r["kv_tokens"]) == sum(s["ctx"]) + sum(s["new"])
            assert float(r["ms_min"]) <= float(r["ms_median"]) <= float(r["ms_max"])


def _step(new, ctx, padded=0, engine="v2"):
    shape = timer.Shape(256, 512, 8, 2, 2, 1000, 10000.0)
    torch.manual_seed(0)
    m = timer.Decoder(shape, "cpu", kv_tokens=4096)
    return m, timer.StepInputs(m, new, ctx, [True] * len(new), padded, engine)


@pytest.mark.parametrize("engine", timer.ENGINES)
@pytest.mark.parametrize(
    "new,ctx",
    [([5, 1, 1, 3], [0, 40, 7, 20]), ([1, 1, 1], [40, 7, 300]), ([7, 2], [0, 9]), ([1, 4, 1], [12, 0, 3])],
)
def test_decode_first_calls_equal_one_masked_call_over_the_step(new, ctx, engine):
    m, si = _step(new, ctx, engine=engine)
    t, hd = si.t, m.s.head_dim
    g = torch.Generator().manual_seed(1)
    q = torch.randn(t, m.s.heads, hd, generator=g).to(torch.bfloat16)
    kb = torch.randn(si.total_k, m.s.kv_heads, hd, generator=g).to(torch.bfloat16)
    vb = torch.randn(si.total_k, m.s.kv_heads, hd, generator=g).to(torch.bfloat16)
    cu_q = torch.cat((si.decode[0], si.chunks[0][1:] + si.nd))
    cu_k = torch.cat((si.decode[1], si.chunks[1][1:] + si.kd))
    one = timer.reference_attention(q, kb, vb, cu_q, cu_k)
    assert torch.equal(timer.step_attention(m, si, q, kb, vb), one)
    assert si.nd == (sum(n == 1 for n in new) if engine == "v2" else 0)


def test_new_kv_lands_after_each_rows_history_and_padding_reaches_only_the_mlp():
    m, si = _step([3, 1], [4, 6], padded=8)
    # decode-first: the one-token row (history 6) comes first, its new K/V at offset 6;
    # then the 3-token chunk (history 4) at 7 + 4 .. 7 + 6
    assert si.write.tolist() == [6, 11, 12, 13]
    assert si.rows == 8 and si.t == 4 and si.x.shape[0] == 8
    logits = timer.forward(m, si)
    assert logits.shape == (2, m.s.vocab) and torch.isfinite(logits.float()).all()
    _, v1 = _step([3, 1], [4, 6], padded=8, engine="v1")  # v1: rows as given, no padding
    assert v1.write.tolist() == [4, 5, 6, 13] and v1.rows == 4 and v1.nd == 0


def test_the_timer_runs_stored_export_steps_on_cpu(tmp_path):
    out = tmp_path / "t.csv"
    assert (
        timer.main(
            ["--steps", str(EXPORT_PATH), "--out", str(out), "--device", "cpu", "--tiny", "--limit", "3"]
        )
        == 0
    )
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 3 and all(float(r["ms_median"]) > 0 for r in rows)
    assert all(int(r["padded"]) >= int(r["tokens"]) for r in rows)
    facts = json.loads(out.with_suffix(".json").read_text())
    assert facts["engine"] == timer.ENGINE and facts["timed_steps"] == 3
