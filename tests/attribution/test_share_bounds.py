"""Share bounds: the range of a tenant's attributed time over the coefficients that fit the
calibration window as well as the fitted ones.

Two windows of the reference engine (the real vLLM scheduler, H200 kernel tables) carry the
property under test: one whose steps carry many token counts (the prices are identified, so
the bounds are narrow) and one whose steps all carry the scheduler's token budget (a prompt
token's price cannot be told from the fixed term, so a small tenant's share is left open).
"""

from __future__ import annotations

import numpy as np
import pytest

from shadowd.attribution import fit
from shadowd.attribution.accuracy import split_window
from shadowd.attribution.share_bounds import ShareBound, _extreme, _gradient, _region, _Totals, share_bounds
from shadowd.paths import data_dir, models_dir
from shadowd.sim.reference_run import ReferenceRun, RunSpec

H200 = "aiconfigurator-vllm-0.14.0/h200_sxm"


def _run(tenants: tuple[str, ...], steps: int, seed: int):
    run = ReferenceRun(
        RunSpec(
            platform=str(data_dir() / "kernels" / H200),
            model=str(models_dir() / "llama-3.1-8b"),
            tp=1,
            tenants=tenants,
            seed=seed,
        )
    )
    run.run(steps, run.workload(duration_s=7200.0))
    window, scored = split_window(run.step_batch(), 0.5)
    return fit(window, {"platform": "h200", "model": "llama-3.1-8b"}), window, scored


@pytest.fixture(scope="module")
def varied():
    """Light, mixed traffic: steps of many token counts."""
    return _run(("a=azure-conv:2", "b=azure-code:1"), 1600, 7001)


@pytest.fixture(scope="module")
def flat():
    """Saturating traffic: the scheduler fills every step to its token budget."""
    return _run(("a=azure-code:300", "b=lengths:sharegpt:20"), 1200, 7002)


def _multi(batch):
    return batch.select_steps(batch.batch_size() >= 2)


def test_the_flat_window_carries_one_token_count(flat):
    _, window, _ = flat
    tokens = window.per_step_sum(window.new_tokens)
    assert np.mean(tokens == tokens.max()) > 0.9  # the premise of the next test


def test_a_window_of_one_token_count_leaves_a_share_open_that_a_varied_one_pins(varied, flat):
    wide = share_bounds(*flat[:2], _multi(flat[2]))
    narrow = share_bounds(*varied[:2], _multi(varied[2]))
    assert max(b.half_width for b in wide.values()) > 3 * max(b.half_width for b in narrow.values())
    assert max(b.half_width for b in narrow.values()) < 0.03  # the study's share target


@pytest.mark.parametrize("which", ["varied", "flat"])
def test_bounds_hold_the_point_and_come_from_models_that_fit_as_well(which, request):
    version, window, scored = request.getfixturevalue(which)
    scored = _multi(scored)
    region = _region(version.llmvisor, window, 0.95)
    assert region.sse(region.u0) <= region.bound
    totals = _Totals(version.llmvisor, scored, "equal")
    grad = _gradient(totals, region, region.u0)
    for i, name in enumerate(totals.names):
        b = share_bounds(version, window, scored)[str(name)]
        assert b.low_ms <= b.ms <= b.high_ms
        for sign in (1.0, -1.0):
            u = _extreme(region, sign * grad[i])
            assert region.sse(u) <= region.bound * (1 + 1e-9)  # a model the window fits as well
            assert (region.coef(u) >= 0).all()
            assert b.low_ms - 1e-6 <= totals(region.coef(u))[i] <= b.high_ms + 1e-6


def test_the_attributed_time_is_the_tenants_rescaled_shares(varied):
    version, window, scored = varied
    scored = _multi(scored)
    bounds = share_bounds(version, window, scored)
    att = version.attribute(scored, "equal")
    for name, b in bounds.items():
        assert b.ms == pytest.approx(att.llmvisor_measured_ms[scored.tenant == name].sum())


def test_a_wider_level_gives_wider_bounds(flat):
    version, window, scored = flat
    scored = _multi(scored)
    at95 = share_bounds(version, window, scored, level=0.95)
    at50 = share_bounds(version, window, scored, level=0.5)
    for name in at95:
        assert at95[name].high_ms - at95[name].low_ms >= at50[name].high_ms - at50[name].low_ms - 1e-6


def test_scored_steps_without_tenants_are_refused(varied):
    version, window, scored = varied
    from dataclasses import replace

    with pytest.raises(ValueError, match="no tenants"):
        share_bounds(version, window, replace(scored, tenant=None))


def test_a_tenant_with_no_time_has_no_relative_width():
    b = ShareBound(0.0, 0.0, 0.0)
    assert b.half_width == float("inf") and b.to_dict()["half_width"] is None
