"""The warm-up window waits for the tenants ``[calibration] tenants`` names (design r11).

A tenant the operator expects but that was quiet at first (a bursty batch job) would otherwise be
a newcomer to the gate when it arrives.  The window widens, within its usual maximum, until every
listed tenant has a row in it; one still missing at the maximum is calibrated without, and named
in the log.  Driven through ``WarmupCalibrator.observe`` as the daemon feeds it, with a
``run_job`` that records the window instead of fitting it.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from shadowd.daemon.calibrator import CalibrationSettings, WarmupCalibrator, tenants_seen_by
from shadowd.steps.batch import StepBatch


@dataclasses.dataclass
class Cols:
    batch: StepBatch

    @property
    def num_steps(self) -> int:
        return self.batch.num_steps


def _steps(n: int, first: int, late: dict[str, int]) -> Cols:
    """``n`` decode steps from step ``first``: tenants a and b in every step, each tenant of
    ``late`` only from its step on."""
    steps, reqs = [], []
    for i in range(first, first + n):
        names = ["a", "b"] + [t for t, at in late.items() if i >= at]
        steps.append({"latency_ms": 10.0, "step_seq": i})
        reqs.append([{"tenant": t, "new_tokens": 1, "context_tokens": 100 + i} for t in names])
    return Cols(StepBatch.from_rows(steps, reqs))


def _windows(expected: tuple[str, ...], late: dict[str, int], total: int) -> list[StepBatch]:
    chosen: list[StepBatch] = []
    settings = CalibrationSettings(min_class_steps=30, max_window_factor=3.0, expected_tenants=expected)
    cal = WarmupCalibrator({"gpu": "x"}, 400, lambda c: None, settings=settings, run_job=lambda fn: fn())
    cal._calibrate = chosen.append  # the window it would fit
    for first in range(0, total, 100):  # frames arrive in batches of 100 steps
        cal.observe(_steps(100, first, late))
    return chosen


def test_the_window_waits_for_an_expected_tenant_that_starts_late():
    (window,) = _windows(("a", "b", "c"), {"c": 650}, 2000)
    assert window.num_steps == 651 and "c" in set(window.tenant)  # its first row: step 650


def test_without_expected_tenants_the_window_does_not_wait():
    (window,) = _windows((), {"c": 650}, 2000)
    assert window.num_steps == 400 and "c" not in set(window.tenant)


def test_a_tenant_missing_at_the_widest_window_is_named_and_left_out(caplog):
    with caplog.at_level(logging.WARNING, "shadowd.calibration"):
        (window,) = _windows(("a", "b", "z"), {}, 2000)
    assert window.num_steps == 1200  # 3 x warmup_steps, then it calibrates anyway
    assert "calibrating without expected tenant(s) z" in caplog.text


def test_tenants_seen_by_counts_from_the_window_start():
    batch = _steps(10, 0, {"c": 4}).batch
    assert tenants_seen_by(batch, ()) == 0
    assert tenants_seen_by(batch, ("a", "c")) == 5
    assert tenants_seen_by(batch, ("a", "nobody")) is None
    assert np.isin(["a", "b"], batch.tenant).all()


def test_a_reload_while_warming_up_changes_the_tenants_waited_for(tmp_path):
    """``[calibration] tenants`` from a reloaded config reaches a calibrator still warming up."""
    from shadowd.daemon.config import Config, Platform
    from shadowd.daemon.service import Daemon
    from tests.helpers import daemon_config

    platform = Platform(gpu="H100-SXM", model="m", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="x")
    config = daemon_config(
        f"ipc://{tmp_path}/t.sock",
        str(tmp_path / "s.duckdb"),
        calibration=dataclasses.replace(Config.default().calibration, platform=platform),
    )
    daemon = Daemon(config)
    assert daemon.calibrator is not None and daemon.calibrator.settings.expected_tenants == ()
    tenants = dataclasses.replace(config.calibration, tenants=("acme",))
    daemon.apply_config(dataclasses.replace(config, calibration=tenants))
    assert daemon.calibrator.settings.expected_tenants == ("acme",)


def test_the_window_is_joined_once_however_long_it_widens(monkeypatch):
    """While it widens, each batch asks only whether it is wide enough (step classes, listed
    tenants' first rows): the request rows are joined once, for the fit, not copied each time."""
    joined = []
    concat = StepBatch.concat.__func__
    monkeypatch.setattr(
        StepBatch, "concat", classmethod(lambda cls, parts: joined.append(1) or concat(cls, parts))
    )
    (window,) = _windows(("a", "b", "c"), {"c": 650}, 2000)
    assert window.num_steps == 651 and len(joined) == 1


def test_a_tenant_listed_by_a_reload_mid_window_is_found_in_the_steps_already_held():
    """Tenant c sends at steps 150-199 only; the reload that lists it comes at step 300, so its
    first row is in a part already held: the window need not wait for it."""
    chosen: list[StepBatch] = []
    settings = CalibrationSettings(min_class_steps=30, max_window_factor=3.0, expected_tenants=("a", "b"))
    cal = WarmupCalibrator({"gpu": "x"}, 400, lambda c: None, settings=settings, run_job=lambda fn: fn())
    cal._calibrate = chosen.append
    for first in range(0, 2000, 100):
        if first == 300:
            cal.settings = dataclasses.replace(settings, expected_tenants=("a", "b", "c"))
        part = _steps(100, first, {"c": 150} if first == 100 else {})
        cal.observe(part)
    (window,) = chosen
    assert window.num_steps == 400 and "c" in set(window.tenant)


def test_the_window_holds_no_request_ids():
    """The fit never reads request ids, and they were most of a held part's memory
    (``benchmarks/window_memory.py``): the window leaves them behind, and nothing else."""
    chosen: list[StepBatch] = []
    cal = WarmupCalibrator(
        {"gpu": "x"}, 200, lambda c: None, settings=CalibrationSettings(min_class_steps=30)
    )
    cal._calibrate = chosen.append
    sent = []
    for first in range(0, 300, 100):
        cols = _steps(100, first, {})
        cols.batch.req_id = np.array(
            [f"req-{first}-{i}" for i in range(cols.batch.num_requests)], dtype=object
        )
        sent.append(cols.batch)
        cal.observe(cols)
    (window,) = chosen
    whole = StepBatch.concat(sent).select_steps(np.arange(300) < window.num_steps)
    assert window.req_id is None and whole.req_id is not None
    for name in ("req_step", "tenant", "context_tokens", "latency_ms"):
        assert np.array_equal(getattr(window, name), getattr(whole, name)), name


def _steps_of(sizes: list[int], first: int) -> Cols:
    """Decode steps from step ``first``, step i holding ``sizes[i]`` requests of tenant a."""
    steps = [{"latency_ms": 10.0 + n / 10, "step_seq": first + i} for i, n in enumerate(sizes)]
    reqs = [[{"tenant": "a", "new_tokens": 1, "context_tokens": 100 + j} for j in range(n)] for n in sizes]
    return Cols(StepBatch.from_rows(steps, reqs))


def test_a_window_stops_at_max_window_rows():
    """``[calibration] max_window_rows``: the window holds at most that many request rows, cut
    short of ``warmup_steps`` if need be (an operator's memory bound; no limit by default)."""
    sizes = [1 + (i * 7) % 40 for i in range(1200)]

    def window(rows: int | None) -> StepBatch:
        chosen: list[StepBatch] = []
        settings = CalibrationSettings(min_class_steps=30, max_window_rows=rows)
        cal = WarmupCalibrator({"gpu": "x"}, 1000, lambda c: None, settings=settings)
        cal._calibrate = chosen.append
        for first in range(0, 1200, 100):
            cal.observe(_steps_of(sizes[first : first + 100], first))
        (w,) = chosen
        return w

    unbounded, cut = window(None), window(10_000)
    assert unbounded.num_steps == 1000
    held = np.cumsum(sizes)
    assert cut.num_requests <= 10_000 and cut.num_steps == int(np.searchsorted(held, 10_000, side="right"))
    assert window(10**9).num_steps == 1000  # a bound the window never reaches changes nothing


def test_a_reload_sets_the_next_windows_row_bound(tmp_path):
    from shadowd.daemon.config import Config, Platform
    from shadowd.daemon.service import Daemon
    from tests.helpers import daemon_config

    platform = Platform(gpu="H100-SXM", model="m", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="x")
    calibration = dataclasses.replace(Config.default().calibration, platform=platform, max_window_rows=50_000)
    config = daemon_config(f"ipc://{tmp_path}/t.sock", str(tmp_path / "s.duckdb"), calibration=calibration)
    daemon = Daemon(config)
    assert daemon.calibrator is not None and daemon.calibrator.settings.max_window_rows == 50_000
    daemon.apply_config(
        dataclasses.replace(config, calibration=dataclasses.replace(calibration, max_window_rows=0))
    )
    assert daemon.calibrator.settings.max_window_rows is None
