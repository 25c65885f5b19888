"""``features.marks_in_words`` (issue 56 §1): combining marks and ZWNJ/ZWJ stay inside their
word, zero-width spaces separate words. Off (every model trained so far), Python's ``\\w`` cuts
an abugida's words at each vowel sign and virama. One sentence per script, the tokens written
out by hand; the compiled featuriser against the NumPy reference; the shipped model unchanged."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bimine.text.features import FeatureConfig, Featurizer
from bimine.text.normalize import TextNorm, normalize_text

ROOT = Path(__file__).resolve().parents[1]

# (script, sentence, tokens with marks kept in words, tokens as models trained so far see them)
CASES = [
    ("Devanagari", "नमस्ते दुनिया", "नमस्ते दुनिया", "नमस ् त े द ु न ि य ा"),
    ("Bengali", "আমি ভাত খাই", "আমি ভাত খাই", "আম ি ভ া ত খ া ই"),
    ("Tamil", "வணக்கம்", "வணக்கம்", "வணக ் கம ்"),
    ("Myanmar", "မြန်မာ", "မြန်မာ", "မ ြ န ် မ ာ"),
    ("Thai", "สวัสดี", "สวัสดี", "สว ั สด ี"),
    ("Khmer", "ខ្មែរ", "ខ្មែរ", "ខ ្ ម ែ រ"),
    ("Lao, zero-width space between words", "ສະບາຍ\u200bດີ", "ສະບາຍ ດີ", "ສະບາຍ \u200b ດ ີ"),
    ("Sinhala with ZWJ (yansaya)", "ශ්\u200dරී", "ශ්\u200dරී", "ශ ් \u200d ර ී"),
    ("Latin, unchanged", "Le chat dort.", "le chat dort .", "le chat dort ."),
]


@pytest.mark.parametrize("script,sentence,kept,cut", CASES, ids=[c[0] for c in CASES])
def test_tokens_by_hand(script, sentence, kept, cut):
    assert normalize_text(sentence, marks=True) == kept
    assert normalize_text(sentence) == cut


@pytest.mark.parametrize("by_script", [False, True])
def test_compiled_featuriser_equals_the_reference_with_marks_kept(by_script):
    pytest.importorskip("numba")
    cfg = FeatureConfig(buckets=1 << 16, marks_in_words=True, by_script=by_script)
    sentences = [c[1] for c in CASES] + ["", "ಕನ್ನಡ ಭಾಷೆ", "ཀུན་ཏུ་བཟང་པོ", "mixed नमस्ते text\u200bhere"]
    a_ids, a_off = Featurizer(cfg, backend="numba").featurize(sentences, "hi")
    b_ids, b_off = Featurizer(cfg, backend="numpy").featurize(sentences, "hi")
    np.testing.assert_array_equal(a_off, b_off)
    np.testing.assert_array_equal(a_ids, b_ids)
    # and the switch changes the features of an abugida's sentence, not of a Latin one
    old = Featurizer(FeatureConfig(buckets=1 << 16, by_script=by_script), backend="numba")
    o_ids, o_off = old.featurize(sentences, "hi")
    assert not np.array_equal(a_ids[a_off[0]:a_off[1]], o_ids[o_off[0]:o_off[1]])  # Devanagari
    latin = len(CASES) - 1
    np.testing.assert_array_equal(a_ids[a_off[latin]:a_off[latin + 1]], o_ids[o_off[latin]:o_off[latin + 1]])


def test_the_setting_is_off_unless_a_model_says_so():
    assert FeatureConfig().marks_in_words is False
    assert "marks_in_words" not in FeatureConfig().to_dict()  # model configs (and ids) read as before
    assert FeatureConfig.from_dict({"marks_in_words": True}).to_dict()["marks_in_words"] is True
    shipped = json.loads((ROOT / "bimine" / "models" / "default" / "config.json").read_text())
    assert shipped["model"]["features"]["marks_in_words"] is True  # issue 56's default keeps marks in words


def test_the_subword_sample_is_tokenised_as_the_model_will_be():
    from bimine.text.subwords import sample_sentences

    by_lang = {"hi": [["नमस्ते दुनिया"]]}
    assert sample_sentences(by_lang, 10, 0, TextNorm(marks=True)) == ["नमस्ते दुनिया"]
    assert sample_sentences(by_lang, 10, 0) == ["नमस ् त े द ु न ि य ा"]


# ``features.join_zero_width``: the zero-width spaces are dropped, so a Khmer or Lao sentence
# reads the same whether its source put U+200B between the words or not
JOINED = [
    ("Khmer, words separated", "ស្រុក\u200bខ្មែរ", "ស្រុកខ្មែរ"),
    ("Khmer, as NTREX writes it", "ស្រុកខ្មែរ", "ស្រុកខ្មែរ"),
    ("Lao, as NTREX writes it", "ສະບາຍ\u200bດີ", "ສະບາຍດີ"),
    ("byte-order mark inside a line", "ສະບາຍ\ufeffດີ ຫຼາຍ", "ສະບາຍດີ ຫຼາຍ"),
    ("Sinhala ZWJ stays", "ශ්\u200dරී", "ශ්\u200dරී"),
    ("Latin, unchanged", "Le chat\u200b dort.", "le chat dort ."),
]


def test_joined_khmer_has_the_same_features_with_and_without_zero_width_spaces():
    pytest.importorskip("numba")
    cfg = FeatureConfig(buckets=1 << 16, marks_in_words=True, join_zero_width=True, by_script=True)
    for backend in ("numba", "numpy"):
        f = Featurizer(cfg, backend=backend)
        a_ids, a_off = f.featurize(["ស្រុក\u200bខ្មែរ", "ສະບາຍ\u200bດີ"], "km")
        b_ids, b_off = f.featurize(["ស្រុកខ្មែរ", "ສະບາຍດີ"], "km")
        np.testing.assert_array_equal(a_off, b_off)
        np.testing.assert_array_equal(a_ids, b_ids)
    # without the switch the two spellings differ (the zero-width space separates two words)
    f = Featurizer(FeatureConfig(buckets=1 << 16, marks_in_words=True, by_script=True), backend="numba")
    a_ids, a_off = f.featurize(["ស្រុក\u200bខ្មែរ"], "km")
    b_ids, b_off = f.featurize(["ស្រុកខ្មែរ"], "km")
    assert not np.array_equal(np.sort(a_ids), np.sort(b_ids))


def test_compiled_featuriser_equals_the_reference_with_zero_width_joined():
    pytest.importorskip("numba")
    cfg = FeatureConfig(buckets=1 << 16, marks_in_words=True, join_zero_width=True, by_script=True)
    sentences = [c[1] for c in JOINED] + [c[1] for c in CASES] + [""]
    a_ids, a_off = Featurizer(cfg, backend="numba").featurize(sentences, "km")
    b_ids, b_off = Featurizer(cfg, backend="numpy").featurize(sentences, "km")
    np.testing.assert_array_equal(a_off, b_off)
    np.testing.assert_array_equal(a_ids, b_ids)


def test_join_zero_width_is_off_unless_a_model_says_so():
    from bimine.text.subwords import sample_sentences

    assert "join_zero_width" not in FeatureConfig(marks_in_words=True).to_dict()  # model ids read as before
    assert FeatureConfig.from_dict({"marks_in_words": True, "join_zero_width": True}).to_dict()["join_zero_width"]
    assert sample_sentences({"km": [["ស្រុក\u200bខ្មែរ"]]}, 10, 0, TextNorm(marks=True, join_zero_width=True)) == ["ស្រុកខ្មែរ"]
    assert sample_sentences({"km": [["ស្រុក\u200bខ្មែរ"]]}, 10, 0, TextNorm(marks=True)) == ["ស្រុក ខ្មែរ"]


def test_a_classifier_on_pieces_cuts_as_its_encoder_with_zero_width_joined():
    """The BiGRU's piece tokenizer follows the encoder's ``join_zero_width`` (read back from the
    classifier's config; absent, as in every classifier so far, the spaces separate words)."""
    from safetensors import safe_open

    from bimine.encoders import load_encoder
    from bimine.encoders.base import model_folder
    from bimine.scoring.classifiers import tokenizer
    from bimine.text.subwords import TENSOR

    enc = load_encoder("default")
    with safe_open(str(model_folder(enc) / "model.safetensors"), "np") as f:
        model = f.get_tensor(TENSOR).tobytes()
    conf = {"tokens": "pieces", "buckets": enc.config.features.subwords + 1, "max_tokens": 64,
            "lowercase": True, "marks_in_words": True}
    joined = tokenizer({**conf, "join_zero_width": True}, model)
    assert joined.ids("ស្រុក\u200bខ្មែរ") == joined.ids("ស្រុកខ្មែរ")
    spaced = tokenizer(conf, model)
    assert spaced.ids("ស្រុក\u200bខ្មែរ") == spaced.ids("ស្រុក ខ្មែរ") != spaced.ids("ស្រុកខ្មែរ")
    folded = tokenizer({**conf, "fold_variants": True}, model)
    assert folded.ids("boʻldi") == folded.ids("bo'ldi") and spaced.ids("boʻldi") != spaced.ids("bo'ldi")


def test_short_syllable_ngrams_give_hangul_and_ethiopic_the_no_space_lengths():
    """With ``short_syllable_ngrams`` a Korean or Amharic word's n-grams take the lengths of a
    script written without spaces (1-2 here), a Latin word's stay 3-4. Reference: the
    language-coded featuriser (``by_script: false``), which gives a whole sentence the lengths of
    its language (``ja``: no spaces, ``en``: spaces)."""
    pytest.importorskip("numba")
    from bimine.errors import ConfigError

    base = dict(buckets=1 << 20, word_ngrams=(1,), char_ngrams=(3, 4), nospace_char_ngrams=(1, 2),
                marks_in_words=True, cross_word_chars=False)
    short = FeatureConfig(**base, by_script=True, short_syllable_ngrams=True)
    by_lang = FeatureConfig(**base)
    for backend in ("numba", "numpy"):
        f, ref = Featurizer(short, backend=backend), Featurizer(by_lang, backend=backend)
        for text, lang in (("학교", "ja"), ("ሰላም", "ja"), ("chat", "en")):
            got, want = f.featurize([text], "xx")[0], ref.featurize([text], lang)[0]
            np.testing.assert_array_equal(np.sort(got), np.sort(want))
    # " 학교 ": 1-2-grams "학", "교", "학교", "교 " and a leading " 학" where 3-4-grams gave three
    assert len(Featurizer(short).featurize(["학교"], "ko")[0]) == 1 + 5
    assert len(Featurizer(replace(short, short_syllable_ngrams=False)).featurize(["학교"], "ko")[0]) == 1 + 3
    assert "short_syllable_ngrams" not in replace(short, short_syllable_ngrams=False).to_dict()
    with pytest.raises(ConfigError, match="by_script"):
        FeatureConfig(short_syllable_ngrams=True)


VARIANTS = [
    ("Uzbek, U+02BB as NTREX writes it", "Boʻldi", "bo ' ldi"),
    ("Uzbek, U+2018 as most training text", "bo‘ldi", "bo ' ldi"),
    ("Ukrainian, modifier-letter apostrophe", "пʼять", "п ' ять"),
    ("English, curly apostrophe", "don’t", "don ' t"),
    ("double quotes of four kinds", "“a” „b“ «c» \"d\"", "\" a \" \" b \" \" c \" \" d \""),
    ("Khmer ឲ្យ as NTREX's ឱ្យ", "ធ្វើឲ្យ", "ធ្វើឱ្យ"),
    ("Lao ຣ as the reformed spelling's ລ", "ອາເມຣິກາ", "ອາເມລິກາ"),
    ("Urdu, Arabic kaf and yeh as keheh and Farsi yeh", "\u0643\u064a\u0627", "\u06a9\u06cc\u0627"),
    ("Hebrew maqaf as a hyphen", "בית\u05beספר", "בית - ספר"),
    ("Malayalam chillu n, l, rr written with virama + ZWJ", "അവന\u0d4d\u200d കല\u0d4d\u200d ര\u0d4d\u200d",
     "അവ\u0d7b ക\u0d7d \u0d7c"),
    ("Malayalam atomic chillus unchanged", "അവ\u0d7b", "അവ\u0d7b"),
]


FOLDS = [(*c, "join_zero_width") for c in JOINED] + [(*c, "fold_variants") for c in VARIANTS]


@pytest.mark.parametrize("case,sentence,folded,setting", FOLDS, ids=[c[0] for c in FOLDS])
def test_folds_by_hand(case, sentence, folded, setting):
    assert normalize_text(sentence, marks=True, **{setting: True}) == folded


def test_compiled_featuriser_equals_the_reference_with_variants_folded():
    pytest.importorskip("numba")
    cfg = FeatureConfig(buckets=1 << 16, marks_in_words=True, join_zero_width=True, fold_variants=True, by_script=True)
    sentences = [c[1] for c in VARIANTS] + [c[1] for c in JOINED] + ["plain ascii don't", ""]
    a_ids, a_off = Featurizer(cfg, backend="numba").featurize(sentences, "uz")
    b_ids, b_off = Featurizer(cfg, backend="numpy").featurize(sentences, "uz")
    np.testing.assert_array_equal(a_off, b_off)
    np.testing.assert_array_equal(a_ids, b_ids)
    f = Featurizer(cfg, backend="numba")
    np.testing.assert_array_equal(f.featurize(["boʻldi"], "uz")[0], f.featurize(["bo'ldi"], "uz")[0])
    assert "fold_variants" not in FeatureConfig().to_dict()


def test_settings_are_checked():
    from bimine.encoders.transformer import TransformerConfig
    from bimine.errors import ConfigError

    with pytest.raises(ConfigError, match="fold_variants must be true or false"):
        FeatureConfig(fold_variants="false")  # a string would count as true
    with pytest.raises(ConfigError, match="nospace_char_ngrams set"):
        FeatureConfig(by_script=True, short_syllable_ngrams=True, nospace_char_ngrams=None)  # no n-grams at all
    tf = TransformerConfig().features
    with pytest.raises(ValueError, match="join_zero_width is a DAN option"):
        TransformerConfig(features=replace(tf, join_zero_width=True))


def test_training_text_ids_follow_the_folds():
    """Two texts that differ only in what the featuriser folds have the same features, so they
    share an id: never each other's in-batch or hard negatives."""
    from bimine.training.data import _text_ids

    texts = ["boʻldi", "bo‘ldi", "ស្រុក\u200bខ្មែរ", "ស្រុកខ្មែរ", "other"]
    assert _text_ids(texts).tolist() == [0, 1, 2, 3, 4]
    f = Featurizer(FeatureConfig(buckets=1 << 10, marks_in_words=True, join_zero_width=True, fold_variants=True))
    assert _text_ids(texts, f).tolist() == [0, 0, 1, 1, 2]


def test_the_mark_scan_of_three_planes_finds_every_mark():
    """``MARK_PLANES`` leaves out the planes Unicode keeps for ideographs, unassigned or private:
    on this Python's Unicode data a scan of all 17 planes finds no mark beyond them."""
    from bimine.text.normalize import mark_code_points

    every = mark_code_points((range(0x110000),))
    assert mark_code_points() == every
    assert 0x0301 in every and 0x200D in every and 0xE0100 in every  # acute, ZWJ, a variation selector
    assert 0x0041 not in every
