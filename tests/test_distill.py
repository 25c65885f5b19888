"""Distillation from a teacher encoder: the loss by hand, the on-disk teacher cache, training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import make_tiny_model

from bimine.training.distill import TeacherCache, teacher_rows
from bimine.training.losses import distill_loss


def test_distill_loss_by_hand():
    s = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    t = torch.tensor([[0.0, 2.0], [5.0, 0.0]])
    # row 0: (0.6, 0.8) vs (0, 1): 0.36 + 0.04; row 1: identical directions: 0
    assert float(distill_loss(s, t)) == pytest.approx((0.4 + 0.0) / 2)


class CountingEncoder:
    model_id = "fake/teacher v1"
    dim = 3

    def __init__(self, fail_after: int | None = None) -> None:
        self.seen: list[str] = []
        self.fail_after = fail_after

    def encode(self, texts, lang):
        if self.fail_after is not None and len(self.seen) >= self.fail_after:
            raise KeyboardInterrupt
        self.seen += texts
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)


def test_teacher_cache_computes_once_and_resumes(tmp_path):
    texts = [f"sentence {'a' * i}" for i in range(10)]
    enc = CountingEncoder(fail_after=4)
    cache = TeacherCache(str(tmp_path), enc, shard_rows=4)
    with pytest.raises(KeyboardInterrupt):  # killed after the first shard was saved
        cache.embed(texts + texts[:3])
    assert enc.seen == texts[:4]
    enc2 = CountingEncoder()
    got = TeacherCache(str(tmp_path), enc2, shard_rows=4).embed(texts[::-1])
    assert enc2.seen == texts[4:][::-1]  # only what the killed run had not saved
    want = np.array([[len(t), t.count("a"), 1.0] for t in texts[::-1]], dtype=np.float16)
    np.testing.assert_array_equal(got, want)
    enc3 = CountingEncoder()
    TeacherCache(str(tmp_path), enc3).embed(texts)
    assert enc3.seen == []
    other = CountingEncoder()
    other.model_id = "another teacher"
    TeacherCache(str(tmp_path), other).embed(texts[:2])
    assert other.seen == texts[:2]  # another model never reads these vectors


def test_teacher_rows_fixed_sample():
    a = teacher_rows(1000, 50, seed=0, group=3)
    assert len(a) == 50 and len(set(a.tolist())) == 50 and np.all(np.diff(a) > 0)
    np.testing.assert_array_equal(a, teacher_rows(1000, 50, seed=0, group=3))
    assert not np.array_equal(a, teacher_rows(1000, 50, seed=0, group=4))
    np.testing.assert_array_equal(teacher_rows(30, 50, 0, 0), np.arange(30))


def test_training_pulls_both_sides_to_the_teacher(shared_data, tmp_path):
    from test_train import tiny_config

    from bimine.encoders import load_encoder
    from bimine.training.trainer import Trainer

    teacher = make_tiny_model(tmp_path / "teacher", dim=32, buckets=4096, seed=5)
    over = {"distill.teacher": str(teacher), "distill.weight": 20.0, "distill.pairs_per_language": 500}
    cfg = tiny_config(shared_data, steps=60, **over)
    out = Trainer(cfg, tmp_path / "with").fit(progress=False)
    base = Trainer(tiny_config(shared_data, steps=60), tmp_path / "without").fit(progress=False)
    files = list((tmp_path / "with" / "teacher-cache").rglob("part-*.npz"))
    assert files and sum(len(np.load(f)["emb"]) for f in files) <= 500
    en = ["I am hungry.", "Where is the station?", "He reads a book.", "It is raining today."]
    t = load_encoder(str(teacher)).encode(en, "en")

    def closeness(model):
        e = load_encoder(str(model)).encode(en, "en")
        return float(np.mean(np.sum(e * t, axis=1)))

    assert closeness(out) > closeness(base) + 0.2


def test_teacher_of_another_dimension_is_an_error(shared_data, tmp_path):
    from test_train import tiny_config

    from bimine.errors import ConfigError
    from bimine.training.trainer import Trainer

    teacher = make_tiny_model(tmp_path / "teacher", dim=16)
    cfg = tiny_config(shared_data, steps=5, **{"distill.teacher": str(teacher)})
    with pytest.raises(ConfigError, match="16-dim vectors; model.output_dim is 32"):
        Trainer(cfg, tmp_path / "run").fit(progress=False)


def test_english_pool_takes_the_most_shared_sentences():
    from bimine.training.distill import english_pool

    sides = [["a", "b", "c", "d"], ["a", "b", "e"], ["a", "f", "g", "h"]]
    # counts: a 3, b 2, the rest 1
    assert english_pool(sides, 2, seed=0) == ["a", "b"]
    assert english_pool(sides, 100, seed=0) == ["a", "b", "c", "d", "e", "f", "g", "h"]
    picks = [english_pool(sides, 4, seed=s) for s in range(20)]
    for p in picks:
        assert p[:2] == ["a", "b"] and len(set(p)) == 4 and set(p[2:]) <= set("cdefgh")
        tied = p[2:]
        assert tied == sorted(tied, key="cdefgh".index)  # ties keep their order of first appearance
    assert picks[0] == english_pool(sides, 4, seed=0)  # a fixed choice for a seed
    assert len({tuple(p) for p in picks}) > 1  # that depends on the seed


def test_min_words_keeps_prose_out_of_the_short_strings():
    """``distill.min_words``: the pool and the per-language samples hold only texts of that many
    words, however often the short ones are shared."""
    import numpy as np

    from bimine.training.distill import english_pool, long_enough, teacher_rows

    ok, cancel = "Cancel", "Open the file"
    verse = "In the beginning God created the heaven and the earth."
    help_line = "Choose Format - Cells and click the Numbers tab to change it."
    sides = [[ok, cancel, verse, help_line], [ok, cancel, verse], [ok, cancel, help_line]]
    assert english_pool(sides, 2, seed=0) == [ok, cancel]
    assert english_pool(sides, 2, seed=0, min_words=4) == [verse, help_line]
    assert english_pool(sides, 10, seed=0, min_words=10) == [verse, help_line]  # 10 and 12 words
    assert english_pool(sides, 10, seed=0, min_words=11) == [help_line]
    texts = [ok, verse, cancel, help_line, verse]
    assert long_enough(texts, 3).tolist() == [False, True, True, True, True]
    eligible = long_enough(texts, 4)
    assert teacher_rows(5, 10, seed=0, group=1, eligible=eligible).tolist() == [1, 3, 4]
    for seed in range(10):
        rows = teacher_rows(5, 2, seed=seed, group=1, eligible=eligible)
        assert len(rows) == 2 and set(rows.tolist()) <= {1, 3, 4} and np.all(np.diff(rows) > 0)
    assert teacher_rows(5, 2, seed=0, group=1).tolist() == teacher_rows(5, 2, seed=0, group=1, eligible=None).tolist()


def test_training_with_an_english_pool(shared_data, tmp_path, caplog):
    """The pool's vectors are computed once (at most ``english_pool`` of them) and shared by the
    language pairs; the log says how many pairs they cover."""
    import logging

    from test_train import tiny_config

    from bimine.training.trainer import Trainer

    teacher = make_tiny_model(tmp_path / "teacher", dim=32, buckets=4096, seed=5)
    over = {"distill.teacher": str(teacher), "distill.weight": 20.0, "distill.english_pool": 300}
    with caplog.at_level(logging.INFO, logger="bimine.training.trainer"):
        Trainer(tiny_config(shared_data, steps=5, **over), tmp_path / "run").fit(progress=False)
    files = list((tmp_path / "run" / "teacher-cache").rglob("part-*.npz"))
    assert sum(len(np.load(f)["emb"]) for f in files) == 300
    line = next(r.getMessage() for r in caplog.records if "English sentences cover" in r.getMessage())
    covered, total = (int(x) for x in line.split("cover ")[1].split(" pairs")[0].split(" of "))
    assert 300 <= covered < total


def test_an_empty_english_pool_is_an_error(shared_data, tmp_path):
    from test_train import tiny_config

    from bimine.errors import ConfigError
    from bimine.training.trainer import Trainer

    teacher = make_tiny_model(tmp_path / "teacher", dim=32)
    with pytest.raises(ConfigError, match="english_pool"):
        cfg = tiny_config(shared_data, steps=5, **{"distill.teacher": str(teacher), "distill.english_pool": 0})
        Trainer(cfg, tmp_path / "run").fit(progress=False)
