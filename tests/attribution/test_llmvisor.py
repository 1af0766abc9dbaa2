import math

import numpy as np
import pytest

from shadowd.attribution import LLMVisorModel
from shadowd.attribution.llmvisor import COLUMNS, design_matrix, search_breakpoint
from shadowd.attribution.shares import FIXED_TERM_POLICIES
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.steps.batch import StepBatch


@pytest.mark.parametrize("policy", FIXED_TERM_POLICIES)
def test_shares_non_negative_and_sum_to_prediction(version, workload, policy):
    later = workload[1]
    model = version.llmvisor
    shares = model.shares(later, policy)
    assert (shares >= 0).all()
    np.testing.assert_allclose(later.per_step_sum(shares), model.predict(later), rtol=1e-12)


def test_coefficients_non_negative_and_fixed_term_positive(version):
    assert (version.llmvisor.coef >= 0).all()
    assert (version.llmvisor.coef[:, 0] > 0).all()


def _planted():
    return LLMVisorModel.from_dict(
        {
            "breakpoint_tokens": 640,
            "segments": [
                {
                    "beta_ms": 6.0,
                    "prefill": {"p": 0.002, "p2": 7e-7, "pc": 1.3e-6, "request": 0.05},
                    "decode": {"c": 4.5e-5, "request": 0.01},
                },
                {
                    "beta_ms": 1.0,
                    "prefill": {"p": 0.024, "p2": 7e-7, "pc": 1.3e-6, "request": 0.05},
                    "decode": {"c": 4.5e-5, "request": 0.03},
                },
            ],
        }
    )


def test_breakpoint_search_finds_planted_breakpoint():
    planted = _planted()
    batch = synthetic_batch(steps=3000, seed=5)
    rng = np.random.default_rng(0)
    batch.latency_ms = planted.predict(batch) * rng.lognormal(0, 0.005, batch.num_steps)
    fitted = LLMVisorModel.fit(batch)
    assert abs(fitted.breakpoint - 640) <= 32
    assert (fitted.segment(batch) == planted.segment(batch)).all()  # no observed N between the two
    np.testing.assert_allclose(fitted.predict(batch), planted.predict(batch), rtol=0.02)
    np.testing.assert_allclose(fitted.coef[:, 0], planted.coef[:, 0], rtol=0.05)  # β per segment
    assert len(fitted.search.candidates) == len(fitted.search.losses) > 10


def test_explicit_breakpoint_grid_is_respected():
    planted = _planted()
    batch = synthetic_batch(steps=1500, seed=6)
    batch.latency_ms = planted.predict(batch)
    fitted = LLMVisorModel.fit(batch, breakpoints=[300, 500, 640, 900])
    assert fitted.breakpoint == 640 and fitted.search.candidates == [300, 500, 640, 900]


def test_too_few_steps_fits_one_segment():
    batch = synthetic_batch(steps=40, seed=2)
    fitted = LLMVisorModel.fit(batch)
    assert math.isinf(fitted.breakpoint)
    assert fitted.to_dict()["breakpoint_tokens"] is None
    assert (fitted.segment(batch) == 0).all()


def test_decode_share_depends_only_on_own_context(version):
    """Before the fixed term a decode row's share is θ_c·c + θ_1 of its step's segment.

    Whoever runs beside it changes nothing but the segment (the step's total tokens).
    """
    model = version.llmvisor
    rng = np.random.default_rng(3)
    steps, requests = [], []
    for _ in range(40):
        companions = [
            dict(new_tokens=1, context_tokens=int(c), prefill=False)
            for c in rng.integers(100, 30_000, rng.integers(0, 200))
        ]
        companions += [
            dict(new_tokens=int(p), context_tokens=int(c), prefill=True)
            for p, c in zip(rng.integers(16, 1500, rng.integers(0, 3)), rng.integers(0, 20_000, 3))
        ]
        requests.append([dict(new_tokens=1, context_tokens=5000, prefill=False)] + companions)
        steps.append(dict(latency_ms=1.0))
    batch = StepBatch.from_rows(steps, requests)
    v = model.variable_shares(batch)
    target = v[np.searchsorted(batch.req_step, np.arange(batch.num_steps))]
    seg = model.segment(batch)
    d = model.coef[:, COLUMNS.index("decode_c")] * 5000 + model.coef[:, COLUMNS.index("decode_request")]
    np.testing.assert_allclose(target, d[seg], rtol=1e-12)
    assert len(set(seg.tolist())) == 2  # both segments exercised


def test_vectorised_matches_design_matrix(version, workload):
    """The hot path (per-row lookup table) agrees with the fit's design matrix."""
    from shadowd.attribution.llmvisor import design_matrix

    later = workload[1]
    model = version.llmvisor
    expected = np.einsum("sk,sk->s", design_matrix(later), model.coef[model.segment(later)])
    np.testing.assert_allclose(model.predict(later), expected, rtol=1e-10)


def test_unusable_steps_are_skipped_and_rejected_when_alone():
    batch = synthetic_batch(steps=200, seed=4)
    batch.latency_ms[:5] = [0.0, -1.0, np.nan, np.inf, 0.0]
    LLMVisorModel.fit(batch)  # skips them
    batch.latency_ms[:] = 0.0
    with pytest.raises(ValueError):
        LLMVisorModel.fit(batch)


def test_negative_coefficients_rejected():
    with pytest.raises(ValueError):
        LLMVisorModel(640.0, -np.ones((2, len(COLUMNS))))


def _lone_decode_window(seed: int = 0, steps: int = 1700) -> StepBatch:
    """Held-out 16's F16-tenant window in miniature: near-lone decode steps (one to three requests,
    a latency that flattens with batch size, as the H200 tables do there) and a few prompt chunks."""
    rng = np.random.default_rng(seed)
    plateau = {1: 8.45, 2: 8.75, 3: 8.78, 4: 8.78, 5: 8.85, 6: 8.85}
    rows, reqs = [], []
    for i in range(steps):
        if i % 60 == 0:  # a prompt chunk beside one decode
            p = int(rng.integers(500, 1500))
            rows.append({"latency_ms": (6.0 + 0.03 * p) * rng.lognormal(0, 0.01)})
            reqs.append(
                [
                    {"new_tokens": p, "context_tokens": 0, "prefill": True},
                    {"new_tokens": 1, "context_tokens": 900, "prefill": False},
                ]
            )
            continue
        b = int(rng.choice([1, 2, 3], p=[0.55, 0.35, 0.10])) if steps > 100 else int(rng.integers(4, 7))
        rows.append({"latency_ms": plateau[b] * rng.lognormal(0, 0.01)})
        reqs.append([{"new_tokens": 1, "context_tokens": int(rng.integers(200, 3000)), "prefill": False}] * b)
    return StepBatch.from_rows(rows, reqs)


def test_lone_decode_steps_do_not_split_the_segments_between_two_token_counts():
    """Design r18: with every decode step at one to three tokens, a breakpoint at two or three
    tokens leaves a segment whose line through two token counts charges each further request
    several times its cost; a segment must span as many token counts as it has coefficients."""
    window = _lone_decode_window()
    later = _lone_decode_window(seed=1, steps=59)  # batches of four to six, beyond the window's
    decode = later.kind == 1

    def p90(model: LLMVisorModel) -> float:
        err = np.abs(model.predict(later) - later.latency_ms) / later.latency_ms
        return float(np.quantile(err[decode], 0.9))

    fitted = LLMVisorModel.fit(window)
    assert math.isinf(fitted.breakpoint) or fitted.breakpoint > 3
    assert p90(fitted) < 0.1
    # Without the rule (one token count per segment suffices) the search splits there.
    y = window.latency_ms
    tokens = window.per_step_sum(window.new_tokens.astype(float))
    coef, search = search_breakpoint(design_matrix(window), y, 1.0 / y, tokens, min_segment_levels=1)
    assert search.best <= 3 and p90(LLMVisorModel(search.best, coef)) > 0.2
