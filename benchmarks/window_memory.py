"""A calibration window's memory, per request row: what a fit, a re-fit and a stability baseline hold.

Why: H48-swing-long was killed by the out-of-memory killer a second time, late in the run, with
the demo's own growth fixed (``benchmarks/demo_memory.py``).  The daemon's re-fit loads its whole
window of steps (``ReFitter._refit_window``), up to the widened warm-up window, with every request
row; under overload a step holds a few hundred rows, so a window's rows run to tens of millions,
and everything done with them scales per row.  Measured here, per request row, on a stored demo
log of saturated, changing batches (the real vLLM scheduler, tap and daemon):

- **Loading the window** (``load_batch``): with request ids, as before, and without, as the fit
  paths now read it.  Peak while loading and what stays held.
- **The stability baseline** (``stability_of``, which ``calibrate`` runs on its whole window):
  shape buckets as one label string per row, as before, and as codes
  (``checks.shape_bucket_codes``); both give the same report, which is checked here.
- **A whole calibration** (``calibrate``): peak above the loaded window.
- **The scheduled stability test** (``stability_from_db``): its own load of the window, the
  shares and the report, at the peak (the memory guard bounds its window too).

Each arm runs in a process of its own; peaks are ``tracemalloc``'s (numpy's arrays and Python's
objects; DuckDB's own buffers are bounded by its ``memory_limit`` and not counted).

- **Under a real memory limit** (the memory guard, ``shadowd/daemon/window_bound.py``): a
  re-fit's window and the warm-up's, each the whole log, run in a memory cgroup of their own,
  first with no limit (what the kernel charged them), then limited to ``LIMIT_FRACTION`` of
  that, without the guard and with it: killed, or completed on a window cut to fit.  Where this
  process cannot make a memory cgroup (not root, or cgroup v2 with the controller not
  delegated) the page says so.
- **Held out**: the guard's per-row allowances, set on this log's figures, read on a log that
  played no part in setting them (``HELD_OUT``: another platform, model, tenants and seed).

    .venv/bin/python -m benchmarks.run --only window_memory
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.gate_scenarios import REPO
from shadowd.daemon.cgroup_memory import CgroupMemory, memory_bytes
from shadowd.daemon.window_bound import CALIBRATION_BYTES_PER_ROW, LOADED_BYTES_PER_ROW
from shadowd.paths import shared_dir

TENANTS = ("a=lengths:sharegpt:40", "b=servegen:18:10", "c=lengths:arxiv:3")  # saturated, changing
SEED = 3
WORKLOAD = {"tenants": TENANTS, "seed": SEED}  # the demo's platform and model
# The memory guard's per-row allowances were set on WORKLOAD's figures; this one played no part in
# choosing them (another platform, model, tenants and seed): it confirms them, or says they miss.
HELD_OUT = {
    "tenants": ("a=azure-conv:20", "b=mooncake-conversation:1", "c=azure-code:8"),
    "seed": 17,
    "platform": "data/kernels/aiconfigurator-vllm-0.14.0/h200_sxm",
    "model": "benchmarks/models/gemma-2-9b",
}
PART_STEPS = 200  # steps per part fed to the warm-up calibrator
DUCKDB_LIMIT = "64MB"  # the re-fit arms' DuckDB memory_limit, kept aside by the guard
LIMIT_FRACTION = 0.8  # the cgroup limit, as a fraction of what the kernel charged the window unlimited


def _demo_log(path: str, steps: int, workload: dict[str, Any]) -> None:
    cmd = [sys.executable, "-m", "shadowd.cli", "demo", "--steps", str(steps), "--db", path]
    cmd += ["--seed", str(workload["seed"])]
    if workload.get("platform"):
        cmd += ["--platform", str(shared_dir() / workload["platform"]), "--model", workload["model"]]
    for t in workload["tenants"]:
        cmd += ["--tenant", t]
    subprocess.run(cmd, check=True, cwd=REPO, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _peak(fn) -> tuple[Any, int, int]:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = fn()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, peak - base, held - base


def _worker(arm: str, path: str) -> None:
    """One arm in this process; prints one JSON line."""

    import checks
    from shadowd.daemon.calibrator import calibrate
    from shadowd.daemon.stability import stability_of
    from shadowd.steps.log_reader import Window, load_batch, open_db

    con = open_db(path, read_only=True)
    con.execute("SET threads = 1")  # as the daemon's writer connection (``storage.threads``)
    if arm in ("load_ids", "load_no_ids"):
        batch, peak, held = _peak(lambda: load_batch(con, Window(), request_ids=arm == "load_ids"))
        print(json.dumps({"rows": batch.num_requests, "steps": batch.num_steps, "peak": peak, "held": held}))
        return
    batch = load_batch(con, Window(), request_ids=False)
    if arm == "calibrate":
        _, peak, _ = _peak(lambda: calibrate(batch, {"platform": "window_memory"}))
        print(json.dumps({"rows": batch.num_requests, "peak": peak}))
        return
    if arm == "stability_job":  # the scheduled test: its own load, the shares and the report
        from shadowd.daemon.stability import stability_from_db

        model, rows = calibrate(batch, {"platform": "window_memory"}).model, batch.num_requests
        del batch
        _, peak, _ = _peak(lambda: stability_from_db(con, model, max_steps=10**9))
        print(json.dumps({"rows": rows, "peak": peak}))
        return
    att = calibrate(batch, {"platform": "window_memory"}).model.attribute(batch)
    if arm == "stability_labels":  # one label string per row, as before shape_bucket_codes
        codes = checks.shape_bucket_codes
        checks.shape_bucket_codes = lambda *a: codes(*a).per_row()  # type: ignore[assignment]
    rep, peak, _ = _peak(lambda: stability_of(batch, att, n_boot=100, seed=1))
    rep.pop("computed_at")
    print(json.dumps({"rows": batch.num_requests, "peak": peak, "report": repr(rep)}))


def _refit_worker(path: str, guarded: bool) -> None:
    """A re-fit's window chosen, loaded and calibrated on, as ``RegimeRefit`` does it, with the
    memory guard on or off; prints its window, the cuts and the process's high-water mark."""
    import dataclasses

    from shadowd.daemon.calibrator import CalibrationSettings, calibrate
    from shadowd.daemon.refit import RegimeRefit
    from shadowd.daemon.window_bound import WindowBound
    from shadowd.steps.log_reader import Window, load_batch, open_db

    con = open_db(path, read_only=True)
    con.execute("SET threads = 1")
    con.execute(f"SET memory_limit = '{DUCKDB_LIMIT}'")
    (steps,) = con.execute("SELECT count(*) FROM steps").fetchone()
    # The model in force, its calibration window the whole log: the widened warm-up window a
    # long run's re-fit reads.
    first = calibrate(
        load_batch(con, Window(last_steps=500), request_ids=False), {"platform": "window_memory"}
    )
    cal = dataclasses.replace(first, window_steps=int(steps))
    memory = CgroupMemory(reserve_bytes=memory_bytes(DUCKDB_LIMIT)) if guarded else None
    refit = RegimeRefit(
        current=lambda: cal,
        cursor=lambda: con,
        install=lambda new: None,
        policy=lambda: None,  # type: ignore[arg-type,return-value]
        settings=CalibrationSettings,
        platform_key=lambda: {"platform": "window_memory"},
        window_bound=WindowBound(memory),
    )
    window = refit._window(con, cal, "re-fit")
    batch = load_batch(con, window, request_ids=False)
    calibrate(batch, {"platform": "window_memory"})
    print(
        json.dumps(
            {
                "window_steps": batch.num_steps,
                "window_rows": batch.num_requests,
                "log_steps": int(steps),
                "cuts": refit.window_bound.cuts(),
                "limit": memory.limit_bytes() if memory else None,
                "hwm_mib": _vm("VmHWM"),
            }
        )
    )


def _warmup_worker(path: str, guarded: bool) -> None:
    """The first calibration's warm-up window, fed the log part by part as ingest feeds it
    (``WarmupCalibrator``), its warm-up the whole log, with the memory guard on or off."""
    import dataclasses

    from shadowd.daemon.calibrator import CalibrationSettings, WarmupCalibrator
    from shadowd.daemon.window_bound import WindowBound
    from shadowd.steps.log_reader import Window, load_batch, open_db

    con = open_db(path, read_only=True)
    con.execute("SET threads = 1")
    con.execute(f"SET memory_limit = '{DUCKDB_LIMIT}'")
    ts = [str(t) for (t,) in con.execute("SELECT ts FROM steps WHERE latency_ms > 0 ORDER BY ts").fetchall()]
    memory = CgroupMemory(reserve_bytes=memory_bytes(DUCKDB_LIMIT)) if guarded else None
    bound, installed = WindowBound(memory), []
    settings = dataclasses.replace(CalibrationSettings(), max_window_factor=1.0)
    warmup = WarmupCalibrator(
        {"platform": "window_memory"}, len(ts), installed.append, settings=settings, window_bound=bound
    )
    for i in range(0, len(ts), PART_STEPS):
        until = ts[i + PART_STEPS] if i + PART_STEPS < len(ts) else None
        warmup.observe(_Part(load_batch(con, Window(since=ts[i], until=until), request_ids=False)))
        if warmup.state != "warming_up":
            break
    (cal,) = installed
    print(
        json.dumps(
            {
                "window_steps": cal.window_steps,
                "window_rows": None,
                "log_steps": len(ts),
                "cuts": bound.cuts(),
                "limit": memory.limit_bytes() if memory else None,
                "hwm_mib": _vm("VmHWM"),
            }
        )
    )


class _Part:
    """What ingest hands the warm-up calibrator: a batch of steps."""

    def __init__(self, batch: Any) -> None:
        self.batch, self.num_steps = batch, batch.num_steps


def _vm(key: str) -> float:
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _memory_cgroup() -> tuple[Path, str, str, str] | str:
    """Where this process may make a memory cgroup of its own: (directory, limit file, peak file,
    events file), or why it cannot (the benchmark then says so and runs no arm under a limit)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):  # v1
            base = Path("/sys/fs/cgroup/memory", path.lstrip("/"))
            files = ("memory.limit_in_bytes", "memory.max_usage_in_bytes", "memory.oom_control")
        elif controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():  # v2
            base = Path("/sys/fs/cgroup", path.lstrip("/"))
            files = ("memory.max", "memory.peak", "memory.events")
        else:
            continue
        if os.access(base, os.W_OK):
            return (base, *files)
        return f"{base} is not writable"
    return "no memory cgroup controller visible"


def _under_limit(path: str, guarded: bool, limit: int | None, mode: str = "refit") -> dict[str, Any]:
    """One re-fit arm in a child process inside a new memory cgroup limited to ``limit`` bytes
    (the kernel kills it at the limit, as systemd's ``MemoryMax`` would; None: no limit, to
    measure what the cgroup is charged)."""
    where = _memory_cgroup()
    if isinstance(where, str):
        return {"not_run": where}
    base, limit_file, peak_file, events_file = where
    cg = base / f"shadowd-window-memory-{os.getpid()}-{mode}-{int(guarded)}"
    cg.mkdir()
    try:
        if limit is not None:
            (cg / limit_file).write_text(str(limit))
        enter = f'echo $$ > {cg}/cgroup.procs && exec "$0" "$@"'
        args = [
            sys.executable,
            "-m",
            "benchmarks.window_memory",
            mode,
            path,
            "guarded" if guarded else "bare",
        ]
        proc = subprocess.run(["sh", "-c", enter, *args], capture_output=True, text=True, cwd=REPO)
        out: dict[str, Any] = {"returncode": proc.returncode}
        if proc.returncode == 0:
            out |= json.loads(proc.stdout.splitlines()[-1])
        events = (cg / events_file).read_text()
        kills = [ln.split()[1] for ln in events.splitlines() if ln.startswith("oom_kill ")]
        out["oom_kills"] = int(kills[0]) if kills else None
        out["cgroup_peak_mib"] = int((cg / peak_file).read_text()) / 2**20
        return out
    finally:
        cg.rmdir()


def limit_run(path: str, mode: str = "refit") -> dict[str, Any]:
    """A window of the whole log (``mode``: a re-fit's, or the warm-up's) in a cgroup of its own
    with no limit (the most it was charged), then under a limit of ``LIMIT_FRACTION`` of that,
    without the guard and with it."""
    free = _under_limit(path, False, None, mode)
    if "not_run" in free:
        return free
    limit = int(LIMIT_FRACTION * free["cgroup_peak_mib"] * 2**20)
    return {
        "free": free,
        "limit_fraction": LIMIT_FRACTION,
        "duckdb_limit": DUCKDB_LIMIT,
        "limit_mib": limit / 2**20,
        "unguarded": _under_limit(path, False, limit, mode),
        "guarded": _under_limit(path, True, limit, mode),
    }


def _arm(arm: str, path: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.window_memory", arm, path],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(out.stdout.splitlines()[-1])


def run(quick: bool = False) -> dict[str, Any]:
    steps = 2000 if quick else 4000
    with tempfile.TemporaryDirectory(prefix="window-memory-") as d:
        path = os.path.join(d, "log.duckdb")
        _demo_log(path, steps, WORKLOAD)
        arms = {
            a: _arm(a, path)
            for a in (
                "load_ids",
                "load_no_ids",
                "stability_labels",
                "stability_codes",
                "calibrate",
                "stability_job",
            )
        }
        under_limit = limit_run(path)
        warmup_under_limit = limit_run(path, "warmup")
        held_out = _held_out(os.path.join(d, "held_out.duckdb"), steps)
    rows = arms["load_ids"]["rows"]
    per_row = lambda arm, key="peak": arms[arm][key] / rows  # noqa: E731
    return {
        "window_memory": {
            "tenants": list(TENANTS),
            "seed": SEED,
            "steps": arms["load_ids"]["steps"],
            "rows": rows,
            "load_ids_peak_b_per_row": per_row("load_ids"),
            "load_ids_held_b_per_row": per_row("load_ids", "held"),
            "load_no_ids_peak_b_per_row": per_row("load_no_ids"),
            "load_no_ids_held_b_per_row": per_row("load_no_ids", "held"),
            "stability_labels_peak_b_per_row": per_row("stability_labels"),
            "stability_codes_peak_b_per_row": per_row("stability_codes"),
            "stability_reports_equal": arms["stability_labels"]["report"]
            == arms["stability_codes"]["report"],
            "calibrate_peak_b_per_row": per_row("calibrate"),
            "stability_job_peak_b_per_row": per_row("stability_job"),
            "guard_allowance_b_per_row": {
                "loaded": LOADED_BYTES_PER_ROW,
                "calibration": CALIBRATION_BYTES_PER_ROW,
            },
            "guard_reserve_fraction": CgroupMemory().reserve_fraction,
            "under_limit": under_limit,
            "warmup_under_limit": warmup_under_limit,
            "held_out": held_out,
            **_shipped(),
        }
    }


def _held_out(path: str, steps: int) -> dict[str, Any]:
    """The allowances' per-row figures on ``HELD_OUT``'s log: the loaded window and a calibration."""
    _demo_log(path, steps, HELD_OUT)
    load, cal, job = _arm("load_no_ids", path), _arm("calibrate", path), _arm("stability_job", path)
    return {
        **{k: list(v) if isinstance(v, tuple) else v for k, v in HELD_OUT.items()},
        "steps": load["steps"],
        "rows": load["rows"],
        "load_no_ids_peak_b_per_row": load["peak"] / load["rows"],
        "load_no_ids_held_b_per_row": load["held"] / load["rows"],
        "calibrate_peak_b_per_row": cal["peak"] / cal["rows"],
        "stability_job_peak_b_per_row": job["peak"] / job["rows"],
    }


def _shipped() -> dict[str, Any]:
    """The shipped configuration's widest warm-up window (steps) and the unit's memory cap: what
    the per-row figures are read against (``systemd/shadowd.service``, ``CalibrationConfig``)."""

    from shadowd.daemon.calibrator import CalibrationSettings
    from shadowd.daemon.config import CalibrationConfig, StorageConfig
    from shadowd.daemon.window_bound import affordable_rows

    unit = (REPO / "systemd" / "shadowd.service").read_text()
    cap, high = _unit_bytes(unit, "MemoryMax"), _unit_bytes(unit, "MemoryHigh")
    limit = min(cap or 1 << 62, high or 1 << 62)
    memory = CgroupMemory(reserve_bytes=memory_bytes(StorageConfig().memory_limit))
    return {
        "widest_window_steps": int(
            CalibrationConfig().warmup_steps * CalibrationSettings().max_window_factor
        ),
        "unit_memory_max_mib": cap >> 20 if cap else None,
        "unit_memory_high_mib": high >> 20 if high else None,
        # the guard's rows under the unit's binding limit, before the daemon's own memory
        "guard_rows_at_unit_limit": affordable_rows(memory.spare_under(limit, 0)) if cap or high else None,
    }


def _unit_bytes(unit: str, key: str) -> int | None:
    """A systemd memory setting (``1536M``, ``2G``) of the unit file, in bytes."""
    import re

    m = re.search(rf"^{key}=(\d+)([KMG])$", unit, re.M)
    return int(m.group(1)) << {"K": 10, "M": 20, "G": 30}[m.group(2)] if m else None


if __name__ == "__main__":
    if sys.argv[1] in ("refit", "warmup"):
        worker = _refit_worker if sys.argv[1] == "refit" else _warmup_worker
        worker(sys.argv[2], sys.argv[3] == "guarded")
    else:
        _worker(sys.argv[1], sys.argv[2])
