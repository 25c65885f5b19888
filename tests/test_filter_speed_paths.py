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


# ---------------------------------------------------------------- compiled rule statistics

def _all_code_point_texts(width: int = 37) -> list[str]:
    big = np.arange(0x110000, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    return [big[i:i + width] for i in range(0, len(big), width)]


def _varied_texts(n: int = 3000, seed: int = 0) -> list[str]:
    """Texts mixing scripts (Latin, Cyrillic, Greek, Arabic, Devanagari, Thai, CJK, kana,
    Hangul), digits of several scripts, white space of every kind, controls, surrogates,
    U+FFFD, mojibake, URLs, case pairs that fold to several letters (ß, ﬃ, İ, ΐ)."""
    rng = np.random.default_rng(seed)
    pieces = ["The", "cat", "Le", "chat", "dört", "Привет", "мир", "Ωμέγα", "ΣΑΣ", "σας", "مرحبا", "٢٠١٩", "١٬٠٠٠٫٥",
              "नमस्ते", "१२३", "สวัสดี", "๑๒๓", "猫在睡觉", "日本語", "カタカナ", "ｶﾀｶﾅ", "한국어", "𠀀𠀁", "iPhone手机",
              "ß", "SS", "ﬃ", "FFI", "İ", "i̇", "ΐ", "K", "\u212a", "_", "__init__", "e-mail", "don't", "1,000.50",
              "1 000,50", "2019", "3.14", "½", "²", "①", "𝟙𝟚", "١٢", "https://a.org/x", "WWW.Example.com", "a@b.co",
              "://", "wWw.", "w.w.w.", "@", "Ã©", "â€™", "Â\x80", "Ã\u00c3\u00a9", "â\u20ac", "\x00", "\x07", "\x7f",
              "\x85", "\x9f", "\ud800", "\udfff", "\ufffd", "\u200b", "\u00ad", "\ufeff", "\U000e0041", "\U0010fffd",
              "\u0300", "e\u0301", "...", "!?", "—", "«»", "¿", "\u0e31", "ກ", "ཀ", "က", "ᄀ", "\u3000", "\u2028",
              "\u0085", "हॉलीवुड", "क्\u200dष", "\u093f", "كَتَبَ", "\u200c", "a\u200d"]
    spaces = [" ", "  ", "\t", "\u00a0", "\u3000", "\u2009", "\x1c", "\x1f", "\n", "\r", "\x0b", "", "-", ".", ","]
    out = []
    for _ in range(n):
        k = int(rng.integers(0, 8))
        parts = [pieces[int(j)] + spaces[int(s)] for j, s in zip(rng.integers(0, len(pieces), k),
                                                                  rng.integers(0, len(spaces), k))]
        text = "".join(parts)
        if rng.random() < 0.2:
            text = text.upper()
        elif rng.random() < 0.2:
            text = spaces[int(rng.integers(0, len(spaces)))] + text
        out.append(text)
    return out


def test_text_stats_equal_the_reference_functions():
    import re

    from bimine.filtering.rules import _letters_digits, _may_hold_url, bad_chars, length_units, text_stats

    texts = _all_code_point_texts() + _varied_texts() + ["", " ", "a", "\ud800", "ﬃ", "ß"]
    st = text_stats(texts)
    assert st.units.tolist() == [length_units(s) for s in texts]
    assert st.nonspace.tolist() == [len("".join(s.split())) for s in texts]
    assert st.bad.tolist() == [bad_chars(s) for s in texts]
    assert st.key_len.tolist() == [len(_letters_digits(s)) for s in texts]
    assert st.digit.tolist() == [re.search(r"\d", s) is not None for s in texts]
    assert st.url.tolist() == [_may_hold_url(s) for s in texts]
    # every text alone: the same as within a block
    one = [text_stats([s]) for s in texts[-3100:]]
    assert [o.units[0] for o in one] == st.units[-3100:].tolist()


def test_only_w_and_W_match_w_ignoring_case():
    """The compiled URL mark looks for ASCII 'www.' only: nothing else matches 'w' under
    re.IGNORECASE (unlike 'k' and KELVIN SIGN), so no URL can be missed."""
    import re

    big = np.arange(0x110000, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    assert sorted(set(re.findall("w", big, re.IGNORECASE))) == ["W", "w"]
    assert sorted(set(re.findall(r"[@:/.]", big, re.IGNORECASE))) == [".", "/", ":", "@"]


def test_key_hashes_agree_exactly_when_the_keys_do():
    from bimine.filtering.rules import _letters_digits, text_stats

    texts = _varied_texts(4000, seed=1)
    variants = [t.upper() for t in texts] + [t.casefold() for t in texts] + [t.replace(" ", "") for t in texts]
    allt = texts + variants
    st = text_stats(allt)
    keys = [_letters_digits(s) for s in allt]
    by_hash: dict[tuple[int, int], set[str]] = {}
    for k, h, n in zip(keys, st.key_hash.tolist(), st.key_len.tolist()):
        by_hash.setdefault((h, n), set()).add(k)
    assert all(len(v) == 1 for v in by_hash.values())  # no collision in this sample
    assert len(by_hash) == len(set(keys))  # and equal keys always share one hash


def _ref_rule_scores(name, src, tgt):
    """The per-pair loops the compiled rules replace."""
    from bimine.filtering.rules import _letters_digits, _may_hold_url, bad_chars, numbers, urls

    if name == "empty":
        return [min(len("".join(a.split())), len("".join(b.split()))) for a, b in zip(src, tgt)]
    if name == "identical":
        return [float(bool(_letters_digits(a)) and _letters_digits(a) == _letters_digits(b)) for a, b in zip(src, tgt)]
    if name == "bad_chars":
        return [bad_chars(a) + bad_chars(b) for a, b in zip(src, tgt)]
    if name == "numbers":
        return [min(sum((numbers(a) - numbers(b)).values()), sum((numbers(b) - numbers(a)).values()))
                for a, b in zip(src, tgt)]
    if name == "urls":
        return [sum(((urls(a) - urls(b)) + (urls(b) - urls(a))).values()) if _may_hold_url(a) or _may_hold_url(b)
                else 0 for a, b in zip(src, tgt)]
    raise KeyError(name)


@pytest.mark.parametrize("name", ["empty", "identical", "bad_chars", "numbers", "urls"])
def test_compiled_rules_equal_the_per_pair_loops(name):
    from bimine.filtering.rules import RULES

    texts = _varied_texts(3000, seed=2)
    rng = np.random.default_rng(3)
    src = texts[:1500]
    tgt = [t.upper() if rng.random() < 0.3 else texts[1500 + i] for i, t in enumerate(src)]
    assert RULES[name]().score(src, tgt).tolist() == [float(x) for x in _ref_rule_scores(name, src, tgt)]


@pytest.mark.parametrize("lowercase", [False, True])
def test_duplicates_equal_a_dict_of_the_compared_texts(lowercase):
    from bimine.filtering.rules import Duplicates

    texts = _varied_texts(400, seed=4)
    rng = np.random.default_rng(5)
    pairs = []
    for _ in range(6000):  # repeats with other white space and case
        a, b = texts[int(rng.integers(0, 400))], texts[int(rng.integers(0, 400))]
        if rng.random() < 0.3:
            a = "  " + a.replace(" ", "\u3000 ") + "\t"
        if rng.random() < 0.3:
            b = b.upper()
        pairs.append((a, b))
    seen: dict[str, int] = {}
    want = []
    for a, b in pairs:
        key = " ".join(a.split()) + "\t" + " ".join(b.split())
        key = key.lower() if lowercase else key
        want.append(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
    d = Duplicates(lowercase=lowercase)
    got = []
    for i in range(0, len(pairs), 700):  # across blocks; the table grows from 65,536 slots
        block = pairs[i:i + 700]
        got += d.score([a for a, _ in block], [b for _, b in block]).tolist()
    assert got == want and max(want) > 3


def test_duplicate_table_grows():
    from bimine.filtering.rules import Duplicates

    d = Duplicates()
    src = [f"sentence {i}" for i in range(100_000)]
    assert d.score(src, ["x"] * len(src)).sum() == 0
    assert d.score(src[::-1], ["x"] * len(src)).tolist() == [1.0] * len(src)
    assert d.score(src[:5], ["y"] * 5).tolist() == [0.0] * 5
    assert len(d._keys1) >= 2 * 100_005


# ---------------------------------------------------------------- the disk cache of derived tables

def test_cache_is_used_only_for_its_exact_key(tmp_path, monkeypatch):
    from bimine.diskcache import cached_arrays

    monkeypatch.setenv("BIMINE_CACHE_DIR", str(tmp_path))
    calls = []

    def build(v):
        def f():
            calls.append(v)
            return {"a": np.full(3, v, dtype=np.int64)}
        return f

    assert cached_arrays("t", "model sha256 1", build(1))["a"].tolist() == [1, 1, 1]
    assert cached_arrays("t", "model sha256 1", build(9))["a"].tolist() == [1, 1, 1]  # from the cache
    assert cached_arrays("t", "model sha256 2", build(2))["a"].tolist() == [2, 2, 2]  # another model: rebuilt
    assert calls == [1, 2]
    entry = next(p for p in tmp_path.iterdir() if (p / "a.npy").exists() and np.load(p / "a.npy")[0] == 1)
    (entry / "key.txt").write_text("model sha256 1 (edited)")  # an entry whose key differs is never used
    assert cached_arrays("t", "model sha256 1", build(3))["a"].tolist() == [3, 3, 3]
    (entry / "a.npy").write_bytes(b"\x93NUMPY broken")  # a damaged file: rebuilt
    assert cached_arrays("t", "model sha256 1", build(4))["a"].tolist() == [4, 4, 4]
    assert cached_arrays("t", "model sha256 1", build(5))["a"].tolist() == [4, 4, 4]
    monkeypatch.setenv("BIMINE_CACHE_DIR", "off")
    assert cached_arrays("t", "model sha256 1", build(6))["a"].tolist() == [6, 6, 6]
    assert not list(tmp_path.glob("*.tmp-*"))


def test_cached_langid_tables_equal_freshly_built_ones(tmp_path, monkeypatch):
    from bimine.filtering import langid

    monkeypatch.setenv("BIMINE_CACHE_DIR", str(tmp_path))
    fresh = langid._build_model()
    monkeypatch.setattr(langid, "_MODEL", None)
    first = langid._model()  # builds and writes
    monkeypatch.setattr(langid, "_MODEL", None)
    again = langid._model()  # memory-mapped from the cache
    assert isinstance(again.ptc, np.memmap) and again.ptc.ctypes.data % 64 == 0
    for m in (first, again):
        for name in ("nextmove", "rowbase", "output", "ptc", "pc"):
            assert np.array_equal(getattr(m, name), fresh[name]), name
        assert m.classes == fresh["classes"].tolist()
    from bimine.diskcache import file_digest

    key = next(tmp_path.glob("py3langid-*/key.txt")).read_text()
    assert f"sha256 {file_digest(langid._model_file())}" in key  # another model file: another entry


# ---------------------------------------------------------------- shared embeddings

class _CountingEncoder:
    """Unit vectors from each text's characters (deterministic), counting the texts it embeds."""

    dim = 8

    def __init__(self):
        self.calls: list[tuple[str, int]] = []

    def encode(self, sentences, lang):
        self.calls.append((lang, len(sentences)))
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, s in enumerate(sentences):
            for j, ch in enumerate(s + lang):
                out[i, (ord(ch) + j) % self.dim] += 1.0 + (j % 3)
        out += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_each_side_of_a_block_is_embedded_once(tmp_path):
    from test_filter_pipeline import _blocks, read_tsv

    from bimine.filtering.pipeline import run_pipeline
    from bimine.scoring.pair_scores import CosineScore, MarginScore, corpus_margin

    enc = _CountingEncoder()
    # blocks of equal length whose texts differ: a reuse across blocks would show in the cosine
    src = [f"sentence {i} about cats" for i in range(12)]
    tgt = [f"phrase {11 - i} sur les chats" for i in range(12)]
    out = tmp_path / "o.tsv"
    run_pipeline(_blocks(src, tgt, 3), [CosineScore(encoder=enc, src_lang="en", tgt_lang="fr"),
                                        MarginScore(encoder=enc, src_lang="en", tgt_lang="fr", k=2)], str(out))
    assert enc.calls == [("en", 3), ("fr", 3)] * 4  # not 8 per block pair
    rows = read_tsv(out)
    ref = _CountingEncoder()
    u, v = ref.encode(src, "en"), ref.encode(tgt, "fr")
    np.testing.assert_allclose([float(r["cosine"]) for r in rows], np.einsum("ij,ij->i", u, v), rtol=1e-5)
    np.testing.assert_allclose([float(r["margin"]) for r in rows], corpus_margin(u, v, k=2), rtol=1e-5)


def test_the_embedding_cache_never_mixes_texts_languages_or_encoders():
    from bimine.scoring import pair_scores as scores
    from bimine.scoring.pair_scores import embed

    enc, other = _CountingEncoder(), _CountingEncoder()
    block = ["a cat", "a dog"]
    first = embed(enc, block, "en")
    assert embed(enc, block, "en") is first and len(enc.calls) == 1  # the same list: reused
    assert embed(enc, list(block), "en") is first  # an equal list (a worker's copy): equal texts, reused
    assert embed(enc, block, "fr") is not first  # another language
    assert embed(other, block, "en") is not first and len(other.calls) == 1  # another encoder
    block[1] = "a bird"  # the same list object, changed: embedded again, never the old vectors
    again = embed(enc, block, "en")
    np.testing.assert_allclose(again, _CountingEncoder().encode(["a cat", "a bird"], "en"))
    for k in range(6):  # blocks of one length with other texts: each gets its own embeddings
        texts = [f"text {k} {j}" for j in range(2)]
        np.testing.assert_allclose(embed(enc, texts, "en"), _CountingEncoder().encode(texts, "en"))
    assert len(scores._EMBED_CACHE) <= scores.EMBED_CACHE_SIZE


def test_workers_embed_once_and_give_the_same_output(tmp_path, tiny_model):
    from test_filter_pipeline import _blocks

    from bimine import load_encoder
    from bimine.filtering.pipeline import PipelineOptions, run_pipeline
    from bimine.filtering.rules import Duplicates, EmptySide
    from bimine.scoring.pair_scores import CosineScore, MarginScore

    enc = load_encoder(tiny_model)
    src = [f"sentence number {i} about cats" for i in range(23)] + ["", "sentence number 3 about cats"]
    tgt = [f"phrase numéro {i % 7} sur les chats" for i in range(25)]
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"o{workers}.tsv"
        filters = [EmptySide(), CosineScore(encoder=enc, src_lang="en", tgt_lang="fr"), Duplicates(),
                   MarginScore(encoder=enc, src_lang="en", tgt_lang="fr", k=3)]
        run_pipeline(_blocks(src, tgt, 4), filters, str(out), PipelineOptions(workers=workers))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


# ---------------------------------------------------------------- compiled output lines

def _many_values(n: int = 200_000) -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.concatenate([
        _values(),
        rng.standard_normal(n) * 10.0 ** rng.integers(-25, 25, n),
        rng.random(n), np.round(rng.random(n), 7), np.round(rng.random(n) * 1000, 3),
        rng.integers(0, 300, n) / rng.integers(1, 300, n), rng.integers(-10**6, 10**6, n).astype(np.float64),
        [9.999995e-5, 0.000099999949, 999999.4999, 99999.95, 1.0000005, 2.0000005, 1234565.0, 0.1234565, 1e16,
         1e-280, 1e280, 1e-300, -1e300, 12345650.0, 2.5e-5, 0.00012345649999999999],
    ])


@pytest.mark.parametrize("mode", [0, 1])
def test_compiled_cells_equal_python_formatting(mode):
    from bimine.filtering._write_kernel import _POW10, WIDTH, format_cells

    v = _many_values()
    cells = np.empty((len(v), WIDTH), dtype=np.uint8)
    lens = np.empty(len(v), dtype=np.int64)
    format_cells(v, mode, _POW10, cells, lens)
    done = lens >= 0
    assert done.mean() > 0.9  # the few left to Python: ties, extremes
    got = [bytes(c[:n]).decode() for c, n in zip(cells[done], lens[done])]
    want = [_fmt(x) if mode == 0 else f"{x:.6g}" for x in v[done].tolist()]
    assert got == want


def test_compiled_block_equals_the_python_rows():
    from bimine.filtering.pipeline import _assemble, _format_block

    rng = np.random.default_rng(8)
    v = _many_values(2000)
    n = 3000
    texts = [f"{t}\tcol {i}" for i, t in enumerate(_varied_texts(n, seed=9))]
    texts = [t.replace("\n", " ") for t in texts]
    raw = ("\n".join(texts) + "\n").encode("utf-8", "surrogatepass")
    rows = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(rows == 10)
    table = rng.choice(v, size=(n, 4))
    total = rng.choice(v, size=n)
    keep = rng.random(n) < 0.5
    reasons = ["a side is empty", "numbers — différents", "x"]
    reason_of = np.where(keep, -1, rng.integers(0, 3, n))
    got = _format_block(rows, ends, table, total, keep, reason_of, [r.encode() for r in reasons], True).tobytes()
    want = "".join("\t".join([t] + format_scores(table[i]) + [f"{total[i]:.6g}", "1" if keep[i] else "0",
                                                               reasons[reason_of[i]] if reason_of[i] >= 0 else ""])
                   + "\n" for i, t in enumerate(texts)).encode("utf-8", "surrogatepass")
    assert got == want
    got = _format_block(rows, ends, table, total, keep, reason_of, [], False).tobytes()
    want = "".join("\t".join([t] + format_scores(table[i]) + [f"{total[i]:.6g}"]) + "\n"
                   for i, t in enumerate(texts)).encode("utf-8", "surrogatepass")
    assert got == want
    kept = _assemble(rows, ends, None, None, keep, reason_of, [], False, True).tobytes()
    assert kept == "".join(t + "\n" for t, k in zip(texts, keep) if k).encode("utf-8", "surrogatepass")


def test_language_scores_of_repeated_texts_equal_each_text_alone():
    from bimine.filtering.langid import language_scores

    texts = ["Le chat dort.", "The cat sleeps.", "Le chat dort.", "", "ÉCOLE NORMALE", "deux\nlignes"] * 7
    got = language_scores(texts, "fr")
    alone = np.array([language_scores([t, "x"], "fr")[0] for t in texts])
    assert np.array_equal(got, alone)


def test_workers_option(tmp_path):
    from click.testing import CliRunner

    from bimine.cli import filter as _filter  # noqa: F401
    from bimine.cli.main import cli
    from bimine.filtering.pipeline import auto_workers

    assert 1 <= auto_workers() <= 4 and auto_workers(cap=1) == 1
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("The cat.\nA dog.\n")
    b.write_text("Le chat.\nUn chien.\n")
    outs = []
    for w in ("auto", "1", "2"):
        out = tmp_path / f"o{w}.tsv"
        r = CliRunner().invoke(cli, ["filter", "--src", str(a), "--tgt", str(b), "--src-lang", "en", "--tgt-lang", "fr",
                                     "--no-model", "--workers", w, "--block-size", "1", "-o", str(out), "--no-progress"])
        assert r.exit_code == 0, r.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2]
    r = CliRunner().invoke(cli, ["filter", "--src", str(a), "--tgt", str(b), "--src-lang", "en", "--tgt-lang", "fr",
                                 "--no-model", "--workers", "0", "-o", str(tmp_path / "x.tsv")])
    assert r.exit_code == 2 and "auto" in r.output


def test_language_scores_do_not_depend_on_the_block():
    """The feature-major kernel gives each text the same score whatever block it falls in
    (features summed in increasing order per text), in both modes."""
    from bimine.filtering import langid
    from bimine.filtering._langid_kernel import class_probability

    texts = ["Le chat dort.", "The cat sleeps.", "", "ÉCOLE NORMALE", "Привет, мир", "猫在睡觉。", "x" * 300,
             "Norsk tekst på bokmål er fint", "Ово је српски текст"] * 3
    m = langid._model()
    cols = langid.language_columns("sr")
    fold_to = np.arange(m.n_classes, dtype=np.int64)
    for i, j in m.alias_pairs:
        fold_to[j] = i
    is_wanted = np.zeros(m.n_classes, dtype=np.bool_)
    is_wanted[cols] = True
    data, offsets = langid._encode_batch(texts)
    for pairwise in (False, True):
        runs = [class_probability(data, offsets, m.nextmove, m.rowbase, m.output, m.ptc, m.pc, m.n_classes,
                                  langid._source_columns(cols), fold_to, is_wanted, pairwise, block)
                for block in (1, 4, 7, 2048)]
        for r in runs[1:]:
            assert np.array_equal(r, runs[0])
        assert np.array_equal(runs[0], langid.language_scores(texts, "sr", pairwise))
