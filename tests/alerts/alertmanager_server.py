"""A real Prometheus Alertmanager on loopback, for tests (Debian package ``prometheus-alertmanager``).

Reusable outside ``tests/alerts``::

    from alertmanager_server import start_alertmanager   # with tests/alerts on sys.path
    server = start_alertmanager(tmp_path)                 # installs the package if missing and root
    try:
        ... POST to server.base_url, read back with server.alerts() ...
    finally:
        server.stop()

or use the ``alertmanager`` fixture from ``tests/alerts/conftest.py``. The
server gets a free loopback port, a config with one ``null`` receiver (it
notifies nobody), its own storage directory, and clustering disabled.
A missing binary is an error, never a skip: CI must install the package.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

BINARIES = ("prometheus-alertmanager", "alertmanager")
APT_PACKAGE = "prometheus-alertmanager"
APT_INSTALL = ["apt-get", "install", "-y", "--no-install-recommends", APT_PACKAGE]

CONFIG = """\
route:
  receiver: "null"
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: "null"
"""


def find_binary() -> str | None:
    """Path of the Alertmanager binary, if installed."""
    for name in BINARIES:
        if path := shutil.which(name):
            return path
    return None


def ensure_installed() -> str:
    """The binary's path, installing the Debian package first if we are root with apt.

    Raises ``RuntimeError`` naming the install command when it cannot be had.
    """
    path = find_binary()
    if path is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update"], env=env, check=False, capture_output=True, timeout=600)
        subprocess.run(APT_INSTALL, env=env, check=False, capture_output=True, timeout=600)
        path = find_binary()
    if path is None:
        raise RuntimeError(
            f"Alertmanager binary not found; install it with: apt-get update && {' '.join(APT_INSTALL)}"
        )
    return path


def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclasses.dataclass
class AlertmanagerServer:
    """A running Alertmanager: its ``base_url``, and helpers to read alerts and stop it."""

    base_url: str
    process: subprocess.Popen
    workdir: Path

    def get(self, path: str, **query: str) -> Any:
        """GET a JSON API path, e.g. ``get("/api/v2/alerts", active="true")``."""
        url = self.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)

    def alerts(self, **query: str) -> list[dict]:
        """``GET /api/v2/alerts`` (Alertmanager's defaults: active, silenced, inhibited, unprocessed)."""
        return self.get("/api/v2/alerts", **query)

    def log(self) -> str:
        """Alertmanager's own output so far (for failure messages)."""
        return (self.workdir / "alertmanager.log").read_text(errors="replace")

    def stop(self) -> None:
        """Terminate the process (kill after 5 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def start_alertmanager(workdir: Path, *, ready_timeout_s: float = 30.0) -> AlertmanagerServer:
    """Start Alertmanager on a free 127.0.0.1 port with state under ``workdir``; wait until ready."""
    binary = ensure_installed()
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "alertmanager.yml"
    config.write_text(CONFIG)
    last_log = ""
    for _ in range(3):  # the free port may be taken between probing and binding
        port = free_port()
        with open(workdir / "alertmanager.log", "wb") as log_file:
            process = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.path={workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--cluster.listen-address=",
                    "--log.level=warn",
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        server = AlertmanagerServer(f"http://127.0.0.1:{port}", process, workdir)
        if _wait_ready(server, ready_timeout_s):
            return server
        server.stop()
        last_log = server.log()
    raise RuntimeError(f"Alertmanager did not become ready; its log:\n{last_log[-2000:]}")


def _wait_ready(server: AlertmanagerServer, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(server.base_url + "/-/ready", timeout=1) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False
