"""The shipped default model is multilingual (issue 9): it loads, needs no language code, and
finds translations of English news sentences in ten scripts (NTREX-128 slices of the shared
data, skipped where it is absent)."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from bimine import load_encoder
from bimine.encoders.base import default_model_path

# one sentence per script: Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari, Han, kana, Hangul, Thai
TEN = {
    "fra": "Le président a rencontré les ministres à Paris.",
    "rus": "Президент встретился с министрами в Москве.",
    "ell": "Ο πρόεδρος συναντήθηκε με τους υπουργούς στην Αθήνα.",
    "arb": "التقى الرئيس بالوزراء في القاهرة.",
    "heb": "הנשיא נפגש עם השרים בירושלים.",
    "hin": "राष्ट्रपति ने दिल्ली में मंत्रियों से मुलाकात की।",
    "zho_Hans": "总统在北京会见了部长们。",
    "jpn": "大統領は東京で大臣たちと会談した。",
    "kor": "대통령은 서울에서 장관들을 만났다.",
    "tha": "ประธานาธิบดีพบกับรัฐมนตรีที่กรุงเทพฯ",
}


@pytest.fixture(scope="module")
def enc():
    return load_encoder("default")


def test_default_needs_no_language(enc):
    assert not enc.uses_language
    cfg = enc.config.features
    assert cfg.by_script and enc.config.shared
    sents = list(TEN.values())
    a = enc.encode(sents, "en")
    b = enc.encode(sents, "ja")  # the code is not used: same vectors
    np.testing.assert_array_equal(a, b)
    assert a.shape == (10, enc.dim) and np.all(np.isfinite(a))
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    # ten different sentences, ten different vectors
    s = a @ a.T
    assert (s[~np.eye(10, dtype=bool)] < 0.999).all()


def test_training_record_lists_100_plus_languages():
    import json

    meta = json.loads((default_model_path() / "config.json").read_text())
    langs = meta["training"]["languages"]
    assert sum(1 for n in langs.values() if n >= 1000) >= 100
    for code in ("fr", "de", "es", "ru", "zh", "ja", "ar", "hi", "ko", "th"):
        assert langs.get(code, 0) >= 10_000, code


def _read(path, n):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def test_finds_news_translations_in_ten_scripts(enc, shared_data):
    """200 NTREX sentences per language: the nearest English sentence by cosine is the
    translation for at least 40 % of them in every script (chance: 0.5 %; the model before
    issue 9 found 1-4 % outside the Latin script, 94 % in French)."""
    folder = shared_data / "dev" / "ntrex128" / "NTREX-128"
    if not folder.is_dir():
        pytest.skip("no NTREX-128 in the shared data")
    n = 200
    en = enc.encode(_read(os.path.join(folder, "newstest2019-src.eng.txt.gz"), n), "en")
    for code in TEN:
        xx = enc.encode(_read(os.path.join(folder, f"newstest2019-ref.{code}.txt.gz"), n))  # the model reads the script
        p1 = float(np.mean((xx @ en.T).argmax(axis=1) == np.arange(n)))
        assert p1 >= 0.4, (code, p1)
