"""A work term fitted at zero where the window carried that work is reported, not passed silently.

On the light steps timed on a GPU (``docs/gpu-steps.csv``, engine v2, ``benchmarks/gpu_steps.py``)
the breakpoint search splits at a few tokens and the upper segment's decode terms come out zero, so
every decode step there would be priced at that segment's constant whatever its KV. The first
engine's timings of the same kind of steps (v1) give a one-segment fit with KV reads priced.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from benchmarks.gpu_report import _half, load_timings, step_batch
from benchmarks.gpu_steps import DOCS, EXPORT_PATH
from shadowd.attribution import fit
from shadowd.attribution.llmvisor import COLUMNS
from shadowd.daemon.calibrator import zero_priced_warnings

KEY = {"gpu": "H200", "model": "llama-3.1-8b"}


def _light_fit(csv_name: str):
    with gzip.open(EXPORT_PATH, "rt") as fh:
        doc = json.load(fh)
    timed, _ = load_timings(doc, DOCS / csv_name)
    return fit(step_batch(_half(timed, "light", first=True)), KEY)


def test_a_segment_whose_kv_reads_came_out_zero_is_reported():
    version = _light_fit("gpu-steps.csv")
    zero = version.fit_metrics["zero_priced"]
    assert {"segment": 1, "term": "decode.c"} in [{k: z[k] for k in ("segment", "term")} for z in zero]
    z = next(z for z in zero if z["term"] == "decode.c")
    assert version.llmvisor.to_dict()["segments"][1]["decode"]["c"] == 0.0
    assert 0 < z["steps"] <= z["rows"]
    (line,) = [w for w in zero_priced_warnings(version.fit_metrics) if "decode.c" in w]
    assert f"{z['rows']} such rows in {z['steps']} steps" in line


def test_a_fit_that_prices_its_work_reports_nothing():
    version = _light_fit("gpu-steps-v1.csv")
    assert version.fit_metrics["zero_priced"] == []
    assert version.llmvisor.to_dict()["segments"][0]["decode"]["c"] > 0


@pytest.mark.parametrize("segment", [0, 1])
def test_the_report_counts_only_the_rows_of_that_segment(segment):
    version = _light_fit("gpu-steps.csv")
    with gzip.open(EXPORT_PATH, "rt") as fh:
        timed, _ = load_timings(json.load(fh), DOCS / "gpu-steps.csv")
    batch = step_batch(_half(timed, "light", first=True))
    seg = version.llmvisor.segment(batch)[batch.req_step]
    held = (~batch.prefill) & (batch.context_tokens > 0) & (seg == segment)
    found = [
        z for z in version.fit_metrics["zero_priced"] if z["term"] == "decode.c" and z["segment"] == segment
    ]
    if version.llmvisor.coef[segment, COLUMNS.index("decode_c")] == 0.0:
        assert found and found[0]["rows"] == int(held.sum())
        assert found[0]["steps"] == np.unique(batch.req_step[held]).size
    else:
        assert not found


def _coef(**named):
    c = np.zeros(len(COLUMNS))
    c[0] = 1.0
    for name, v in named.items():
        c[COLUMNS.index(name)] = v
    return np.vstack([c, c])


@pytest.mark.parametrize(
    "named,flagged",
    [
        ({"prefill_pc": 1e-6, "decode_c": 1e-5}, []),  # p alone at zero: GEMMs flat while memory-bound
        ({"prefill_request": 0.3, "decode_c": 1e-5}, ["prefill.p+p2+pc"]),  # no per-token price at all
        ({"prefill_p": 1e-3}, ["decode.c"]),
    ],
)
def test_prefill_is_flagged_only_when_its_tokens_have_no_price(named, flagged):
    from shadowd.attribution.llmvisor import LLMVisorModel
    from shadowd.steps.batch import StepBatch

    batch = StepBatch.from_rows(
        steps=[dict(latency_ms=10.0)],
        requests=[
            [
                dict(new_tokens=512, context_tokens=0, prompt_tokens=600, prefill=True),
                dict(new_tokens=1, context_tokens=900, prompt_tokens=800, prefill=False),
            ]
        ],
    )
    model = LLMVisorModel(float("inf"), _coef(**named))
    assert [z["term"] for z in model.zero_priced(batch)] == flagged
