"""The gate's accuracy evidence: per-class error quantiles (t-digest, within 1 % of rank) and
exact R², in bounded memory."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from benchmarks.gate_eval import build
from shadowd.daemon.gate_evidence import class_accuracy, tenant_time_share


@pytest.fixture(scope="module")
def day_db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("acc") / "acc.duckdb")
    build(path, hours=0.5)  # 54,000 steps, 3.5 M request rows
    return path


def test_class_accuracy_matches_numpy(day_db):
    con = duckdb.connect(day_db, read_only=True)
    got = class_accuracy(con, "v-bench", 86400.0)
    df = con.execute(
        "SELECT kind, latency_ms AS l, predicted_ms AS p, baseline_ms AS b FROM steps"
    ).fetchnumpy()
    for kind in ("decode", "mixed", "prefill", "all"):
        m = np.ones(len(df["l"]), bool) if kind == "all" else df["kind"] == kind
        l, p, b = df["l"][m], df["p"][m], df["b"][m]
        err, base = np.abs(l - p) / l, np.abs(l - b) / l
        assert got[kind]["steps"] == int(m.sum())
        assert got[kind]["r2"] == pytest.approx(
            1 - ((l - p) ** 2).sum() / ((l - l.mean()) ** 2).sum(), rel=1e-9
        )
        for key, values, q, tol in (
            ("p50", err, 0.5, 0.01),
            ("p90", err, 0.9, 0.01),
            ("p99", err, 0.99, 0.005),
            ("baseline_p90", base, 0.9, 0.01),
            ("baseline_p99", base, 0.99, 0.005),
        ):
            lo, hi = np.quantile(values, [q - tol, q + tol])
            assert lo <= got[kind][key] <= hi, (kind, key, got[kind][key], lo, hi)


def test_class_accuracy_runs_within_a_small_memory_limit(day_db):
    """At 8 MB for 54,000 steps the earlier form (exact quantiles, R² through a window function)
    ran out of memory; over 24 h at 30 steps/s it needed more than 160 MB."""
    con = duckdb.connect(day_db, read_only=True)
    con.execute("SET threads = 1")
    con.execute("SET memory_limit = '8MB'")
    assert class_accuracy(con, "v-bench", 86400.0)["decode"]["steps"] > 40_000


def test_new_tenant_share_is_their_part_of_recent_attributed_time(day_db):
    """Coverage judges newcomers by the time they carry in the window, not by a lifetime count."""
    con = duckdb.connect(day_db, read_only=True)
    df = con.execute(
        "SELECT r.tenant, r.llmvisor_measured_ms AS ms, epoch(s.ts) AS t FROM step_requests r "
        "JOIN steps s USING (engine_id, run_id, step_seq)"
    ).fetchnumpy()
    recent = df["t"] >= df["t"].max() - 600.0
    mine = np.isin(df["tenant"], ["tenant-3", "tenant-5"])
    want = df["ms"][recent & mine].sum() / df["ms"][recent].sum()
    got = tenant_time_share(con, "v-bench", ["tenant-3", "tenant-5"], 600.0)
    assert got == pytest.approx(want, rel=1e-6) and 0.15 < got < 0.35
    assert tenant_time_share(con, "v-bench", [], 600.0) == 0.0
    assert tenant_time_share(con, "v-none", ["tenant-3"], 600.0) is None


@pytest.mark.parametrize(
    ("floor", "decode_batch", "decode_kv"),
    [
        (None, None, None),
        (64.0, None, None),
        (65.0, None, None),
        (None, 63.0, None),
        (None, 64.0, None),
        (None, None, "median"),
    ],
)
def test_accuracy_within_the_envelope_leaves_out_exactly_the_steps_beyond_it(
    day_db, floor, decode_batch, decode_kv
):
    """Design r12: with ``within`` (an envelope's limits) a step counts only if no dimension the
    envelope monitor checks is beyond it: requests, new tokens, longest reach (context + new);
    from r17 also fewer requests than the floor, from r20 a decode-only step outside decode-only
    steps' own range or reading more KV tokens than they did (limits stored before either have
    none)."""
    con = duckdb.connect(day_db, read_only=True)
    per_step = con.execute(
        """SELECT s.kind, count(*) AS n, sum(r.new_tokens) AS t, max(r.context_tokens + r.new_tokens) AS c,
                  sum(r.context_tokens) AS kv
           FROM steps s JOIN step_requests r USING (engine_id, run_id, step_seq) GROUP BY s.step_seq, s.kind"""
    ).fetchnumpy()
    limits = {"batch_size": 64.0, "tokens": 100.0, "context": 3000.0}
    inside = (per_step["n"] <= 64) & (per_step["t"] <= 100) & (per_step["c"] <= 3000)
    assert 0 < inside.sum() < len(inside)  # both kinds of step are there
    if floor is not None:  # every step of this day holds 64 requests: at the floor, or below it
        limits["batch_floor"] = floor
        inside &= per_step["n"] >= floor
    if decode_batch is not None:  # the mixed steps of 64 stay in either way
        limits["decode_batch"] = decode_batch
        inside &= ~((per_step["kind"] == "decode") & (per_step["n"] > decode_batch))
    if decode_kv is not None:  # half the decode steps read more than the limit
        limits["decode_kv"] = float(np.median(per_step["kv"][per_step["kind"] == "decode"]))
        inside &= ~((per_step["kind"] == "decode") & (per_step["kv"] > limits["decode_kv"]))
    got = class_accuracy(con, "v-bench", 86400.0, within=limits)
    assert got.get("all", {"steps": 0})["steps"] == int(inside.sum())
    for kind in ("decode", "mixed"):
        assert got.get(kind, {"steps": 0})["steps"] == int((inside & (per_step["kind"] == kind)).sum())
    both = class_accuracy(con, "v-bench", 86400.0, ["tenant-3"], within=limits)
    assert both.get("all", {"steps": 0})["steps"] == 0  # every step holds a tenant-3 request


@pytest.mark.parametrize("fraction", [0.2, 0.01])
def test_gather_leaves_steps_beyond_the_envelope_out_only_above_the_extrapolation_limit(day_db, fraction):
    """Above the limit (coverage.extrapolation is then INCONCLUSIVE) accuracy is judged on the
    steps inside the envelope; at or below it, on every step."""
    from shadowd.daemon.gate_evidence import DaemonFacts, gather

    con = duckdb.connect(day_db, read_only=True)
    limits = {"batch_size": 64.0, "tokens": 100.0, "context": 3000.0}
    facts = DaemonFacts(
        model_version="v-bench",
        calibrated_platform_key="k",
        running_platform_key="k",
        envelope={"extrapolated_fraction": fraction, "limits": limits, "new_tenants": []},
    )
    ev = gather(con, facts, extrapolation_limit=0.05)
    everything = class_accuracy(con, "v-bench", 86400.0)
    inside = class_accuracy(con, "v-bench", 86400.0, within=limits)
    want = inside if fraction > 0.05 else everything
    assert ev.accuracy["decode"].steps == want["decode"]["steps"]
    assert inside["decode"]["steps"] < everything["decode"]["steps"]


def test_new_tenant_share_over_the_last_steps_matches_numpy(day_db):
    """Design r27: with ``recent_steps`` the share is of the last that many attributed steps."""
    con = duckdb.connect(day_db, read_only=True)
    df = con.execute(
        "SELECT r.tenant, r.llmvisor_measured_ms AS ms, epoch(s.ts) AS t FROM step_requests r "
        "JOIN steps s USING (engine_id, run_id, step_seq)"
    ).fetchnumpy()
    cut = np.sort(con.execute("SELECT epoch(ts) FROM steps").fetchnumpy()["epoch(ts)"])[-2000]
    recent = df["t"] >= cut
    mine = np.isin(df["tenant"], ["tenant-3"])
    want = df["ms"][recent & mine].sum() / df["ms"][recent].sum()
    got = tenant_time_share(con, "v-bench", ["tenant-3"], 86400.0, recent_steps=2000)
    assert got == pytest.approx(want, rel=1e-6)
    whole = tenant_time_share(con, "v-bench", ["tenant-3"], 86400.0)
    too_many = tenant_time_share(con, "v-bench", ["tenant-3"], 86400.0, recent_steps=10**9)
    assert too_many == pytest.approx(whole)  # fewer steps than asked for: the whole window


def test_a_newcomer_late_in_a_long_window_is_not_diluted(tmp_path):
    """A tenant that arrives after 8,000 steps of others and carries a fifth of each step's time
    since: over the whole window its share is small; over the last 1,000 steps it is a fifth."""
    con = duckdb.connect(str(tmp_path / "late.duckdb"))
    con.execute(
        "CREATE TABLE steps (engine_id VARCHAR, run_id VARCHAR, step_seq BIGINT, ts TIMESTAMP, "
        "model_version VARCHAR, predicted_ms DOUBLE)"
    )
    con.execute(
        "CREATE TABLE step_requests (engine_id VARCHAR, run_id VARCHAR, step_seq BIGINT, "
        "tenant VARCHAR, llmvisor_measured_ms DOUBLE, model_version VARCHAR)"
    )
    n, late = 10_000, 8_000
    con.execute(
        "INSERT INTO steps SELECT 'e', 'r', i, TIMESTAMP '2026-12-01' + to_milliseconds(i * 10), 'v', 10 "
        "FROM range(?) t(i)",
        [n],
    )
    con.execute("INSERT INTO step_requests SELECT 'e', 'r', i, 'old', 8, 'v' FROM range(?) t(i)", [n])
    con.execute(
        "INSERT INTO step_requests SELECT 'e', 'r', i, 'new', 2, 'v' FROM range(?, ?) t(i)", [late, n]
    )
    whole = tenant_time_share(con, "v", ["new"], 86400.0)
    recent = tenant_time_share(con, "v", ["new"], 86400.0, recent_steps=1000)
    assert whole == pytest.approx(4000 / (8 * n + 4000))  # below a 5 % limit
    assert recent == pytest.approx(0.2)


def test_gather_names_the_window_its_step_counts_come_from(day_db):
    """The evidence carries its window, so an unmet step minimum can say how long the wait is."""
    from shadowd.daemon.gate_evidence import DaemonFacts, gather

    con = duckdb.connect(day_db, read_only=True)
    facts = DaemonFacts(model_version="v-bench", calibrated_platform_key="k", running_platform_key="k")
    assert gather(con, facts, window_s=1800.0).evidence_window_s == 1800.0
    assert gather(con, facts).evidence_window_s == 86400.0
