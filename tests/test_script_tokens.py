"""``features.marks_in_words`` (issue 56 §1): combining marks and ZWNJ/ZWJ stay inside their
word, zero-width spaces separate words. Off (every model trained so far), Python's ``\\w`` cuts
an abugida's words at each vowel sign and virama. One sentence per script, the tokens written
out by hand; the compiled featuriser against the NumPy reference; the shipped model unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bimine.text.features import FeatureConfig, Featurizer
from bimine.text.normalize import normalize_text

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
    assert sample_sentences(by_lang, 10, 0, marks=True) == ["नमस्ते दुनिया"]
    assert sample_sentences(by_lang, 10, 0) == ["नमस ् त े द ु न ि य ा"]
