"""Calibration: fit both latency models on a window of steps into a versioned, storable model.

Coefficients are only valid for the platform they were measured on, so a :class:`ModelVersion`
carries its platform key (GPU, model id, dtype/quantisation, TP/PP, vLLM version, attention
backend) and a content hash of key + coefficients as its id: refitting on identical data gives the
same id, any coefficient or key change gives a new one, and every stored share can name the version
that produced it.  The fit window and in-sample fit metrics travel with it but are not hashed.

>>> from shadowd.attribution.synthetic_steps import synthetic_batch
>>> key = {"gpu": "H100-SXM", "model": "llama-3.1-8b", "dtype": "bf16", "tp": 1,
...        "vllm": "0.33.0", "attention_backend": "FLASH_ATTN"}
>>> v = fit(synthetic_batch(steps=400, seed=1), key)
>>> len(v.version), v.fit_window["steps"]
(12, 400)
>>> ModelVersion.from_json(v.to_json()).version == v.version
True
>>> a = v.attribute(synthetic_batch(steps=5, seed=2))
>>> a.predicted_ms.shape, a.llmvisor_ms.shape == a.vtc_ms.shape
((5,), True)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shadowd.attribution.error_metrics import accuracy_by_class
from shadowd.attribution.llmvisor import LLMVisorModel
from shadowd.attribution.shares import DEFAULT_POLICY, Attribution, normalise, split_fixed_term
from shadowd.attribution.steprows import StepRows
from shadowd.attribution.token_baseline import TokenBaseline
from shadowd.steps.batch import StepBatch

PLATFORM_KEY_FIELDS = ("gpu", "model", "dtype", "tp", "pp", "vllm", "attention_backend")
HASH_SCHEME = 1


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def version_id(platform_key: dict[str, Any], llmvisor: dict[str, Any], token_baseline: dict[str, Any]) -> str:
    """First 12 hex digits of sha256 over canonical JSON of key and coefficients."""
    body = {
        "scheme": HASH_SCHEME,
        "platform_key": platform_key,
        "llmvisor": llmvisor,
        "token_baseline": token_baseline,
    }
    return hashlib.sha256(_canonical(body).encode()).hexdigest()[:12]


def fit_window(batch: StepBatch) -> dict[str, Any]:
    """First/last step_seq and ts of the window and its number of steps."""

    def ends(a: np.ndarray | None, conv) -> tuple[Any, Any]:
        return (None, None) if a is None or len(a) == 0 else (conv(a[0]), conv(a[-1]))

    seq = ends(batch.step_seq, int)
    ts = ends(batch.ts, lambda t: str(np.datetime64(t, "us")))
    return {
        "steps": batch.num_steps,
        "first_step_seq": seq[0],
        "last_step_seq": seq[1],
        "first_ts": ts[0],
        "last_ts": ts[1],
    }


@dataclass(eq=False)
class ModelVersion:
    """A calibrated pair of models for one platform, identified by ``version`` (content hash)."""

    platform_key: dict[str, Any]
    llmvisor: LLMVisorModel
    token_baseline: TokenBaseline
    fit_window: dict[str, Any] = field(default_factory=dict)
    fit_metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return version_id(self.platform_key, self.llmvisor.to_dict(), self.token_baseline.to_dict())

    def attribute(self, batch: StepBatch, policy: str = DEFAULT_POLICY) -> Attribution:
        """Predictions per step and shares per request under both models (vectorised)."""
        rows = StepRows(batch.req_step, batch.num_steps)
        tokens = rows.sum(batch.new_tokens)
        variable, fixed, predicted, price = self.llmvisor.decompose_with_prices(batch, rows, tokens)
        floor = np.full(batch.num_steps, self.llmvisor.floor_ms)
        shares = split_fixed_term(variable, fixed, rows, policy, floor, price)
        weighted = self.token_baseline.weighted_tokens(batch)
        return Attribution(
            model_version=self.version,
            policy=policy,
            req_step=batch.req_step,
            measured_ms=batch.latency_ms,
            predicted_ms=predicted,
            baseline_ms=self.token_baseline.predict(batch, tokens),
            fixed_ms=fixed,
            variable_ms=variable,
            llmvisor_ms=shares,
            llmvisor_measured_ms=normalise(shares, predicted, batch.latency_ms, rows),
            vtc_ms=self.token_baseline.shares(batch, weighted, rows),
            vtc_tokens=weighted,
            floor_ms=floor,
            price_ms=price,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "hash_scheme": HASH_SCHEME,
            "platform_key": self.platform_key,
            "llmvisor": self.llmvisor.to_dict(),
            "token_baseline": self.token_baseline.to_dict(),
            "fit_window": self.fit_window,
            "fit_metrics": self.fit_metrics,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelVersion:
        """Rebuild; raises ``ValueError`` if the stored version id does not match the content."""
        mv = cls(
            dict(d["platform_key"]),
            LLMVisorModel.from_dict(d["llmvisor"]),
            TokenBaseline.from_dict(d["token_baseline"]),
            dict(d.get("fit_window") or {}),
            dict(d.get("fit_metrics") or {}),
        )
        if d.get("version") not in (None, mv.version):
            raise ValueError(f"model version {d['version']} does not match its content ({mv.version})")
        return mv

    @classmethod
    def from_json(cls, text: str) -> ModelVersion:
        return cls.from_dict(json.loads(text))


def fit(
    batch: StepBatch,
    platform_key: dict[str, Any],
    *,
    breakpoints: list[float] | None = None,
    w_p: float = 1.0,
    w_q: float = 2.0,
    weighting: str = "relative",
    min_segment_steps: int = 30,
) -> ModelVersion:
    """Fit LLMVisor and the token baseline on ``batch`` (one platform) into a :class:`ModelVersion`.

    ``fit_metrics`` holds the in-sample accuracy per step class (see
    :func:`shadowd.attribution.error_metrics.accuracy_by_class`), the breakpoint search summary
    and the work terms fitted at zero where the window carried that work
    (:meth:`LLMVisorModel.zero_priced`).
    """
    _canonical(platform_key)  # fail early on a key that cannot be hashed
    llmvisor = LLMVisorModel.fit(
        batch, breakpoints=breakpoints, weighting=weighting, min_segment_steps=min_segment_steps
    )
    baseline = TokenBaseline.fit(batch, w_p=w_p, w_q=w_q, weighting=weighting)
    search = llmvisor.search
    metrics: dict[str, Any] = {
        "in_sample": accuracy_by_class(batch, llmvisor.predict(batch), baseline.predict(batch)),
        "breakpoint_search": {
            "candidates": len(search.candidates) if search else 0,
            "best_loss": min(search.losses) if search else None,
            "segment_steps": np.bincount(llmvisor.segment(batch), minlength=2).tolist(),
        },
        "weighting": weighting,
        "zero_priced": llmvisor.zero_priced(batch),
    }
    return ModelVersion(dict(platform_key), llmvisor, baseline, fit_window(batch), metrics)
