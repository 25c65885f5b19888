"""End-to-end training on a small slice of the shared data, config errors, and resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from bimine.config import apply_overrides
from bimine.errors import ConfigError
from bimine.training.trainer import Trainer, load_train_config


def tiny_config(data_root, steps=300, **over):
    d = {
        "data": {
            "root": str(data_root),
            "train": [
                {
                    "src": "train/tatoeba-manythings/tatoeba.en-fr.en.gz",
                    "tgt": "train/tatoeba-manythings/tatoeba.en-fr.fr.gz",
                    "src_lang": "en",
                    "tgt_lang": "fr",
                    "max_pairs": 10000,
                }
            ],
            "dev": [
                {
                    "name": "tatoeba-fr",
                    "src": "dev/tatoeba-test/tatoeba-test.en-fr.en",
                    "tgt": "dev/tatoeba-test/tatoeba-test.en-fr.fr",
                    "src_lang": "en",
                    "tgt_lang": "fr",
                    "max_pairs": 500,
                }
            ],
        },
        "model": {"features": {"buckets": 16384}, "embed_dim": 32, "hidden": [32], "output_dim": 32},
        "train": {
            "batch_size": 128,
            "steps": steps,
            "eval_every": steps,
            "checkpoint_every": 50,
            "threads": 1,
            "log_every": 10,
        },
        "optim": {"embedding_lr": 0.05, "lr": 0.003, "warmup_steps": 10},
    }
    return load_train_config(apply_overrides(d, [f"{k}={v}" for k, v in over.items()]))


def test_tiny_model_learns(shared_data, tmp_path):
    cfg = tiny_config(shared_data)
    out = Trainer(cfg, tmp_path / "run").fit(progress=False)
    meta = json.loads((out / "config.json").read_text())
    p1 = meta["training"]["dev_p1"]
    # 500 candidates: chance is 0.2%; a few seconds of training must give far more
    assert p1["tatoeba-fr/fwd"] > 0.25 and p1["tatoeba-fr/bwd"] > 0.25
    log = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    losses = [x["loss"] for x in log if "loss" in x]
    assert losses[-1] < losses[0]
    from bimine import load_encoder

    enc = load_encoder(out)
    e = enc.encode(["Hello.", ""], "en")
    assert e.shape == (2, 32)


def test_hard_negatives_run(shared_data, tmp_path):
    cfg = tiny_config(
        shared_data, steps=40, **{"hard_negatives.per_example": 2, "hard_negatives.start_step": 20}
    )
    Trainer(cfg, tmp_path / "run").fit(progress=False)
    from safetensors.numpy import load_file

    st = load_file(str(tmp_path / "run" / "checkpoint" / "state.safetensors"))
    hard = st["hard.0"]
    chosen = hard[hard[:, 0] >= 0]
    assert abs(len(chosen) / len(hard) - 0.2) < 0.01
    rows = np.flatnonzero(hard[:, 0] >= 0)
    assert not np.any(hard[rows] == rows[:, None])  # never the gold target


def test_hard_negatives_from_a_pool(shared_data, tmp_path):
    cfg = tiny_config(shared_data, steps=25, **{"hard_negatives.per_example": 2, "hard_negatives.start_step": 20,
                                                "hard_negatives.pool": 300})
    Trainer(cfg, tmp_path / "run").fit(progress=False)
    from safetensors.numpy import load_file

    hard = load_file(str(tmp_path / "run" / "checkpoint" / "state.safetensors"))["hard.0"]
    got = np.unique(hard[hard >= 0])
    assert abs((hard[:, 0] >= 0).mean() - 0.2) < 0.01
    assert 250 < len(got) <= 300  # every negative from the 300 pooled targets, most of them used
    with pytest.raises(ConfigError, match="hard_negatives.pool"):
        tiny_config(shared_data, **{"hard_negatives.per_example": 2, "hard_negatives.pool": 0})


def test_resume_gives_the_same_model(shared_data, tmp_path):
    torch.set_num_threads(1)
    a = tiny_config(shared_data, steps=30)
    Trainer(a, tmp_path / "a").fit(progress=False)
    b = tiny_config(shared_data, steps=30, **{"train.max_minutes": 0})
    Trainer(b, tmp_path / "b").fit(progress=False)  # stops after one step, as if killed
    assert json.loads((tmp_path / "b" / "checkpoint" / "state.json").read_text())["step"] == 1
    Trainer(tiny_config(shared_data, steps=30), tmp_path / "b").fit(resume=True, progress=False)
    from safetensors.numpy import load_file

    wa = load_file(str(tmp_path / "a" / "model" / "model.safetensors"))
    wb = load_file(str(tmp_path / "b" / "model" / "model.safetensors"))
    for k in wa:
        np.testing.assert_allclose(wa[k].astype(np.float32), wb[k].astype(np.float32), atol=1e-5)

    # the log's running loss goes on from the checkpoint's, not from the first resumed batch's
    def losses(run):
        rows = [json.loads(x) for x in (tmp_path / run / "log.jsonl").read_text().splitlines()]
        return [(r["step"], r["loss"]) for r in rows if "loss" in r]

    la, lb = losses("a"), losses("b")
    assert [s for s, _ in la] == [s for s, _ in lb] == list(range(10, 31, 10))
    np.testing.assert_allclose([x for _, x in lb], [x for _, x in la], rtol=1e-4)


def test_existing_run_needs_resume(shared_data, tmp_path):
    cfg = tiny_config(shared_data, steps=5)
    Trainer(cfg, tmp_path / "r").fit(progress=False)
    with pytest.raises(ConfigError, match="--resume"):
        Trainer(cfg, tmp_path / "r").fit(progress=False)


def test_unknown_config_key_is_an_error():
    with pytest.raises(ConfigError, match="loss.marign"):
        load_train_config(
            {"data": {"train": [{"src": "a", "src_lang": "en", "tgt_lang": "fr"}]}, "loss": {"marign": 0.3}}
        )
    with pytest.raises(ConfigError, match="train.batch_size: expected int"):
        load_train_config(
            {
                "data": {"train": [{"src": "a", "src_lang": "en", "tgt_lang": "fr"}]},
                "train": {"batch_size": "big"},
            }
        )
    with pytest.raises(ConfigError, match="lists no corpus"):
        load_train_config({})


def test_resume_refuses_other_data_or_settings(shared_data, tmp_path):
    """A checkpoint continues only the run it belongs to: other training data (here 9,000
    pairs instead of 10,000) or another batch size stop with an error; more steps are fine."""
    Trainer(tiny_config(shared_data, steps=3), tmp_path / "r").fit(progress=False)
    other = tiny_config(shared_data, steps=6, **{"data.train[0].max_pairs": 9000})
    with pytest.raises(ConfigError, match=r"training data differ.*en-fr \(1000\d -> 900\d pairs\)"):
        Trainer(other, tmp_path / "r").fit(resume=True, progress=False)
    with pytest.raises(ConfigError, match=r"settings differ.*batch_size"):
        Trainer(tiny_config(shared_data, steps=6, **{"train.batch_size": 64}), tmp_path / "r").fit(
            resume=True, progress=False)
    Trainer(tiny_config(shared_data, steps=6), tmp_path / "r").fit(resume=True, progress=False)
    assert json.loads((tmp_path / "r" / "checkpoint" / "state.json").read_text())["step"] == 6


def test_features_per_batch_give_the_same_model(shared_data, tmp_path):
    """data.precompute_features false (features made per batch, in a thread ahead of the step)
    trains exactly the model of the precomputed features; resuming such a run works too."""
    torch.set_num_threads(1)
    a = Trainer(tiny_config(shared_data, steps=25), tmp_path / "a").fit(progress=False)
    over = {"data.precompute_features": "false"}
    b = Trainer(tiny_config(shared_data, steps=25, **over), tmp_path / "b").fit(progress=False)
    from safetensors.numpy import load_file

    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    for k in wa:
        np.testing.assert_array_equal(wa[k], wb[k])
    Trainer(tiny_config(shared_data, steps=10, **over, **{"train.max_minutes": 0}), tmp_path / "c").fit(progress=False)
    c = Trainer(tiny_config(shared_data, steps=25, **over), tmp_path / "c").fit(resume=True, progress=False)
    wc = load_file(str(c / "model.safetensors"))
    for k in wa:
        np.testing.assert_allclose(wa[k].astype(np.float32), wc[k].astype(np.float32), atol=1e-5)


def test_held_out_pairs_are_recorded_in_the_model(shared_data, tmp_path):
    cfg = tiny_config(shared_data, steps=3, **{"data.train[0].skip_pairs": 100, "data.train[0].max_pairs": 300,
                                               "data.train[0].name": "tato"})
    out = Trainer(cfg, tmp_path / "run").fit(progress=False)
    training = json.loads((out / "config.json").read_text())["training"]
    assert training["held_out"] == {"tato": 100}
    assert training["pairs"] <= 300  # read after the 100 held out (fewer when duplicates are removed)


@pytest.mark.parametrize("pooled", [False, True])
def test_mine_hard_negatives_matches_brute_force(pooled):
    """The mined negatives of each chosen pair are its best-scoring targets (among a pool's, when
    one is given) less the gold row, texts equal to the gold target and pairs with its source,
    one per text, against a brute-force ranking."""
    from types import SimpleNamespace

    from bimine.training.trainer import mine_hard_negatives

    rng = np.random.default_rng(3)
    n, m, cand = 60, 3, 8
    tgt_ids = np.arange(n)
    tgt_ids[[5, 17, 40]] = 2  # three more copies of target text 2
    src_ids = np.arange(n)
    src_ids[[7, 30]] = 9  # two more pairs with source text 9
    src = rng.normal(size=(n, 16)).astype(np.float32)
    tgt = rng.normal(size=(n, 16)).astype(np.float32)
    rows = np.array([2, 9, 11, 30, 44])
    pool = np.sort(rng.choice(n, size=35, replace=False)) if pooled else np.arange(n)
    pool = np.union1d(pool, [2, 5, 7, 9, 17, 30])  # the tricky rows inside the pool

    class Group(SimpleNamespace):
        def __len__(self):
            return n

    g = Group(src=SimpleNamespace(text_ids=src_ids), tgt=SimpleNamespace(text_ids=tgt_ids))
    got = mine_hard_negatives(g, src[rows], tgt[pool], rows, m, cand, pool if pooled else None)
    assert got.shape == (n, m)
    assert np.all(got[np.setdiff1d(np.arange(n), rows)] == -1)
    for r in rows:
        keys = pool if pooled else np.arange(n)
        order = keys[np.argsort(-(tgt[keys] @ src[r]), kind="stable")][:cand]
        want, seen = [], set()
        for c in order:
            if c == r or tgt_ids[c] == tgt_ids[r] or src_ids[c] == src_ids[r] or tgt_ids[c] in seen:
                continue
            seen.add(tgt_ids[c])
            want.append(c)
        want = (want + [-1] * m)[:m]
        assert got[r].tolist() == want, (r, got[r], want)


def test_a_capped_run_trains_and_refuses_too_few_pairs_or_other_steps(shared_data, tmp_path, caplog):
    over = {"data.sampling_temperature": 3.0, "data.max_passes": 2.0}
    with caplog.at_level("INFO", logger="bimine.training.trainer"):
        Trainer(tiny_config(shared_data, steps=4, **over), tmp_path / "r").fit(progress=False)
    assert "max_passes 2.0: 0 of 1 language pairs capped" in caplog.text
    # 10,000 pairs can't give 100 batches of 128 (1.28 passes) at one pass each
    with pytest.raises(ConfigError, match="max_passes 1.0: 100 steps of 128 pairs need more passes"):
        Trainer(tiny_config(shared_data, steps=100, **{**over, "data.max_passes": 1.0}), tmp_path / "t").fit(
            progress=False)
    with pytest.raises(ConfigError, match="train.steps too"):
        Trainer(tiny_config(shared_data, steps=6, **over), tmp_path / "r").fit(resume=True, progress=False)
