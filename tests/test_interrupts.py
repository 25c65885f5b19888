"""Ctrl-C is the user's way to stop a run (issue 55 §4): the whole process group gets SIGINT, as
from a terminal; the run ends at once with exit status 130 and one line, no worker prints a
``KeyboardInterrupt`` traceback, and no process or temporary is left."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.test_leftovers import _alive, start_with_workers

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads processes from /proc")


@pytest.mark.parametrize("command", ["filter", "score", "embed"])
def test_ctrl_c_ends_the_run_at_once_with_130_and_no_traceback(tmp_path, command):
    p, workers, out, tmpdir = start_with_workers(tmp_path, command, start_new_session=True)
    time.sleep(0.5)  # let them take work
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the parent and its workers get it
    t0 = time.time()
    try:
        err = p.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # leave no hung run behind the failure
        p.communicate()
        raise AssertionError("the run did not end within 60 s of Ctrl-C") from None
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


def test_ctrl_c_inside_a_compiled_extension_is_still_ctrl_c(capsys):
    """A Ctrl-C that lands while numba loads a cached kernel comes out as ``SystemError ...
    returned a result with an exception set`` with the KeyboardInterrupt in its chain (seen in
    this file's test of 'score', 1 run in many): still exit status 130 and one line, no
    traceback. A SystemError of another cause is not taken for Ctrl-C."""
    import click

    from bimine.cli.group import Interrupted, _Group

    @click.group(cls=_Group)
    def group():
        pass

    @group.command()
    def interrupted():
        try:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as e:
                raise SystemError("returned a result with an exception set") from e
        except SystemError as e:
            raise SystemError("returned a result with an exception set") from e

    @group.command()
    def broken():
        raise SystemError("a real bug")

    with pytest.raises(Interrupted) as got:
        group.main(["interrupted"], prog_name="bimine")
    assert got.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"
    with pytest.raises(SystemError, match="a real bug"):
        group.main(["broken"], prog_name="bimine")
