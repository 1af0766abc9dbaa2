"""Drift detection, share-stability statistics and the go/no-go gate for shadowd.

A leaf library over numpy arrays and plain dicts (numpy, scipy, river): it imports nothing
from ``shadowd``, ``storage`` or ``alerts``; the daemon wires it.

- drift: ``DriftMonitor`` (per-class Page-Hinkley and ADWIN on standardised residuals,
  thresholds from ``calibration.calibrate``), ``CoefficientDrift``, ``EnvelopeMonitor``;
  every detection is a ``DriftEvent``.
- stability: ``share_stability.stability_report`` and ``cost_per_work_by_strata``.
- gate: ``GatePolicy`` + ``Evidence`` → ``Gate.evaluate`` → ``Decision`` (``exit_code``).
"""

from checks.adwin import AdwinDetector
from checks.alarm_confirmation import graph_size, size_stratum, strata, stratum
from checks.check_result import CheckResult
from checks.coefficient_drift import CoefficientDrift, nnls_fit, ridge_fit
from checks.decision import EXIT_ERROR, Decision, effective_verdict, exit_code
from checks.detector import ResidualDetector
from checks.detrend import Detrend, detrend
from checks.domain import feature_domain
from checks.drift_calibration import SUPPORT_FEATURES, DriftCalibration
from checks.drift_event import DriftEvent
from checks.envelope import EnvelopeMonitor, WorkloadEnvelope
from checks.envelope_extension import BeyondClass, extension_decision
from checks.evidence import ClassAccuracy, Evidence
from checks.fault_sensitivity import FAULT_BUDGET_STEPS, FAULT_SHIFT, detection_delay, dulled
from checks.gate import Gate, GateState
from checks.page_hinkley import PageHinkleyDetector
from checks.policy import STEP_CLASSES, GatePolicy
from checks.refit_guard import (
    LEVEL_SHIFT_Z,
    ClassError,
    RefitEvidence,
    ResidualShift,
    largest_level_shift,
    largest_level_shift_within,
    refit_decision,
    strata_span,
    time_invariant,
)
from checks.residual_bias import fit_bias, fit_graph_offsets, remove_bias, remove_graph_offsets
from checks.residual_drift import DriftMonitor, relative_residual
from checks.rules import advantage_report, evidence_waits
from checks.share_stability import (
    Buckets,
    composition_effect,
    cost_per_work_by_strata,
    shape_bucket_codes,
    shape_buckets,
    stability_report,
)
from checks.stratified_detrend import StratifiedDetrend
from checks.threshold_search import (
    calibrate,
    calibrate_class,
    measure_detection_delay,
    measure_false_alarm_rate,
    synthetic_residuals,
)
from checks.validated_support import SupportDecision, validated_support
from checks.wander import BlockSpread, allowance, block_spread

DETECTORS = (PageHinkleyDetector, AdwinDetector)

__all__ = [
    "graph_size",
    "size_stratum",
    "strata",
    "stratum",
    "AdwinDetector",
    "BeyondClass",
    "BlockSpread",
    "CheckResult",
    "ClassError",
    "Detrend",
    "StratifiedDetrend",
    "ClassAccuracy",
    "CoefficientDrift",
    "DETECTORS",
    "Decision",
    "DriftCalibration",
    "SUPPORT_FEATURES",
    "SupportDecision",
    "validated_support",
    "DriftEvent",
    "DriftMonitor",
    "EXIT_ERROR",
    "EnvelopeMonitor",
    "FAULT_BUDGET_STEPS",
    "FAULT_SHIFT",
    "Evidence",
    "RefitEvidence",
    "ResidualShift",
    "Gate",
    "GatePolicy",
    "GateState",
    "PageHinkleyDetector",
    "ResidualDetector",
    "STEP_CLASSES",
    "WorkloadEnvelope",
    "advantage_report",
    "evidence_waits",
    "allowance",
    "block_spread",
    "calibrate",
    "calibrate_class",
    "composition_effect",
    "cost_per_work_by_strata",
    "detection_delay",
    "detrend",
    "dulled",
    "effective_verdict",
    "exit_code",
    "feature_domain",
    "fit_bias",
    "fit_graph_offsets",
    "measure_detection_delay",
    "measure_false_alarm_rate",
    "nnls_fit",
    "largest_level_shift",
    "largest_level_shift_within",
    "LEVEL_SHIFT_Z",
    "strata_span",
    "extension_decision",
    "refit_decision",
    "time_invariant",
    "relative_residual",
    "remove_bias",
    "remove_graph_offsets",
    "ridge_fit",
    "Buckets",
    "shape_bucket_codes",
    "shape_buckets",
    "stability_report",
    "synthetic_residuals",
]
