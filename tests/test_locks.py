"""Two runs on one store or work folder (issue 72 §3): the second waits for the first, saying so
in one line, or with --no-wait is refused in one line; never a traceback; the outputs equal a
single run's; a run killed by SIGKILL leaves no stale lock."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from bimine.cleanup import folder_lock
from bimine.cli.main import registered
from bimine.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
EN, FR = ROOT / "examples" / "sample.en", ROOT / "examples" / "sample.fr"
PAIR = ("--src-lang", "en", "--tgt-lang", "fr")
cli = registered()
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0"}


def _bimine(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bimine", *map(str, args)], stderr=subprocess.PIPE, text=True,
                            env=ENV)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _waits_then_finishes(tmp_path: Path, folder: Path, args: list) -> str:
    """Run ``args`` while this process holds ``folder``'s lock: it says it waits and does not go
    on; released, it finishes. Returns its stderr."""
    with folder_lock(folder, "test"):
        p = _bimine(*args)
        lines = []

        def read():
            lines.extend(p.stderr)

        t = threading.Thread(target=read, daemon=True)
        t.start()
        for _ in range(1200):  # until it says it waits (or ends)
            if any("in use by another bimine run" in ln for ln in lines) or p.poll() is not None:
                break
            threading.Event().wait(0.05)
        assert p.poll() is None, "".join(lines)  # still waiting while the lock is held
        assert any("waiting for it to end" in ln for ln in lines), "".join(lines)
    assert p.wait(timeout=300) == 0, "".join(lines)
    t.join(timeout=10)
    out = "".join(lines)
    assert "Traceback" not in out and out.count("in use by another bimine run") == 1, out
    return out


def test_a_store_in_use_is_waited_for_or_refused(tmp_path):
    store = tmp_path / "st.store"
    store.mkdir()
    with folder_lock(store, "test"):
        r = CliRunner().invoke(cli, ["embed", str(EN), "--lang", "en", "--store", "-o", str(store), "--no-wait"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "is in use by another bimine run" in r.output, r.output
    assert list(store.iterdir()) == []  # nothing written
    _waits_then_finishes(tmp_path, store, ["embed", EN, "--lang", "en", "--store", "-o", store, "--shard-size", 100])
    single = tmp_path / "single.store"
    assert CliRunner().invoke(cli, ["embed", str(EN), "--lang", "en", "--store", "-o", str(single),
                                    "--shard-size", "100"]).exit_code == 0
    assert _files(store) == _files(single)


def test_two_stores_built_at_once_both_succeed(tmp_path):
    """The issue's case: two ``embed --store`` at once on one folder; one ended in a traceback."""
    store = tmp_path / "st.store"
    runs = [_bimine("embed", EN, "--lang", "en", "--store", "-o", store, "--shard-size", 50) for _ in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in runs]
    assert [p.returncode for p in runs] == [0, 0] and not any("Traceback" in e for e in errs), errs
    single = tmp_path / "single.store"
    assert CliRunner().invoke(cli, ["embed", str(EN), "--lang", "en", "--store", "-o", str(single),
                                    "--shard-size", "50"]).exit_code == 0
    assert _files(store) == _files(single)


def test_a_work_folder_in_use_is_waited_for_or_refused(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    with folder_lock(wd, "test"):
        r = CliRunner().invoke(cli, ["mine", str(EN), str(FR), *PAIR, "--work-dir", str(wd), "-o",
                                     str(tmp_path / "refused.tsv"), "--no-wait"])
    assert r.exit_code == 2 and "--work-dir" not in r.output and "in use by another bimine run" in r.output, r.output
    assert not (tmp_path / "refused.tsv").exists()
    _waits_then_finishes(tmp_path, wd, ["mine", EN, FR, *PAIR, "--work-dir", wd, "-o", tmp_path / "a.tsv"])
    alone = CliRunner().invoke(cli, ["mine", str(EN), str(FR), *PAIR, "-o", str(tmp_path / "b.tsv")])
    assert alone.exit_code == 0 and (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()


def test_two_mines_on_one_work_folder_at_once(tmp_path):
    wd = tmp_path / "wd"
    runs = [_bimine("mine", EN, FR, *PAIR, "--work-dir", wd, "-o", tmp_path / f"{i}.tsv") for i in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in runs]
    assert [p.returncode for p in runs] == [0, 0] and not any("Traceback" in e for e in errs), errs
    assert (tmp_path / "0.tsv").read_bytes() == (tmp_path / "1.tsv").read_bytes()


def test_a_killed_holder_leaves_no_lock(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    code = (f"from bimine.cleanup import folder_lock\nimport time\nwith folder_lock({str(folder)!r}, 'x'):\n"
            "    print('held', flush=True)\n    time.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert p.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match="in use by another bimine run"), folder_lock(folder, "f", wait=False):
            pass
        p.kill()
        p.wait(timeout=30)
        with folder_lock(folder, "f", wait=False):  # the system let go of it with the process
            pass
    finally:
        if p.poll() is None:
            p.kill()
    assert list(folder.iterdir()) == []  # no lock file left behind
