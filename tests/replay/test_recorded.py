"""``shadowd replay --db`` on a recorded demo database (real scheduler, real DuckDB, CI-sized).

The demo runs FCFS (vLLM's scheduler as shipped) and records every ended request; replaying its
arrivals under FCFS with the stored calibrated model as the latency oracle must give each
tenant's TTFT p50 within ``TTFT_TOLERANCE`` of the recorded one (why that bound: its comment in
``shadowd.replay.recorded``), and VTC and the governed policy must then run on the same arrivals.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner

from shadowd.cli import main
from shadowd.replay.recorded import TTFT_TOLERANCE, load_recording

pytestmark = pytest.mark.usefixtures("vllm")


def test_arrivals_are_recreated_on_the_recorded_clock(demo_db):
    rec = load_recording(demo_db)
    con = duckdb.connect(demo_db, read_only=True)
    ended, span_s, cached = con.execute(
        "SELECT count(*), epoch_us(max(arrival_ts)) / 1e6 - epoch_us(min(arrival_ts)) / 1e6, "
        "(SELECT count(*) FROM step_requests WHERE phase = 'prefill' AND context_tokens > 0) FROM requests"
    ).fetchone()
    con.close()
    arrivals = np.array([r.arrival_s for r in rec.requests])
    assert np.all(np.diff(arrivals) >= 0)
    assert len(rec.requests) == ended + rec.running_at_end
    # arrivals are simulated time: they span the record, not the seconds the demo took to build them
    assert arrivals.max() == pytest.approx(span_s, rel=0.05) and span_s > 0.5 * rec.horizon_s
    assert rec.model is not None and rec.platform.startswith("builtin")
    if cached:  # the record saw prefix-cache hits: the replay shares prefixes
        shared = {b for r in rec.requests for b in (r.prefix_blocks or ())}
        assert len(shared) < sum(len(r.prefix_blocks or ()) for r in rec.requests)


def test_fcfs_replay_reproduces_recorded_ttft_then_counterfactuals(recorded_replay):
    out, _ = recorded_replay
    assert out["oracle"] == "model"
    # the oracle is the stored model, its mean error on the recorded steps small (it is calibrated)
    assert 0.9 < out["model_bias"] < 1.1
    assert out["recorded_steps"] >= 1000 and out["policies"]["fcfs"]["steps"] > 0.8 * out["recorded_steps"]
    fid = out["fidelity"]
    assert fid["tolerance"] == TTFT_TOLERANCE
    assert set(fid["per_tenant"]) == {"chat", "code", "docs"}
    for tenant, p in fid["per_tenant"].items():
        assert p["recorded_ttft_p50_ms"] > 0, tenant
        assert abs(p["relative_difference"]) <= TTFT_TOLERANCE, (tenant, p)
    assert list(out["policies"]) == ["fcfs", "vtc", "llmvisor"]
    for policy, run in out["policies"].items():
        assert run["steps"] > 0, policy
        assert set(run["service"]) == {"chat", "code", "docs"}
        assert sum(run["attributed_share"].values()) == pytest.approx(1.0)
    gov = out["policies"]["llmvisor"]["governor"]
    assert gov["charging"] == "attributed" and gov["errors"] == 0
    assert out["policies"]["fcfs"]["governor"] is None


def test_missing_database_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(main, ["replay", "--db", str(tmp_path / "nope.duckdb")])
    assert res.exit_code != 0 and "no such file" in res.output
