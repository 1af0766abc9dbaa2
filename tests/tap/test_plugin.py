"""The ``vllm.general_plugins`` entry point, loaded as vLLM loads it.

Each case runs in a fresh interpreter (vLLM loads plugins once per process) that calls vLLM's own
``load_general_plugins()``: the installed entry point is discovered through package metadata and
imported by name (``PYTHONPATH`` puts this checkout first).  Then it asks a ``SchedulerConfig`` for
the class vLLM's engine core would build, builds it on a real vLLM scheduler and drives steps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.helpers import make_daemon, wait_until

pytestmark = pytest.mark.usefixtures("vllm")
ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys, time
from vllm.config.scheduler import SchedulerConfig
from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler
if sys.argv[1] == "no-method":
    del SchedulerConfig.get_scheduler_cls   # a vLLM whose engine core has no such hook
if sys.argv[1] == "tapping-fails":
    import shadowd.tap.vllm
    def broken(cls):
        raise TypeError("cannot subclass this scheduler")
    shadowd.tap.vllm.tapped = broken
from vllm.plugins import load_general_plugins
load_general_plugins()
out = {"plugin_loaded": "shadowd.tap.plugin" in sys.modules}
if sys.argv[1] == "no-method":
    out["has_method"] = hasattr(SchedulerConfig, "get_scheduler_cls")
    print(json.dumps(out)); sys.exit(0)
if sys.argv[1] == "tapping-fails":
    cfg = SchedulerConfig(max_num_seqs=64, max_num_batched_tokens=1024, max_model_len=16384,
                          enable_chunked_prefill=True, async_scheduling=True, is_encoder_decoder=False)
    out["cls_is_default"] = cfg.get_scheduler_cls() is AsyncScheduler
    print(json.dumps(out)); sys.exit(0)
from shadowd.sim.driver import EngineDriver
from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler
from tests.workloads import mixed_trace_requests
for async_ in (True, False):
    cfg = SchedulerConfig(max_num_seqs=64, max_num_batched_tokens=1024, max_model_len=16384,
                          enable_chunked_prefill=True, async_scheduling=async_,
                          is_encoder_decoder=False)
    cls = cfg.get_scheduler_cls()
    default = AsyncScheduler if async_ else Scheduler
    spec = SchedulerSpec(model_dir=sys.argv[2], async_scheduling=async_, num_blocks=1200,
                         max_num_batched_tokens=1024, max_num_seqs=64, max_model_len=16384)
    sched = build_scheduler(spec, scheduler_cls=cls)
    time.sleep(0.2)  # let the PUSH socket connect
    driver = EngineDriver(sched, lambda st: 4.0, async_scheduling=async_, vocab_size=128256)
    steps = driver.run(mixed_trace_requests(per_tenant=2, seed=1), max_steps=40)
    out["async" if async_ else "sync"] = {
        "cls": cls.__name__, "is_default": cls is default,
        "subclass_of_default": issubclass(cls, default), "steps": steps,
        "tapped": getattr(sched, "shadowd_tap", None) is not None,
    }
    time.sleep(0.3)  # the tap's frames leave before the process does
print(json.dumps(out))
"""


def _run(case: str, llama_dir: str, tap: str | None) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOWD_TAP") and k != "VLLM_PLUGINS"}
    env.update(PYTHONPATH=str(ROOT), SHADOWD_ENGINE_ID="plugin-engine", HF_HUB_OFFLINE="1")
    if tap is not None:
        env["SHADOWD_TAP"] = tap
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, case, llama_dir],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_plugin_taps_the_class_vllm_builds(ipc_endpoint, db_path, llama_dir):
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start()
    try:
        out, _ = _run("tap", llama_dir, ipc_endpoint)
        total = out["async"]["steps"] + out["sync"]["steps"]
        assert wait_until(lambda: daemon.pipeline.steps_ingested >= total, timeout=30)
    finally:
        daemon.stop()
    assert out["plugin_loaded"]
    for mode, name in (("async", "TapAsyncScheduler"), ("sync", "TapScheduler")):
        got = out[mode]
        assert got["cls"] == name and got["subclass_of_default"] and not got["is_default"], got
        assert got["tapped"] and got["steps"] > 10
    con = duckdb.connect(db_path, read_only=True)
    (engines, steps) = con.execute("SELECT list(DISTINCT engine_id), count(*) FROM steps").fetchone()
    con.close()
    assert engines == ["plugin-engine"] and steps == total


def test_without_shadowd_tap_vllm_class_untouched(llama_dir):
    out, _ = _run("untouched", llama_dir, None)
    for mode in ("async", "sync"):
        assert out[mode]["is_default"] and not out[mode]["tapped"], out


def test_vllm_without_get_scheduler_cls_starts_untapped(ipc_endpoint, llama_dir):
    out, stderr = _run("no-method", llama_dir, ipc_endpoint)
    assert out == {"plugin_loaded": True, "has_method": False}
    assert "shadowd tap plugin not installed (engine runs untapped)" in stderr


def test_a_tap_that_cannot_wrap_the_class_leaves_vllm_its_own(ipc_endpoint, llama_dir):
    out, stderr = _run("tapping-fails", llama_dir, ipc_endpoint)
    assert out == {"plugin_loaded": True, "cls_is_default": True}
    assert "shadowd tap not applied" in stderr and "cannot subclass this scheduler" in stderr
