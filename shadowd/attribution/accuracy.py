"""Out-of-sample accuracy of both latency models, and per-tenant totals under both attributions.

A model that only has to reproduce its own fit window proves little, so the report fits on an
earlier window and scores a later one (:func:`out_of_sample_report`), or scores any window with an
already stored version (:func:`accuracy_report`).  The metrics are in
:mod:`shadowd.attribution.error_metrics`.  Per-class R² is weak where a class's latencies barely vary
(decode at a fixed batch size): read the relative errors there.

Per tenant: ``llmvisor_ms`` (shares of T̂ under the chosen fixed-term policy),
``llmvisor_measured_ms`` (shares of the measured latency), ``token_ms`` (VTC split of the measured
latency), ``vtc_tokens`` (VTC counter) and ``requests`` (distinct ``req_id`` when the batch has
them, else request rows).  ``fixed_term`` gives per-tenant ``llmvisor_ms`` under both policies.

>>> from shadowd.attribution.synthetic_steps import synthetic_batch
>>> r = out_of_sample_report(synthetic_batch(steps=600, seed=3), {"gpu": "test"})
>>> sorted(r["accuracy"]), sorted(r["accuracy"]["all"])
(['all', 'decode', 'mixed', 'prefill'], ['llmvisor', 'ratio', 'steps', 'token_baseline'])
>>> r["accuracy"]["all"]["steps"], r["fit_window"]["steps"]
(300, 300)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shadowd.attribution.error_metrics import accuracy_by_class
from shadowd.attribution.model_version import ModelVersion, fit, fit_window
from shadowd.attribution.shares import DEFAULT_POLICY, FIXED_TERM_POLICIES, Attribution
from shadowd.attribution.token_baseline import tenant_index
from shadowd.steps.batch import StepBatch


def tenant_totals(batch: StepBatch, attribution: Attribution) -> list[dict[str, Any]]:
    """Per-tenant totals under both attributions and the VTC counter, sorted by tenant."""
    names, inv = tenant_index(batch)
    k = len(names)
    total = lambda v: np.bincount(inv, weights=v, minlength=k)  # noqa: E731
    cols = {
        "llmvisor_ms": total(attribution.llmvisor_ms),
        "llmvisor_measured_ms": total(attribution.llmvisor_measured_ms),
        "token_ms": total(attribution.vtc_ms),
        "vtc_tokens": total(attribution.vtc_tokens),
    }
    if batch.req_id is not None and batch.num_requests:
        pairs = np.unique(np.stack([inv.astype(str), np.asarray(batch.req_id).astype(str)]), axis=1)
        requests = np.bincount(pairs[0].astype(np.intp), minlength=k)
    else:
        requests = np.bincount(inv, minlength=k)
    return [
        {"tenant": str(names[j]), **{c: float(v[j]) for c, v in cols.items()}, "requests": int(requests[j])}
        for j in range(k)
    ]


def accuracy_report(version: ModelVersion, batch: StepBatch, policy: str = DEFAULT_POLICY) -> dict[str, Any]:
    """Score ``version`` on ``batch`` (which should lie after the version's fit window)."""
    att = version.attribute(batch, policy)
    fixed = {}
    for pol in FIXED_TERM_POLICIES:
        other = att if pol == policy else att.with_policy(pol)
        fixed[pol] = {row["tenant"]: row["llmvisor_ms"] for row in tenant_totals(batch, other)}
    return {
        "model_version": version.version,
        "platform_key": version.platform_key,
        "breakpoint_tokens": version.llmvisor.to_dict()["breakpoint_tokens"],
        "fit_window": version.fit_window,
        "score_window": fit_window(batch),
        "accuracy": accuracy_by_class(batch, att.predicted_ms, att.baseline_ms),
        "tenants": tenant_totals(batch, att),
        "fixed_term": {"policy": policy, "tenants": fixed},
    }


def split_window(batch: StepBatch, fit_fraction: float = 0.5) -> tuple[StepBatch, StepBatch]:
    """(earlier, later) sub-batches by step order; ``fit_fraction`` of the steps go first."""
    cut = int(round(batch.num_steps * fit_fraction))
    first = np.arange(batch.num_steps) < cut
    return batch.select_steps(first), batch.select_steps(~first)


def out_of_sample_report(
    batch: StepBatch,
    platform_key: dict[str, Any],
    *,
    fit_fraction: float = 0.5,
    policy: str = DEFAULT_POLICY,
    **fit_kwargs: Any,
) -> dict[str, Any]:
    """Fit on the first ``fit_fraction`` of the steps, score on the rest."""
    earlier, later = split_window(batch, fit_fraction)
    return accuracy_report(fit(earlier, platform_key, **fit_kwargs), later, policy)
