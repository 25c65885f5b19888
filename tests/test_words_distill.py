"""Teacher vocabulary distillation (issue 43): the loss by hand, word lists, batches, training."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest
import torch
from conftest import make_tiny_model

from bimine.errors import ConfigError
from bimine.training.losses import word_distill_loss
from bimine.training.words import WordBatches, list_files, read_words


def test_word_distill_loss_by_hand():
    s = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    t = torch.tensor([[0.0, 2.0], [5.0, 0.0]])
    # pull term: row 0 (0.6, 0.8) vs (0, 1): 0.36 + 0.04 = 0.4; row 1 same direction: 0 -> mean 0.2
    pull = 0.2
    # ranking term, cosine, scale 10, margin 0.5: cos(s_i, t_j) = [[0.8, 0.6], [0, 1]]
    c = [[0.8, 0.6], [0.0, 1.0]]
    scale, margin = 10.0, 0.5

    def ce(row, i):  # cross entropy of scale * row (margin off the answer i)
        z = [scale * (v - (margin if j == i else 0.0)) for j, v in enumerate(row)]
        return -z[i] + math.log(sum(math.exp(x) for x in z))

    fwd = (ce(c[0], 0) + ce(c[1], 1)) / 2
    bwd = (ce([c[0][0], c[1][0]], 0) + ce([c[0][1], c[1][1]], 1)) / 2
    got = word_distill_loss(s, t, weight=2.0, rank_weight=0.5, scale=scale, margin=margin)
    assert float(got) == pytest.approx(2.0 * pull + 0.5 * (fwd + bwd), rel=1e-5)
    assert float(word_distill_loss(s, t, weight=1.0, rank_weight=0.0, scale=scale, margin=margin)) == \
        pytest.approx(pull)


def _gz(path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return path


def test_word_lists_by_folder_prefix_and_name(tmp_path):
    d = tmp_path / "vocab"
    d.mkdir()
    _gz(d / "fr.tsv.gz", ["maison\twordfreq\t1", "chat\twordfreq\t2", "maison\te5\t3", ""])
    _gz(d / "de.tsv.gz", ["Haus\twordfreq\t1"])
    (tmp_path / "words.txt").write_text("casa\nperro\n", encoding="utf-8")
    got = list_files([str(d), "es:words.txt"], str(tmp_path))
    assert [(lang, p.rsplit("/", 1)[-1]) for lang, p in got] == [("de", "de.tsv.gz"), ("fr", "fr.tsv.gz"),
                                                                  ("es", "words.txt")]
    assert read_words(str(d / "fr.tsv.gz")) == ["maison", "chat"]  # first column, duplicates once
    assert read_words(str(d / "fr.tsv.gz"), limit=1) == ["maison"]
    with pytest.raises(ConfigError, match="not a language code"):
        list_files(["words.txt"], str(tmp_path))
    with pytest.raises(ConfigError, match="does not exist"):
        list_files(["fr:nothing.txt"], str(tmp_path))


def test_word_batches_are_fixed_by_step_and_grouped_by_language():
    by_lang = {"fr": [f"fr{i}" for i in range(100)], "de": [f"de{i}" for i in range(10)], "km": ["km0", "km1"]}
    teacher = np.zeros((112, 4), dtype=np.float16)
    wb = WordBatches(by_lang, teacher, seed=3, batch=32, temperature=3.0)
    assert wb.langs == ["de", "fr", "km"] and len(wb) == 112
    p = np.array([10, 100, 2], dtype=float) ** (1 / 3)
    np.testing.assert_allclose(wb.probs, p / p.sum())
    a, b = wb.rows(7), wb.rows(7)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, wb.rows(8))
    langs = [wb.lang_of[i] for i in a.tolist()]
    assert langs == sorted(langs, key=wb.langs.index)  # grouped by language
    assert all(wb.words[i].startswith(wb.lang_of[i]) for i in a.tolist())
    for lang in wb.langs:  # no word twice in a batch
        rows = [i for i in a.tolist() if wb.lang_of[i] == lang]
        assert len(rows) == len(set(rows))


def test_training_with_word_lists_pulls_words_to_the_teacher(shared_data, tmp_path):
    from test_train import tiny_config

    from bimine.encoders import load_encoder
    from bimine.training.trainer import Trainer

    teacher = make_tiny_model(tmp_path / "teacher", dim=32, buckets=4096, seed=5)
    words = {"fr": ["Allemagne", "Espagne", "Italie", "Portugal", "Belgique", "Suisse", "Autriche", "Pologne",
                    "Norvège", "Suède", "Finlande", "Danemark", "Irlande", "Grèce", "Hongrie", "Roumanie"],
             "de": ["Frankreich", "Spanien", "Italien", "Polen", "Norwegen", "Schweden", "Finnland", "Dänemark"]}
    for lang, ws in words.items():
        (tmp_path / f"{lang}.txt").write_text("\n".join(ws) + "\n", encoding="utf-8")
    over = {"words.lists": [f"{lang}:{tmp_path / f'{lang}.txt'}" for lang in words], "words.teacher": str(teacher),
            "words.weight": 20.0, "words.rank_weight": 1.0, "words.batch": 16}
    out = Trainer(tiny_config(shared_data, steps=60, **over), tmp_path / "with").fit(progress=False)
    base = Trainer(tiny_config(shared_data, steps=60), tmp_path / "without").fit(progress=False)
    assert list((tmp_path / "with" / "teacher-cache").rglob("part-*.npz"))
    every = [w for ws in words.values() for w in ws]
    t = load_encoder(str(teacher)).encode(every, "fr")

    def closeness(model):
        e = load_encoder(str(model)).encode(every, "fr")
        return float(np.mean(np.sum(e * t, axis=1)))

    assert closeness(out) > closeness(base) + 0.2


def test_word_config_refusals(shared_data, tmp_path):
    from test_train import tiny_config

    with pytest.raises(ConfigError, match="both 0"):
        tiny_config(shared_data, steps=5, **{"words.lists": ["fr:x.txt"], "words.weight": 0.0,
                                             "words.rank_weight": 0.0})
    with pytest.raises(ConfigError, match="words.batch"):
        tiny_config(shared_data, steps=5, **{"words.lists": ["fr:x.txt"], "words.batch": 1})


@pytest.mark.parametrize("shared", [True, False])
def test_one_pass_per_tower_equals_one_pass_per_language(shared):
    """embed_by_language featurises each language's texts for that language and runs one forward
    pass per tower: the same vectors, in the same order, as a pass per language."""
    from bimine.encoders.dan import DANConfig
    from bimine.text.features import FeatureConfig, Featurizer
    from bimine.training.model import TorchDAN
    from bimine.training.trainer import embed_by_language

    torch.manual_seed(0)
    cfg = DANConfig(features=FeatureConfig(buckets=4096), embed_dim=16, hidden=[16], output_dim=8, shared=shared,
                    languages=[] if shared else ["fr", "zh", "de"])
    model = TorchDAN(cfg)
    feat = Featurizer(cfg.features)
    parts = [("fr", ["maison", "le chat noir"]), ("zh", ["房子", "黑猫", "中华人民共和国"]), ("de", ["Haus"]),
             ("fr", ["chien"])]
    got = embed_by_language(model, feat, parts)
    want = torch.cat([model(*feat.featurize(texts, lang), lang) for lang, texts in parts])
    assert got.shape == (7, 8)
    assert torch.allclose(got, want, atol=1e-6)
    # the Chinese part is featurised as a language without spaces: its vectors differ from the same
    # texts featurised as French
    as_fr = model(*feat.featurize(parts[1][1], "fr"), "fr" if shared else "zh")
    assert not torch.allclose(got[2:5], as_fr, atol=1e-4)


def test_language_caps_override_the_cap_per_language(tmp_path):
    from bimine.training.words import WordDistillConfig, check_word_config, load_word_batches

    teacher = make_tiny_model(tmp_path / "teacher", dim=32, buckets=4096, seed=5)
    d = tmp_path / "vocab"
    (d / "und").mkdir(parents=True)
    _gz(d / "fr.tsv.gz", [f"mot{i}\twordfreq\t{i}" for i in range(6)])
    _gz(d / "de.tsv.gz", [f"wort{i}\twordfreq\t{i}" for i in range(6)])
    _gz(d / "und" / "und-Latn.tsv.gz", [f"piece{i}\te5\t{i}" for i in range(6)])
    wc = WordDistillConfig(lists=[str(d), str(d / "und")], teacher=str(teacher), max_per_language=2,
                           language_caps={"de": 4, "und": None})
    check_word_config(wc)
    wb = load_word_batches(wc, str(tmp_path), str(tmp_path / "run"), 32, seed=0)
    got = {lang: [w for w, lg in zip(wb.words, wb.lang_of) if lg == lang] for lang in wb.langs}
    assert got == {"de": [f"wort{i}" for i in range(4)], "fr": ["mot0", "mot1"],
                   "und": [f"piece{i}" for i in range(6)]}
    for bad, match in (({"xx-nope": 3}, "not a language code"), ({"fr": 0}, "must be >= 1")):
        with pytest.raises(ConfigError, match=match):
            check_word_config(WordDistillConfig(lists=[str(d)], language_caps=bad))
