"""Inputs that cannot be read twice (issue 72 §2): stdin (``-``, ``/dev/stdin``), a FIFO, and
bash's process substitution ``<(...)`` (a ``/dev/fd/N`` pipe). Every command reads its inputs
more than once (checks, language sample, checksum, then the work); a second read of a pipe
found nothing, so ``embed /dev/stdin`` wrote 0 rows with exit status 0 and ``filter --src
<(...)`` kept "0 of 0". Now such an input is read once into a copy (bimine.streams), and
each command's output equals its output on the regular file.

In-process, a pipe's read end is passed as ``/dev/fd/N`` (what bash's ``<(...)`` passes), a FIFO
is made with ``mkfifo``, and ``-`` reads the runner's stdin; real ``/dev/stdin`` and ``<(...)``
run as subprocesses through bash.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bimine import streams as spool
from bimine.cli.main import registered
from bimine.text.io import read_lines, scan_text

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
EN, FR, TSV = EX / "sample.en", EX / "sample.fr", EX / "dev.en-fr.tsv"
cli = registered()


@contextlib.contextmanager
def stream(data: bytes, kind: str, tmp_path: Path, name: str = "in"):
    """A path whose bytes are ``data`` and can be read only once: ``pipe`` (a pipe's read end as
    ``/dev/fd/N``, as bash's ``<(...)``) or ``fifo`` (a named pipe). A thread writes the bytes."""
    if kind == "pipe":
        r, w = os.pipe()
        path, writer_path = f"/dev/fd/{r}", None
    else:
        path = str(tmp_path / f"{name}.fifo")
        os.mkfifo(path)
        writer_path = path

    def feed():
        try:
            with (os.fdopen(w, "wb") if writer_path is None else open(writer_path, "wb")) as f:
                f.write(data)
        except OSError:  # the reader stopped: nothing more to give
            pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        yield path
    finally:
        if kind == "pipe":
            os.close(r)
        else:
            with contextlib.suppress(OSError):  # release a writer still waiting for a reader
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        t.join(timeout=10)


def _run(args: list, stdin: bytes | None = None) -> str:
    r = CliRunner().invoke(cli, [str(a) for a in args], input=stdin)
    assert r.exit_code == 0, (args, r.output, r.exception)
    return r.output


def _cut(path: Path, column: int, lines: int | None = None) -> bytes:
    rows = path.read_text(encoding="utf-8").splitlines()[:lines]
    return "".join(r.split("\t")[column - 1] + "\n" for r in rows).encode()


# command -> (arguments with {0}, {1} for its one or two inputs, the inputs' bytes, output files)
SMALL = b"".join(line + b"\n" for line in TSV.read_bytes().splitlines()[:120])
COMMANDS = {
    "embed": (["embed", "{0}", "--lang", "en", "-o", "{out}/o.npy", "--no-progress"], [EN.read_bytes()], ["o.npy"]),
    "mine": (["mine", "{0}", "{1}", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}/p.tsv", "--no-progress"],
             [EN.read_bytes(), FR.read_bytes()], ["p.tsv"]),
    "filter": (["filter", "--src", "{0}", "--tgt", "{1}", "--src-lang", "en", "--tgt-lang", "fr", "-o",
                "{out}/f.tsv", "--kept", "{out}/k.tsv", "--no-progress"], [_cut(TSV, 1), _cut(TSV, 2)],
               ["f.tsv", "k.tsv"]),
    "score": (["score", "{0}", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}/s.tsv", "--no-progress"],
              [TSV.read_bytes()], ["s.tsv"]),
    "divergence": (["divergence", "{0}", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}/d.tsv",
                    "--no-progress"], [SMALL], ["d.tsv"]),
    "select": (["select", "{0}", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}/s.tsv", "--no-progress"],
               [SMALL], ["s.tsv"]),
    "align": (["align", "{0}", "{1}", "-o", "{out}/a.txt"], [(EX / "doc.en").read_bytes(),
                                                             (EX / "doc.fr").read_bytes()], ["a.txt"]),
    "docs match": (["docs", "match", "{0}", "{1}", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}/m.tsv",
                    "--no-progress"], [(EX / "docs.en.jsonl").read_bytes(), (EX / "docs.fr.jsonl").read_bytes()],
                   ["m.tsv"]),
    "eval retrieval": (["eval", "retrieval", "{0}", "{1}", "--src-lang", "en", "--tgt-lang", "fr"],
                       [_cut(TSV, 1), _cut(TSV, 2)], []),
}


def _args(spec: list[str], inputs: list[str], out: Path) -> list[str]:
    return [a.format(*inputs, out=out) for a in spec]


def _outputs(out: Path, files: list[str], printed: str) -> dict[str, bytes]:
    got = {f: (out / f).read_bytes() for f in files}
    if not files:  # eval retrieval prints its table
        got["stdout"] = "\n".join(ln for ln in printed.splitlines() if ln.startswith(("model", "default"))).encode()
    return got


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_reads_a_pipe_a_fifo_and_stdin_once(tmp_path, command):
    spec, data, files = COMMANDS[command]
    ref_out = tmp_path / "ref"
    ref_out.mkdir()
    given = []
    for i, d in enumerate(data):
        given.append(tmp_path / f"input{i}")
        given[-1].write_bytes(d)
    want = _outputs(ref_out, files, _run(_args(spec, [str(g) for g in given], ref_out)))
    assert all(want.values()), want
    for kind in ("pipe", "fifo", "stdin"):
        out = tmp_path / kind
        out.mkdir()
        with contextlib.ExitStack() as stack:
            # stdin: the first input is '-', the second (if any) a pipe
            paths = ["-" if kind == "stdin" and i == 0 else
                     stack.enter_context(stream(d, "pipe" if kind == "stdin" else kind, tmp_path, f"{kind}{i}"))
                     for i, d in enumerate(data)]
            printed = _run(_args(spec, paths, out), stdin=data[0] if kind == "stdin" else None)
        assert _outputs(out, files, printed) == want, (command, kind)
    assert not spool.spooled(), "the copies outlived the command"


def test_bimine_run_reads_its_job_and_its_input_from_streams(tmp_path):
    ref = tmp_path / "ref.tsv"
    _run(["filter", TSV, "--src-lang", "en", "--tgt-lang", "fr", "-o", ref, "--no-progress"])
    job = f"job: filter\nsrc_lang: en\ntgt_lang: fr\noutput: {tmp_path / 'run.tsv'}\nprogress: false\n"
    with stream(TSV.read_bytes(), "fifo", tmp_path) as fifo:
        _run(["run", "-", "--set", f"input={fifo}"], stdin=job.encode())
    assert (tmp_path / "run.tsv").read_bytes() == ref.read_bytes()


def test_train_classifier_trains_on_every_pair_of_a_pipe(tmp_path):
    """The issue's case: 765 pairs instead of 777 from ``<(cat train.tsv)``."""
    meta = {}
    for kind in ("file", "pipe"):
        with contextlib.ExitStack() as stack:
            src = str(EX / "train.en-fr.tsv") if kind == "file" else \
                stack.enter_context(stream((EX / "train.en-fr.tsv").read_bytes(), "pipe", tmp_path))
            _run(["train-classifier", "fc", src, "--src-lang", "en", "--tgt-lang", "fr", "-o",
                  tmp_path / f"{kind}.safetensors", "--epochs", "1", "--min-dev-auc", "0", "--no-progress"])
        with open(tmp_path / f"{kind}.safetensors", "rb") as f:
            head = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        meta[kind] = {k: v for k, v in json.loads(next(iter(head["__metadata__"].values()))).items()
                      if "seconds" not in k}
    assert meta["pipe"] == meta["file"] and meta["file"]["train_pairs"] == 977 - 500  # all but the dev pairs


def _bash(script: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0"}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, **kw)


def test_dev_stdin_and_process_substitution_in_a_shell(tmp_path):
    """The issue's own commands, through bash: every row comes through, and no copy is left."""
    bimine = f"{sys.executable} -m bimine"
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    r = _bash(f"export TMPDIR={tmp}; cat {EN} | {bimine} embed /dev/stdin --lang en -o {tmp_path}/o.npy && "
              f"{bimine} embed {EN} --lang en -o {tmp_path}/ref.npy && "
              f"{bimine} filter --src <(cut -f1 {TSV}) --tgt <(cut -f2 {TSV}) --src-lang en --tgt-lang fr "
              f"-o {tmp_path}/f.tsv && {bimine} mine <(cat {EN}) {FR} --src-lang en --tgt-lang fr -o {tmp_path}/p.tsv")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), np.load(tmp_path / "ref.npy"))
    assert np.load(tmp_path / "o.npy").shape == (360, 384)
    assert "kept 289 of 300 pairs" in r.stderr
    assert len((tmp_path / "p.tsv").read_text(encoding="utf-8").splitlines()) > 250
    assert os.listdir(tmp) == [], "a copy of a stream was left in TMPDIR"


def test_a_stream_stopped_by_sigterm_leaves_no_copy(tmp_path):
    """A run stopped while it waits on its stream removes the copy it was making."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    r, w = os.pipe()
    os.write(w, b"one line\n")  # and more to come: the write end stays open
    p = subprocess.Popen([sys.executable, "-m", "bimine", "embed", "-", "--lang", "en", "-o", tmp_path / "x.npy"],
                         stdin=r, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "BIMINE_PROGRESS": "0"})
    os.close(r)
    try:
        for _ in range(1200):  # wait until the copy has begun (its folder exists)
            if glob.glob(str(tmp / "bimine-spool-tmp-*")):
                break
            threading.Event().wait(0.05)
        assert glob.glob(str(tmp / "bimine-spool-tmp-*")), "no copy was started"
        p.terminate()
        assert p.wait(timeout=60) == 143, p.stderr.read()
    finally:
        os.close(w)
        if p.poll() is None:
            p.kill()
    assert os.listdir(tmp) == [] and not (tmp_path / "x.npy").exists()


def test_a_stream_is_copied_once_per_job_and_known_by_what_it_opens(tmp_path, monkeypatch):
    """``-`` and ``/dev/stdin`` name one stream; the readers see every line; a FIFO given again
    in a later job of the same process is read again, not served from the first job's copy."""
    with spool.one_read():
        with stream(b"a\nb\nc\n", "fifo", tmp_path) as fifo:
            assert scan_text(fifo).lines == 3
            assert list(read_lines(fifo)) == ["a", "b", "c"]
            assert len(spool.spooled()) == 1
    assert not spool.spooled()
    with spool.one_read():
        with stream(b"second job\n", "fifo", tmp_path, "again") as fifo:
            assert list(read_lines(fifo)) == ["second job"]
    with spool.one_read(), tempfile.TemporaryFile() as f:
        f.write(b"x\ny\n")
        f.seek(0)
        r, w = os.pipe()
        os.write(w, b"from a pipe\n")
        os.close(w)
        monkeypatch.setattr(sys, "stdin", os.fdopen(r, "r"))
        assert list(read_lines("-")) == ["from a pipe"]
        assert list(read_lines(f"/dev/fd/{r}")) == ["from a pipe"]  # the same stream: its one copy
        assert len(spool.spooled()) == 1
    assert spool.reads_once("-") and not spool.reads_once(EN) and not spool.reads_once(tmp_path / "missing")
