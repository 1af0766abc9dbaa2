"""The governor's status file is written by a thread of its own: the engine thread only hands a
snapshot over, the newest snapshot wins, shutdown writes what is waiting, a failed write is
counted and never raised, and the writer ends with the governor."""

from __future__ import annotations

import gc
import json
import threading
import time

from shadowd.govern.status_file import StatusFile


def _wait(predicate, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_the_engine_thread_hands_over_and_the_writer_writes_the_newest(tmp_path):
    path = tmp_path / "governor.json"
    sf = StatusFile(str(path), interval_s=0.2)
    writers: list[str] = []
    write = sf.write

    def recording(status):
        writers.append(threading.current_thread().name)
        write(status)

    sf.write = recording
    with sf._lock:  # the writer cannot look until both are handed over: coalesced
        sf.publish({"steps_charged": {"vtc": 1}})
        sf.publish({"steps_charged": {"vtc": 2}})
        assert not path.exists()  # publish wrote nothing itself
    # ``writes`` counts once the file is in place: wait for it, not for the file (on a loaded
    # machine the test can read between the two).
    assert _wait(lambda: sf.writes == 1)
    assert json.loads(path.read_text())["steps_charged"] == {"vtc": 2}
    assert writers == ["shadowd-governor-status"] and sf.writes == 1
    sf.publish({"steps_charged": {"vtc": 3}})
    writer = sf._writer
    sf.close()  # shutdown: what is waiting is written now, in the caller's thread
    assert json.loads(path.read_text())["steps_charged"] == {"vtc": 3}
    assert sf.writes == 2 and writer is not None and not writer.is_alive()


def test_a_failed_write_is_counted_not_raised(tmp_path):
    sf = StatusFile(str(tmp_path / "gone" / "governor.json"), background=False)
    sf.publish({"errors": 0})
    sf.publish({"errors": 0})
    assert sf.write_errors == 2 and sf.writes == 0


def test_the_writer_ends_with_its_governor(tmp_path):
    sf = StatusFile(str(tmp_path / "governor.json"), interval_s=0.0)
    sf.publish({"errors": 0})
    writer = sf._writer
    assert writer is not None and writer.is_alive()
    del sf
    gc.collect()
    writer.join(timeout=5.0)
    assert not writer.is_alive()
