"""An output never replaces what the user points at (issue 55 §1): a character device or a FIFO
given as an output is written as a stream and stays what it was, a symbolic link is written
through to its target and kept, ``-`` and ``/dev/stdout`` are standard output, and what cannot be
written that way (a block device, a socket, a device without write permission) is a one-line error
before any work. Device nodes are made with ``mknod`` in a scratch folder (never the real
``/dev/null``); those tests skip where ``mknod`` is not allowed."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.outputs import atomic_path, check_output_dir, check_output_file, output_target

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _node(path: Path, kind: int, major: int, minor: int) -> Path:
    try:
        os.mknod(path, 0o666 | kind, os.makedev(major, minor))
    except (PermissionError, OSError) as e:
        pytest.skip(f"mknod is not allowed here ({e})")
    return path


@pytest.fixture
def null_dev(tmp_path) -> Path:
    """A character device that discards what is written: a copy of /dev/null's node."""
    return _node(tmp_path / "null", stat.S_IFCHR, 1, 3)


@pytest.fixture
def full_dev(tmp_path) -> Path:
    """A character device that refuses every byte: a copy of /dev/full's node."""
    return _node(tmp_path / "full", stat.S_IFCHR, 1, 7)


class FifoReader:
    """Reads a FIFO to its end in a thread (a writer's open() blocks until a reader is there)."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path, self.data = path, b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as f:
            self.data = f.read()

    def join(self) -> bytes:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "nothing was written to the FIFO"
        return self.data


def _bimine(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bimine", *map(str, args)], capture_output=True, timeout=300, **kw)


def _is_char_device(p: Path) -> bool:
    return stat.S_ISCHR(os.lstat(p).st_mode)


# ---------------------------------------------------------------- where a path leads


def test_output_target_kinds(tmp_path):
    (tmp_path / "real.tsv").write_text("x\n")
    os.symlink("real.tsv", tmp_path / "link.tsv")
    os.symlink("later.tsv", tmp_path / "dangling.tsv")
    os.mkfifo(tmp_path / "fifo")
    assert output_target(tmp_path / "new.tsv") == output_target(str(tmp_path / "new.tsv"))
    assert output_target(tmp_path / "new.tsv").kind == "file"
    assert output_target(tmp_path / "link.tsv").path == str((tmp_path / "real.tsv").resolve())
    assert output_target(tmp_path / "dangling.tsv").path == str((tmp_path / "later.tsv").resolve())
    assert output_target(tmp_path / "fifo").kind == "stream"
    for p in ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):
        t = output_target(p)
        assert (t.kind, t.fd) == ("fd", 1), p
    assert output_target("/dev/stderr").fd == 2
    os.symlink("/dev/stdout", tmp_path / "out-link")
    assert output_target(tmp_path / "out-link").fd == 1


def test_a_link_loop_is_a_config_error(tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(ConfigError, match="symbolic links"):
        output_target(tmp_path / "a")


# ---------------------------------------------------------------- atomic_path


def test_atomic_path_writes_through_a_symlink_and_keeps_it(tmp_path):
    target = tmp_path / "data" / "pairs.tsv"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "pairs.tsv"
    os.symlink(target, link)
    with atomic_path(link) as tmp:
        assert Path(tmp).parent == target.parent  # the temporary lies beside the target
        Path(tmp).write_text("new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["pairs.tsv"]


def test_atomic_path_into_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "out.tsv"
    os.symlink("made.tsv", link)
    with atomic_path(link) as tmp:
        Path(tmp).write_text("x\n")
    assert link.is_symlink() and (tmp_path / "made.tsv").read_text() == "x\n"


def test_atomic_path_streams_into_a_fifo(tmp_path):
    reader = FifoReader(tmp_path / "fifo")
    with atomic_path(tmp_path / "fifo") as tmp:
        Path(tmp).write_bytes(b"a\tb\n" * 1000)
    assert reader.join() == b"a\tb\n" * 1000
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert not os.path.exists(tmp)  # the spool in TMPDIR is gone


def test_atomic_path_keeps_a_device(null_dev):
    with atomic_path(null_dev) as tmp:
        Path(tmp).write_text("x\n")
    assert _is_char_device(null_dev)
    assert not os.path.exists(tmp)


def test_a_device_that_refuses_the_bytes_is_a_config_error(full_dev):
    with pytest.raises(ConfigError, match="No space left"):
        with atomic_path(full_dev) as tmp:
            Path(tmp).write_text("x\n")
    assert _is_char_device(full_dev)
    assert not os.path.exists(tmp)


def test_atomic_path_to_stdout(capfd):
    with atomic_path("-") as tmp:
        Path(tmp).write_text("one\ntwo\n")
    assert capfd.readouterr().out == "one\ntwo\n"


def test_a_failed_write_leaves_the_stream_alone(tmp_path, null_dev):
    with pytest.raises(RuntimeError):
        with atomic_path(null_dev) as tmp:
            Path(tmp).write_text("x\n")
            raise RuntimeError("the job failed")
    assert _is_char_device(null_dev) and not os.path.exists(tmp)


# ---------------------------------------------------------------- checks before any work


def test_what_cannot_be_written_is_refused_before_work(tmp_path):
    sock_path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock_path))
    try:
        with pytest.raises(ConfigError, match="socket"):
            check_output_file(sock_path)
    finally:
        s.close()
    os.mkfifo(tmp_path / "fifo")
    check_output_file(tmp_path / "fifo")  # a stream: fine
    check_output_file("-")
    with pytest.raises(ConfigError, match="FIFO, not a folder"):
        check_output_dir(tmp_path / "fifo")
    with pytest.raises(ConfigError, match="stream"):
        check_output_dir("-")


def test_a_block_device_is_refused(tmp_path):
    dev = _node(tmp_path / "loop", stat.S_IFBLK, 7, 0)
    with pytest.raises(ConfigError, match="block device"):
        check_output_file(dev)


def test_an_unwritable_device_is_refused(tmp_path, null_dev):
    if os.geteuid() == 0:
        pytest.skip("root may write to any device")
    os.chmod(null_dev, 0o444)
    with pytest.raises(ConfigError, match="permission"):
        check_output_file(null_dev)


def test_a_link_to_an_input_is_still_the_input(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("a\n")
    os.symlink(src, tmp_path / "out.txt")
    with pytest.raises(ConfigError, match="is the input"):
        check_output_file(tmp_path / "out.txt", inputs=(src,))


# ---------------------------------------------------------------- through the commands

MINE = ("mine", EXAMPLES / "sample.en", EXAMPLES / "sample.fr", "--src-lang", "en", "--tgt-lang", "fr")


def test_mine_into_a_device_and_a_symlink_and_stdout(tmp_path, null_dev):
    r = _bimine(*MINE, "-o", null_dev)
    assert r.returncode == 0, r.stderr
    assert _is_char_device(null_dev)
    real = tmp_path / "real.tsv"
    os.symlink(real.name, tmp_path / "link.tsv")
    r = _bimine(*MINE, "-o", tmp_path / "link.tsv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "link.tsv").is_symlink()
    rows = real.read_bytes()
    assert rows.count(b"\n") > 250
    r = _bimine(*MINE, "-o", "-")
    assert r.returncode == 0 and r.stdout == rows  # the pairs alone on stdout, the summary on stderr
    assert r.stderr.decode().strip().splitlines()[-1].endswith("pairs written to standard output")
    r = _bimine(*MINE, "-o", "/dev/stdout")
    assert r.returncode == 0 and r.stdout == rows
    leftovers = [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]
    assert not leftovers


def test_mine_into_a_full_device_is_one_line(full_dev):
    r = _bimine(*MINE, "-o", full_dev)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("error: cannot write the output")
    assert _is_char_device(full_dev)


def test_embed_into_a_fifo_and_a_device(tmp_path, null_dev):
    reader = FifoReader(tmp_path / "fifo")
    r = _bimine("embed", EXAMPLES / "sample.fr", "--lang", "fr", "-o", tmp_path / "fifo")
    assert r.returncode == 0, r.stderr
    (tmp_path / "got.npy").write_bytes(reader.join())
    r = _bimine("embed", EXAMPLES / "sample.fr", "--lang", "fr", "-o", tmp_path / "file.npy")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "got.npy"), np.load(tmp_path / "file.npy"))
    assert np.load(tmp_path / "file.npy").shape[0] == 360
    r = _bimine("embed", EXAMPLES / "sample.fr", "--lang", "fr", "-o", null_dev)
    assert r.returncode == 0 and _is_char_device(null_dev)


def test_filter_outputs_into_a_fifo_a_device_and_a_symlink(tmp_path, null_dev):
    tsv = tmp_path / "in.tsv"
    tsv.write_text("".join((EXAMPLES / "dev.en-fr.tsv").read_text().splitlines(keepends=True)[:60]))
    reader = FifoReader(tmp_path / "fifo")
    real_kept = tmp_path / "kept-real.tsv"
    os.symlink(real_kept.name, tmp_path / "kept.tsv")
    r = _bimine("filter", tsv, "--src-lang", "en", "--tgt-lang", "fr", "-o", tmp_path / "fifo",
                "--kept", tmp_path / "kept.tsv", "--report", null_dev)
    assert r.returncode == 0, r.stderr
    scored = reader.join().decode()
    assert scored.startswith("src\ttgt\t") and scored.count("\n") == 61
    assert (tmp_path / "kept.tsv").is_symlink() and real_kept.stat().st_size > 0
    assert _is_char_device(null_dev) and stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    r = _bimine("score", tsv, "--src-lang", "en", "--tgt-lang", "fr", "-o", "-")
    assert r.returncode == 0 and r.stdout.decode().count("\n") == 61


def test_output_folders_through_a_symlink_and_a_fifo_refused(tmp_path):
    real = tmp_path / "stores" / "fr"
    real.mkdir(parents=True)
    os.symlink(real, tmp_path / "fr.store")
    r = _bimine("embed", EXAMPLES / "sample.fr", "--lang", "fr", "--store", "-o", tmp_path / "fr.store")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "fr.store").is_symlink() and (real / "manifest.json").exists()
    os.mkfifo(tmp_path / "fifo")
    r = _bimine("embed", EXAMPLES / "sample.fr", "--lang", "fr", "--store", "-o", tmp_path / "fifo")
    assert r.returncode == 2
    assert r.stderr.decode().strip().splitlines() == [f"error: -o/--output {tmp_path / 'fifo'}: is a FIFO, not a folder; "
                                                      "choose a folder name"]
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
