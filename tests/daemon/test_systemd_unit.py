"""The shipped systemd files: verify, security exposure, the vLLM drop-in, sysusers, MDWE.

Needs ``systemd-analyze`` and ``systemd-sysusers`` (Debian package ``systemd``); the tests fail,
never skip, without them.  Nothing here starts a unit: the files are checked offline.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shadowd.daemon.config import load_config

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "systemd" / "shadowd.service"
DROPIN = REPO / "systemd" / "vllm-shadowd.conf"
SYSUSERS = REPO / "systemd" / "shadowd.sysusers"
TMPFILES = REPO / "systemd" / "shadowd.tmpfiles"
MAX_EXPOSURE = 4.0
INSTALL = "apt-get update && apt-get install -y --no-install-recommends systemd"


def tool(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} is required for this test: {INSTALL}  (make system-deps does)")
    return exe


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)


def unit_here(tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at this checkout's shadowd (verify wants it to exist)."""
    shadowd = Path(sys.executable).parent / "shadowd"
    assert shadowd.exists(), f"{shadowd} missing: pip install -e . first"
    text = UNIT.read_text().replace("ExecStart=/usr/bin/shadowd", f"ExecStart={shadowd}")
    assert str(shadowd) in text
    path = tmp_path / "shadowd.service"
    path.write_text(text)
    return path


def settings(path: Path) -> dict[str, list[str]]:
    """Key -> values of every ``Key=value`` line (systemd keys may repeat)."""
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", "[")):
            key, value = line.split("=", 1)
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_unit_passes_systemd_analyze_verify(tmp_path):
    proc = run(tool("systemd-analyze"), "verify", str(unit_here(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    assert "shadowd.service" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_verify_catches_a_broken_unit(tmp_path):
    """So that the test above can fail: a typo'd directive or value is reported."""
    path = unit_here(tmp_path)
    for typo in ("ProtectSystem=stirct", "ProtectSytem=strict"):
        path.write_text(
            UNIT.read_text()
            .replace("ProtectSystem=strict", typo)
            .replace("ExecStart=/usr/bin/shadowd", f"ExecStart={Path(sys.executable).parent}/shadowd")
        )
        proc = run(tool("systemd-analyze"), "verify", str(path))
        assert "shadowd.service:" in proc.stderr, typo  # verify exits 0 here: its output is the check


def test_security_exposure_is_at_most_4(tmp_path):
    proc = run(tool("systemd-analyze"), "security", "--offline=yes", "--no-pager", str(UNIT))
    found = re.search(r"Overall exposure level for shadowd\.service: (\d+\.\d+)", proc.stdout)
    assert found, proc.stdout + proc.stderr
    exposure = float(found.group(1))
    assert exposure <= MAX_EXPOSURE, proc.stdout
    documented = re.search(r"exposure level (\d+\.\d+)", (REPO / "docs" / "operations.md").read_text())
    assert documented and float(documented.group(1)) == exposure, (
        f"docs/operations.md must record the current figure, {exposure}"
    )


def test_unit_shape():
    s = settings(UNIT)
    assert s["Type"] == ["notify"] and s["NotifyAccess"] == ["main"]
    assert float(s["WatchdogSec"][0]) > 0
    assert s["ExecStart"] == ["/usr/bin/shadowd run --config /etc/shadowd/shadowd.toml"]
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert s["StateDirectory"] == ["shadowd"] and s["RuntimeDirectory"] == ["shadowd"]
    assert s["RuntimeDirectoryMode"] == ["0750"] and s["CapabilityBoundingSet"] == [""]
    assert s["RestartPreventExitStatus"] == ["2"]  # an invalid config is not retried
    cfg = load_config(REPO / "systemd" / "shadowd.toml", check_paths=False)
    assert Path(cfg.db).parent == Path("/var/lib") / s["StateDirectory"][0]
    assert Path(cfg.state_file).parent == Path("/run") / s["RuntimeDirectory"][0]


def test_vllm_dropin_points_the_tap_at_the_daemon(tmp_path):
    units = tmp_path / "units"
    (units / "vllm.service.d").mkdir(parents=True)
    (units / "vllm.service").write_text(
        textwrap.dedent("""\
        [Unit]
        Description=stand-in for an operator's vLLM unit
        [Service]
        ExecStart=/bin/true
        """)
    )
    shutil.copy(DROPIN, units / "vllm.service.d" / "shadowd.conf")
    shutil.copy(unit_here(tmp_path), units / "shadowd.service")
    env = {"SYSTEMD_UNIT_PATH": f"{units}:", "PATH": "/usr/bin:/bin"}
    proc = run(tool("systemd-analyze"), "verify", str(units / "vllm.service"), env=env)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr

    s = settings(DROPIN)
    assert s["SupplementaryGroups"] == ["shadowd-tap"]  # the socket's group, not the daemon's
    assert "After" not in s and "Requires" not in s  # vLLM never waits for shadowd
    tap = dict(v.split("=", 1) for v in s["Environment"])["SHADOWD_TAP"]
    assert tap == load_config(REPO / "systemd" / "shadowd.toml", check_paths=False).listen
    assert Path(tap.removeprefix("ipc://")).parent == Path("/run/shadowd-tap")
    assert "/run/shadowd-tap" in settings(UNIT)["ReadWritePaths"]

    # The drop-in really is read: a broken line in it is reported.
    (units / "vllm.service.d" / "shadowd.conf").write_text(DROPIN.read_text() + "Environment=BROKEN\n")
    proc = run(tool("systemd-analyze"), "verify", str(units / "vllm.service"), env=env)
    assert "shadowd.conf" in proc.stderr


def test_sysusers_creates_the_service_user_and_group(tmp_path):
    (tmp_path / "etc").mkdir()
    proc = run(tool("systemd-sysusers"), f"--root={tmp_path}", str(SYSUSERS))
    assert proc.returncode == 0, proc.stderr
    passwd = (tmp_path / "etc" / "passwd").read_text()
    group = (tmp_path / "etc" / "group").read_text()
    assert re.search(r"^shadowd:x:\d+:\d+:.*:/var/lib/shadowd:/usr/sbin/nologin$", passwd, re.M)
    assert re.search(r"^shadowd:x:\d+:", group, re.M)
    assert re.search(r"^shadowd-tap:x:\d+:shadowd$", group, re.M)  # the daemon may chgrp into it


def test_tap_directory_admits_the_engine_group_only(tmp_path):
    """tmpfiles makes /run/shadowd-tap setgid shadowd-tap, 2750: the socket bound inside gets the
    engine's group; the engine's group reaches nothing else (its groups are disjoint)."""
    (tmp_path / "etc").mkdir()
    assert run(tool("systemd-sysusers"), f"--root={tmp_path}", str(SYSUSERS)).returncode == 0
    proc = run(tool("systemd-tmpfiles"), "--create", f"--root={tmp_path}", str(TMPFILES))
    assert proc.returncode == 0, proc.stderr
    ids = {
        line.split(":")[0]: int(line.split(":")[2])
        for line in (tmp_path / "etc" / "group").read_text().splitlines()
    }
    uids = {
        line.split(":")[0]: int(line.split(":")[2])
        for line in (tmp_path / "etc" / "passwd").read_text().splitlines()
    }
    st = (tmp_path / "run" / "shadowd-tap").stat()
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o2750, uids["shadowd"], ids["shadowd-tap"])
    unit = settings(UNIT)
    assert unit["Group"] == ["shadowd"] and unit["StateDirectoryMode"] == ["0750"]
    assert unit["ConfigurationDirectoryMode"] == ["0750"] and unit["UMask"] == ["0027"]


def test_unit_yields_to_the_engine():
    """The daemon is the one to go: bounded memory, killed first by the OOM killer, lowest CPU
    and I/O priority, bounded tasks, single-threaded numeric libraries."""
    s = settings(UNIT)
    env = dict(kv.split("=", 1) for line in s["Environment"] for kv in line.split())
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "1"
    assert s["MemoryMax"] and s["MemoryHigh"] and int(s["OOMScoreAdjust"][0]) > 0
    assert int(s["CPUWeight"][0]) < 100 and int(s["Nice"][0]) > 0
    assert s["IOSchedulingClass"] == ["idle"] and int(s["TasksMax"][0]) > 0


MDWE_PROBE = """
import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:          # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
    sys.exit(77)
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    sys.exit(3)                              # the probe itself would be broken
except PermissionError:
    pass
import numpy as np, duckdb, zmq, river.drift, apscheduler.schedulers.background, prometheus_client
import shadowd.daemon.service, shadowd.daemon.calibrator, checks, alerts.config, storage.writer
from shadowd.attribution.model_version import fit
from shadowd.attribution.synthetic_steps import synthetic_batch
v = fit(synthetic_batch(steps=300, seed=1), {"gpu": "x"})
assert v.attribute(synthetic_batch(steps=20, seed=2)).predicted_ms.shape == (20,)
con = duckdb.connect()
assert con.execute("SELECT sum(range) FROM range(1000000)").fetchone()[0] == 499999500000
ctx = zmq.Context(); ctx.socket(zmq.PULL).close(); ctx.term()
print("ok")
"""


def test_daemon_stack_tolerates_memory_deny_write_execute():
    """MemoryDenyWriteExecute=yes is safe: the stack runs with the kernel's equivalent (PR_SET_MDWE)."""
    proc = subprocess.run(
        [sys.executable, "-c", MDWE_PROBE], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    if proc.returncode == 77:
        pytest.skip("kernel lacks PR_SET_MDWE (Linux < 6.3); nothing to emulate MemoryDenyWriteExecute with")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
