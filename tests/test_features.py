from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.text.features import FeatureConfig, Featurizer, normalize_text

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
