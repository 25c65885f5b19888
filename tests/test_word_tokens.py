"""Word tokens (``bimine.text.tokens``) of the BiGRU, the IBM aligner and the divergence models:
version 2 keeps combining marks inside their word (before it, a Hindi word was cut at each vowel
sign and the word tokens kept only its bare consonants). Each script's tokens written out by
hand; version 1 is the tokeniser as it was, for the models made with it; a model file says which
version it reads, and one without a version reads version 1."""

from __future__ import annotations

import json
import random
import re
import zlib

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from bimine.errors import ConfigError
from bimine.scoring.ibm import WordAligner, words
from bimine.text.normalize import NO_SPACE_RANGES
from bimine.text.tokens import TOKENS_VERSION, tokenize

# (script, sentence, version 2 tokens, version 1 tokens), the tokens separated by spaces
CASES = [
    ("Devanagari", "हिंदी भाषा में", "हिंदी भाषा में", "ह ि ं द ी भ ा ष ा म े ं"),
    ("Bengali", "আমি ভাত খাই", "আমি ভাত খাই", "আম ি ভ া ত খ া ই"),
    ("Tamil", "தமிழ் மொழி", "தமிழ் மொழி", "தம ி ழ ் ம ொ ழ ி"),
    ("Malayalam", "മലയാളം ഭാഷ", "മലയാളം ഭാഷ", "മലയ ാ ള ം ഭ ാ ഷ"),
    ("Telugu", "తెలుగు", "తెలుగు", "త ె ల ు గ ు"),
    ("Sinhala with ZWJ", "ශ්\u200dරී", "ශ්\u200dරී", "ශ ් \u200d ර ී"),
    ("Persian with ZWNJ", "می\u200cخواهم", "می\u200cخواهم", "می \u200c خواهم"),
    ("Arabic with vowel marks", "كَتَبَ", "كَتَبَ", "ك َ ت َ ب َ"),
    # scripts without spaces: a character and the marks after it
    ("Thai", "สวัสดี", "ส วั ส ดี", "ส ว ั ส ด ี"),
    ("Myanmar", "မြန်မာ", "မြ န် မာ", "မ ြ န ် မ ာ"),
    ("Khmer", "ខ្មែរ", "ខ្ មែ រ", "ខ ្ ម ែ រ"),
    ("Latin, decomposed accents", "e\u0301te\u0301", "e\u0301te\u0301", "e \u0301 te \u0301"),
    ("Latin, composed", "Été, déjà!", "été , déjà !", "été , déjà !"),
    ("Han and Latin", "我们去iPhone店", "我 们 去 iphone 店", "我 们 去 iphone 店"),
    ("Ethiopic (no marks)", "አማርኛ ቋንቋ", "አማርኛ ቋንቋ", "አማርኛ ቋንቋ"),
]


@pytest.mark.parametrize("script,sentence,v2,v1", CASES, ids=[c[0] for c in CASES])
def test_tokens_by_hand(script, sentence, v2, v1):
    assert tokenize(sentence) == v2.split(" ")
    assert tokenize(sentence, 1) == v1.split(" ")


def test_word_tokens_keep_whole_words():
    assert words("हिंदी भाषा में, अच्छा!") == ["हिंदी", "भाषा", "में", "अच्छा"]
    # version 1 dropped every vowel sign: only bare consonants were left as "words"
    assert words("हिंदी भाषा में, अच्छा!", version=1) == ["ह", "द", "भ", "ष", "म", "अच", "छ"]
    assert words("தமிழ் மொழி", version=1) == ["தம", "ழ", "ம", "ழ"]


_OLD_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_OLD_NO_SPACE = re.compile("([" + "".join(f"{chr(a)}-{chr(b)}" for a, b in NO_SPACE_RANGES) + "])")


def _tokenize_before_version_2(s: str) -> list[str]:
    """The tokeniser as it was before versions (what models without one were trained on)."""
    s = s.lower()
    if not s.isascii():
        s = _OLD_NO_SPACE.sub(r" \1 ", s)
    return _OLD_TOKEN_RE.findall(s)


def test_version_1_is_the_tokeniser_models_without_a_version_were_trained_with():
    rng = random.Random(0)
    pool = "".join(c[1] for c in CASES) + "abc XYZ 123 .,;!? \t\u200b\u0301\u093f\u0e31" + "".join(
        chr(c) for c in range(0x0900, 0x0980))
    texts = [c[1] for c in CASES] + ["".join(rng.choice(pool) for _ in range(rng.randint(0, 40))) for _ in range(2000)]
    texts += ["".join(chr(rng.randint(0x20, 0x2FFFF)) for _ in range(30)) for _ in range(500)]
    for t in texts:
        assert tokenize(t, 1) == _tokenize_before_version_2(t), t


def test_version_2_differs_only_where_marks_are():
    """Text without a combining mark or ZWNJ/ZWJ gets the same tokens in both versions, so
    every model reads it as before."""
    for t in ["The cat sleeps.", "Été, déjà!", "我们去iPhone店", "Привет, мир", "አማርኛ ቋንቋ", "שלום עולם"]:
        assert tokenize(t) == tokenize(t, 1)


HI = ["हिंदी भाषा", "अच्छा दिन", "हिंदी दिन", "अच्छा भाषा", "बड़ा दिन", "बड़ा भाषा"]
EN = ["hindi language", "good day", "hindi day", "good language", "big day", "big language"]


def _edit_meta(path, key: str, edit) -> dict:
    """Rewrite the JSON metadata entry ``key`` of a safetensors file with ``edit`` (a function
    that changes the dict in place), the arrays kept; returns the edited dict."""
    with safe_open(str(path), "numpy") as f:
        meta = dict(f.metadata())
    d = json.loads(meta[key])
    edit(d)
    meta[key] = json.dumps(d, ensure_ascii=False)
    save_file(load_file(str(path)), str(path), metadata=meta)
    return d


def test_a_new_aligner_has_whole_hindi_words_and_records_its_version(tmp_path):
    from bimine.training.aligner import train_aligner

    al = train_aligner(EN * 3, HI * 3, model=2, iterations=5, src_lang="en", tgt_lang="hi")
    assert al.token_version == TOKENS_VERSION == 2
    assert {"हिंदी", "भाषा", "अच्छा", "बड़ा"} <= set(al.e2f.tgt_vocab.tokens)
    assert ("hindi", "हिंदी") in al.dictionary() and ("good", "अच्छा") in al.dictionary()
    al.save(tmp_path / "al.safetensors")
    assert WordAligner.load(tmp_path / "al.safetensors").token_version == 2


def test_an_aligner_file_without_a_version_reads_text_as_it_was_trained(tmp_path, monkeypatch):
    import bimine.training.aligner as aligner_mod

    monkeypatch.setattr(aligner_mod, "TOKENS_VERSION", 1)  # an aligner as bimine made it before versions
    old = aligner_mod.train_aligner(EN * 3, HI * 3, model=2, iterations=5, src_lang="en", tgt_lang="hi")
    assert old.token_version == 1 and "हिंदी" not in old.e2f.tgt_vocab.tokens
    p = tmp_path / "old.safetensors"
    old.save(p)
    assert "token_version" not in _edit_meta(p, "bimine_word_aligner", lambda m: m.pop("token_version"))
    back = WordAligner.load(p)
    assert back.token_version == 1
    vocab = set(back.e2f.tgt_vocab.tokens)
    # every word token it cuts from its own training text is in its vocabulary: nothing reads
    # as unknown; version 2 tokens would all be unknown to it
    assert all(w in vocab for s in HI for w in back.words(s))
    assert not any(w in vocab for s in HI for w in words(s))
    # its links on its own tokens: each Hindi fragment linked (version 2 words would be unknown)
    links = back.align([back.words(s) for s in EN], [back.words(s) for s in HI])
    assert all(len(x) > 0 for x in links)


def test_an_unknown_token_version_is_refused(tmp_path):
    from bimine.training.aligner import train_aligner

    p = tmp_path / "al.safetensors"
    train_aligner(EN, HI, model=1, iterations=1).save(p)
    _edit_meta(p, "bimine_word_aligner", lambda m: m.update(token_version=9))
    with pytest.raises(ConfigError, match="token version 9"):
        WordAligner.load(p)


def test_the_bigru_hasher_reads_its_files_version():
    from bimine.scoring.classifiers import TokenHasher, tokenizer

    conf = {"tokens": "hashed", "buckets": 1000, "max_tokens": 64}
    old, new = tokenizer(conf), tokenizer({**conf, "token_version": 2})
    assert old.version == 1 and new.version == 2
    s = "हिंदी भाषा"
    assert len(old.ids(s)) == 9 and len(new.ids(s)) == 2  # ह ि ं द ी भ ा ष ा against the two words
    assert new.ids(s) == [zlib.crc32(w.encode()) % 999 + 1 for w in ("हिंदी", "भाषा")]
    assert old.ids("The cat.") == new.ids("The cat.")
    with pytest.raises(TypeError):
        TokenHasher(1000, 64)  # no default version: a caller must say which
    with pytest.raises(ConfigError, match="token version 3"):
        tokenizer({**conf, "token_version": 3})


def test_a_divergence_model_records_the_version_and_an_older_file_reads_version_1(tmp_path):
    from bimine.scoring.divergence import DivergenceModel
    from bimine.training.aligner import train_aligner
    from bimine.training.divergence import train_mm
    from bimine.training.divergence_data import build_examples

    al = train_aligner(EN * 3, HI * 3, model=2, iterations=5, src_lang="en", tgt_lang="hi")
    ex, _ = build_examples(EN * 4, HI * 4, al, ratio=2, seed=0)
    m = train_mm(ex, al, src_lang="en", tgt_lang="hi")
    assert m.config["token_version"] == 2 and m.token_version == 2
    p = tmp_path / "mm.safetensors"
    m.save(p)
    back = DivergenceModel.load(p)
    assert np.allclose(back.score(EN, HI, src_lang="en", tgt_lang="hi"), m.score(EN, HI, src_lang="en", tgt_lang="hi"))
    # a file written before versions: its config has none
    _edit_meta(p, "bimine_divergence", lambda d: d["config"].pop("token_version"))
    old = DivergenceModel.load(p)
    assert old.token_version == 1
    old._ensure_mm()
    assert old._aligner.token_version == 1
    # it reads Hindi as version 1: the features of bare consonants, unknown to its version-2 tables
    from bimine.scoring.divergence_features import feature_tokens

    assert feature_tokens(HI[0], old._aligner.token_version) == ["ह", "द", "भ", "ष"]
    assert not np.allclose(old.score(EN, HI, src_lang="en", tgt_lang="hi"), m.score(EN, HI, src_lang="en", tgt_lang="hi"))


def test_a_vdpwi_model_reads_words_of_its_version(monkeypatch):
    import bimine.scoring.divergence as dv

    seen = []
    monkeypatch.setattr(dv, "sentence_words", lambda s, mw, version: seen.append(version) or [])
    monkeypatch.setattr(dv.DivergenceModel, "_ensure_vdpwi", lambda self, enc: (None, None))
    monkeypatch.setattr(dv, "predict_pairs", lambda net, lengths, vectors_of, batch: np.zeros(len(lengths)))
    for config, want in (({}, 1), ({"token_version": 2}, 2)):
        m = dv.DivergenceModel("vdpwi", {"vdpwi": {"max_words": 48}, **config}, {}, {})
        m._score_vdpwi(["a b"], ["c d"], "en", "fr", object(), 8)
        assert seen[-1] == want


# ---------------------------------------------------------------- the rescorer's text features

def test_rescorer_text_features_count_whole_words_by_hand():
    import math

    from bimine.scoring.rescore import TEXT_FEATURES, _word_res, text_features

    hi, en = "हिंदी भाषा में", "in Hindi language"
    v2 = dict(zip(TEXT_FEATURES, text_features([hi], [en])[0]))
    v1 = dict(zip(TEXT_FEATURES, text_features([hi], [en], 1)[0]))
    assert v2["token_ratio"] == 0.0  # 3 words each
    assert v1["token_ratio"] == pytest.approx(abs(math.log(5 / 3)))  # ह द भ ष म against 3
    # the word-match features' words: whole words, each Han character alone, as before for Latin
    s = "हिंदी भाषा 我们 café_x"
    assert _word_res(2, s)[1].findall(s) == ["हिंदी", "भाषा", "我", "们", "café", "x"]
    assert _word_res(1, s)[1].findall(s) == ["ह", "द", "भ", "ष", "我", "们", "café", "x"]


def test_rescorer_word_features_read_whole_hindi_words():
    from bimine.scoring.rescore import WORD_FEATURES, word_features

    class Words:
        def __init__(self):
            self.seen = []

        def matrix(self, words, lang):
            self.seen += list(words)
            table = {"हिंदी": 0, "hindi": 0, "भाषा": 1, "language": 1}
            v = np.zeros((len(words), 2), np.float32)
            for n, w in enumerate(words):
                if w in table:
                    v[n, table[w]] = 1.0
            return v

    w = Words()
    got = dict(zip(WORD_FEATURES, word_features(["हिंदी भाषा"], ["Hindi language"], w, "hi", "en")[0]))
    assert got["matched_src"] == 1.0 and got["matched_tgt"] == 1.0
    assert {"हिंदी", "भाषा"} <= set(w.seen)
    old = dict(zip(WORD_FEATURES, word_features(["हिंदी भाषा"], ["Hindi language"], Words(), "hi", "en", version=1)[0]))
    assert old["matched_src"] == 0.0  # bare consonants match nothing


def test_a_rescorer_records_its_text_version_and_an_older_one_reads_version_1(tmp_path):
    from bimine.errors import InputError
    from bimine.scoring.rescore import FEATURES, TEXT_VERSION, Rescorer
    from bimine.training.rescorer import train_rescorer

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, len(FEATURES)))
    y = (x[:, 0] > 0).astype(int)
    r = train_rescorer(x, y, trees=5)
    assert r.meta["text_version"] == TEXT_VERSION == 2 and r.text_version == 2
    r.save(tmp_path / "r")
    assert Rescorer.load(tmp_path / "r").text_version == 2
    meta_file = tmp_path / "r" / "rescorer.json"
    meta = json.loads(meta_file.read_text())
    del meta["text_version"]
    meta_file.write_text(json.dumps(meta))
    assert Rescorer.load(tmp_path / "r").text_version == 1
    meta["text_version"] = 7
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(InputError, match="text version 7"):
        Rescorer.load(tmp_path / "r")


def test_rescoring_computes_the_features_of_the_rescorers_version(monkeypatch):
    import bimine.scoring.rescore as rs

    got = []
    monkeypatch.setattr(rs, "pair_features", lambda *a: got.append(a[-1]) or np.zeros((len(a[0]), len(rs.FEATURES))))

    class Booster:
        def predict(self, x):
            return np.zeros(len(x))

    class Enc:
        model_id = "dan-x"

    for meta, want in (({}, 1), ({"text_version": 2}, 2)):
        r = rs.Rescorer(Booster(), {"features": list(rs.FEATURES), **meta})
        rs.rescore_pairs(r, Enc(), ["हिंदी"], ["Hindi"], np.zeros((1, len(rs.KNN_FEATURES))), "hi", "en")
        assert got[-1] == want


def test_replace_divergences_take_words_with_marks():
    """The 'replace' hard divergence (004) swaps a word for a dictionary neighbour; a Hindi
    word's vowel signs are not letters to ``str.isalpha``, so no Hindi word was ever replaced."""
    from bimine.training.divergence_data import _replace, _replaceable

    assert _replaceable("भाषा") and _replaceable("अच्छा") and _replaceable("house")
    assert not _replaceable("दिन") and not _replaceable("x2y3z") and not _replaceable("\u093fभाषा")
    rng = np.random.default_rng(0)
    out = _replace("यह हिंदी भाषा है", rng, ["अच्छा"])
    assert out in ("यह अच्छा भाषा है", "यह हिंदी अच्छा है")


def test_checkpoints_are_keyed_by_the_token_version(monkeypatch):
    """A BiGRU or VDPWI run stopped under one token version is not resumed under another: the
    digest its checkpoint is checked against changes with the version."""
    import bimine.training.classifier as clf
    import bimine.training.divergence as dv
    from bimine.scoring.vdpwi import VDPWIConfig
    from bimine.training.divergence_data import Example

    cfg = clf.ClassifierTrainConfig(kind="bigru")
    pairs = (["a b"], ["c d"], (["e"], ["f"]))
    ex = [Example("a b", "c d", 1.0, "positive")]

    class Enc:
        model_id = "dan-x"

    now = clf._bigru_digest(cfg, *pairs), dv._examples_digest(ex, VDPWIConfig(), dv.VDPWITraining(), Enc(), "en", "fr")
    assert now == (clf._bigru_digest(cfg, *pairs),
                   dv._examples_digest(ex, VDPWIConfig(), dv.VDPWITraining(), Enc(), "en", "fr"))  # deterministic
    monkeypatch.setattr(clf, "TOKENS_VERSION", 1)
    monkeypatch.setattr(dv, "TOKENS_VERSION", 1)
    before = clf._bigru_digest(cfg, *pairs), dv._examples_digest(ex, VDPWIConfig(), dv.VDPWITraining(), Enc(), "en", "fr")
    assert before[0] != now[0] and before[1] != now[1]
