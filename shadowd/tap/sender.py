"""Non-blocking frame sender: a zmq PUSH socket that drops and counts.

The tap runs inside vLLM's scheduling loop, so a send must never wait for the
daemon.  ``IMMEDIATE`` keeps zmq from queueing frames for a peer that is not
connected (so a stopped daemon means drops, counted, not a silent backlog);
``SNDHWM`` bounds the queue for a connected but slow daemon; ``NOBLOCK`` turns
a full queue into ``zmq.Again``, which we count as a drop.  zmq reconnects by
itself, so a restarted daemon simply starts receiving again.

A batch of frames goes as one multipart message, one frame per part: zmq
passes it on whole or not at all, the daemon's receiver reads each part as a
frame, and the engine pays one send (one wake-up of zmq's I/O thread) per
batch instead of per frame.  zmq's high-water mark counts messages, so it is
set to ``hwm // BATCH_FRAMES`` messages to keep about ``hwm`` frames queued at most.
"""
from __future__ import annotations

import logging
import time

import zmq

log = logging.getLogger("shadowd.tap")
BATCH_FRAMES = 64          # the recorder's largest batch (shadowd.tap.recorder.BATCH_FRAMES)


class FrameSender:
    """Sends encoded frames to ``endpoint``; ``dropped`` counts frames that could not be sent."""

    def __init__(self, endpoint: str, *, hwm: int = 4096, batch_frames: int = BATCH_FRAMES) -> None:
        self.endpoint = endpoint
        self.dropped = 0
        self.sent = 0
        self._last_error_log = 0.0
        self._ctx = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.PUSH)
        self._sock.setsockopt(zmq.IMMEDIATE, 1)
        self._sock.setsockopt(zmq.SNDHWM, max(1, hwm // max(1, batch_frames)))
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(endpoint)

    def send(self, data: bytes | list[bytes]) -> bool:
        """Send one frame, or a list of frames as one message; never blocks or raises."""
        batch = isinstance(data, list)
        n = len(data) if batch else 1
        try:
            if batch:
                self._sock.send_multipart(data, zmq.NOBLOCK, copy=True)
            else:
                self._sock.send(data, zmq.NOBLOCK, copy=True)
        except zmq.Again:
            self.dropped += n
            return False
        except Exception as exc:  # never raise into the engine
            self.dropped += n
            self._log_rate_limited(f"shadowd tap: send failed ({exc}); {n} frame(s) dropped")
            return False
        self.sent += n
        return True

    def close(self) -> None:
        self._sock.close(linger=0)

    def _log_rate_limited(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_error_log > 60.0:
            self._last_error_log = now
            log.warning(message)
