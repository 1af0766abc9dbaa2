"""``shadowd replay``: the same arrivals under FCFS, VTC and the LLMVisor-governed policy.

1. FCFS (the governor off: vLLM as it ships) runs first, as the engine runs today.
2. An LLMVisor model is fitted on the FCFS run's steps, as the daemon calibrates in shadow mode,
   and published in a gate state file with a GO verdict for the replay's platform key: the
   governed run reads it through the same hand-off as in production.
3. VTC (token counter) and the governed policy run on the same arrivals.
Each run is scored by :mod:`shadowd.replay.outcome` against the Shapley ground truth of every
step (no model in the figure), in total with 95% intervals of its Monte Carlo error and per
window of simulated time (``series``, what ``--html`` plots: :mod:`shadowd.replay.page`).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from shadowd.attribution.model_version import fit
from shadowd.daemon.gatekeeper import published_model, write_state_file
from shadowd.replay.engine import (
    POLICIES,
    EngineSetup,
    governor_config,
    governor_status,
    run_policy,
    step_batch,
)
from shadowd.replay.outcome import (
    SHAPLEY_PAIRS,
    shapley_census,
    share_series,
    tenant_service,
    true_shares,
)
from shadowd.replay.scenarios import scenario_requests
from shadowd.reports.model import CDF_P
from shadowd.twin.step_latency import ReferenceEngine

SCHEMA = 1


def replay(
    scenario: str,
    *,
    minutes: float = 10.0,
    setup: EngineSetup = EngineSetup(),
    policies: tuple[str, ...] = POLICIES,
    pairs: int = SHAPLEY_PAIRS,
    warmup: float = 0.1,
) -> dict[str, Any]:
    """Run ``scenario`` for ``minutes`` of simulated time under each of ``policies``."""
    bad = set(policies) - set(POLICIES)
    if bad:
        raise ValueError(f"unknown policies {sorted(bad)}; expected some of {POLICIES}")
    engine = ReferenceEngine(
        setup.platform, setup.model, setup.tp, seed=setup.seed, max_tokens=16384, max_batch=1024
    )
    horizon_s = float(minutes) * 60.0

    def capacity(pilot: list, seconds: float) -> float:
        driver = run_policy(setup, engine, pilot, governor_config("fcfs", {}, "", ""), seconds)
        done = sum(1 for s in driver.service.values() if s.done)
        if len(driver.step_end_ns) and done == len(pilot):  # it finished early: use its busy time
            seconds = (driver.step_end_ns[-1] - driver._origin_ns) / 1e9
        return max(done, 1) / seconds

    requests, tenants = scenario_requests(
        scenario, capacity, horizon_s, seed=setup.seed, max_context=setup.max_model_len - 1024
    )
    weights = {t: d["weight"] for t, d in tenants.items()}
    key = f"replay/{setup.platform}/{setup.model}/tp={setup.tp}"
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "scenario": scenario,
        "platform": setup.platform,
        "model": setup.model,
        "tp": setup.tp,
        "seed": setup.seed,
        "minutes": minutes,
        "warmup_fraction": warmup,
        "tenants": tenants,
        "ttft_cdf_levels": CDF_P,
        "policies": {},
    }
    with tempfile.TemporaryDirectory(prefix="shadowd-replay-") as tmp:
        state = str(Path(tmp) / "gate.json")
        for policy in ("fcfs",) + tuple(p for p in POLICIES if p != "fcfs" and p in policies):
            started = time.monotonic()
            driver = run_policy(
                setup, engine, requests, governor_config(policy, weights, state, key), horizon_s
            )
            batch = step_batch(driver)
            if policy == "fcfs":
                model = fit(batch, {"replay": key})
                _publish_go(state, model, key)
                result["model_version"] = model.version
            if policy not in policies:
                continue
            t0 = driver._origin_ns + int(warmup * horizon_s * 1e9)
            attributed = model.attribute(batch, "equal").llmvisor_ms
            names = sorted(weights)
            census = shapley_census(driver, batch, engine, names, t0, pairs=pairs, seed=setup.seed)
            truth = true_shares(driver, batch, census, weights, t0, attributed_ms=attributed, seed=setup.seed)
            result["policies"][policy] = {
                "steps": batch.num_steps,
                "service": tenant_service(driver, t0, driver.stop_ns),
                "truth": truth,
                "series": {"basis": "true", **share_series(driver, census.per_step, names)},
                "governor": governor_status(driver),
                "wall_s": time.monotonic() - started,
            }
    return result


def _publish_go(path: str, model: Any, key: str) -> None:
    now = time.time()
    decision = {"verdict": "GO", "reason": "replay", "evaluated_at": now, "valid_until": now + 86400.0}
    model_doc = published_model(model.version, key, model.llmvisor.to_dict(), "equal", now, 86400.0)
    write_state_file(path, {**decision, "model": model_doc})
