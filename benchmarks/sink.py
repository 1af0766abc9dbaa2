"""A zmq PULL socket that receives, counts and discards frames, in its own process.

The tap-cost benchmark sends to it so that the tap's ``send`` does what it does
in production (a connected peer, frames actually leave), without a daemon's
decoding and storing competing for the benchmark's cores.
"""

from __future__ import annotations

import signal
import sys

import msgspec
import zmq

from shadowd.tap.frame import is_batch


def main(endpoint: str) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.setsockopt(zmq.RCVHWM, 100_000)
    sock.bind(endpoint)
    stop = False

    def _stop(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    print("ready", flush=True)
    n = 0
    while not stop:
        if sock.poll(100):
            while True:
                try:
                    msg = sock.recv(zmq.NOBLOCK, copy=False).buffer
                except zmq.Again:
                    break
                n += len(msgspec.msgpack.decode(msg, type=list[msgspec.Raw])) if is_batch(msg) else 1
    print(n, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
