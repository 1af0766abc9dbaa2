"""A step's cost per tenant from the published LLMVisor coefficients, in plain Python.

The engine cannot import the numpy attribution code, and needs far less of it: per tenant, the sum
of its requests' shares of one step.  The arithmetic is that of
:mod:`shadowd.attribution.llmvisor` and :mod:`shadowd.attribution.shares` (``equal`` policy with
the floor and prices): segment by the step's total tokens, ``T̂ = β_seg + Σv``, fixed term
``F = min(β₀, T̂)`` split equally, the rest by price (decode rows at memory-bound prices).  All
features are linear in per-row sums, so a tenant's share needs only its sums (``TenantSums``)::

    share_t = F · n_t / n + (T̂ − F) · price_t / Σ price

``tests/govern/test_price.py`` checks it against ``ModelVersion.attribute`` on the same steps.

>>> m = {"breakpoint_tokens": 256, "segments": [
...     {"beta_ms": 4.0, "prefill": {"p": 0.001, "pc": 1e-6}, "decode": {"c": 4e-5}},
...     {"beta_ms": 1.0, "prefill": {"p": 0.02, "pc": 1e-6}, "decode": {"c": 4e-5, "request": 0.02}}]}
>>> a, b = TenantSums(), TenantSums()
>>> a.add(1000, 4000, True); b.add(1, 10000, False)
>>> [round(x, 3) for x in StepPricer(m).shares([a, b])]
[23.069, 2.351]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

PREFILL = ("p", "c", "p2", "pc", "request")
DECODE = ("c", "request", "extra_tokens")


class TenantSums:
    """One tenant's per-row feature sums in one step (and its VTC token counts)."""

    __slots__ = ("n", "pp", "pc", "pp2", "ppc", "pn", "dc", "dn", "dx")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Zero every sum (the governor reuses one per tenant, step after step)."""
        self.n = 0  # rows
        self.pp = self.pc = self.pp2 = self.ppc = 0.0  # prefill-like rows: Σp, Σc, Σp², Σp·c
        self.pn = 0  # prefill-like rows
        self.dc = 0.0  # decode-like rows: Σc
        self.dn = 0  # decode-like rows
        self.dx = 0  # decode-like rows: Σ max(p-1, 0) (speculative tokens)

    def add(self, p: int, c: int, prefill: bool) -> None:
        self.n += 1
        if prefill:
            self.pn += 1
            self.pp += p
            self.pc += c
            self.pp2 += p * p
            self.ppc += p * c
        else:
            self.dn += 1
            self.dc += c
            if p > 1:
                self.dx += p - 1

    def vtc_tokens(self, w_p: float, w_q: float) -> float:
        """VTC's charge: ``w_p`` per prompt-like token, ``w_q`` per generated token."""
        return w_p * self.pp + w_q * (self.dn + self.dx)


def _coef(seg: Mapping[str, Any], phase: str, names: Sequence[str]) -> tuple[float, ...]:
    part = seg.get(phase) or {}
    out = tuple(float(part.get(f, 0.0)) for f in names)
    if any(not math.isfinite(x) or x < 0 for x in out):
        raise ValueError(f"{phase} coefficients must be finite and >= 0")
    return out


class StepPricer:
    """Per-tenant shares of a step's predicted latency (ms) under one LLMVisor model."""

    def __init__(self, llmvisor: Mapping[str, Any]) -> None:
        segs = list(llmvisor["segments"])
        if len(segs) not in (1, 2):
            raise ValueError("an LLMVisor model has one or two segments")
        segs = (segs + segs)[:2]
        bp = llmvisor.get("breakpoint_tokens")
        self.breakpoint = math.inf if bp is None else float(bp)
        self.beta = tuple(float(s.get("beta_ms", 0.0)) for s in segs)
        if any(not math.isfinite(b) or b < 0 for b in self.beta):
            raise ValueError("beta_ms must be finite and >= 0")
        self.prefill = tuple(_coef(s, "prefill", PREFILL) for s in segs)
        self.decode = tuple(_coef(s, "decode", DECODE) for s in segs)

    def shares(self, tenants: Sequence[TenantSums], total_tokens: int | None = None) -> list[float]:
        """Each tenant's share (ms) of the step made of all ``tenants``' rows; they sum to ``T̂``."""
        if total_tokens is None:
            total_tokens = int(sum(s.pp + s.dn + s.dx for s in tenants))
        k = 1 if total_tokens > self.breakpoint else 0
        a_p, a_c, a_p2, a_pc, a_1 = self.prefill[k]  # unpacked once per step, not per tenant
        d_c, d_1, d_x = self.decode[0]  # the decode price always uses segment 0's coefficients
        e_c, e_1, e_x = self.decode[k]
        n = 0
        sum_v = sum_price = 0.0
        prices = []
        for s in tenants:
            # A phase without rows has all-zero sums, so its terms are exactly 0.0 (coefficients
            # are finite and >= 0) and adding them changes no float: skipped (most tenants in a
            # step only decode).
            if s.dn:
                price = d_c * s.dc + d_1 * s.dn + d_x * s.dx  # decode at segment 0's prices
                v = price if k == 0 else e_c * s.dc + e_1 * s.dn + e_x * s.dx
                if s.pn:
                    pre = a_p * s.pp + a_c * s.pc + a_p2 * s.pp2 + a_pc * s.ppc + a_1 * s.pn
                    v += pre
                    price += pre
            elif s.pn:
                v = price = a_p * s.pp + a_c * s.pc + a_p2 * s.pp2 + a_pc * s.ppc + a_1 * s.pn
            else:
                v = price = 0.0
            sum_v += v
            sum_price += price
            prices.append(price)
            n += s.n
        if n == 0:
            return [0.0] * len(tenants)
        each, scale = self._split(k, n, sum_v, sum_price)
        return [each * s.n + scale * price for s, price in zip(tenants, prices)]

    def decode_shares(self, counts: Sequence[int], contexts: Sequence[int], total_tokens: int) -> list[float]:
        """``shares`` of a step made only of one-token decode rows, given per tenant its rows
        and their summed context: the same operations in the same order, so the same floats bit
        for bit (``tests/govern/test_step_paths.py``), without sums objects: decode-only steps
        are the common ones (``benchmarks/govern_cost.py``, workloads ``steady`` and ``pressure``)."""
        k = 1 if total_tokens > self.breakpoint else 0
        d_c, d_1, _ = self.decode[0]
        e_c, e_1, _ = self.decode[k]
        n = 0
        sum_v = sum_price = 0.0
        prices = []
        for m, c in zip(counts, contexts):
            price = d_c * c + d_1 * m
            sum_v += price if k == 0 else e_c * c + e_1 * m
            sum_price += price
            prices.append(price)
            n += m
        if n == 0:
            return [0.0] * len(counts)
        each, scale = self._split(k, n, sum_v, sum_price)
        return [each * m + scale * price for m, price in zip(counts, prices)]

    def _split(self, k: int, n: int, sum_v: float, sum_price: float) -> tuple[float, float]:
        """Of ``T̂ = β_k + Σv`` over ``n > 0`` rows: the fixed term's part per row, and the rest's
        per unit of price (one place for both ``shares`` and ``decode_shares``)."""
        predicted = self.beta[k] + sum_v
        floor = min(self.beta[0], predicted) if sum_price > 0 else predicted
        scale = (predicted - floor) / sum_price if sum_price > 0 else 0.0
        return floor / n, scale
