"""What keeps healthy held-out runs from GO: the final reasons the matrix tallies
(benchmarks/gate_document.py ``blockers``, ``blocker_table``; docs/validation.md).

The reasons are the gate's own words, as stored rows carry them; a check named inside another
check's detail must not count twice, and the three ways the drift check holds GO back (dull or
blind detectors, unresolved events) are told apart because their ways out differ.
"""

from __future__ import annotations

from benchmarks.gate_document import blocker_table, blockers

BLIND = (
    "inconclusive: drift (no evidence: residual drift detectors blind on required steps (decode: 54% "
    "of its recent steps are outside the batch compositions calibration saw; recalibrate on current "
    "traffic (shadowd calibrate)); way out: recalibrate on a wider window (shadowd calibrate))"
)
DULL = (
    "inconclusive: drift (no unresolved drift events, but the detectors would not raise a real "
    "slowdown in time (decode: a 5% slowdown raised not within 1200 judged steps (budget 300; "
    "Page-Hinkley threshold 52.75)); way out: wait for a re-fit, or recalibrate on a steadier window "
    "(shadowd calibrate)); stability (composition effect CI [0.037, 0.119] above the calibration "
    "window's 0.327 straddles 0.1: more data needed)"
)
PAGED = "failed: drift (unresolved drift events 2 > 0: check the engine for a real change)"
THIN = (
    "inconclusive: evidence.tenants (not enough evidence yet: tenants seen 1 < 2; wait for more "
    "shadow traffic); coverage.extrapolation (fraction of steps beyond the calibration envelope "
    "0.117706 > 0.05: traffic left the calibrated envelope; recalibrate on current traffic "
    "(shadowd calibrate)); accuracy.decode.p90 (decode: too few steps to judge p90 error); and 2 more"
)


def test_each_reason_names_its_blockers_once():
    assert blockers(BLIND) == {"drift: detectors blind"}
    assert blockers(DULL) == {"drift: detectors too dull", "share stability"}
    assert blockers(PAGED) == {"drift: events"}
    assert blockers(THIN) == {"evidence minimums", "beyond the envelope", "accuracy"}
    assert blockers("all 16 checks pass; 6 consecutive passing evaluations (need 3)") == set()


def _row(design: str, set_: str, expect: str, final: str, reason: str) -> dict:
    return {
        "design": design,
        "final": final,
        "final_reason": reason,
        "scenario": {"set": set_, "expect": expect},
    }


def test_the_table_counts_healthy_held_out_rows_not_go_by_blocker():
    rows = [
        _row("r41", "held_out_41", "healthy", "GO", "all 16 checks pass"),
        _row("r41", "held_out_41", "healthy", "INCONCLUSIVE", DULL),
        _row("r41", "held_out_42", "healthy", "INCONCLUSIVE", BLIND),
        _row("r41", "held_out_42", "fault", "NO_GO", PAGED),  # a fault row: not counted
        _row("r41", "development", "healthy", "INCONCLUSIVE", THIN),  # development: not counted
        _row("r2", "held_out_2", "healthy", "NO_GO", PAGED),
    ]
    head, rule, r2, r41 = blocker_table(rows)
    names = [c.strip() for c in head.strip("|").split("|")]
    cells = dict(zip(names, (c.strip() for c in r41.strip("|").split("|"))))
    assert cells["design"] == "r41" and cells["healthy held-out rows"] == "3"
    assert (cells["ended GO"], cells["not GO"]) == ("1", "2")
    assert cells["drift: detectors too dull"] == cells["drift: detectors blind"] == "1"
    assert cells["share stability"] == "1" and cells["drift: events"] == "0"
    assert r2.startswith("| r2 | 1 | 0 | 1 |")
