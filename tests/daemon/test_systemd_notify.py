"""The notify protocol against a test-side datagram socket standing in for systemd."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time

import pytest

from shadowd.daemon import systemd_notify as notify
from tests.helpers import datagrams


@pytest.fixture(params=["path", "abstract"])
def systemd_socket(request, monkeypatch):
    """A bound datagram socket; NOTIFY_SOCKET points at it (filesystem or abstract '@' name)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if request.param == "path":
        d = tempfile.mkdtemp(prefix="shd-n-")
        addr = env_addr = os.path.join(d, "notify")
    else:
        name = f"shadowd-test-{os.getpid()}-{time.monotonic_ns()}"
        addr, env_addr = "\0" + name, "@" + name
    sock.bind(addr)
    sock.settimeout(0.05)
    monkeypatch.setenv("NOTIFY_SOCKET", env_addr)
    yield sock
    sock.close()


received = datagrams


def drain(sock: socket.socket) -> None:
    """Discard what is already queued."""
    sock.setblocking(False)
    try:
        while True:
            sock.recv(4096)
    except BlockingIOError:
        pass
    finally:
        sock.settimeout(0.05)


def test_ready_and_status_reach_the_socket(systemd_socket):
    assert notify.ready("listening")
    assert notify.status("ingesting\n12 steps/s")
    msgs = received(systemd_socket, 0.2)
    assert msgs == ["READY=1\nSTATUS=listening", "STATUS=ingesting 12 steps/s"]


def test_watchdog_pings_only_while_healthy(systemd_socket, monkeypatch):
    monkeypatch.setenv("WATCHDOG_USEC", "100000")  # 0.1 s -> ping every 0.05 s
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    healthy = threading.Event()
    healthy.set()
    dog = notify.Watchdog(healthy.is_set, describe=lambda: "ingest wedged").start()
    try:
        assert dog.interval_s == pytest.approx(0.05)
        first = received(systemd_socket, 0.4)
        assert first.count("WATCHDOG=1") >= 3

        healthy.clear()
        time.sleep(0.2)  # let an in-flight beat finish
        drain(systemd_socket)
        wedged = received(systemd_socket, 0.4)
        assert "WATCHDOG=1" not in wedged
        assert "STATUS=unhealthy: ingest wedged" in wedged
        assert dog.skipped >= 3

        healthy.set()
        assert "WATCHDOG=1" in received(systemd_socket, 0.3)
    finally:
        dog.stop()


def test_a_raising_health_check_counts_as_unhealthy(systemd_socket):
    def broken() -> bool:
        raise RuntimeError("scheduler gone")

    dog = notify.Watchdog(broken, interval_s=1.0)
    assert dog.beat() is False
    assert received(systemd_socket, 0.1) == []


def test_outside_systemd_everything_is_a_no_op(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    assert notify.ready() is False
    dog = notify.Watchdog(lambda: True).start()
    assert not dog.enabled
    dog.stop()


def test_watchdog_for_another_pid_is_not_ours():
    assert (
        notify.watchdog_interval_s({"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}) is None
        or os.getpid() == 1
    )
    assert notify.watchdog_interval_s({"WATCHDOG_USEC": "0"}) is None
