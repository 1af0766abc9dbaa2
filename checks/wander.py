"""How far the latency model's residual mean wanders as batch composition changes.

A piecewise-linear latency model is never exact: its residual carries a small bias that depends on
what is in the batch (GEMM wave quantisation, attention kernels switching tiles, KV reads at long
contexts). As traffic mixes change over minutes, that bias moves the residual's *mean* by a
fraction of a percent to a few percent, with no change to the engine at all. A CUSUM-type detector
(Page-Hinkley) whose allowance is smaller than that wander accumulates it and fires on a perfectly
healthy engine, sooner or later, whatever its threshold: the sums grow linearly in time.
Short-memory resampling of a few hundred held-out steps (``checks.resample``) cannot see it.

So the calibration measures the wander directly: the spread of ``block``-step means of the residual
over the calibration window, with a one-sided upper confidence bound (chi-square on the number of
blocks), since a window holds only a few dozen blocks and the bound must be conservative when the
evidence is thin. The detectors' allowance is then a multiple of it (``allowance``): the smallest
shift of the residual mean they raise is what the model's own wander says is not noise.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> noise = rng.normal(0, 0.02, 3000)
>>> slow = np.repeat(rng.normal(0, 0.01, 30), 100)      # a bias that moves every 100 steps
>>> flat, wandering = block_spread(noise), block_spread(noise + slow)
>>> flat.sd < 0.003 < wandering.sd, wandering.n_blocks, wandering.upper > wandering.sd
(True, 30, True)
>>> round(allowance(wandering, min_shift=0.02, k=2.5), 3) > 0.02
True
>>> allowance(flat, min_shift=0.02, k=2.5)     # tight model: the floor, half of min_shift
0.01
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockSpread:
    """Standard deviation of ``block``-step means (relative latency) and its upper bound."""

    block: int
    n_blocks: int
    sd: float
    upper: float  # one-sided upper confidence bound on ``sd`` at ``level``
    level: float


def block_spread(
    residuals: np.ndarray, block: int = 100, level: float = 0.9, min_blocks: int = 3
) -> BlockSpread:
    """Spread of consecutive ``block``-step means of ``residuals`` (NaNs dropped, order kept).

    Fewer than ``min_blocks`` whole blocks: the block is shortened so that there are
    ``min_blocks`` (down to 10 steps); an empty or tiny array raises ``ValueError``.
    """
    from scipy.stats import chi2

    r = np.asarray(residuals, dtype=float)
    r = r[np.isfinite(r)]
    if len(r) // block < min_blocks:
        block = max(10, len(r) // min_blocks)
    k = len(r) // block
    if k < 2:
        raise ValueError(
            f"{len(r)} residuals are too few to measure the mean's wander "
            f"(need ≥ {2 * 10}); calibrate on a longer window"
        )
    means = r[: k * block].reshape(k, block).mean(axis=1)
    sd = float(means.std(ddof=1))
    upper = float(sd * np.sqrt((k - 1) / chi2.ppf(1.0 - level, k - 1)))
    return BlockSpread(block=block, n_blocks=k, sd=sd, upper=upper, level=level)


def allowance(spread: BlockSpread, min_shift: float = 0.02, k: float = 2.5) -> float:
    """Smallest shift of the residual mean worth raising: ``max(min_shift / 2, k · upper)``."""
    return float(max(min_shift / 2.0, k * spread.upper))
