"""Romanised extra features (FeatureConfig.translit): the table, the extra words, the merged
features against per-sentence references, and the table travelling with a model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.text.features import FeatureConfig, Featurizer
from bimine.text.translit import Romanizer, build_table, table_digest, table_from_tensors, table_to_tensors

pytest.importorskip("anyascii")

CFG = FeatureConfig(buckets=1 << 16, by_script=True, cross_word_chars=False, translit=True)
PLAIN = replace(CFG, translit=False)
# what a romanised word contributes: its unigram and Latin character n-grams, no bigrams
EXTRA = replace(CFG, translit=False, word_ngrams=(1,))
BATCH = ["Дональд Трамп и Apple.", "The cat sleeps.", "", "Ο πρόεδρος Τραμπ", "特朗普总统", "Beograd i Београд",
         "۳ ١٠٠ كتاب", "डोनाल्ड ट्रम्प", "도널드 트럼프", "é à ü"]


@pytest.fixture(scope="module")
def table():
    return build_table()


def test_table_covers_non_latin_scripts_with_spaces_only(table):
    assert table[ord("п")] == "p" and table[ord("Ж")] == "zh" and table[ord("λ")] == "l"
    assert table[ord("٣")] == "3" and table[ord("۳")] == "3"  # Arabic-Indic and Persian digits
    assert table[ord("ب")] == "b" and table[ord("ש")] == "s"
    assert table[0x064E] == "a"  # Arabic fatha: a vowel mark
    for ch in "कষਕકକகకಕകක":  # Brahmic scripts, Devanagari to Sinhala: not romanised
        assert ord(ch) not in table
    for ch in "aé€中ドไ ,.-1":  # Latin, symbols, scripts without spaces (Han, kana, Thai), ASCII
        assert ord(ch) not in table
    assert all(v.isascii() and (v.isalnum() or v == "") and v == v.lower() for v in table.values())


def test_extra_words_are_the_changed_words_romanised(table):
    r = Romanizer(table)
    got = r.extra_texts(["дональд трамп и apple .", "the cat", "ο πρόεδρος", "特朗普", "٣ كتاب", "ट्रम्प", "é",
                         "트럼프", "\u0643\u064e"])
    assert got == ["donald tramp i", "", "o proedros", "", "3 ktb", "", "", "teuleompeu", "ka"]


def test_tensors_round_trip(table):
    t = table_to_tensors(table)
    assert table_from_tensors(t) == table
    assert table_from_tensors({}) is None
    bad = dict(t, **{"translit.offsets": t["translit.offsets"][:-1]})
    with pytest.raises(ConfigError, match="do not fit"):
        table_from_tensors(bad)
    assert table_digest(table) != table_digest({**table, ord("п"): "b"})


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_features_are_own_plus_romanised(table, backend):
    f = Featurizer(CFG, backend=backend, translit_table=table)
    plain = Featurizer(PLAIN, backend=backend)
    extra = Featurizer(EXTRA, backend=backend)
    rom = Romanizer(table)
    ids, off = f.featurize(BATCH, "xx")
    assert len(off) == len(BATCH) + 1
    from bimine.text.normalize import normalize_text

    for i, s in enumerate(BATCH):
        own, _ = plain.featurize([s], "xx")
        words = rom.extra_texts([normalize_text(s)])[0]
        more = extra.featurize([words], "en")[0] if words else np.zeros(0, dtype=np.int64)
        np.testing.assert_array_equal(ids[off[i] : off[i + 1]], np.concatenate([own, more]))
    # sentences without romanised words keep exactly their features
    for s in ("The cat sleeps.", "", "特朗普总统", "é à ü"):
        np.testing.assert_array_equal(f.featurize([s], "xx")[0], plain.featurize([s], "xx")[0])


def test_backends_agree_and_scripts_meet(table):
    a = Featurizer(CFG, backend="numba", translit_table=table).featurize(BATCH, "xx")
    b = Featurizer(CFG, backend="numpy", translit_table=table).featurize(BATCH, "xx")
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    f = Featurizer(CFG, translit_table=table)
    cyr = set(f.featurize(["Београд"], "sr")[0].tolist())
    lat = set(f.featurize(["Beograd"], "sr")[0].tolist())
    assert lat <= cyr  # the Cyrillic word carries every feature of its Latin spelling
    off = set(Featurizer(PLAIN).featurize(["Београд"], "sr")[0].tolist())
    assert not (lat & off)  # without translit the two spellings share nothing


def test_model_stores_its_table(tmp_path, table):
    torch = pytest.importorskip("torch")
    from bimine import load_encoder
    from bimine.encoders.dan import DANConfig, DANEncoder
    from bimine.training.model import TorchDAN
    from bimine.training.trainer import TrainConfig, export_model

    torch.manual_seed(0)
    mcfg = DANConfig(features=replace(CFG, buckets=4096), embed_dim=16, hidden=(16,), output_dim=8)
    model = TorchDAN(mcfg).eval()
    small = {ord("б"): "b", ord("г"): "g", ord("е"): "e", ord("о"): "o", ord("р"): "r", ord("д"): "d"}
    export_model(model, TrainConfig(model=mcfg), tmp_path / "m", {"note": "test"}, translit_table=small)
    enc = load_encoder(tmp_path / "m")
    assert enc.featurizer.romanizer.table == small  # the run's table, not the installed anyascii's
    ids, off = enc.featurizer.featurize(["Београд"], "sr")
    with torch.no_grad():
        want = torch.nn.functional.normalize(model(ids, off, "sr"), dim=1).numpy()
    np.testing.assert_allclose(enc.encode(["Београд"], "sr"), want, atol=0.1)
    with pytest.raises(ConfigError, match="no translit"):
        DANEncoder(mcfg, model.export_weights("none"))


def test_fingerprint_records_the_table(table):
    from bimine.training.trainer import TrainConfig, run_fingerprint

    cfg = TrainConfig()
    a = run_fingerprint(cfg, [], table)["settings"]["translit_table"]
    b = run_fingerprint(cfg, [], {**table, ord("п"): "b"})["settings"]["translit_table"]
    assert a != b and "translit_table" not in run_fingerprint(cfg, [])["settings"]


def test_sentences_skipped_by_may_romanize_have_no_romanised_words(table):
    """may_romanize is only a shortcut: every sentence it skips has no extra words, and the
    sentences it keeps give the same extra words; characters that reach the table only
    through NFKC or lower-casing (ohm and micro signs, compatibility jamo, fullwidth or
    circled forms) are kept."""
    from bimine.text.normalize import normalize_text

    rom = Romanizer(table)
    sents = BATCH + ["Ω = 5 \u2126", "10 \u00b5m", "\u3131\u314f", "ＡＢＣ", "\u24b6 circled", "café crème brûlée",
                     "Straße", "ǅemal", "İstanbul", "\ufb01n", "Κ", "naïve", "x\u0301y", "\u2126"]
    may = rom.may_romanize(sents)
    want = rom.extra_texts([normalize_text(s) for s in sents])
    for s, m, w in zip(sents, may, want):
        assert m or w == "", s
    assert may[sents.index("\u2126")] and may[sents.index("10 \u00b5m")] and may[sents.index("\u3131\u314f")]
    assert not any(may[sents.index(s)] for s in ("café crème brûlée", "Straße", "naïve", "The cat sleeps.", ""))
    f = Featurizer(CFG, translit_table=table)
    ids, off = f.featurize(sents, "xx")
    for i, s in enumerate(sents):
        np.testing.assert_array_equal(ids[off[i] : off[i + 1]], f.featurize([s, "Трамп"], "xx")[0][: off[i + 1] - off[i]])


def test_may_romanize_from_several_threads(table):
    """Encoders featurise from several threads at once: the shared classification tables
    give every thread the single-thread answer."""
    from concurrent.futures import ThreadPoolExecutor

    batches = [[f"{w} {i}" for i in range(200)] for w in ("Трамп", "café", "Ω Ωμέγα", "도널드", "naïve", "ｱ")] * 4
    want = [Romanizer(table).may_romanize(b).tolist() for b in batches]
    shared = Romanizer(table)
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda b: shared.may_romanize(b).tolist(), batches))
    assert got == want
