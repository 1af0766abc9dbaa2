"""What every residual drift detector in this package offers.

The detectors watch *standardised* residuals (unit scale, zero mean on calibration data).
river's detectors reset themselves on the update after a detection; the wrappers keep their
own counts across those resets, and ``reset()`` returns a detector to its freshly built state.
The shared contract test (``tests/checks/test_detector_contract.py``) holds every class listed
in ``checks.DETECTORS`` to this protocol.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ResidualDetector(Protocol):
    """A streaming change detector over standardised residuals."""

    name: str
    threshold: float
    n_seen: int
    n_detections: int
    last_detection: dict[str, Any] | None

    def update(self, z: float) -> bool:
        """Feed one standardised residual; True when this value completes a detection."""
        ...

    def reset(self) -> None:
        """Return to the freshly built state (counts included)."""
        ...
