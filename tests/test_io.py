from __future__ import annotations

import bz2
import gzip
import lzma

import pytest
import zstandard

from bimine.errors import InputError
from bimine.text.io import ReadStats, read_lines, read_parallel, scan_text

LINES = ["first", "", "third\u0085with NEL", "  spaced  ", "last"]


@pytest.mark.parametrize("suffix", ["", ".gz", ".xz", ".bz2", ".zst"])
def test_read_plain_and_compressed(tmp_path, suffix):
    data = ("\n".join(LINES) + "\n").encode()
    comp = {
        "": lambda b: b,
        ".gz": gzip.compress,
        ".xz": lzma.compress,
        ".bz2": bz2.compress,
        ".zst": lambda b: zstandard.ZstdCompressor().compress(b),
    }[suffix]
    p = tmp_path / f"f.txt{suffix}"
    p.write_bytes(comp(data))
    assert list(read_lines(p)) == LINES
    assert scan_text(p).lines == len(LINES)


def test_crlf_and_missing_final_newline(tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes(b"a\r\nb\r\n\r\nc")
    assert list(read_lines(p)) == ["a", "b", "", "c"]


def test_invalid_utf8_names_file_and_line(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"ok\nalso ok\nbad \xff byte\n")
    with pytest.raises(InputError, match=r"bad.txt:3: invalid UTF-8.*--encoding-errors replace"):
        list(read_lines(p))
    st = ReadStats()
    out = list(read_lines(p, errors="replace", stats=st))
    assert out[2] == "bad \ufffd byte" and st.replaced == 1 and st.replaced_lines == [3]


def test_binary_file_is_refused(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"abc\n\x00\x01\x02")
    with pytest.raises(InputError, match=r"x.bin:2: .*binary"):
        list(read_lines(p))


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        list(read_lines(tmp_path / "nope.txt"))


def test_tsv_column(tmp_path):
    p = tmp_path / "t.tsv"
    p.write_text("a\tb\nc\td\n\t\n")
    assert list(read_lines(p, column=2)) == ["b", "d", ""]
    p.write_text("a\tb\nonly\n")
    with pytest.raises(InputError, match=r"t.tsv:2: has 1 tab-separated column"):
        list(read_lines(p, column=2))


def test_parallel_files_and_mismatch(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("1\n2\n3\n")
    b.write_text("x\ny\nz\n")
    assert list(read_parallel(a, b)) == [("1", "x"), ("2", "y"), ("3", "z")]
    b.write_text("x\ny\n")
    with pytest.raises(InputError, match=r"has 2 lines but .* has 3"):
        list(read_parallel(a, b))


def test_parallel_tsv(tmp_path):
    p = tmp_path / "p.tsv"
    p.write_text("a\tb\nc\td\n")
    assert list(read_parallel(p)) == [("a", "b"), ("c", "d")]
    p.write_text("a\tb\nc\n")
    with pytest.raises(InputError, match=r"p.tsv:2: expected 2"):
        list(read_parallel(p))


def test_truncated_gzip_is_a_clear_error(tmp_path):
    p = tmp_path / "t.gz"
    data = "".join(f"line {i * 7919 % 100003}\n" for i in range(20000)).encode()
    blob = gzip.compress(data)
    p.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(InputError, match="truncated"):
        list(read_lines(p))
