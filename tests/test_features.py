from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.text.features import FeatureConfig, Featurizer
from bimine.text.normalize import normalize_text

SENTS = ["Hello, world!", "", "Le chat est noir.", "chat", "Größe ＡＢＣ", "我爱你中国"]


def bags(ids, off):
    return [sorted(ids[off[i] : off[i + 1]].tolist()) for i in range(len(off) - 1)]


def test_deterministic_across_processes():
    code = (
        "import sys, json; from bimine.text.features import Featurizer, FeatureConfig;"
        f"ids, off = Featurizer(FeatureConfig()).featurize({SENTS!r}, 'fr');"
        "print(json.dumps([ids.tolist(), off.tolist()]))"
    )
    outs = set()
    for seed in ("0", "1", "12345"):
        env = {"PYTHONHASHSEED": seed, "PATH": ""}
        outs.add(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
            ).stdout
        )
    assert len(outs) == 1
    ids, off = Featurizer(FeatureConfig()).featurize(SENTS, "fr")
    import json

    assert json.loads(outs.pop()) == [ids.tolist(), off.tolist()]


def test_features_do_not_depend_on_batch_neighbours():
    f = Featurizer(FeatureConfig())
    alone = [bags(*f.featurize([s], "en"))[0] for s in SENTS]
    together = bags(*f.featurize(SENTS, "en"))
    assert alone == together


def test_counts_match_definition():
    cfg = FeatureConfig(buckets=1 << 30, word_ngrams=(1, 2), char_ngrams=(3, 5))
    ids, off = Featurizer(cfg).featurize(["ab cd"], "en")
    text = " ab cd "  # boundary spaces
    n_char = sum(len(text) - k + 1 for k in (3, 4, 5))
    assert off[1] == n_char + 2 + 1  # char n-grams + 2 words + 1 bigram
    # with 2**30 buckets collisions are unlikely: all char n-grams distinct here
    assert len(set(ids.tolist())) == len(ids)


def test_empty_sentence_has_no_features_and_ids_in_range():
    cfg = FeatureConfig(buckets=1000)
    ids, off = Featurizer(cfg).featurize(["", "  ", "x"], "en")
    assert off[1] == 0 and off[2] == 0 and off[3] > 0
    assert ids.min() >= 0 and ids.max() < 1000


def test_shared_ngrams_shared_ids_and_case_folding():
    f = Featurizer(FeatureConfig())
    ((a, b),) = [bags(*f.featurize(["Chat", "chat"], "fr"))]
    assert a == b


def test_nospace_script_uses_short_char_ngrams():
    cfg = FeatureConfig(buckets=1 << 30, word_ngrams=(), char_ngrams=(3, 5), nospace_char_ngrams=(1, 4))
    _, off_zh = Featurizer(cfg).featurize(["我爱你"], "zh")
    _, off_en = Featurizer(cfg).featurize(["我爱你"], "en")
    text = " 我爱你 "
    assert off_zh[1] == 3 + sum(len(text) - k + 1 for k in (2, 3, 4))  # 1-grams skip spaces
    assert off_en[1] == sum(len(text) - k + 1 for k in (3, 4, 5))


def test_normalize_text():
    assert normalize_text("Hello,  World!") == "hello , world !"
    assert normalize_text("ＡＢＣ") == "abc"


def test_bad_config():
    with pytest.raises(ConfigError):
        FeatureConfig(char_ngrams=(5, 3))
    with pytest.raises(ConfigError):
        FeatureConfig.from_dict({"bukets": 3})


def test_batch_throughput_is_linear_shape():
    f = Featurizer(FeatureConfig())
    ids, off = f.featurize(["a b c"] * 1000, "en")
    assert len(off) == 1001 and np.all(np.diff(off) == off[1])


def test_num_hashes_multiplies_features_and_keeps_the_first():
    one = Featurizer(FeatureConfig(num_hashes=1)).featurize(["le chat"], "fr")
    two = Featurizer(FeatureConfig(num_hashes=2)).featurize(["le chat"], "fr")
    assert two[1][1] == 2 * one[1][1]
    assert set(one[0].tolist()) <= set(two[0].tolist())


def test_char_ngrams_within_words():
    cfg = FeatureConfig(buckets=1 << 30, word_ngrams=(), char_ngrams=(3, 3), cross_word_chars=False)
    ids, off = Featurizer(cfg).featurize(["ab cd"], "en")
    # " ab cd ": 3-grams " ab", "ab ", "b c"(crosses), " cd", "cd " -> 4 kept
    assert off[1] == 4
    full = Featurizer(FeatureConfig(buckets=1 << 30, word_ngrams=(), char_ngrams=(3, 3))).featurize(["ab cd"], "en")
    assert full[1][1] == 5 and set(ids.tolist()) < set(full[0].tolist())


# --- compiled kernels (numba) against the NumPy reference and a plain-Python definition ---

from bimine.text.features import resolve_backend  # noqa: E402
from bimine.text.normalize import NO_SPACE_RANGES, TOKEN_RE  # noqa: E402

_B = 0x100000001B3
_GOLD = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1

# Scripts with and without spaces, accents precomposed and combining, case-sensitive
# lower-casing (final sigma, dotted I), compatibility forms (NFKC), every kind of space,
# emoji sequences, control characters, a 2 MB line (cut at max_chars) and a sentence that
# itself holds a newline (normalised line by line).
MULTI = [
    "Hello, world!",
    "",
    "   ",
    "\t \u3000\u00a0\u2028\x1c\x85 ",
    "Crème brûlée à la française, naïve café",
    "Cre\u0300me bru\u0302le\u0301e",
    "\u0301 starts with a combining accent",
    "Привет, мир! Как дела?",
    "مرحبا بالعالم، كيف حالك؟",
    "我爱你中国。今天天气很好！",
    "日本語のテキストです。ｶﾀｶﾅ ＡＢＣ１２３",
    "สวัสดีครับ ยินดีที่ได้รู้จัก",
    "ΟΔΟΣ ΣΑΣ. Σ ΑΣ! όσος",
    "İstanbul ǅemal ß ﬁne ﬀ",
    "\u1100\u1161\u11a8 \u1100",
    "\u1161 starts with a jamo vowel",
    "🙂 emoji 👍🏽 👩‍👩‍👧 🇫🇷 ❤️",
    "...!!!??,;:",
    "snake_case and kebab-case and 3.14159",
    "zero\u200bwidth\u200djoiner\ufe0f",
    "line one\nline two",
    "tabs\tand\rcarriage returns\x0bvertical",
    "x" * (2 << 20),
    "ab cd",
]

CONFIGS = [
    FeatureConfig(),
    FeatureConfig(buckets=524288, cross_word_chars=False),
    FeatureConfig(buckets=1000, num_hashes=2, word_ngrams=(2,)),
    FeatureConfig(buckets=4099, char_ngrams=(1, 8), nospace_char_ngrams=None, lowercase=False),
    FeatureConfig(buckets=1 << 20, word_ngrams=(), max_chars=7),
    FeatureConfig(buckets=524288, cross_word_chars=False, by_script=True),
    FeatureConfig(buckets=4099, nospace_char_ngrams=(2, 3), num_hashes=2, by_script=True),
    FeatureConfig(buckets=4099, char_ngrams=None, by_script=True),
]


def naive_featurize(s: str, cfg: FeatureConfig, lang: str, *, space_rule: str = "all") -> list[int]:
    """The features of one sentence from their definition, one n-gram at a time.

    ``space_rule="all"``: an n-gram made only of spaces is never a feature (this code);
    ``"unigram"``: only single spaces were dropped (the code before the fix).
    """
    from bimine.langs import uses_spaces

    t = " " + normalize_text(s[: cfg.max_chars], cfg.lowercase) + " "
    cps = [ord(ch) for ch in t]

    def poly(seq) -> int:
        h = 0
        for c in seq:
            h = (h * _B + c) & _M64
        return h

    def mix(z: int) -> int:
        z ^= z >> 30
        z = (z * 0xBF58476D1CE4E5B9) & _M64
        z ^= z >> 27
        z = (z * 0x94D049BB133111EB) & _M64
        return z ^ (z >> 31)

    def bucket(h: int, salt: int, r: int) -> int:
        return mix((h + (salt + 1000 * r) * _GOLD) & _M64) % cfg.buckets

    ids = []

    def no_space(cp: int) -> bool:
        return any(lo <= cp <= hi for lo, hi in NO_SPACE_RANGES)

    def lengths(a: int) -> tuple[int, int] | None:
        """The n-gram lengths allowed at position a (by script: of its first non-space character)."""
        if not cfg.by_script:
            return cfg.char_ngrams if uses_spaces(lang) else cfg.nospace_char_ngrams
        first = cps[a] if cps[a] != 32 or a + 1 >= len(cps) else cps[a + 1]
        return cfg.nospace_char_ngrams if no_space(first) else cfg.char_ngrams

    all_k = sorted({k for r in (cfg.char_ngrams, cfg.nospace_char_ngrams) if r for k in range(r[0], r[1] + 1)})
    if all_k:
        for k in all_k:
            for r in range(cfg.num_hashes):
                for a in range(len(cps) - k + 1):
                    rng = lengths(a)
                    if rng is None or not rng[0] <= k <= rng[1]:
                        continue
                    g = cps[a : a + k]
                    if not cfg.cross_word_chars and k > 2 and 32 in g[1:-1]:
                        continue
                    if all(c == 32 for c in g) and (space_rule == "all" or k == 1):
                        continue
                    ids.append(bucket(poly(g), 100 + k, r))
    words = [poly(map(ord, w)) for w in t.split(" ") if w]
    if 1 in cfg.word_ngrams:
        for r in range(cfg.num_hashes):
            ids += [bucket(w, 1, r) for w in words]
    if 2 in cfg.word_ngrams:
        for r in range(cfg.num_hashes):
            ids += [bucket((mix(a) * _B + b) & _M64, 2, r) for a, b in zip(words, words[1:])]
    return ids


def per_sentence(ids, off) -> list[list[int]]:
    return [ids[off[i] : off[i + 1]].tolist() for i in range(len(off) - 1)]


def test_backend_choice(monkeypatch):
    assert resolve_backend("numpy") == "numpy"
    monkeypatch.setenv("BIMINE_BACKEND", "numpy")
    assert Featurizer(FeatureConfig()).backend == "numpy"
    assert Featurizer(FeatureConfig(), backend="numba").backend == "numba"
    monkeypatch.setenv("BIMINE_BACKEND", "fast")
    with pytest.raises(ConfigError, match="BIMINE_BACKEND"):
        Featurizer(FeatureConfig())


@pytest.mark.parametrize("cfg", CONFIGS, ids=range(len(CONFIGS)))
@pytest.mark.parametrize("lang", ["en", "zh", "ja", "th"])
def test_compiled_features_equal_reference(cfg, lang):
    """Same ids in the same order for every sentence, and as the definition gives them."""
    got = Featurizer(cfg, backend="numba").featurize(MULTI, lang)
    ref = Featurizer(cfg, backend="numpy").featurize(MULTI, lang)
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_array_equal(got[0], ref[0])
    assert got[0].dtype == np.int64 and got[1].dtype == np.int64
    assert per_sentence(*got) == [naive_featurize(s, cfg, lang) for s in MULTI]


def test_by_script_features_ignore_the_language_code():
    """by_script: the same ids whatever language is passed; lengths follow each n-gram's script
    (Han gets single characters, Latin words inside the same sentence get 3-5-grams)."""
    cfg = FeatureConfig(buckets=1 << 22, cross_word_chars=False, by_script=True)
    f = Featurizer(cfg)
    want = f.featurize(MULTI, "en")
    for lang in ("zh", "th", "fr"):
        got = f.featurize(MULTI, lang)
        np.testing.assert_array_equal(got[0], want[0])
    zh_lang = Featurizer(FeatureConfig(buckets=1 << 22, cross_word_chars=False)).featurize(["中文 Firefox"], "zh")
    en_lang = Featurizer(FeatureConfig(buckets=1 << 22, cross_word_chars=False)).featurize(["中文 Firefox"], "en")
    mixed = f.featurize(["中文 Firefox"], None)
    got = set(mixed[0].tolist())
    # the Han single characters of the zh mode, the Latin 5-grams of the en mode, in one sentence
    assert set(zh_lang[0].tolist()) - set(en_lang[0].tolist()) & got
    assert {i for i in set(en_lang[0].tolist()) - set(zh_lang[0].tolist())} & got
    assert per_sentence(*mixed) == [naive_featurize("中文 Firefox", cfg, "en")]


def test_batch_normalisation_equals_line_by_line():
    """NFKC + lower-casing + tokenising the batch at once gives each line's normalize_text."""
    f = Featurizer(FeatureConfig(max_chars=10**7), backend="numba")
    c, starts = f.normalized_codepoints(MULTI[:-2])  # without the sentence holding a newline
    want = "\n".join(f" {normalize_text(s)} " for s in MULTI[:-2])
    assert c.tobytes().decode("utf-32-le") == want
    assert starts.tolist() == [0, *(i + 1 for i, ch in enumerate(want) if ch == "\n"), len(want) + 1]


def test_tokeniser_classes_cover_every_code_point():
    """Every code point (in runs of 61, so each meets many neighbours) is split like TOKEN_RE."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000 and c != 10]
    lines = ["".join(map(chr, cps[i : i + 61])) for i in range(0, len(cps), 61)]
    f = Featurizer(FeatureConfig(), backend="numba")
    for lower in (True, False):
        f = Featurizer(FeatureConfig(lowercase=lower), backend="numba")
        c, _ = f.normalized_codepoints(lines)
        want = "\n".join(" " + " ".join(TOKEN_RE.findall(_prepare(s, lower))) + " " for s in lines)
        assert c.tobytes().decode("utf-32-le") == want


def _prepare(s: str, lower: bool) -> str:
    import unicodedata

    s = s if s.isascii() else unicodedata.normalize("NFKC", s)
    return s.lower() if lower else s


def test_random_text_compiled_equals_reference():
    """Random sentences built from tricky pieces (combining marks, sigma, jamo, spaces, newlines)."""
    pieces = ["a", "Σ", "ς", "\u0301", "\u0327", "\u1100", "\u1161", "\u11a8", " ", "\u00a0", "\t", "\n", ".",
              "İ", "ﬁ", "ｶ", "ﾞ", "中", "ก", "\u0e31", "😀", "\u200d", "_", "9", "\u3000", "Å", "Ω", "ǅ", "\x85"]
    rng = np.random.default_rng(0)
    sents = ["".join(rng.choice(pieces, size=rng.integers(0, 12))) for _ in range(3000)]
    for lang in ("en", "zh"):
        for cfg in CONFIGS[:2]:
            got = Featurizer(cfg, backend="numba").featurize(sents, lang)
            ref = Featurizer(cfg, backend="numpy").featurize(sents, lang)
            np.testing.assert_array_equal(got[1], ref[1])
            np.testing.assert_array_equal(got[0], ref[0])


def test_shared_data_many_languages(shared_data):
    """First 100 verses of every Bible in the matrix (75 languages, many scripts)."""
    import gzip
    import itertools

    files = sorted((shared_data / "train/bible-sword/matrix").glob("*-*.txt.gz"))
    assert files
    lines = []
    for p in files:
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            lines += [s.rstrip("\n") for s in itertools.islice(fh, 100)]
    cfg = FeatureConfig(buckets=524288, cross_word_chars=False)
    for lang in ("en", "zh"):
        got = Featurizer(cfg, backend="numba").featurize(lines, lang)
        ref = Featurizer(cfg, backend="numpy").featurize(lines, lang)
        np.testing.assert_array_equal(got[1], ref[1])
        np.testing.assert_array_equal(got[0], ref[0])


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_empty_sentence_has_no_features_in_any_script(backend):
    """An n-gram of spaces only is never a feature, whatever its length (issue 8): an empty
    line in zh/ja/th ("  " with its boundary spaces) has no bigram of two spaces."""
    for lang in ("en", "zh", "ja", "th"):
        for s in ("", "   ", "\t\u3000"):
            _, off = Featurizer(FeatureConfig(), backend=backend).featurize([s, "x"], lang)
            assert off[1] == 0 and off[2] > 0, (lang, s)


def test_space_rule_changes_only_empty_sentences():
    """Against the rule before the fix (single spaces dropped, longer runs kept): every
    non-empty sentence keeps exactly its features; only empty ones lose the "  " bigram."""
    cfg = FeatureConfig()
    for lang in ("en", "zh"):
        got = per_sentence(*Featurizer(cfg).featurize(MULTI, lang))
        for s, ids in zip(MULTI, got):
            before = naive_featurize(s, cfg, lang, space_rule="unigram")
            if normalize_text(s[: cfg.max_chars]):
                assert ids == before, s[:40]
            else:
                assert ids == [] and (len(before) == 1) == (lang == "zh"), (s, lang)


def test_long_line_is_cut_at_max_chars():
    cfg = FeatureConfig(max_chars=300)
    long = "word " * 400_000  # 2 MB
    for backend in ("numba", "numpy"):
        f = Featurizer(cfg, backend=backend)
        a = per_sentence(*f.featurize([long], "en"))
        b = per_sentence(*f.featurize([long[:300]], "en"))
        assert a == b and len(a[0]) > 0
