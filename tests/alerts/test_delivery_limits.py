"""Bounds on one delivery: the backoff stays finite for any retry count, and an HTTP attempt ends
at its total deadline even when the receiver keeps the socket busy one byte at a time."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from alerts.backoff import Backoff
from alerts.sinks.base import DeliveryError
from alerts.sinks.http import post_json


@pytest.mark.parametrize("factor", [2.0, 10.0])
def test_backoff_is_capped_for_any_retry_count(factor):
    b = Backoff(initial_s=1.0, factor=factor, max_s=60.0, jitter=0.1)
    for retry in (1_025, 1_100, 10**6):
        assert 54.0 <= b.delay(retry) <= 60.0


class TricklingServer:
    """Accepts one connection, reads the request, then sends a response a byte at a time."""

    def __init__(self, byte_every_s: float, total_s: float) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.byte_every_s, self.total_s = byte_every_s, total_s
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.settimeout(self.total_s)
            conn.recv(65536)
            reply = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100_000
            deadline = time.monotonic() + self.total_s
            try:
                for i in range(len(reply)):
                    if time.monotonic() > deadline:
                        break
                    conn.sendall(reply[i : i + 1])
                    time.sleep(self.byte_every_s)
            except OSError:
                pass  # the client gave up

    def close(self) -> None:
        self.sock.close()
        self.thread.join(self.total_s + 5)


def test_http_attempt_ends_at_its_total_deadline():
    server = TricklingServer(byte_every_s=0.2, total_s=20.0)
    try:
        start = time.monotonic()
        with pytest.raises(DeliveryError) as err:
            post_json(server.url, {"a": 1}, timeout=1.0)
        elapsed = time.monotonic() - start
    finally:
        server.close()
    assert err.value.retryable
    assert elapsed < 10.0, f"attempt took {elapsed:.1f} s with a 1 s deadline (server trickled for 20 s)"
