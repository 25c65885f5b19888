"""Stopping the filter's local worker pool leaves nothing that keeps the process alive.

A worker ended while it sends its result leaves half a message in the result pipe; the pool's
manager thread waited for the rest of it for ever, and since the interpreter joins that thread
at exit, the process never ended (the test suite hung after its summary, about 1 run in 10-20 of
tests/test_corrupt_inputs.py's filter in workers). Here a worker writes that half message
itself, so the state is reached every time, and the call queue's feeder is left blocked on a
full pipe too (blocks of 1 MB queued to busy workers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import os, struct, time
from bimine.filtering.pool import LocalBlockPool

def half_message(args, filters):
    # the header of a 1 MiB result and its first 16 bytes, then nothing: as a worker ended mid-send
    writer = POOL._pool._result_queue._writer
    os.write(writer.fileno(), struct.pack("!i", 1 << 20) + b"x" * 16)
    time.sleep(600)

def busy(args, filters):
    time.sleep(600)

POOL = LocalBlockPool([], 2)
POOL.submit(half_message, None)
queued = [POOL.submit(busy, "x" * (1 << 20)) for _ in range(6)]
time.sleep(2)  # the manager thread now reads the half message, the feeder writes into a full pipe
t = time.perf_counter()
POOL.stop()
print(f"stopped in {time.perf_counter() - t:.1f} s; queued blocks cancelled or failed: "
      f"{sum(f.done() for f in queued)} of {len(queued)}", flush=True)
"""


def test_a_pool_stopped_with_half_a_result_in_its_pipe_lets_the_process_exit(tmp_path):
    script = tmp_path / "stop.py"
    script.write_text(SCRIPT)
    try:
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the process did not end within 60 s of stop(): {e.stdout!r}") from None
    assert r.returncode == 0, r.stderr
    assert "stopped in" in r.stdout and "6 of 6" in r.stdout, r.stdout
