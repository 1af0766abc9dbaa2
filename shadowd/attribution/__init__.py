"""Per-request attribution of step latency: LLMVisor, the token baseline, calibration, accuracy.

``fit(batch, platform_key)`` calibrates both models into a :class:`ModelVersion`;
``version.attribute(batch)`` gives per-step predictions and per-request shares;
``out_of_sample_report`` / ``accuracy_report`` score them.
"""

from shadowd.attribution.accuracy import accuracy_report, out_of_sample_report, split_window
from shadowd.attribution.llmvisor import LLMVisorModel
from shadowd.attribution.model_version import ModelVersion, fit
from shadowd.attribution.shares import FIXED_TERM_POLICIES, Attribution
from shadowd.attribution.token_baseline import TokenBaseline, vtc_counters

__all__ = [
    "Attribution",
    "FIXED_TERM_POLICIES",
    "LLMVisorModel",
    "ModelVersion",
    "TokenBaseline",
    "accuracy_report",
    "fit",
    "out_of_sample_report",
    "split_window",
    "vtc_counters",
]
