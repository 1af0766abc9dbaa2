"""``shadowd replay --db``: the operator's own recorded traffic under FCFS, VTC and LLMVisor.

**The arrivals** are re-created from a shadowd database, one :class:`RequestSpec` per request
the record saw, at its recorded arrival (seconds after the first one):

* *ended* requests (the ``requests`` table): tenant, arrival, prompt tokens, and the output
  tokens they really produced (sampling and stop decisions are taken as recorded; an aborted
  request is replayed as one that stops at the tokens it had);
* *still running at the end* (rows in ``step_requests``, no row in ``requests``): tenant and
  prompt tokens from their step rows; vLLM's arrival time never reached the record for them, so
  their arrival is estimated from FCFS admission order (the latest recorded arrival among ended
  requests first scheduled at or before their first step); their output length is unknown, so
  they are given enough to still be running at the horizon, as they were;
* requests that were still *waiting* at the end of the record (never scheduled) left no trace
  and are missing from the replay.

One engine is replayed: the one with the most ended requests (a database may hold several).

**Prefix sharing**: the record holds no prompt content, only how many prompt tokens vLLM's
prefix cache already held when each request was first scheduled (its first row's
``context_tokens``).  A request with ``h`` cached tokens is given the first ``round(h / 512)``
prefix blocks of the most recent earlier request of the same tenant that has that many, and
request-unique blocks after them, so the replayed cache hits about where the recorded one did
(to a 512-token block; which earlier request it shared with is a guess).

**The latency oracle** is the stored LLMVisor model (the newest ``model_versions`` row: the
operator's calibrated ``T̂``) predicting each replayed step's time, so no kernel tables of the
recorded platform are needed, scaled by its mean error on the recorded steps (recorded over
predicted latency, from the ``steps`` table): under overload TTFT is the backlog's wait, which a
step time a few percent short turns into a TTFT many percent short; without a stored model (or with ``oracle="reference"``), the
reference engine of the recorded platform/model.  The reference engine always sizes the KV
cache from the recorded platform's memory, as vLLM would.

**Fidelity first**: FCFS (what the recorded engine ran) is replayed and its per-tenant TTFT
p50, over the ended requests, is compared with the recorded one; the counterfactual policies
follow.  ``TTFT_TOLERANCE`` is why a difference is acceptable: see its comment.  The figures
come from ``shadowd replay --db PATH`` (docs/admission.md names the command).
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

import storage.records
from shadowd.attribution.model_version import ModelVersion
from shadowd.daemon.calibrator import calibration_from_body
from shadowd.replay.engine import (
    POLICIES,
    EngineSetup,
    governor_config,
    governor_status,
    run_policy,
    step_batch,
)
from shadowd.replay.outcome import share_series, step_tenant_ms, tenant_service
from shadowd.replay.replay import _publish_go
from shadowd.reports.model import CDF_P
from shadowd.sim.driver import ScheduledStep
from shadowd.steps.batch import StepBatch
from shadowd.twin.request_spec import BLOCK_TOKENS, RequestSpec, block_key
from shadowd.twin.step_latency import ReferenceEngine

SCHEMA = 1
# Relative TTFT p50 difference per tenant accepted as "the replay reproduces the record".
# What the replay cannot know moves TTFT: prefix hits to the 512-token block and with a guessed
# partner (prompt tokens recomputed or skipped), estimated arrivals and unknown outputs of requests
# still running at the end, requests still waiting at the end (missing), and the oracle's error
# (the model predicts the mean step time, and is calibrated at the working point, not on small
# ramp-up batches; the recorded steps had jitter).  Queueing amplifies a small capacity error
# near saturation, so the bound is loose by design; docs/admission.md (benchmarks.admission
# --recorded-demo) sets the model oracle beside the reference engine to show where it goes.
TTFT_TOLERANCE = 0.25
LOOKBACK = 256  # earlier requests searched for a prefix partner
MAX_REQUESTS = 200_000  # one engine's requests in memory at once
MAX_MODEL_LEN = EngineSetup().max_model_len


@dataclass
class Recording:
    """What the record says: the re-created arrivals and what it measured."""

    engine_id: str
    requests: list[RequestSpec]
    ended: set[tuple[int, str, int]]  # (arrival ns, tenant, prompt) of requests in ``requests``
    recorded_ttft_ms: dict[str, list[float]]  # per tenant, over ended requests with a first token
    horizon_s: float
    running_at_end: int
    recorded_steps: int
    model: ModelVersion | None
    model_bias: float  # recorded / predicted step time over the recorded steps it predicted
    platform_key: str | None
    platform: str
    model_name: str
    tp: int


def _key(arrival_s: float, tenant: str, prompt: int) -> tuple[int, str, int]:
    return (int(round(arrival_s * 1e9)), tenant, int(prompt))


def _platform_fields(key: str | None) -> dict[str, str]:
    return dict(p.split("=", 1) for p in (key or "").split("/") if "=" in p)


def _engine_platform(gpu: str | None) -> str:
    """The ReferenceEngine spec for a platform key's ``gpu`` (``analytic:X`` -> ``builtin:X``)."""
    if not gpu:
        return "builtin"
    source, _, name = gpu.partition(":")
    return f"builtin:{name}" if source == "analytic" and name else (name or source)


def _engine(con: duckdb.DuckDBPyConnection) -> str:
    """The engine whose traffic is replayed: the one with the most ended requests."""
    row = con.execute(
        "SELECT engine_id FROM requests GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1"
    ).fetchone()
    if row is None:
        raise ValueError("no ended requests in the requests table (a database from before schema 6?)")
    return row[0]


def _rows(
    con: duckdb.DuckDBPyConnection, engine: str, version: str | None
) -> tuple[list[tuple], list[tuple], float, float, float, int]:
    n = con.execute(
        "SELECT count(DISTINCT (run_id, req_id)) FROM step_requests WHERE engine_id = ?", [engine]
    )
    if n.fetchone()[0] > MAX_REQUESTS:
        raise ValueError(
            f"more than {MAX_REQUESTS} requests for engine {engine}: export a shorter window first"
        )
    ended = con.execute(
        """
        SELECT r.tenant, epoch_us(r.arrival_ts), r.prompt_tokens, r.output_tokens, r.ttft_ms,
               r.first_step_seq, f.cached
        FROM requests r
        LEFT JOIN (SELECT run_id, req_id, arg_min(context_tokens, step_seq) AS cached
                   FROM step_requests WHERE engine_id = $e GROUP BY run_id, req_id) f USING (run_id, req_id)
        WHERE r.engine_id = $e AND r.arrival_ts IS NOT NULL AND r.first_step_seq IS NOT NULL
              AND r.output_tokens > 0
        """,
        {"e": engine},
    ).fetchall()
    running = con.execute(
        """
        SELECT arg_min(tenant, step_seq), min(step_seq), arg_min(prompt_tokens, step_seq),
               arg_min(context_tokens, step_seq), count(*) FILTER (WHERE phase = 'decode') + 1
        FROM step_requests s
        WHERE engine_id = $e AND NOT EXISTS (
            SELECT 1 FROM requests r
            WHERE r.engine_id = $e AND r.run_id = s.run_id AND r.req_id = s.req_id)
        GROUP BY run_id, req_id
        """,
        {"e": engine},
    ).fetchall()
    bias = con.execute(
        "SELECT sum(latency_ms) / nullif(sum(predicted_ms), 0) FROM steps "
        "WHERE engine_id = $e AND predicted_ms > 0 AND model_version = $v",
        {"e": engine, "v": version},
    ).fetchone()[0]
    steps = con.execute("SELECT count(*) FROM steps WHERE engine_id = $e", {"e": engine}).fetchone()[0]
    t0, t1 = con.execute(
        "SELECT least((SELECT min(epoch_us(arrival_ts)) FROM requests WHERE engine_id = $e), "
        "min(epoch_us(ts))), max(epoch_us(ts)) FROM steps WHERE engine_id = $e",
        {"e": engine},
    ).fetchone()
    return ended, running, float(t0), float(t1), float(bias) if bias else 1.0, int(steps)


def _running_arrivals(ended: list[tuple], running: list[tuple]) -> list[float]:
    """FCFS admits in arrival order: a running request arrived about when the last ended
    request first scheduled at or before its first step did."""
    seq = np.array([r[5] for r in ended], dtype=np.int64)
    arr = np.array([r[1] for r in ended], dtype=np.float64)
    order = np.argsort(seq, kind="stable")
    seq, best = seq[order], np.maximum.accumulate(arr[order]) if len(arr) else arr
    out = []
    for r in running:
        i = int(np.searchsorted(seq, r[1], side="right")) - 1
        out.append(float(best[i]) if i >= 0 else float(arr.min()) if len(arr) else 0.0)
    return out


def _with_prefixes(rows: list[tuple[float, str, int, int, int]]) -> list[RequestSpec]:
    """(arrival s, tenant, prompt, output, cached tokens) sorted by arrival -> specs whose shared
    prefix blocks reproduce the cached tokens (see the module docstring)."""
    history: dict[str, list[tuple[int, ...]]] = {}
    fresh = 0
    specs = []
    for arrival, tenant, prompt, output, cached in rows:
        n_blocks = max(1, math.ceil(prompt / BLOCK_TOKENS))
        share = min(int(round(max(cached, 0) / BLOCK_TOKENS)), n_blocks)
        past = history.setdefault(tenant, [])
        head: tuple[int, ...] = ()
        if share:
            head = next((b[:share] for b in reversed(past[-LOOKBACK:]) if len(b) >= share), ())
        tail = []
        for _ in range(n_blocks - len(head)):
            fresh += 1
            tail.append(block_key("recorded", tenant, fresh))
        blocks = head + tuple(tail)
        past.append(blocks)
        specs.append(RequestSpec(arrival, tenant, prompt, output, blocks))
    return specs


def load_recording(db_path: str) -> Recording:
    """Re-create the arrivals of the database at ``db_path`` (read-only)."""
    if not Path(db_path).exists():
        raise FileNotFoundError(f"--db {db_path}: no such file")
    con = duckdb.connect(db_path, read_only=True)
    try:
        engine = _engine(con)
        latest = storage.records.latest_model_version(con)
        ended, running, t0_us, t1_us, bias, steps = _rows(con, engine, latest[0] if latest else None)
    finally:
        con.close()
    if not ended:
        raise ValueError(f"--db {db_path}: no ended requests with an arrival time in the requests table")
    model = calibration_from_body(latest[1]).model if latest else None
    key = "/".join(f"{k}={v}" for k, v in sorted(model.platform_key.items())) if model else None
    fields = _platform_fields(key)
    rows: list[tuple[float, str, int, int, int]] = []
    ended_keys, ttft = set(), {}
    for tenant, arr_us, prompt, output, ttft_ms, _seq, cached in ended:
        a = (float(arr_us) - t0_us) / 1e6
        rows.append((a, tenant, int(prompt), int(output), int(cached or 0)))
        ended_keys.add(_key(a, tenant, prompt))
        if ttft_ms is not None and not math.isnan(ttft_ms):
            ttft.setdefault(tenant, []).append(float(ttft_ms))
    max_context = MAX_MODEL_LEN - 1024
    for r, arr_us in zip(running, _running_arrivals(ended, running)):
        tenant, _seq, prompt, cached, generated = r
        prompt = min(int(prompt), max_context - 1)
        output = max(int(generated) + 1, max_context - prompt)  # still running at the horizon
        rows.append(((arr_us - t0_us) / 1e6, tenant, prompt, output, int(cached or 0)))
    rows.sort(key=lambda x: x[0])
    return Recording(
        engine_id=engine,
        requests=_with_prefixes(rows),
        ended=ended_keys,
        recorded_ttft_ms=ttft,
        horizon_s=(t1_us - t0_us) / 1e6,
        running_at_end=len(running),
        recorded_steps=steps,
        model=model,
        model_bias=bias,
        platform_key=key,
        platform=_engine_platform(fields.get("gpu")),
        model_name=fields.get("model", EngineSetup().model),
        tp=int(fields.get("tp", 1)),
    )


def model_oracle(model: ModelVersion, scale: float = 1.0):  # noqa: ANN201  (a StepTime)
    """The calibrated model's predicted time of a step (ms), times ``scale``."""

    def step_ms(st: ScheduledStep) -> float:
        n = len(st.req_ids)
        batch = StepBatch(
            latency_ms=np.zeros(1),
            req_step=np.zeros(n, dtype=np.int64),
            new_tokens=st.new_tokens,
            context_tokens=st.context_tokens,
            prompt_tokens=st.prompt_tokens,
            prefill=st.prefill,
        )
        return max(scale * float(model.llmvisor.predict(batch)[0]), 1e-3)

    return step_ms


def _ttft_p50_ms(values: list[float]) -> float | None:
    return float(np.percentile(values, 50)) if values else None


def _replayed_ttft_ms(driver: Any, rec: Recording) -> dict[str, list[float]]:
    """Per tenant, TTFT of the replayed requests that ended in the record (same set as recorded)."""
    out: dict[str, list[float]] = {}
    for s in driver.service.values():
        key = (s.arrival_ns - driver._origin_ns, s.tenant, s.prompt_tokens)
        if key in rec.ended:
            ttft = s.ttft_s if s.ttft_s is not None else (driver.stop_ns - s.arrival_ns) / 1e9
            out.setdefault(s.tenant, []).append(1e3 * ttft)
    return out


def fidelity(recorded: dict[str, list[float]], replayed: dict[str, list[float]]) -> dict[str, Any]:
    """Per tenant: recorded and replayed TTFT p50 (ms), their relative difference, within tolerance."""
    per = {}
    for t in sorted(recorded):
        a, b = _ttft_p50_ms(recorded[t]), _ttft_p50_ms(replayed.get(t, []))
        rel = None if a is None or b is None or a <= 0 else (b - a) / a
        per[t] = {
            "requests": len(recorded[t]),
            "recorded_ttft_p50_ms": a,
            "replayed_ttft_p50_ms": b,
            "relative_difference": rel,
            "within_tolerance": rel is not None and abs(rel) <= TTFT_TOLERANCE,
        }
    return {
        "tolerance": TTFT_TOLERANCE,
        "per_tenant": per,
        "all_within": all(p["within_tolerance"] for p in per.values()),
    }


def _attributed(model: ModelVersion | None, driver: Any) -> tuple[dict[str, float] | None, dict | None]:
    """The model's share of the replayed GPU time per tenant, in total and per window
    (no Shapley truth here: the step time is the model's own)."""
    if model is None or not driver.steps:
        return None, None
    batch = step_batch(driver)
    ms = model.attribute(batch, "equal").llmvisor_ms
    total = float(ms.sum())
    names = sorted(set(batch.tenant))
    shares = {t: float(ms[batch.tenant == t].sum()) / total for t in names}
    series = share_series(driver, step_tenant_ms(batch, ms, names), names)
    return (shares if total else None), {"basis": "attributed", **series}


def replay_recorded(
    db_path: str, *, oracle: str = "model", policies: tuple[str, ...] = POLICIES, seed: int = 0
) -> dict[str, Any]:
    """Replay the database's arrivals: FCFS first (the fidelity check), then the others."""
    if oracle not in ("model", "reference"):
        raise ValueError(f"unknown oracle {oracle!r}; expected 'model' or 'reference'")
    bad = set(policies) - set(POLICIES)
    if bad:
        raise ValueError(f"unknown policies {sorted(bad)}; expected some of {POLICIES}")
    rec = load_recording(db_path)
    setup = EngineSetup(platform=rec.platform, model=rec.model_name, tp=rec.tp, seed=seed)
    engine = ReferenceEngine(
        setup.platform, setup.model, setup.tp, seed=seed, max_tokens=16384, max_batch=1024
    )
    used = "model" if oracle == "model" and rec.model is not None else "reference"
    step_ms = model_oracle(rec.model, rec.model_bias) if used == "model" else None
    tenants = sorted({r.tenant for r in rec.requests})
    weights = {t: 1.0 for t in tenants}
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "db": db_path,
        "engine_id": rec.engine_id,
        "platform": rec.platform,
        "model": rec.model_name,
        "tp": rec.tp,
        "oracle": used,
        "model_version": rec.model.version if rec.model else None,
        "model_bias": rec.model_bias if used == "model" else None,
        "horizon_s": rec.horizon_s,
        "requests": len(rec.requests),
        "ended_in_record": len(rec.ended),
        "running_at_end": rec.running_at_end,
        "recorded_steps": rec.recorded_steps,
        "weights": weights,
        "ttft_cdf_levels": CDF_P,
        "policies": {},
    }
    key = rec.platform_key or f"replay/{setup.platform}/{setup.model}/tp={setup.tp}"
    with tempfile.TemporaryDirectory(prefix="shadowd-replay-") as tmp:
        state = str(Path(tmp) / "gate.json")
        model = rec.model
        for policy in ("fcfs",) + tuple(p for p in POLICIES if p != "fcfs" and p in policies):
            started = time.monotonic()
            driver = run_policy(
                setup,
                engine,
                rec.requests,
                governor_config(policy, weights, state, key),
                rec.horizon_s,
                step_ms,
            )
            if policy == "fcfs":
                if model is None:  # no stored model: calibrate on the FCFS replay, as replay() does
                    from shadowd.attribution.model_version import fit

                    model = fit(step_batch(driver), {"replay": key})
                _publish_go(state, model, key)
                result["fidelity"] = fidelity(rec.recorded_ttft_ms, _replayed_ttft_ms(driver, rec))
            if policy not in policies:
                continue
            shares, series = _attributed(model, driver)
            result["policies"][policy] = {
                "steps": len(driver.steps),
                "service": tenant_service(driver, driver._origin_ns, driver.stop_ns),
                "attributed_share": shares,
                "series": series,
                "governor": governor_status(driver),
                "wall_s": time.monotonic() - started,
            }
    return result


def _cell(x: Any, spec: str, width: int) -> str:
    return ("-" if x is None else spec.format(x)).rjust(width)


def _bias(b: float | None) -> str:
    return "" if b is None else f" x {b:.3f}, its recorded/predicted step time"


def render_recorded(result: dict[str, Any]) -> str:
    """Terminal view: the fidelity check, then one block per policy."""
    fid = result["fidelity"]
    lines = [
        f"replay of {result['db']}: {result['model']} on {result['platform']} (tp {result['tp']}), "
        f"oracle {result['oracle']} (model {result['model_version']}{_bias(result.get('model_bias'))}), "
        f"{result['horizon_s']:.1f} s recorded, "
        f"{result['requests']} requests ({result['ended_in_record']} ended, {result['running_at_end']} "
        "still running at the end)",
        "",
        f"fidelity (FCFS, as recorded): TTFT p50 per tenant, tolerance ±{fid['tolerance']:.0%}; "
        f"steps recorded {result.get('recorded_steps', '-')}, replayed "
        f"{result['policies'].get('fcfs', {}).get('steps', '-')}",
        f"{'tenant':<12}{'requests':>9}{'recorded':>11}{'replayed':>11}{'diff':>8}  ok",
    ]
    for t, p in fid["per_tenant"].items():
        rec, rep, rel = p["recorded_ttft_p50_ms"], p["replayed_ttft_p50_ms"], p["relative_difference"]
        lines.append(
            f"{t[:12]:<12}{p['requests']:>9}{_cell(rec, '{:.0f}ms', 11)}{_cell(rep, '{:.0f}ms', 11)}"
            f"{_cell(rel, '{:+.1%}', 8)}  {'yes' if p['within_tolerance'] else 'NO'}"
        )
    for policy, run in result["policies"].items():
        lines += [
            "",
            f"{policy} ({run['steps']} steps)",
            f"{'tenant':<12}{'attr':>7}{'TTFT p50':>10}{'TTFT p99':>10}{'TPOT p50':>10}{'unserved':>9}",
        ]
        shares = run["attributed_share"] or {}
        for t, s in run["service"].items():
            cells = (
                _cell(shares.get(t), "{:.3f}", 7),
                _cell(s["ttft_p50_s"], "{:.2f}s", 10),
                _cell(s["ttft_p99_s"], "{:.2f}s", 10),
                _cell(s["tpot_p50_ms"], "{:.1f}ms", 10),
                _cell(s["unserved"], "{:d}", 9),
            )
            lines.append(f"{t[:12]:<12}" + "".join(cells))
    lines += [
        "",
        "attr = LLMVisor-attributed share of the replayed GPU time (the stored model); per-policy",
        "figures cover every replayed request, those still running at the end of the record included.",
    ]
    return "\n".join(lines)
