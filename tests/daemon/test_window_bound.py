"""Calibration, re-fit and stability windows under the daemon's cgroup memory limit: the limit
read from both cgroup versions, each window cut to what fits rather than killed at the limit,
counted, alerted on, and nothing cut where no limit is set.  The cgroup trees here are
directories of our own (a test cannot set the host's limits); ``benchmarks/window_memory.py``
runs a re-fit's and the warm-up's windows under a real cgroup limit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from shadowd.daemon.calibrator import CalibrationSettings, WarmupCalibrator
from shadowd.daemon.cgroup_memory import CgroupMemory, memory_bytes
from shadowd.daemon.window_bound import CALIBRATION_BYTES_PER_ROW, LOADED_BYTES_PER_ROW, MIN_ROWS, WindowBound
from shadowd.steps.batch import StepBatch

PAGE = 4096


def cgroup_tree(root: Path, proc_cgroup: str, limits: dict[str, str], resident: int = 0) -> CgroupMemory:
    """A /proc/self and /sys/fs/cgroup of our own: ``limits`` maps a file below the cgroup root
    to its text; ``resident`` anonymous bytes in status (VmRSS, twice that, is not read)."""
    proc = root / "proc"
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "cgroup").write_text(proc_cgroup)
    (proc / "status").write_text(
        f"Name:\tpython\nVmRSS:\t{resident // 512} kB\nRssAnon:\t{resident // 1024} kB\n"
    )
    for rel, text in limits.items():
        f = root / "cg" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return CgroupMemory(reserve_fraction=0.0, proc_self=str(proc), cgroup_root=str(root / "cg"))


def test_the_smallest_limit_of_the_cgroup_and_its_ancestors_binds_in_either_version(tmp_path):
    v2 = cgroup_tree(
        tmp_path / "v2",
        "0::/system.slice/shadowd.service\n",
        {
            "system.slice/shadowd.service/memory.max": "1610612736\n",
            "system.slice/memory.max": "1073741824\n",
        },
    )
    assert v2.limit_bytes() == 1 << 30
    high = cgroup_tree(
        tmp_path / "high",
        "0::/u\n",
        {"u/memory.max": "1610612736\n", "u/memory.high": "1073741824\n"},  # MemoryHigh=1G
    )
    assert high.limit_bytes() == 1 << 30
    v1 = cgroup_tree(
        tmp_path / "v1",
        "9:pids:/x\n4:memory:/system.slice/shadowd.service\n0::/\n",
        {
            "memory/system.slice/shadowd.service/memory.limit_in_bytes": "1610612736\n",
            "memory/memory.limit_in_bytes": "9223372036854771712\n",  # v1's "no limit"
        },
    )
    assert v1.limit_bytes() == 1610612736
    # A cgroup namespace hides the path: the mount's own root is the daemon's cgroup.
    ns = cgroup_tree(tmp_path / "ns", "0::/\n", {"memory.max": "536870912\n"})
    assert ns.limit_bytes() == 1 << 29


def test_no_limit_or_nothing_readable_means_no_memory_bound(tmp_path):
    unlimited = cgroup_tree(tmp_path / "a", "0::/u\n", {"u/memory.max": "max\n"})
    assert unlimited.limit_bytes() is None and unlimited.headroom_bytes() is None
    assert WindowBound(unlimited).rows(None, loading=True) == (None, None)
    garbled = cgroup_tree(tmp_path / "g", "\nnot a cgroup line\n0::/u\n", {"u/memory.max": "12x\n"})
    assert garbled.limit_bytes() is None
    nothing = CgroupMemory(proc_self=str(tmp_path / "missing"), cgroup_root=str(tmp_path / "missing"))
    assert nothing.limit_bytes() is None and WindowBound(nothing).rows(50_000, loading=True) == (
        50_000,
        "rows",
    )


def test_an_unreadable_resident_figure_turns_the_guard_off_said_once(tmp_path, caplog):
    import logging

    mem = cgroup_tree(tmp_path, "0::/u\n", {"u/memory.max": "1073741824"})
    Path(mem.proc_self, "status").write_text("Name:\tpython\n")  # a kernel without RssAnon
    bound = WindowBound(mem)
    with caplog.at_level(logging.WARNING, "shadowd.daemon.window_bound"):
        assert bound.rows(None, loading=False, held=5) == (None, None)
        assert bound.rows(50_000, loading=True) == (50_000, "rows")
    assert caplog.text.count("memory guard off") == 1


def test_headroom_keeps_the_reserves_and_what_the_daemon_holds(tmp_path):
    mem = cgroup_tree(tmp_path, "0::/u\n", {"u/memory.max": str(1000 * PAGE)}, resident=300 * PAGE)
    assert mem.resident_bytes() == 300 * PAGE
    assert mem.headroom_bytes() == 700 * PAGE
    kept = dataclasses.replace(mem, reserve_bytes=100 * PAGE, reserve_fraction=0.1)
    assert kept.headroom_bytes() == 1000 * PAGE - 100 * PAGE - 100 * PAGE - 300 * PAGE
    full = dataclasses.replace(mem, reserve_bytes=10_000 * PAGE)
    assert full.headroom_bytes() == 0


def test_the_rows_a_window_may_hold_are_what_its_load_and_calibration_can_afford(tmp_path):
    per_row = LOADED_BYTES_PER_ROW + CALIBRATION_BYTES_PER_ROW
    spare = 60_000 * per_row
    mem = cgroup_tree(tmp_path, "0::/u\n", {"u/memory.max": str(spare)})
    bound = WindowBound(mem)
    assert bound.rows(None, loading=True) == (60_000, "memory")
    assert bound.rows(50_000, loading=True) == (50_000, "rows")  # the operator's, where smaller
    assert bound.rows(10**9, loading=True) == (60_000, "memory")
    # Rows held already were paid for (in the resident figure): only their calibration is to come.
    held = 40_000
    assert bound.rows(None, loading=False, held=held) == (
        (spare + held * LOADED_BYTES_PER_ROW) // per_row,
        "memory",
    )
    starved = WindowBound(dataclasses.replace(mem, reserve_bytes=spare))
    assert starved.rows(None, loading=True) == (MIN_ROWS, "memory")  # never below a window that can fit


def _steps_of(sizes: list[int], first: int):
    steps = [{"latency_ms": 5.0 + 0.01 * n, "step_seq": first + i} for i, n in enumerate(sizes)]
    reqs = [
        [{"tenant": "ab"[j % 2], "new_tokens": 1, "context_tokens": 500 + j} for j in range(n)] for n in sizes
    ]

    class Cols:
        def __init__(self, batch: StepBatch) -> None:
            self.batch, self.num_steps = batch, batch.num_steps

    return Cols(StepBatch.from_rows(steps, reqs))


def test_the_warm_up_window_stops_widening_where_its_calibration_would_not_fit(tmp_path):
    sizes = [1 + (i * 7) % 40 for i in range(1200)]  # 24,600 rows over 1,200 steps

    def window(memory: CgroupMemory | None) -> tuple[StepBatch, dict[str, int]]:
        chosen: list[StepBatch] = []
        bound = WindowBound(memory)
        cal = WarmupCalibrator(
            {"gpu": "x"},
            1000,
            lambda c: None,
            settings=CalibrationSettings(min_class_steps=30),
            window_bound=bound,
        )
        cal._calibrate = chosen.append
        for first in range(0, 1200, 100):
            cal.observe(_steps_of(sizes[first : first + 100], first))
        (w,) = chosen
        return w, bound.cuts()

    whole, cuts = window(None)
    assert whole.num_steps == 1000 and cuts == {"rows": 0, "memory": 0}
    # Room for the calibration of 15,000 rows, their load paid as they arrived.
    mem = cgroup_tree(tmp_path, "0::/u\n", {"u/memory.max": str(15_000 * CALIBRATION_BYTES_PER_ROW)})
    cut, cuts = window(mem)
    assert cuts == {"rows": 0, "memory": 1}
    assert cut.num_steps < 1000 and cut.num_requests <= 15_000 + 100 * 40
    unlimited, cuts = window(cgroup_tree(tmp_path / "u", "0::/u\n", {"u/memory.max": "max"}))
    assert unlimited.num_steps == 1000 and cuts == {"rows": 0, "memory": 0}
    np.testing.assert_array_equal(unlimited.latency_ms, whole.latency_ms)


def test_the_daemon_guards_by_default_counts_cuts_in_metrics_and_a_reload_turns_it_off(tmp_path):
    from shadowd.daemon.config import Config, Platform
    from shadowd.daemon.metrics import registry_for
    from shadowd.daemon.service import Daemon
    from tests.helpers import daemon_config

    platform = Platform(gpu="H100-SXM", model="m", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="x")
    calibration = dataclasses.replace(Config.default().calibration, platform=platform)
    assert calibration.memory_guard is True
    config = daemon_config(f"ipc://{tmp_path}/t.sock", str(tmp_path / "s.duckdb"), calibration=calibration)
    daemon = Daemon(config)
    assert daemon.window_bound.memory is not None
    assert daemon.window_bound.memory.reserve_bytes == memory_bytes(config.storage.memory_limit)
    assert daemon.calibrator is not None and daemon.calibrator.window_bound is daemon.window_bound
    assert daemon.refit.window_bound is daemon.window_bound
    daemon.window_bound.cut("memory", 20_000, 100, "re-fit")
    text = generate_latest(registry_for(daemon.metric_sources())).decode()
    assert 'shadowd_calibration_windows_cut_total{bound="memory"} 1.0' in text
    assert 'shadowd_calibration_windows_cut_total{bound="rows"} 0.0' in text
    assert "shadowd_calibration_window_rows_affordable" not in text  # no limit here: no bound
    limited = cgroup_tree(tmp_path / "cg", "0::/u\n", {"u/memory.max": str(1 << 40)})
    daemon.window_bound.memory = dataclasses.replace(limited, reserve_bytes=0)
    text = generate_latest(registry_for(daemon.metric_sources())).decode()
    (family,) = [
        f
        for f in text_string_to_metric_families(text)
        if f.name == "shadowd_calibration_window_rows_affordable"
    ]
    assert family.samples[0].value == (1 << 40) // (LOADED_BYTES_PER_ROW + CALIBRATION_BYTES_PER_ROW)
    daemon.apply_config(
        dataclasses.replace(config, calibration=dataclasses.replace(calibration, memory_guard=False))
    )
    assert daemon.window_bound.memory is None and daemon.window_bound.cuts()["memory"] == 1


def test_a_refits_window_is_the_most_recent_steps_that_fit_under_the_limit(tmp_path):
    from checks import GatePolicy
    from shadowd.attribution.synthetic_steps import synthetic_batch
    from shadowd.daemon.calibrator import calibrate
    from shadowd.daemon.refit import RegimeRefit
    from tests.helpers import log_of_decode_steps

    cal = calibrate(synthetic_batch(steps=2000, seed=3, max_seqs=16), {"gpu": "x"})
    con = log_of_decode_steps(2 * cal.window_steps)
    per_row = LOADED_BYTES_PER_ROW + CALIBRATION_BYTES_PER_ROW

    def window(limit: str) -> tuple[int, dict[str, int]]:
        mem = cgroup_tree(tmp_path / limit, "0::/u\n", {"u/memory.max": limit})
        refit = RegimeRefit(
            current=lambda: cal,
            cursor=lambda: con,
            install=lambda new: None,
            policy=GatePolicy,
            settings=CalibrationSettings,
            platform_key=lambda: {"gpu": "x"},
            run_job=lambda fn: None,
            window_bound=WindowBound(mem),
        )
        return refit._window(con, cal, "re-fit").last_steps, refit.window_bound.cuts()

    assert cal.window_steps * 40 > 12_000
    assert window("max") == (cal.window_steps, {"rows": 0, "memory": 0})
    assert window(str(12_000 * per_row)) == (300, {"rows": 0, "memory": 1})  # 40 rows a step
    assert window(str(10**12)) == (cal.window_steps, {"rows": 0, "memory": 0})  # room for all of it


def test_a_window_cut_to_fit_memory_warns_on_call_until_one_is_read_whole(tmp_path):
    """``CalibrationWindowCut``: raised by the daemon's health tick while the last window read
    was cut for memory (a warning, not a page), cleared once a window is read whole."""
    from alerts import catalog
    from shadowd.daemon.config import Config, Platform
    from shadowd.daemon.service import Daemon
    from tests.helpers import daemon_config

    platform = Platform(gpu="H100-SXM", model="m", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="x")
    calibration = dataclasses.replace(Config.default().calibration, platform=platform)
    daemon = Daemon(
        daemon_config(f"ipc://{tmp_path}/t.sock", str(tmp_path / "s.duckdb"), calibration=calibration)
    )

    def active() -> list:
        daemon.health_tick()
        return [a for a in daemon.notifier.active() if a.name == catalog.CALIBRATION_WINDOW_CUT]

    assert active() == []
    daemon.window_bound.read("re-fit", 650, 100_000, "memory", cut=True)
    (alert,) = active()
    assert alert.severity == "warning" and alert.details["window"] == "re-fit"
    assert alert.details["steps"] == 650 and alert.details["request_rows_at_most"] == 100_000
    daemon.window_bound.read("re-fit", 4000, 100_000, "memory", cut=False)  # read whole
    assert active() == []
    daemon.window_bound.read("calibration", 500, 50_000, "rows", cut=True)  # the operator's bound
    assert active() == [] and daemon.window_bound.cuts() == {"rows": 1, "memory": 1}


def test_the_stability_window_holds_the_most_recent_steps_that_fit(tmp_path):
    """The scheduled share-stability test reads up to 20,000 steps with every request row; under
    the memory bound it reads the most recent steps that fit, and its report says how many."""
    import duckdb

    from shadowd.attribution.synthetic_steps import synthetic_batch
    from shadowd.daemon.calibrator import calibrate
    from shadowd.daemon.stability import stability_from_db
    from storage.schema import migrate

    con = duckdb.connect(str(tmp_path / "log.duckdb"))
    migrate(con)
    con.execute("""
        INSERT INTO steps (engine_id, run_id, step_seq, ts, latency_ms, kind, num_requests,
                           prefill_tokens, decode_tokens, dropped_frames_total)
        SELECT 'e', 'r', s, TIMESTAMP '2026-01-01' + to_microseconds(s * 1000), 5.0 + 0.2 * (s % 40),
               'decode', 10 + s % 40, 0, 10 + s % 40, 0
        FROM range(600) t(s)""")
    con.execute("""
        INSERT INTO step_requests (engine_id, run_id, step_seq, req_id, tenant, phase, new_tokens,
                                   context_tokens, prompt_tokens, spec_tokens)
        SELECT 'e', 'r', s, 'q' || (s * 100 + j), 't' || (j % 3), 'decode', 1, 200 + 37 * j, 0, 0
        FROM range(600) a(s), range(50) b(j)
        WHERE j < 10 + s % 40""")
    model = calibrate(synthetic_batch(steps=400, seed=2, max_seqs=32), {"gpu": "x"}).model
    whole = stability_from_db(con, model, n_boot=20)
    assert whole["steps"] == 600 and whole["max_steps"] == 20_000 and not whole["cut_for_rows"]
    assert stability_from_db(con, model, max_rows=10**9, n_boot=20)["max_steps"] == 20_000
    cut = stability_from_db(con, model, max_rows=5_000, n_boot=20)
    assert cut["cut_for_rows"] and cut["steps"] == cut["max_steps"] < 600
    assert 5_000 - 50 < cut["rows"] <= 5_000  # the most recent steps whose rows fit, 10-49 a step
    starved = stability_from_db(con, model, max_rows=400, n_boot=20)
    assert starved["cut_for_rows"] and "fit under the daemon's memory limit" in starved["error"]
