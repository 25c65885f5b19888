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


def _zst_text(n: int = 20000) -> bytes:
    return "".join(f"line {i * 7919 % 100003}\n" for i in range(n)).encode()


@pytest.mark.parametrize("content_size", [True, False])  # False: a streamed frame, no size in its header
def test_truncated_zstd_is_a_clear_error_not_an_empty_file(tmp_path, content_size):
    from bimine.text.io import scan_text

    data = _zst_text()
    blob = zstandard.ZstdCompressor(write_content_size=content_size).compress(data)
    for cut in (3000, len(blob) // 2, len(blob) - 1):
        p = tmp_path / f"t{cut}.zst"
        p.write_bytes(blob[:cut])
        with pytest.raises(InputError, match=r"t\d+\.zst: cannot be read .*cut short"):
            list(read_lines(p))
        with pytest.raises(InputError, match="cut short"):
            scan_text(p)
    whole = tmp_path / "whole.zst"
    whole.write_bytes(blob)
    assert "\n".join(read_lines(whole)) + "\n" == data.decode()
    assert scan_text(whole).lines == 20000


def test_zstd_of_several_frames_reads_every_frame(tmp_path):
    p = tmp_path / "two.zst"
    c = zstandard.ZstdCompressor()
    p.write_bytes(c.compress(b"a\nb\n") + c.compress(b"c\nd\n"))
    assert list(read_lines(p)) == ["a", "b", "c", "d"]


def test_zstd_of_random_bytes_is_a_one_line_error(tmp_path):
    p = tmp_path / "rand.zst"
    p.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(InputError, match="rand.zst: cannot be read .*not valid zstd"):
        list(read_lines(p))


@pytest.mark.parametrize("command", ["embed", "mine", "filter", "score"])
def test_truncated_zstd_stops_every_command(tmp_path, command):
    from click.testing import CliRunner

    from bimine.cli import embed, filter, mine  # noqa: F401  (register the commands)
    from bimine.cli.main import cli

    blob = zstandard.ZstdCompressor().compress(_zst_text(3000))
    bad = tmp_path / "t.en.zst"
    bad.write_bytes(blob[: len(blob) // 2])
    fr = tmp_path / "x.fr"
    fr.write_text("".join(f"ligne {i}\n" for i in range(3000)))
    out = tmp_path / "out"
    args = {
        "embed": ["embed", str(bad), "--lang", "en", "-o", f"{out}.npy"],
        "mine": ["mine", str(bad), str(fr), "--src-lang", "en", "--tgt-lang", "fr", "-o", f"{out}.tsv"],
        "filter": ["filter", "--src", str(bad), "--tgt", str(fr), "--src-lang", "en", "--tgt-lang", "fr",
                   "-o", f"{out}.tsv"],
        "score": ["score", str(bad), "--src-lang", "en", "--tgt-lang", "fr", "-o", f"{out}.tsv"],
    }[command]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code != 0
    assert "cut short" in r.output and "Traceback" not in r.output
    assert not list(tmp_path.glob("out*"))


@pytest.mark.parametrize("suffix", ["", ".gz", ".xz", ".bz2", ".zst"])
def test_scan_gives_the_checksum_of_the_file_in_the_same_pass(tmp_path, suffix):
    """Mining checks each input and takes its checksum in one read: the scan's SHA-256 is the
    one of the file's own bytes (compressed ones for a compressed file), as file_checksum's."""
    import bz2
    import gzip
    import lzma

    import zstandard

    from bimine.store.store import file_checksum
    from bimine.text.io import scan_text

    data = "".join(f"line {i} ünïcode\n" for i in range(50_000)).encode()
    pack = {"": lambda b: b, ".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress,
            ".zst": lambda b: zstandard.ZstdCompressor().compress(b)}[suffix]
    f = tmp_path / f"t.txt{suffix}"
    f.write_bytes(pack(data))
    res = scan_text(f, checksum=True)
    assert res.lines == 50_000 and res.sha256 == file_checksum(f)
    assert scan_text(f).sha256 is None  # not asked: no hashing
    if suffix == ".gz":  # bytes after the compressed data (a NUL padding some tools add) are in the file's checksum
        f.write_bytes(pack(data) + b"\x00" * 10)
        assert scan_text(f, checksum=True).sha256 == file_checksum(f)
