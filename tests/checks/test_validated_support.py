"""Design r49: the window's range is a class's support only where the held-out steps beyond the
fitted range sat where those inside it sat (``checks.validated_support``)."""

from __future__ import annotations

import numpy as np
import pytest

from checks import validated_support

RNG = np.random.default_rng(7)
FIT = {"batch_size": np.linspace(1.0, 20.0, 300), "new_tokens": np.linspace(100.0, 2048.0, 300)}
HELD = {
    "batch_size": np.r_[np.full(150, 10.0), np.full(150, 40.0)],
    "new_tokens": np.full(300, 1024.0),
}
WINDOW = {k: np.r_[FIT[k], HELD[k]] for k in FIT}
BEYOND = HELD["batch_size"] > 20
FIT_RESID = 0.01 + RNG.normal(0.0, 0.01, 300)


def _resid(shift_beyond: float, noise: float = 0.01) -> np.ndarray:
    return 0.01 + RNG.normal(0.0, noise, 300) + np.where(BEYOND, shift_beyond, 0.0)


def test_beyond_steps_at_the_inside_level_validate_the_window_range():
    s = validated_support(FIT, HELD, _resid(0.0), WINDOW, 0.03, FIT_RESID)
    assert s.validated and s.beyond_steps == 150 and s.inside_steps > 400  # the fitted steps too
    assert s.support["batch_size"][1] == pytest.approx(40.0)


@pytest.mark.parametrize("shift", [0.06, -0.06])
def test_beyond_steps_away_from_the_inside_level_leave_the_fitted_range(shift):
    s = validated_support(FIT, HELD, _resid(shift), WINDOW, 0.03, FIT_RESID)
    assert not s.validated
    assert s.support["batch_size"][1] < 20.0
    assert abs(s.shift - shift) < 0.01
    assert "fitted steps' range" in s.why()


def test_a_shift_within_the_allowance_but_too_noisy_to_bound_is_not_validated():
    """The 95 % bound, not the mean alone, must sit within the allowance."""
    held = {k: v[145:155] for k, v in HELD.items()}  # 5 inside, 5 beyond
    resid = 0.01 + np.array([0.0, 0.06, -0.06, 0.05, -0.05] * 2)
    s = validated_support(FIT, held, resid, WINDOW, 0.03, FIT_RESID)
    assert abs(s.shift) < 0.03 < s.bound and not s.validated


def test_a_held_out_part_inside_the_fitted_range_keeps_the_window_range():
    held = {k: v[:150] for k, v in HELD.items()}
    s = validated_support(FIT, held, _resid(0.0)[:150], WINDOW, 0.03, FIT_RESID)
    assert s.validated and s.beyond_steps == 0
    assert "stayed inside" in s.why()


def test_a_held_out_part_wholly_beyond_the_fit_is_judged_against_the_fitted_steps():
    held = {k: v[150:] for k, v in HELD.items()}
    s = validated_support(FIT, held, _resid(0.0)[150:], WINDOW, 0.03, FIT_RESID)
    assert s.validated and s.beyond_steps == 150 and s.inside_steps > 250
    s = validated_support(FIT, held, _resid(0.06)[150:], WINDOW, 0.03, FIT_RESID)
    assert not s.validated


def test_non_finite_residuals_are_left_out():
    resid = _resid(0.0)
    resid[BEYOND] = np.nan
    s = validated_support(FIT, HELD, resid, WINDOW, 0.03, FIT_RESID)
    assert s.beyond_steps == 0 and s.validated
