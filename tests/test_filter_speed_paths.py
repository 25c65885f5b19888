"""The fast paths of ``bimine filter`` against the straightforward reference they replace:
vectorised output formatting, block reading, compiled rule kernels, shared embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.filtering.pipeline import PairBlock, _fmt, format_g, format_scores


def _values() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([
        rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000),
        rng.integers(-10**16, 10**16, 500).astype(np.float64),
        rng.integers(-5000, 5000, 500).astype(np.float64),
        rng.integers(0, 300, 500) / rng.integers(1, 300, 500),
        [np.nan, -0.0, 0.0, 1e15, 1e15 - 1, -1e15, 999999.5, 9999995.0, 0.5, 1.5, 2.5, np.inf, -np.inf, 5e-324,
         1.7976931348623157e308, 4095, 4096, -1, 1e-5, 1e-4, 123456.5, 0.00704225, 1 / 3],
    ])


def test_format_scores_equals_fmt():
    v = _values()
    assert format_scores(v) == [_fmt(x) for x in v.tolist()]
    assert format_scores(np.arange(10.0)) == [str(i) for i in range(10)]
    assert format_scores(np.zeros(0)) == []


def test_format_g_equals_format_spec():
    v = _values()
    assert format_g(v) == [f"{x:.6g}" for x in v.tolist()]
    assert format_g(np.zeros(0)) == []


def test_block_row_text():
    src, tgt = ["a", "b c", ""], ["x", "", "z\u2028"]
    two = PairBlock(None, src, tgt, 1)
    rows = PairBlock([[a, b] for a, b in zip(src, tgt)], src, tgt, 1)
    lines = PairBlock(None, src, tgt, 1, lines=[f"{a}\t{b}" for a, b in zip(src, tgt)])
    assert two.row_text() == rows.row_text() == lines.row_text() == "a\tx\nb c\t\n\tz\u2028\n"
    assert two.width() == rows.width() == lines.width() == 2
    assert PairBlock(None, [], [], 1).row_text() == ""


# ---------------------------------------------------------------- reading

def _ref_read_lines(path, errors="strict"):
    """The line-by-line reader that read_line_chunks replaces (bimine.text.io before it)."""
    from bimine.errors import InputError

    name = str(path)
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if b"\x00" in raw:
                raise InputError(f"{name}:{lineno}: contains a NUL byte; this looks like a binary file, "
                                 "not one sentence per line of UTF-8 text")
            if raw.endswith(b"\n"):
                raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                if errors == "strict":
                    raise InputError(f"{name}:{lineno}: invalid UTF-8 at byte {e.start} of the line; fix the "
                                     "file or pass --encoding-errors replace to substitute U+FFFD") from None
                line = raw.decode("utf-8", errors="replace")
            yield line


def _ref_blocks(inp=None, *, src=None, tgt=None, columns=(1, 2), block_size=10_000, errors="strict"):
    """read_pair_blocks before the chunked reader: a row at a time."""
    from bimine.errors import InputError

    rows, first = [], 1
    if inp is not None:
        c_src, c_tgt = columns
        width = None
        for lineno, line in enumerate(_ref_read_lines(inp, errors), start=1):
            cells = line.split("\t")
            if width is None:
                width = len(cells)
                if width < max(c_src, c_tgt):
                    raise InputError(f"{inp}:{lineno}: has {width} tab-separated column(s); --columns "
                                     f"{c_src},{c_tgt} needs at least {max(c_src, c_tgt)}")
            elif len(cells) != width:
                raise InputError(f"{inp}:{lineno}: has {len(cells)} tab-separated column(s), the first line "
                                 f"has {width}; every row of a TSV needs the same columns")
            rows.append(cells)
            if len(rows) == block_size:
                yield rows, [r[c_src - 1] for r in rows], [r[c_tgt - 1] for r in rows], first
                first += len(rows)
                rows = []
        if rows:
            yield rows, [r[c_src - 1] for r in rows], [r[c_tgt - 1] for r in rows], first
        return
    ga, gb = _ref_read_lines(src, errors), _ref_read_lines(tgt, errors)
    n = 0
    while True:
        x, y = next(ga, None), next(gb, None)
        if x is None and y is None:
            break
        if x is None or y is None:
            longer, shorter = (tgt, src) if x is None else (src, tgt)
            rest = 1 + sum(1 for _ in (gb if x is None else ga))
            raise InputError(f"{shorter} has {n} lines but {longer} has {n + rest}: the two sides of a "
                             "parallel corpus must have the same number of lines")
        n += 1
        for side, text in ((src, x), (tgt, y)):
            if "\t" in text:
                raise InputError(f"{side}:{n}: holds a tab, which would break the TSV output; "
                                 "replace tabs or give a TSV with --columns")
        rows.append([x, y])
        if len(rows) == block_size:
            yield rows, [r[0] for r in rows], [r[1] for r in rows], first
            first += len(rows)
            rows = []
    if rows:
        yield rows, [r[0] for r in rows], [r[1] for r in rows], first


def _outcome(blocks):
    """Every block as (rows as text, src, tgt, first line), and the error message at the end."""
    from bimine.errors import InputError

    out = []
    try:
        for b in blocks:
            if isinstance(b, tuple):
                rows, s, t, first = b
                out.append(("".join("\t".join(r) + "\n" for r in rows), s, t, first))
            else:
                out.append((b.row_text(), b.src, b.tgt, b.first_line))
    except InputError as e:
        return out, str(e)
    return out, None


_TEXTS = ["The cat.", "", "Le chat\u2028dort", "猫在睡觉。", "a\rb", "x\x85y", "Ωμέγα", "  ", "\U0001F600",
          "long " * 300, "end\r"]


def _corpus(rng, n, tab_at=None):
    lines = [_TEXTS[i] for i in rng.integers(0, len(_TEXTS), n)]
    if tab_at is not None:
        lines[tab_at] = "has\ta tab"
    return lines


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("block_size", [1, 3, 50])
def test_two_file_blocks_equal_the_row_reader(tmp_path, monkeypatch, chunk, block_size):
    import bimine.text.io as tio
    from bimine.filtering.pipeline import read_pair_blocks

    monkeypatch.setattr(tio, "CHUNK_BYTES", chunk)
    rng = np.random.default_rng(chunk * 100 + block_size)
    a, b = tmp_path / "a", tmp_path / "b"
    cases = [
        (_corpus(rng, 40), _corpus(rng, 40), b"\n", b"\r\n"),
        (_corpus(rng, 40), _corpus(rng, 37), b"\n", b"\n"),  # different lengths
        (_corpus(rng, 3), _corpus(rng, 9), b"\n", b"\n"),
        (_corpus(rng, 0), _corpus(rng, 2), b"\n", b"\n"),
        (_corpus(rng, 40, tab_at=21), _corpus(rng, 40, tab_at=21), b"\n", b"\n"),  # the source side is named
        (_corpus(rng, 40), _corpus(rng, 40, tab_at=5), b"\n", b"\n"),
        (_corpus(rng, 30, tab_at=29), _corpus(rng, 20), b"\n", b"\n"),  # tab after the common lines: lengths
        (_corpus(rng, 30, tab_at=3), _corpus(rng, 20), b"\n", b"\n"),  # tab first
    ]
    for la, lb, ea, eb in cases:
        a.write_bytes(ea.join(x.encode() for x in la) + (ea if la else b""))
        b.write_bytes(eb.join(x.encode() for x in lb))  # no final newline
        got = _outcome(read_pair_blocks(src=str(a), tgt=str(b), block_size=block_size))
        want = _outcome(_ref_blocks(src=str(a), tgt=str(b), block_size=block_size))
        assert got == want


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_tsv_blocks_equal_the_row_reader(tmp_path, monkeypatch, chunk):
    import bimine.text.io as tio
    from bimine.filtering.pipeline import read_pair_blocks

    monkeypatch.setattr(tio, "CHUNK_BYTES", chunk)
    rng = np.random.default_rng(chunk)
    p = tmp_path / "in.tsv"
    good = [f"{i}\t{x}\t{y}" for i, (x, y) in enumerate(zip(_corpus(rng, 30), _corpus(rng, 30)))]
    cases = [good, good[:7] + ["only\tone"] + good[7:], ["a\tb\tc\td"] + good, ["single"] + good, good[:1],
             [g.replace("\t", "\t\t", 1) if i == 12 else g for i, g in enumerate(good)], ["\t\t"] * 4]
    for lines in cases:
        for end in (b"\n", b"\r\n"):
            p.write_bytes(end.join(x.encode() for x in lines) + end)
            for cols in ((2, 3), (3, 1)):
                got = _outcome(read_pair_blocks(str(p), columns=cols, block_size=4))
                want = _outcome(_ref_blocks(str(p), columns=cols, block_size=4))
                assert got == want


@pytest.mark.parametrize("chunk", [1, 6, 1 << 20])
def test_bad_bytes_are_found_on_the_same_line(tmp_path, monkeypatch, chunk):
    import bimine.text.io as tio
    from bimine.filtering.pipeline import read_pair_blocks
    from bimine.text.io import ReadStats, read_lines

    monkeypatch.setattr(tio, "CHUNK_BYTES", chunk)
    a, b = tmp_path / "a", tmp_path / "b"
    b.write_bytes(b"1\n2\n3\n4\n5\n")
    for data in (b"ok\nbad \xff here\nok\nok\nok\n", b"ok\nok\nok\nnul\x00\nok\n", b"caf\xc3\r\nok\r\nx\ny\nz",
                 b"ok\nok\nok\nok\ncut \xe2\x82"):
        a.write_bytes(data)
        for errors in ("strict", "replace"):
            got = _outcome(read_pair_blocks(src=str(a), tgt=str(b), block_size=2, errors=errors))
            want = _outcome(_ref_blocks(src=str(a), tgt=str(b), block_size=2, errors=errors))
            assert got == want
            st = ReadStats()
            try:
                lines = list(read_lines(a, errors=errors, stats=st))
            except Exception as e:  # noqa: BLE001
                lines = str(e)
            try:
                ref = list(_ref_read_lines(a, errors))
            except Exception as e:  # noqa: BLE001
                ref = str(e)
            assert lines == ref
            if errors == "replace" and b"\x00" not in data:
                assert st.lines == len(ref) and st.replaced == sum("\ufffd" in x for x in ref)
