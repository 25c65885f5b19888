"""Language-balanced (temperature) sampling of training batches."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.training.data import TemperatureSchedule, temperature_probs


def test_temperature_probs_by_hand():
    sizes = [10_000, 100, 1]
    np.testing.assert_allclose(temperature_probs(sizes, 1.0), np.array(sizes) / 10_101)
    w = np.array([100.0, 10.0, 1.0])  # n ** (1/2)
    np.testing.assert_allclose(temperature_probs(sizes, 2.0), w / w.sum())
    np.testing.assert_allclose(temperature_probs(sizes, 1e9), [1 / 3] * 3, rtol=1e-6)
    with pytest.raises(ConfigError):
        temperature_probs(sizes, 0)


def test_schedule_draws_groups_in_proportion():
    sizes = [200_000, 20_000, 2_000, 200]
    steps = 40_000
    s = TemperatureSchedule(sizes, 64, seed=3, steps=steps, temperature=5.0)
    counts = np.bincount([s(i)[0] for i in range(steps)], minlength=4)
    want = s.probs * steps
    sigma = np.sqrt(want * (1 - s.probs))
    assert np.all(np.abs(counts - want) < 4 * sigma), (counts, want)
    # balanced: the smallest language gets far more than its share of the data (0.09%)
    assert counts[3] / steps > 0.1


def test_each_group_is_read_without_repeats_within_its_epochs():
    sizes = [1000, 130, 20]
    s = TemperatureSchedule(sizes, 32, seed=0, steps=3000, temperature=3.0)
    seen = {g: [] for g in range(3)}
    for i in range(3000):
        g, rows = s(i)
        assert len(rows) == min(32, sizes[g]) and len(set(rows.tolist())) == len(rows)
        assert rows.min() >= 0 and rows.max() < sizes[g]
        seen[g].append(rows)
    for g, n in enumerate(sizes):
        b = min(32, n)
        nb = n // b
        flat = np.concatenate(seen[g])
        for e in range(len(flat) // (nb * b)):  # each full epoch: nb batches of distinct rows
            chunk = flat[e * nb * b : (e + 1) * nb * b]
            assert len(set(chunk.tolist())) == nb * b
    assert sizes[2] < 32 and all(len(r) == 20 for r in seen[2])  # a group smaller than a batch: all of it


def test_schedule_is_deterministic_and_resumable():
    sizes = [5000, 300, 70]
    a = TemperatureSchedule(sizes, 50, seed=7, steps=500, temperature=2.0)
    b = TemperatureSchedule(sizes, 50, seed=7, steps=500, temperature=2.0)
    for i in list(range(500))[::-1]:  # any order: step i needs no history
        ga, ra = a(i)
        gb, rb = b(i)
        assert ga == gb and np.array_equal(ra, rb)
    c = TemperatureSchedule(sizes, 50, seed=8, steps=500, temperature=2.0)
    assert any(a(i)[0] != c(i)[0] for i in range(500))
    with pytest.raises(IndexError):
        a(500)


def test_weights_multiply_the_tempered_share():
    sizes = [10_000, 100, 1]
    w = np.array([100.0, 10.0, 1.0]) * np.array([1.0, 3.0, 1.0])  # n ** (1/2) times the weight
    np.testing.assert_allclose(temperature_probs(sizes, 2.0, [1.0, 3.0, 1.0]), w / w.sum())
    for bad in ([1.0, 0.0, 1.0], [1.0, 1.0], [1.0, float("nan"), 1.0]):
        with pytest.raises(ConfigError, match="weights"):
            temperature_probs(sizes, 2.0, bad)


def test_language_weights_in_a_training_config(tmp_path):
    from types import SimpleNamespace

    from bimine.training.trainer import group_weights, load_train_config

    for lang in ("fr", "de"):
        for side, text in (("en", "Hello there."), (lang, "Bonjour.")):
            (tmp_path / f"c.en-{lang}.{side}").write_text(text + "\n")
    train = [{"name": f"c.en-{x}", "src": f"c.en-{x}.en", "tgt": f"c.en-{x}.{x}", "src_lang": "en", "tgt_lang": x}
             for x in ("fr", "de")]
    base = {"train": train, "sampling_temperature": 3.0}
    cfg = load_train_config({"data": {**base, "language_weights": {"fra": 4}}}, str(tmp_path))
    assert cfg.data.language_weights == {"fr": 4.0}  # codes normalised like every language option
    groups = [SimpleNamespace(src_lang="en", tgt_lang=x) for x in ("de", "fr")]
    assert group_weights(groups, cfg.data.language_weights) == [1.0, 4.0]
    assert group_weights(groups, {}) is None
    for weights, msg in (({"ru": 2}, "no training corpus"), ({"fr": 0}, "> 0"), ({"fr": "x"}, "> 0"),
                         ({"xx-nope": 2}, "language_weights")):
        with pytest.raises(ConfigError, match=msg):
            load_train_config({"data": {**base, "language_weights": weights}}, str(tmp_path))
    with pytest.raises(ConfigError, match="needs data.sampling_temperature"):
        load_train_config({"data": {"train": train, "language_weights": {"fr": 2}}}, str(tmp_path))


def test_cap_passes_by_hand():
    from bimine.training.data import cap_passes

    # 100 steps of 100 pairs; 2 passes allow group 0 (1,000 pairs) 0.2 of the steps, group 2 (10,000) 2.0
    sizes = [1000, 100_000, 10_000]
    np.testing.assert_allclose(cap_passes(np.array([0.5, 0.3, 0.2]), sizes, 100, 100, 2.0)[0], [0.2, 0.48, 0.32])
    # the excess pushes group 1 over its own cap (0.3) in turn: 0.6 is left for group 2
    sizes = [1000, 1500, 100_000]
    p, capped = cap_passes(np.array([0.5, 0.25, 0.25]), sizes, 100, 100, 2.0)
    np.testing.assert_allclose(p, [0.2, 0.3, 0.5])
    assert capped.tolist() == [True, True, False]
    # a group smaller than the batch is read whole at each draw: 30 pairs, 2 passes: 2 of 100 steps
    np.testing.assert_allclose(cap_passes(np.array([0.5, 0.5]), [30, 100_000], 100, 100, 2.0)[0], [0.02, 0.98])
    # nothing over its cap: unchanged
    p, capped = cap_passes(np.array([0.1, 0.9]), [10_000, 100_000], 100, 100, 2.0)
    np.testing.assert_allclose(p, [0.1, 0.9])
    assert not capped.any()
    # 2,000 pairs, 10,000 pair reads: 5 passes at least
    with pytest.raises(ConfigError, match="passes over the 2000 training pairs than that .set it to at least 5.00"):
        cap_passes(np.array([0.5, 0.5]), [1000, 1000], 100, 100, 2.0)
    with pytest.raises(ValueError, match="non-empty"):
        cap_passes(np.array([0.0, 0.5, 0.5]), [0, 1000, 1000], 100, 100, 2.0)
    with pytest.raises(ConfigError, match="max_passes"):
        cap_passes(np.array([0.5, 0.5]), [1000, 1000], 100, 100, 0)


def test_capped_schedule_reads_each_group_at_most_that_often():
    sizes = np.array([200_000, 20_000, 2_000, 500])
    steps, batch = 20_000, 64
    free = TemperatureSchedule(list(sizes), batch, seed=3, steps=steps, temperature=3.0)
    s = TemperatureSchedule(list(sizes), batch, seed=3, steps=steps, temperature=3.0, max_passes=50.0)
    np.testing.assert_allclose(free.probs * steps * batch / sizes, [3.5255, 16.3641, 75.9555, 191.3959], rtol=1e-4)
    # the two small groups are held at 50 expected passes, the others take their share in proportion
    np.testing.assert_allclose((s.probs * steps * batch / sizes)[2:], [50.0, 50.0])
    assert s.capped.tolist() == [False, False, True, True] and not free.capped.any()
    np.testing.assert_allclose(s.probs[:2] / s.probs[:2].sum(), free.probs[:2] / free.probs[:2].sum())
    counts = np.bincount([s(i)[0] for i in range(steps)], minlength=4)
    want = s.probs * steps
    assert np.all(np.abs(counts - want) < 4 * np.sqrt(want * (1 - s.probs))), (counts, want)


def test_max_passes_in_a_training_config(tmp_path):
    from bimine.training.trainer import load_train_config

    for side, text in (("en", "Hello there."), ("fr", "Bonjour.")):
        (tmp_path / f"c.en-fr.{side}").write_text(text + "\n")
    train = [{"name": "c.en-fr", "src": "c.en-fr.en", "tgt": "c.en-fr.fr", "src_lang": "en", "tgt_lang": "fr"}]
    cfg = load_train_config({"data": {"train": train, "sampling_temperature": 3.0, "max_passes": 5}}, str(tmp_path))
    assert cfg.data.max_passes == 5
    for bad in (0, -1, "x", True):
        with pytest.raises(ConfigError, match="max_passes"):
            load_train_config({"data": {"train": train, "sampling_temperature": 3.0, "max_passes": bad}}, str(tmp_path))
    with pytest.raises(ConfigError, match="needs data.sampling_temperature"):
        load_train_config({"data": {"train": train, "max_passes": 5}}, str(tmp_path))


def test_a_capped_run_resumes_only_with_its_steps():
    from bimine.training.trainer import TrainConfig, check_resume_fingerprint, run_fingerprint

    cfg = TrainConfig()
    plain = run_fingerprint(cfg, [])
    assert "max_passes" not in plain["settings"] and "steps" not in plain["settings"]  # older checkpoints match
    cfg.data.max_passes = 5.0
    capped = run_fingerprint(cfg, [])
    check_resume_fingerprint(capped, run_fingerprint(cfg, []))
    cfg.train.steps += 1000
    with pytest.raises(ConfigError, match="train.steps too"):
        check_resume_fingerprint(capped, run_fingerprint(cfg, []))
    with pytest.raises(ConfigError, match="max_passes"):
        check_resume_fingerprint(plain, capped)
