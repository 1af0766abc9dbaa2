"""Adapter from a calibrated ``ModelVersion`` to the pipeline's attribution columns."""

from __future__ import annotations

import numpy as np

from shadowd.attribution.model_version import ModelVersion
from shadowd.steps.columns import StepColumns


class ModelAttributor:
    """Attributes every ingested step with one model version and fixed-term policy."""

    def __init__(self, model: ModelVersion, policy: str = "equal") -> None:
        self.model = model
        self.policy = policy
        self.version = model.version

    def attribute_columns(self, cols: StepColumns) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        a = self.model.attribute(cols.batch, self.policy)
        return (
            {"predicted_ms": a.predicted_ms, "baseline_ms": a.baseline_ms},
            {
                "llmvisor_ms": a.llmvisor_ms,
                "llmvisor_measured_ms": a.llmvisor_measured_ms,
                "vtc_ms": a.vtc_ms,
                "vtc_tokens": a.vtc_tokens,
            },
        )
