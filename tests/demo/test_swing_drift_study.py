"""``benchmarks/swing_drift_study.py`` measures shifts *within* composition strata, and what inside
a stratum the model's error follows; its figures are ``docs/swing_drift.md``'s."""

from __future__ import annotations

import numpy as np

from benchmarks.swing_drift_study import _shift_within_strata, _within_stratum_r2


def _mix(n: int, share_of_3: float, rng: np.random.Generator) -> np.ndarray:
    return np.where(rng.random(n) < share_of_3, 3, 1)


def test_a_move_of_the_mix_between_strata_is_no_shift_within_them():
    rng = np.random.default_rng(1)
    keys = np.concatenate([_mix(400, 0.1, rng), _mix(200, 0.9, rng)])
    err = np.where(keys == 3, -0.02, 0.0) + rng.normal(0, 0.001, len(keys))
    before, after = np.arange(600) < 400, np.arange(600) >= 400
    assert abs(err[after].mean() - err[before].mean()) > 0.01  # the plain mean moved
    shift, cover = _shift_within_strata(keys, err, before, after)
    assert abs(shift) < 0.001 and cover == 1.0


def test_a_slower_engine_shifts_every_stratum_and_unseen_strata_do_not_count():
    rng = np.random.default_rng(2)
    keys = np.concatenate([_mix(400, 0.5, rng), _mix(150, 0.5, rng), np.full(50, 7)])
    err = np.where(keys == 3, -0.02, 0.0) + rng.normal(0, 0.001, len(keys))
    err[400:] += 0.08
    before, after = np.arange(600) < 400, np.arange(600) >= 400
    shift, cover = _shift_within_strata(keys, err, before, after)
    assert abs(shift - 0.08) < 0.002
    assert abs(cover - 150 / 200) < 1e-9  # stratum 7 was never seen before: out of the figure


def test_within_stratum_variance_is_explained_by_the_feature_it_follows():
    rng = np.random.default_rng(3)
    keys = np.repeat([1, 2, 3], 400)
    follows, other = rng.random(1200), rng.random(1200)
    y = 0.05 * keys + 0.01 * follows  # stratum means differ; inside, y follows one feature
    r = _within_stratum_r2(keys, y, {"follows": follows, "other": other})
    assert r["explained_share"]["follows"] > 0.99 and r["explained_share"]["other"] < 0.02
    assert abs(r["within_stratum_std"] - 0.01 * follows[:400].std()) < 0.001


def test_r37_cells_cut_a_cuda_graph_where_r31s_quarter_octaves_are():
    from benchmarks.swing_drift_study import _cell

    assert [_cell(b, False) for b in (9, 14, 16)] == ["9-16"] * 3  # r34: one graph, one stratum
    assert [_cell(b, True) for b in (9, 11, 13, 15, 17, 18)] == [
        "9-10",
        "11-12",
        "13-14",
        "15-16",
        "17",
        "18-20",
    ]
