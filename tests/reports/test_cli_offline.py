"""``calibrate``, ``report`` and ``gate`` on a database file, without the daemon.

The step log here is written straight into the raw contract columns with SQL, as
an analyst importing another source's log would: nothing from shadowd's ingest.
"""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import numpy as np
import pytest

from shadowd.attribution.synthetic_steps import synthetic_batch
from storage.schema import migrate


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "shadowd.cli", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def raw_db(tmp_path):
    """1,200 steps written with plain SQL (INSERT ... SELECT) into ``steps``/``step_requests``."""
    return _write_db(synthetic_batch(steps=1200, seed=7), str(tmp_path / "imported.duckdb"))


def _write_db(b, path: str) -> str:
    con = duckdb.connect(path)
    migrate(con)
    t0 = np.datetime64("2026-11-01T00:00:00")
    steps = {
        "step_seq": np.arange(1, b.num_steps + 1),
        "latency_ms": b.latency_ms,
        "ts": t0 + (np.cumsum(b.latency_ms) * 1000).astype("timedelta64[us]"),
        "kind": np.array(["prefill", "decode", "mixed"], dtype=object)[b.kind],
        "num_requests": b.batch_size(),
    }
    reqs = {
        "step_seq": b.req_step + 1,
        "req_id": np.array([f"q{i}" for i in range(b.num_requests)], dtype=object),
        "tenant": b.tenant.astype(object),
        "phase": np.where(b.prefill, "prefill", "decode").astype(object),
        "new_tokens": b.new_tokens,
        "context_tokens": b.context_tokens,
        "prompt_tokens": b.prompt_tokens,
    }
    con.register("s", steps)
    con.register("r", reqs)
    con.execute(
        "INSERT INTO steps (engine_id, run_id, step_seq, ts, latency_ms, kind, num_requests, "
        "prefill_tokens, decode_tokens, dropped_frames_total) "
        "SELECT 'imp', 'r1', step_seq, ts, latency_ms, kind, num_requests, 0, 0, 0 FROM s"
    )
    con.execute(
        "INSERT INTO step_requests (engine_id, run_id, step_seq, req_id, tenant, phase, new_tokens, "
        "context_tokens, prompt_tokens, spec_tokens) SELECT 'imp', 'r1', step_seq, req_id, tenant, "
        "phase, new_tokens, context_tokens, prompt_tokens, 0 FROM r"
    )
    con.close()
    return path


def test_calibrate_and_report_on_raw_rows(raw_db):
    out = _cli("calibrate", "--db", raw_db, "--platform", "gpu=h100", "--platform", "tp=1", "--json")
    assert out.returncode == 0, out.stderr
    cal = json.loads(out.stdout)
    assert len(cal["model_version"]) == 12 and cal["fit_window"]["steps"] > 500
    con = duckdb.connect(raw_db, read_only=True)
    assert con.execute("SELECT count(*) FROM model_versions").fetchone()[0] == 1
    con.close()

    rep = _cli("report", "--db", raw_db, "--json")
    assert rep.returncode == 0, rep.stderr
    r = json.loads(rep.stdout)
    for cls in ("prefill", "decode", "mixed", "all"):
        assert {"r2", "p50", "p90", "p99"} <= set(r["accuracy"][cls]["llmvisor"])
        assert {"r2", "p50", "p90", "p99"} <= set(r["accuracy"][cls]["token_baseline"])
    a = r["accuracy"]["all"]
    assert a["steps"] == 600  # scored on the later half only
    assert a["llmvisor"]["p90"] < a["token_baseline"]["p90"]
    assert r["tenants"] and all("vtc_tokens" in t for t in r["tenants"])

    text = _cli("report", "--db", raw_db)
    assert text.returncode == 0 and "fitted on the earlier half" in text.stdout and "tenant" in text.stdout
    assert r["accuracy_source"] == "refit"


def test_calibrate_vouches_for_listed_tenants_and_bounds_their_names(raw_db):
    """Design r14 by hand: a tenant named with ``--tenant`` is in the stored envelope's tenants
    even though the window holds none of its steps; names are bounded as in the config file."""
    out = _cli("calibrate", "--db", raw_db, "--platform", "gpu=h100", "--tenant", "batch-jobs", "--json")
    assert out.returncode == 0, out.stderr
    con = duckdb.connect(raw_db, read_only=True)
    (body,) = con.execute("SELECT body FROM model_versions").fetchone()
    con.close()
    assert {"batch-jobs", "chat"} <= set(json.loads(body)["envelope"]["tenants"])
    bad = _cli("calibrate", "--db", raw_db, "--tenant", "x" * 65)
    assert bad.returncode == 2 and "longer than 64 characters" in bad.stderr, bad.stderr


def test_gate_without_decisions_is_inconclusive(raw_db):
    assert _cli("gate", "--db", raw_db).returncode == 2


def test_gate_on_missing_file_is_an_error(tmp_path):
    out = _cli("gate", "--db", str(tmp_path / "nope" / "x.duckdb"))
    assert out.returncode == 3 and "error" in out.stderr


def test_twin_step_json():
    out = _cli(
        "twin", "step", "--platform", "builtin", "--model", "llama-3.1-8b", "--decode", "1x1024", "--json"
    )
    assert out.returncode == 0, out.stderr
    assert 5.0 <= json.loads(out.stdout)["latency_ms"] <= 12.0
    bad = _cli("twin", "step", "--decode", "lots")
    assert bad.returncode == 2 and "COUNTxKV" in bad.stderr


def test_report_over_parquet_exports(raw_db, tmp_path):
    """Fleet scale: the same report from Parquet exports (DuckDB over Parquet, no daemon)."""
    from storage.export import export_parquet

    con = duckdb.connect(raw_db)
    result = export_parquet(con, str(tmp_path / "export"))
    con.close()
    assert result.rows and sum(result.rows.values()) > 0
    out = _cli("report", "--parquet", str(tmp_path / "export"), "--json")
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["steps"] == 1200 and rep["accuracy"]["all"]["steps"] == 600


def test_calibrate_warns_when_its_fit_prices_work_at_zero(tmp_path):
    """The light steps timed on a GPU (``docs/gpu-steps.csv``), first 421: the fit leaves a
    segment whose decode KV term is zero (design r28); the operator is told on stderr."""
    import gzip

    from benchmarks.gpu_report import load_timings, step_batch
    from benchmarks.gpu_steps import DOCS, EXPORT_PATH

    with gzip.open(EXPORT_PATH, "rt") as fh:
        timed, _ = load_timings(json.load(fh), DOCS / "gpu-steps.csv")
    db = _write_db(
        step_batch([r for r in timed if r["regime"] == "light"][:421]), str(tmp_path / "gpu.duckdb")
    )
    out = _cli("calibrate", "--db", db, "--platform", "gpu=h200")
    assert out.returncode == 0, out.stderr
    assert "model version" in out.stdout
    assert "warning: segment 1: decode.c fitted at zero" in out.stderr and "recalibrate" in out.stderr
    quiet = _cli(
        "calibrate", "--db", _write_db(synthetic_batch(steps=1200, seed=7), str(tmp_path / "s.duckdb"))
    )
    assert quiet.returncode == 0 and "warning:" not in quiet.stderr
