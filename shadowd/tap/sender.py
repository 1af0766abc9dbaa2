"""Non-blocking frame sender: a zmq PUSH socket that drops and counts.

The tap runs inside vLLM's scheduling loop, so a send must never wait for the
daemon.  ``IMMEDIATE`` keeps zmq from queueing frames for a peer that is not
connected (so a stopped daemon means drops, counted, not a silent backlog);
``SNDHWM`` bounds the queue for a connected but slow daemon; ``NOBLOCK`` turns
a full queue into ``zmq.Again``, which we count as a drop.  zmq reconnects by
itself, so a restarted daemon simply starts receiving again.
"""
from __future__ import annotations

import logging
import time

import zmq

log = logging.getLogger("shadowd.tap")


class FrameSender:
    """Sends encoded frames to ``endpoint``; ``dropped`` counts what could not be sent."""

    def __init__(self, endpoint: str, *, hwm: int = 4096) -> None:
        self.endpoint = endpoint
        self.dropped = 0
        self.sent = 0
        self._last_error_log = 0.0
        self._ctx = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.PUSH)
        self._sock.setsockopt(zmq.IMMEDIATE, 1)
        self._sock.setsockopt(zmq.SNDHWM, hwm)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(endpoint)

    def send(self, data: bytes) -> bool:
        try:
            self._sock.send(data, zmq.NOBLOCK, copy=False)
        except zmq.Again:
            self.dropped += 1
            return False
        except Exception as exc:  # never raise into the engine
            self.dropped += 1
            self._log_rate_limited(f"shadowd tap: send failed ({exc}); frame dropped")
            return False
        self.sent += 1
        return True

    def close(self) -> None:
        self._sock.close(linger=0)

    def _log_rate_limited(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_error_log > 60.0:
            self._last_error_log = now
            log.warning(message)
