"""Per-request shares of step latency, and the policy for the fixed term.

A model that predicts ``T̂ = β + Σ_i v_i`` leaves one question open: who pays
the part of a step that no single request causes (launches, host work,
weights read once while memory-bound)?  Two policies are implemented so they
can be reported side by side:

- ``equal``: an equal part each.  This is the Shapley value of a cost incurred
  once per non-empty batch, so it is the default.
- ``pro_rata``: everything in proportion to variable work, ``v_i·T̂/Σv``; a
  step whose variable work is zero falls back to ``equal``.

**The floor and the division of work** (``equal`` only; LLMVisor passes both,
the plain ``β``/``v`` split remains when they are not given).  With a
piecewise model the intercept of the step's own segment is not the cost of
running a step.  Above the breakpoint (compute-bound) the fitted line's ``β₁``
is where the line extrapolates to at zero tokens, below the memory-bound floor
``β₀`` (the GEMMs' flat region ends at the breakpoint: ``β₁ ≈ β₀ −
slope·breakpoint``), and a decode's price ``θ₁·φ`` there includes the GEMM
slope for its one token, a cost it only incurs because a prompt chunk made
the step compute-bound.  So:

1. the fixed term is the **floor** ``F = min(β₀, T̂)``, divided by the policy;
2. the rest, ``T̂ − F``, is **work**, divided in proportion to each row's
   *price* ``π_i``: ``π_i = v_i`` for prefill-like rows (the step's segment
   prices) and ``π_i = θ₀·φ_i`` for decode-like rows (the memory-bound prices:
   what the decode costs in any step without a chunk beside it).  The
   compute-bound premium thus falls on the prefill-like work that caused it.

In a memory-bound step (segment 0) ``F = β₀`` and ``π = v`` with ``Σπ = T̂ − F``,
so nothing changes there.  Shares stay ≥ 0 and sum to ``T̂``; ``v_i`` (the
own-work share the stability check judges) is untouched.

Why: measured during development against Monte Carlo Shapley values of the reference engine,
the plain split overcharged short decodes beside a chunk in saturated steps and undercharged
decodes beside a chunk in light ones, and the floor alone fixed only the second (those
comparison runs were not stored).  The policy as it is now is scored against the Shapley values,
per run, per policy, per tenant and per request, on the development runs and on held-out runs it
was not chosen on, in ``docs/accuracy.md`` ("Against the ground truth", "Held-out runs"),
measured by ``benchmarks/accuracy_study.py`` (``--held-out`` for the held-out runs);
``tests/sim/test_accuracy_reference.py`` holds the CI-sized runs to the tenant-error target, and ``tests/attribution/test_ground_truth.py`` holds ``equal`` to the
Shapley values of :mod:`shadowd.attribution.synthetic_steps`' latency function, with the token
split further off.

>>> import numpy as np
>>> rows = StepRows(np.array([0, 0, 1]), num_steps=2)
>>> v, beta = np.array([1.0, 3.0, 2.0]), np.array([2.0, 1.0])
>>> split_fixed_term(v, beta, rows, "equal").tolist()
[2.0, 4.0, 3.0]
>>> split_fixed_term(v, beta, rows, "pro_rata").tolist()
[1.5, 4.5, 3.0]
>>> split_fixed_term(v, beta, rows, "equal", floor=np.array([2.0, 2.0])).tolist()   # step 1: F = 2
[2.0, 4.0, 3.0]
>>> one = StepRows(np.array([0, 0]), 1)      # T̂ = 1 + 8 + 1 = 10, floor 4: work 6 by prices 8 : 0.5
>>> split_fixed_term(np.array([8.0, 1.0]), np.array([1.0]), one, "equal", floor=np.array([4.0]),
...                  price=np.array([8.0, 0.5])).round(3).tolist()
[7.647, 2.353]
>>> normalise(np.array([2.0, 4.0, 3.0]), np.array([6.0, 3.0]), np.array([3.0, 6.0]), rows).tolist()
[1.0, 2.0, 6.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shadowd.attribution.steprows import StepRows

FIXED_TERM_POLICIES = ("equal", "pro_rata")
DEFAULT_POLICY = "equal"


def floor_split(
    variable: np.ndarray,
    fixed: np.ndarray,
    floor: np.ndarray,
    rows: StepRows,
    price: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(work share per request, fixed term per step) with the step's fixed term at the ``floor``.

    ``T̂ = fixed + Σv``; ``F = min(floor, T̂)``; work ``w = π·(T̂ − F)/Σπ`` with ``π = price``
    (default ``variable``).  A step whose prices are all zero keeps all of ``T̂`` as its fixed
    term.  ``Σw + F = T̂`` and ``w ≥ 0``.
    """
    predicted = fixed + rows.sum(variable)
    price = variable if price is None else price
    total = rows.sum(price)
    live = total > 0
    f = np.where(live, np.minimum(floor, predicted), predicted)
    scale = np.divide(predicted - f, total, out=np.zeros_like(total), where=live)
    return price * rows.spread(scale), f


def split_fixed_term(
    variable: np.ndarray,
    fixed: np.ndarray,
    rows: StepRows,
    policy: str = DEFAULT_POLICY,
    floor: np.ndarray | None = None,
    price: np.ndarray | None = None,
) -> np.ndarray:
    """Per-request shares of ``T̂ = fixed + Σv``: work plus a part of the fixed term by ``policy``.

    With ``floor`` (per step) and ``price`` (per row), ``equal`` divides the floor and the rest by
    price (module docstring); without them ``v_i`` plus a part of ``fixed``.
    """
    if policy not in FIXED_TERM_POLICIES:
        raise ValueError(f"unknown fixed-term policy {policy!r}; expected one of {FIXED_TERM_POLICIES}")
    if floor is not None and policy == "equal":  # pro_rata: all of T̂ ∝ v either way
        variable, fixed = floor_split(variable, fixed, np.broadcast_to(floor, fixed.shape), rows, price)
    if policy == "equal":
        return variable + rows.spread(fixed / np.maximum(rows.counts, 1))
    total = rows.sum(variable)
    scale = np.divide(fixed, total, out=np.zeros(rows.num_steps), where=total > 0)
    out = variable * rows.spread(1.0 + scale)
    idle = total <= 0
    if idle.any():  # no variable work to weight by: equal split
        out += rows.spread(np.where(idle, fixed / np.maximum(rows.counts, 1), 0.0))
    return out


def normalise(shares: np.ndarray, predicted: np.ndarray, measured: np.ndarray, rows: StepRows) -> np.ndarray:
    """Rescale shares of ``predicted`` so each step's shares sum to ``measured``.

    A step predicted at zero (no model term fired) splits its measured time equally.
    """
    factor = np.divide(measured, predicted, out=np.zeros_like(measured), where=predicted > 0)
    out = shares * rows.spread(factor)
    zero = predicted <= 0
    if zero.any():
        out += rows.spread(np.where(zero, measured / np.maximum(rows.counts, 1), 0.0))
    return out


@dataclass
class Attribution:
    """One model version's verdict on a batch of steps: per-step predictions, per-request shares.

    Per step (length S): ``measured_ms``, ``predicted_ms`` (LLMVisor T̂), ``baseline_ms``
    (token-count T̂), ``fixed_ms`` (β of the step's segment), ``floor_ms`` (the floor ``β₀`` the
    ``equal`` policy divides, see the module docstring; ``None``: ``fixed_ms``).  Per request row
    (length R): ``variable_ms`` (θ·φ_i, the request's own work, independent of its batch-mates
    but for the segment), ``price_ms`` (the row's price for dividing work; ``None``:
    ``variable_ms``), ``llmvisor_ms`` (share of T̂ under ``policy``),
    ``llmvisor_measured_ms`` (the same, rescaled to the measured latency), ``vtc_ms``
    (weighted-token split of the measured latency), ``vtc_tokens`` (VTC charge).
    """

    model_version: str
    policy: str
    req_step: np.ndarray
    measured_ms: np.ndarray
    predicted_ms: np.ndarray
    baseline_ms: np.ndarray
    fixed_ms: np.ndarray
    variable_ms: np.ndarray
    llmvisor_ms: np.ndarray
    llmvisor_measured_ms: np.ndarray
    vtc_ms: np.ndarray
    vtc_tokens: np.ndarray
    floor_ms: np.ndarray | None = None
    price_ms: np.ndarray | None = None

    def with_policy(self, policy: str) -> Attribution:
        """The same attribution with the fixed term split under another policy."""
        rows = StepRows(self.req_step, self.measured_ms.shape[0])
        shares = split_fixed_term(self.variable_ms, self.fixed_ms, rows, policy, self.floor_ms, self.price_ms)
        measured = normalise(shares, self.predicted_ms, self.measured_ms, rows)
        return Attribution(
            **{**self.__dict__, "policy": policy, "llmvisor_ms": shares, "llmvisor_measured_ms": measured}
        )
