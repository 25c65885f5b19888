"""Damaged compressed inputs and byte-order marks (issue 55 §2, §3).

A compressed input with bytes zeroed in the middle (not cut short) is a one-line error naming
the file, with every codec and in every command: gzip's ``zlib.error``, xz's ``LZMAError``,
bz2's ``OSError``, zstd's ``ZstdError`` and ``EOFError`` for a file cut short all become one
:class:`InputError`, made where every reader's bytes come from (``bimine.text.io``). A UTF-8
byte-order mark is no part of line 1: it is dropped, so line 1 embeds as without it.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard

from bimine.errors import InputError
from bimine.text.io import read_line_chunks, read_lines, read_parallel, scan_text

ROOT = Path(__file__).resolve().parents[1]
EN, FR = ROOT / "examples" / "sample.en", ROOT / "examples" / "sample.fr"
COMPRESS = {"gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress,
            "zst": lambda d: zstandard.ZstdCompressor().compress(d)}
BOM = "\ufeff".encode()


def _damaged(tmp_path: Path, codec: str, how: str = "zeroed", text: bytes | None = None) -> Path:
    """``examples/sample.en`` compressed with ``codec``, then 64 bytes in its middle zeroed
    (``zeroed``) or its second half cut off (``cut``)."""
    blob = bytearray(COMPRESS[codec](EN.read_bytes() if text is None else text))
    mid = len(blob) // 2
    if how == "zeroed":
        blob[mid:mid + 64] = bytes(64)
    else:
        del blob[mid:]
    p = tmp_path / f"{how}.en.{codec}"
    p.write_bytes(bytes(blob))
    return p


@pytest.mark.parametrize("codec", list(COMPRESS))
@pytest.mark.parametrize("how", ["zeroed", "cut"])
def test_every_reader_turns_a_damaged_file_into_one_input_error(tmp_path, codec, how):
    p = _damaged(tmp_path, codec, how)
    word = "damaged" if how == "zeroed" else "truncated"
    readers = {"read_lines": lambda: list(read_lines(p)), "read_line_chunks": lambda: list(read_line_chunks(p)),
               "scan_text": lambda: scan_text(p), "scan_text column": lambda: scan_text(p, column=1),
               "read_parallel": lambda: list(read_parallel(p, EN))}
    for name, read in readers.items():
        with pytest.raises(InputError) as e:
            read()
        msg = str(e.value)
        assert msg.startswith(f"{p}: cannot be read (the compressed data ") and word in msg, (name, msg)
        assert "\n" not in msg


def test_the_error_says_after_which_line_the_damage_was_found(tmp_path):
    """gzip and xz give out the lines before the damage: the message names the last line
    given out, which is before the damage (line 180 is the middle of the file)."""
    lines = EN.read_text(encoding="utf-8").split("\n")
    for codec in ("gz", "xz"):
        p = _damaged(tmp_path, codec)
        got = []
        with pytest.raises(InputError, match="damaged, found after line") as e:
            for line in read_lines(p):
                got.append(line)
        n = int(re.search(r"after line (\d+)", str(e.value)).group(1))
        assert 100 < n < 200, (codec, n)
        assert got == lines[: len(got)]


def test_a_gzip_checksum_failure_names_no_line(tmp_path):
    """Zeroed bytes that inflate to wrong text are only found by the CRC at the end: no line
    can be named (the lines read were wrong well before)."""
    rng = np.random.default_rng(0)
    words = "alpha beta gamma delta chat Hund été naïve x 42 river mountain sun moon".split()
    text = "".join(" ".join(rng.choice(words, size=8)) + "\n" for _ in range(20000)).encode()
    p = _damaged(tmp_path, "gz", text=text)
    with pytest.raises(InputError, match=r"is damaged: CRC check failed") as e:
        scan_text(p)
    assert "line" not in str(e.value)


def _bimine(*args, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bimine", *map(str, args)], capture_output=True, text=True,
                          stdin=stdin, env={**os.environ, "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0"})


def _one_line_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


@pytest.mark.parametrize("command", ["embed", "filter", "divergence", "align", "mine", "eval retrieval"])
def test_a_zeroed_gzip_is_one_line_in_every_command(tmp_path, command):
    bad = _damaged(tmp_path, "gz")
    out = tmp_path / "out"
    args = {
        "embed": ["embed", bad, "--lang", "en", "-o", f"{out}.npy"],
        "filter": ["filter", "--src", bad, "--tgt", FR, "--src-lang", "en", "--tgt-lang", "fr", "-o", f"{out}.tsv"],
        "divergence": ["divergence", "--src", bad, "--tgt", FR, "--src-lang", "en", "--tgt-lang", "fr",
                       "-o", f"{out}.tsv"],
        "align": ["align", bad, FR, "-o", f"{out}.tsv"],
        "mine": ["mine", bad, FR, "--src-lang", "en", "--tgt-lang", "fr", "-o", f"{out}.tsv"],
        "eval retrieval": ["eval", "retrieval", bad, FR, "--src-lang", "en", "--tgt-lang", "fr"],
    }[command]
    _one_line_error(_bimine(*args), str(bad), "damaged")
    assert not list(tmp_path.glob("out*"))


def test_a_zeroed_xz_in_embed_and_a_cut_zstd_in_mine(tmp_path):
    bad = _damaged(tmp_path, "xz")
    _one_line_error(_bimine("embed", bad, "--lang", "en", "-o", tmp_path / "x.npy"), str(bad), "damaged")
    cut = _damaged(tmp_path, "zst", "cut")
    _one_line_error(_bimine("mine", EN, cut, "--src-lang", "en", "--tgt-lang", "en", "-o", tmp_path / "m.tsv"),
                    str(cut), "truncated")
    assert not (tmp_path / "x.npy").exists() and not (tmp_path / "m.tsv").exists()


def test_damage_found_while_filtering_in_workers_is_one_line(tmp_path, monkeypatch):
    """The check before the work reads the whole file; here it is skipped, so the damage is met
    while the blocks are read and scored by two forked workers (here at the end, by the CRC, once
    every block was scored): still one line, exit 2."""
    from click.testing import CliRunner

    from bimine.cli import filter  # noqa: F401  (registers the command)
    from bimine.cli.main import cli
    from bimine.filtering import job
    from bimine.text.io import ScanResult

    monkeypatch.setattr(job, "scan_text", lambda *a, **k: ScanResult(lines=360))
    text = b"".join(b"sentence number %d, long enough to be kept by the rules\n" % i for i in range(20000))
    bad = _damaged(tmp_path, "gz", text=text)
    fr = tmp_path / "fr.txt"
    fr.write_text("".join(f"phrase numéro {i}, assez longue pour les règles\n" for i in range(20000)))
    r = CliRunner().invoke(cli, ["filter", "--src", str(bad), "--tgt", str(fr), "--src-lang", "en",
                                 "--tgt-lang", "fr", "--no-model", "--workers", "2", "--block-size", "1000",
                                 "-o", str(tmp_path / "out.tsv")])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and r.output.count("error:") == 1, r.output
    assert f"{bad}: cannot be read (the compressed data is damaged" in r.output  # found at the end: blocks were scored
    assert not (tmp_path / "out.tsv").exists()


# --- byte-order mark -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [None, *COMPRESS])
def test_a_byte_order_mark_is_dropped_from_line_one(tmp_path, codec):
    raw = "first\tpremière\nsecond\tdeuxième\r\n\ufeffthird keeps it\n".encode()
    p = tmp_path / "t.tsv"
    p.write_bytes(BOM + raw if codec is None else COMPRESS[codec](BOM + raw))
    assert list(read_lines(p)) == ["first\tpremière", "second\tdeuxième", "\ufeffthird keeps it"]
    assert list(read_lines(p, column=1))[0] == "first"
    assert [ln for c in read_line_chunks(p, chunk_bytes=4) for ln in c.lines][0] == "first\tpremière"
    assert next(read_parallel(p)) == ("first", "première")
    assert scan_text(p).lines == 3


def test_a_byte_order_mark_on_stdin_and_alone(tmp_path, monkeypatch):
    class Stdin:
        buffer = io.BufferedReader(io.BytesIO(BOM + b"a\nb\n"))

    monkeypatch.setattr(sys, "stdin", Stdin)
    assert list(read_lines("-")) == ["a", "b"]
    (tmp_path / "bom").write_bytes(BOM)
    assert list(read_lines(tmp_path / "bom")) == [""] and scan_text(tmp_path / "bom").lines == 1


def test_embedding_of_a_file_with_a_bom_equals_the_one_without(tmp_path):
    (tmp_path / "bom.en").write_bytes(BOM + EN.read_bytes())
    (tmp_path / "bom.en.gz").write_bytes(gzip.compress(BOM + EN.read_bytes()))
    runs = {"plain": _bimine("embed", EN, "--lang", "en", "-o", tmp_path / "plain.npy"),
            "bom": _bimine("embed", tmp_path / "bom.en", "--lang", "en", "-o", tmp_path / "bom.npy"),
            "gz": _bimine("embed", tmp_path / "bom.en.gz", "--lang", "en", "-o", tmp_path / "gz.npy")}
    with open(tmp_path / "bom.en", "rb") as f:
        runs["stdin"] = _bimine("embed", "-", "--lang", "en", "-o", tmp_path / "stdin.npy", stdin=f)
    for name, r in runs.items():
        assert r.returncode == 0, (name, r.stderr)
    want = np.load(tmp_path / "plain.npy")
    for name in ("bom", "gz", "stdin"):
        np.testing.assert_array_equal(np.load(tmp_path / f"{name}.npy"), want, err_msg=name)
