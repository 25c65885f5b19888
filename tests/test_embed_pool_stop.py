"""Stopping the embedder's worker pool mid-run ends at once, whatever state a worker is in.

``bimine embed --workers 2`` hung after Ctrl-C, about 1 run in 20 under load: a worker was
sending a result bigger than the pipe's buffer (holding the result queue's lock) when the run
stopped, and ``multiprocessing.Pool.terminate`` waits for that lock before it ends the workers.
Here a worker reaches that state every time: it takes the lock, writes the header of a 1 MiB
result and its first 16 bytes, and stops."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import os, struct, sys, time
import numpy as np
from bimine.embed import _encode_in_pool

def result_queue():
    # the worker's result queue, from the frame of the pool's worker loop that called us
    f = sys._getframe()
    while f is not None:
        for name in ("outqueue", "result_queue"):
            if name in f.f_locals and hasattr(f.f_locals[name], "_writer"):
                return f.f_locals[name]
        f = f.f_back
    raise RuntimeError("no result queue in the worker's frames")

class Stuck:
    dim = 4
    def encode(self, batch, lang):
        if batch[0] == "stuck":  # as a worker stopped halfway through sending a big result
            while not os.path.exists(FLAG):  # not before the first batch's result is through
                time.sleep(0.01)
            q = result_queue()
            if getattr(q, "_wlock", None) is not None:
                q._wlock.acquire()
            os.write(q._writer.fileno(), struct.pack("!i", 1 << 20) + b"x" * 16)
            time.sleep(600)
        return np.ones((len(batch), self.dim), dtype=np.float32)

FLAG = sys.argv[1]
it = _encode_in_pool(Stuck(), iter([["fine"], ["stuck"]] + [["fine"]] * 10), "en", 2)
first = next(it)
open(FLAG, "w").close()
print("first batch through", flush=True)
time.sleep(2)  # the stuck worker is now halfway through its result
t = time.perf_counter()
it.close()  # what Ctrl-C or an error in the consumer does to the generator
print(f"stopped in {time.perf_counter() - t:.1f} s; first batch {first.shape}", flush=True)
"""


def test_an_embed_pool_stopped_while_a_worker_is_halfway_through_a_result_ends(tmp_path):
    script = tmp_path / "stop.py"
    script.write_text(SCRIPT)
    log = tmp_path / "stdout.txt"
    with open(log, "w") as out:
        try:
            r = subprocess.run([sys.executable, str(script), str(tmp_path / "first-batch-done")], stdout=out,
                               stderr=subprocess.PIPE, text=True, timeout=60,
                               env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the process did not end within 60 s; it printed {log.read_text()!r}") from None
    stdout = log.read_text()
    assert r.returncode == 0, r.stderr
    assert "first batch through" in stdout and "stopped in" in stdout and "first batch (1, 4)" in stdout, stdout
    took = float(stdout.split("stopped in ")[1].split(" s")[0])
    assert took < 10, f"stopping the pool took {took} s"
