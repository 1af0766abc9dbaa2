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
import tempfile
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


CASES = {  # case -> the endpoint its SHADOWD_TAP names (None: unset)
    "tap": "daemon",
    "untouched": None,
    "no-method": "daemon",
    "tapping-fails": "daemon",
}


def _start(case: str, llama_dir: str, tap: str | None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOWD_TAP") and k != "VLLM_PLUGINS"}
    env.update(PYTHONPATH=str(ROOT), SHADOWD_ENGINE_ID="plugin-engine", HF_HUB_OFFLINE="1")
    if tap is not None:
        env["SHADOWD_TAP"] = tap
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, case, llama_dir],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def runs(llama_dir, tmp_path_factory):
    """Every case's (JSON out, stderr), the four interpreters started at once (each spends most of
    its time importing vLLM), with a real daemon on the endpoint the tapped ones name; and the
    daemon's ``steps`` rows (engine ids, count) once it has ingested the tapped run's steps."""
    endpoint = f"ipc://{tempfile.mkdtemp(prefix='shd-')}/tap.sock"
    db = str(tmp_path_factory.mktemp("plugin") / "shadowd.duckdb")
    daemon = make_daemon(endpoint, db)
    daemon.start()
    try:
        procs = {c: _start(c, llama_dir, endpoint if t else None) for c, t in CASES.items()}
        out = {}
        for case, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, (case, stderr[-4000:])
            out[case] = (json.loads(stdout.strip().splitlines()[-1]), stderr)
        tapped = out["tap"][0]
        total = tapped["async"]["steps"] + tapped["sync"]["steps"]
        assert wait_until(lambda: daemon.pipeline.steps_ingested >= total, timeout=30)
    finally:
        daemon.stop()
    con = duckdb.connect(db, read_only=True)
    out["rows"] = con.execute("SELECT list(DISTINCT engine_id), count(*) FROM steps").fetchone()
    con.close()
    return out


def test_plugin_taps_the_class_vllm_builds(runs):
    out, _ = runs["tap"]
    assert out["plugin_loaded"]
    for mode, name in (("async", "TapAsyncScheduler"), ("sync", "TapScheduler")):
        got = out[mode]
        assert got["cls"] == name and got["subclass_of_default"] and not got["is_default"], got
        assert got["tapped"] and got["steps"] > 10
    engines, steps = runs["rows"]  # the other cases send no steps: only the tapped run's are here
    assert engines == ["plugin-engine"] and steps == out["async"]["steps"] + out["sync"]["steps"]


def test_without_shadowd_tap_vllm_class_untouched(runs):
    out, _ = runs["untouched"]
    for mode in ("async", "sync"):
        assert out[mode]["is_default"] and not out[mode]["tapped"], out


def test_vllm_without_get_scheduler_cls_starts_untapped(runs):
    out, stderr = runs["no-method"]
    assert out == {"plugin_loaded": True, "has_method": False}
    assert "shadowd tap plugin not installed (engine runs untapped)" in stderr


def test_a_tap_that_cannot_wrap_the_class_leaves_vllm_its_own(runs):
    out, stderr = runs["tapping-fails"]
    assert out == {"plugin_loaded": True, "cls_is_default": True}
    assert "shadowd tap not applied" in stderr and "cannot subclass this scheduler" in stderr
