"""Non-blocking frame sender: a zmq PUSH socket that drops and counts.

The tap runs inside vLLM's scheduling loop, so a send must never wait for the
daemon.  ``IMMEDIATE`` keeps zmq from queueing frames for a peer that is not
connected (so a stopped daemon means drops, counted, not a silent backlog);
``SNDHWM`` bounds the queue for a connected but slow daemon; ``NOBLOCK`` turns
a full queue into ``zmq.Again``, which we count as a drop.  zmq reconnects by
itself, so a restarted daemon simply starts receiving again.

A batch of frames goes as one message (a msgpack array of frames, ``shadowd.tap.frame``):
a zmq send costs the engine thread a fixed amount of CPU whatever its size
(it wakes zmq's I/O thread), and each further part of a multipart message
adds to it, so one message per batch is what makes batching pay (the costs:
docs/benchmarks.md, tap cost, "What was optimised", measured by
``benchmarks/tap_cost.py``).  zmq's high-water mark counts messages, not
frames: it is set to ``hwm // 8`` messages.  Steps slower than the recorder's
send interval (100 ms) go one frame per message, so ``hwm // 8`` frames queue
(≥ 50 s of such steps at the default); faster steps share messages of up to
``BATCH_FRAMES`` frames, so at most ``4 * hwm`` (small, fast-step) frames
queue before the tap drops.

A close (the engine exiting) drops what is still queued, and zmq also loses what the daemon's
socket had read but not yet queued for the daemon: the last steps of a run can go uncounted.
The demo therefore waits for the daemon to observe every step before it stops the engine, and
tests that count frames close their socket only once they are counted
(``tests/helpers.py``, ``Pusher.close_when``).
"""

from __future__ import annotations

import zmq

from shadowd.tap.fault_log import FaultLog

BATCH_FRAMES = 32  # the recorder's largest batch (shadowd.tap.recorder.BATCH_FRAMES)


class FrameSender:
    """Sends encoded frames to ``endpoint``; ``dropped`` counts frames that could not be sent."""

    def __init__(self, endpoint: str, *, hwm: int = 4096) -> None:
        self.endpoint = endpoint
        self.dropped = 0
        self.sent = 0
        self._faults = FaultLog()
        self._ctx = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.PUSH)
        self._sock.setsockopt(zmq.IMMEDIATE, 1)
        self._sock.setsockopt(zmq.SNDHWM, max(1, hwm // 8))
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(endpoint)

    def send(self, data: bytes, frames: int = 1) -> bool:
        """Send one message holding ``frames`` frames; never blocks or raises."""
        n = frames
        try:
            self._sock.send(data, zmq.NOBLOCK, copy=True)
        except zmq.Again:
            self.dropped += n
            return False
        except Exception as exc:  # never raise into the engine
            self.dropped += n
            self._faults.warn("shadowd tap: send failed (%s); %d frame(s) dropped", exc, n)
            return False
        self.sent += n
        return True

    def close(self) -> None:
        self._sock.close(linger=0)
