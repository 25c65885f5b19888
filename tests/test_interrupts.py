"""Ctrl-C is the user's way to stop a run (issue 55 §4): the whole process group gets SIGINT, as
from a terminal; the run ends at once with exit status 130 and one line, no worker prints a
``KeyboardInterrupt`` traceback, and no process or temporary is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.test_leftovers import _alive, _children, _env, _pairs

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads processes from /proc")


@pytest.mark.parametrize("command", ["filter", "score", "embed"])
def test_ctrl_c_ends_the_run_at_once_with_130_and_no_traceback(tmp_path, command):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    en, fr = _pairs(tmp_path, 40_000)
    out = tmp_path / "out" / ("x.npy" if command == "embed" else "x.tsv")
    out.parent.mkdir()
    if command == "embed":
        args = ["embed", str(en), "--lang", "en", "-o", str(out), "--batch-size", "256"]
    else:
        args = [command, "--src", str(en), "--tgt", str(fr), "--src-lang", "en", "--tgt-lang", "fr", "-o", str(out),
                "--block-size", "400"]
    p = subprocess.Popen([sys.executable, "-m", "bimine", *args, "--workers", "2"], env=_env(tmpdir),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers: list[int] = []
    deadline = time.time() + 120
    while len(workers) < 2 and p.poll() is None and time.time() < deadline:
        workers = _children(p.pid)
        time.sleep(0.02)
    assert p.poll() is None and workers, "the run ended before its workers could be seen: " + p.stderr.read()
    time.sleep(0.5)  # let them take work
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the parent and its workers get it
    t0 = time.time()
    err = p.communicate(timeout=60)[1]
    took = time.time() - t0
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == "interrupted"
    assert took < 10, f"the run took {took:.1f} s to stop after Ctrl-C"
    deadline = time.time() + 10
    while any(_alive(w) for w in workers) and time.time() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)], "worker processes outlived the interrupted run"
    assert not list(out.parent.iterdir()), "the interrupted run left files beside its output"
    assert not list(tmpdir.iterdir()), "the interrupted run left temporaries in TMPDIR"
