"""Nothing left behind (issue 41): worker processes end with their parent however it dies, and
every command sweeps the temporaries of runs killed by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def _children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid``."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = _stat(int(d))
        if st is not None and st[1] == pid and st[0] != "Z":
            out.append(int(d))
    return out


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] != "Z"


def _env(tmpdir: Path) -> dict:
    return {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0"}


def _pairs(tmp_path: Path, n: int) -> tuple[Path, Path]:
    en, fr = tmp_path / "big.en", tmp_path / "big.fr"
    en.write_text("".join(f"The {i} cats sleep on the mat number {i * 7 % 1000}.\n" for i in range(n)))
    fr.write_text("".join(f"Les {i} chats dorment sur le tapis numéro {i * 7 % 1000}.\n" for i in range(n)))
    return en, fr


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def ctrl_c_default() -> None:
    """A child's SIGINT as a terminal gives it (``preexec_fn``): a test run started in the background
    of a non-interactive shell (``cmd &``, nohup) has SIGINT ignored, a child inherits that, and
    Python then never turns Ctrl-C into KeyboardInterrupt: the tests of Ctrl-C must not depend on
    how pytest was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_with_workers(tmp_path: Path, command: str, **popen) -> tuple[subprocess.Popen, list[int], Path, Path]:
    """Start ``bimine COMMAND`` (filter, score or embed) on 40,000 lines with two worker
    processes, TMPDIR a fresh folder; return once its workers run: (the process, the workers'
    ids, its output path, TMPDIR). ``popen``: more arguments of :class:`subprocess.Popen`."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    en, fr = _pairs(tmp_path, 40_000)
    out = tmp_path / "out" / ("x.npy" if command == "embed" else "x.tsv")
    out.parent.mkdir()
    if command == "embed":
        args = ["embed", str(en), "--lang", "en", "-o", str(out), "--workers", "2", "--batch-size", "256"]
    else:
        tsv = tmp_path / "big.tsv"
        if command == "score":
            tsv.write_text("".join(f"{a}\t{b}\n" for a, b in zip(en.read_text().splitlines(),
                                                                  fr.read_text().splitlines())))
            args = ["score", str(tsv)]
        else:
            args = ["filter", "--src", str(en), "--tgt", str(fr)]
        args += ["--src-lang", "en", "--tgt-lang", "fr", "-o", str(out), "--workers", "2", "--block-size", "400"]
    p = subprocess.Popen([sys.executable, "-m", "bimine", *args], env=_env(tmpdir), preexec_fn=ctrl_c_default,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **popen)
    workers: list[int] = []
    deadline = time.time() + 120
    while len(workers) < 2 and p.poll() is None and time.time() < deadline:
        workers = _children(p.pid)
        time.sleep(0.02)
    assert p.poll() is None and workers, "the run ended before its workers could be seen: " + p.stderr.read()
    return p, workers, out, tmpdir


@pytest.mark.parametrize("command", ["filter", "score", "embed"])
def test_kill9_ends_the_workers_and_the_next_run_sweeps_its_temporaries(tmp_path, command):
    p, workers, out, tmpdir = start_with_workers(tmp_path, command)
    time.sleep(0.3)  # let them take work
    p.send_signal(signal.SIGKILL)
    p.wait()
    p.stderr.close()
    deadline = time.time() + 15
    while any(_alive(w) for w in workers) and time.time() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)], "worker processes outlived their killed parent"
    left = [f for f in out.parent.iterdir() if "tmp" in f.name]
    assert left, "the killed run left nothing to sweep: the test no longer tests the sweep"
    assert not out.exists()
    # the next run of the same command removes them (a small input)
    small = tmp_path / "small"
    small.mkdir()
    (small / "a.en").write_text("The cat sleeps.\nA dog barks.\n")
    (small / "a.fr").write_text("Le chat dort.\nUn chien aboie.\n")
    (small / "a.tsv").write_text("The cat sleeps.\tLe chat dort.\n")
    again = {"embed": ["embed", str(small / "a.en"), "--lang", "en", "-o", str(out)],
             "score": ["score", str(small / "a.tsv"), "--src-lang", "en", "--tgt-lang", "fr", "-o", str(out)],
             "filter": ["filter", "--src", str(small / "a.en"), "--tgt", str(small / "a.fr"), "--src-lang", "en",
                        "--tgt-lang", "fr", "-o", str(out)]}[command]
    r = subprocess.run([sys.executable, "-m", "bimine", *again], env=_env(tmpdir), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(f.name for f in out.parent.iterdir()) == [out.name]
    assert not list(tmpdir.iterdir())


COMMANDS = {
    "embed": lambda o: ["embed", EXAMPLES / "doc.en", "--lang", "en", "-o", o / "out.npy"],
    "mine": lambda o: ["mine", EXAMPLES / "doc.en", EXAMPLES / "doc.fr", "--src-lang", "en", "--tgt-lang", "fr",
                       "-o", o / "out.tsv"],
    "filter": lambda o: ["filter", "--src", EXAMPLES / "sample.en", "--tgt", EXAMPLES / "sample.fr", "--src-lang", "en",
                         "--tgt-lang", "fr", "-o", o / "out.tsv"],
    "score": lambda o: ["score", EXAMPLES / "dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-o",
                        o / "out.tsv"],
    "divergence": lambda o: ["divergence", EXAMPLES / "dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr",
                             "-o", o / "out.tsv"],
    "select": lambda o: ["select", EXAMPLES / "dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr",
                         "-o", o / "out.tsv"],
    "align": lambda o: ["align", EXAMPLES / "doc.en", EXAMPLES / "doc.fr", "--src-lang", "en", "--tgt-lang", "fr",
                        "-o", o / "out.tsv"],
    "docs match": lambda o: ["docs", "match", EXAMPLES / "docs.en.jsonl", EXAMPLES / "docs.fr.jsonl",
                             "--src-lang", "en", "--tgt-lang", "fr", "-o", o / "out.tsv"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_sweeps_what_killed_runs_left(tmp_path, command):
    """A run killed by SIGKILL cannot clean up; the next run of any command removes its leftovers
    (beside the output and in TMPDIR), and keeps those of runs still alive."""
    tmpdir, out = tmp_path / "tmp", tmp_path / "out"
    tmpdir.mkdir()
    out.mkdir()
    dead, live = _dead_pid(), os.getppid()
    args = [str(a) for a in COMMANDS[command](out)]
    name = Path(args[args.index("-o") + 1]).name
    stale = [out / f"{name}.tmp-{dead}", out / f"bimine-filter-tmp-{dead}-ab12",
             tmpdir / f"bimine-docs-tmp-{dead}-xy", tmpdir / f"bimine-mine-tmp-{dead}-zz"]
    kept = [out / f"{name}.tmp-{live}", tmpdir / f"bimine-filter-tmp-{live}-cd34", out / "notes.tmp-1"]
    for f in stale + kept:
        if "bimine-" in f.name:
            f.mkdir()
            (f / "rows.tsv").write_text("half")
        else:
            f.write_text("half-written")
    r = subprocess.run([sys.executable, "-m", "bimine", *args], env=_env(tmpdir), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [f for f in stale if f.exists()] == []
    assert [f for f in kept if not f.exists()] == []


@pytest.mark.parametrize("bad", [b"fine\n\xff\xfe broken\n", b"fine\nnul \x00 byte\n"])
def test_embed_store_on_bad_input_creates_nothing(tmp_path, bad):
    src = tmp_path / "bad.en"
    src.write_bytes(bad)
    store = tmp_path / "X.store"
    r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(src), "--lang", "en", "--store", "-o",
                        str(store)], env=_env(tmp_path), capture_output=True, text=True)
    assert r.returncode != 0 and r.stderr.startswith("error: ") and "bad.en:2" in r.stderr
    assert not store.exists()  # no progress.json (nor folder) left to make the next run think it resumes
