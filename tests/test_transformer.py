"""The transformer dual encoder (issue 16, paper 001 §4.2): tokens, padding and pooling against
per-sentence references, the embedding gradient multiplier, the length penalty, training,
export and loading without pickle, resume, and mining through the Encoder protocol."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bimine.config import apply_overrides
from bimine.encoders.transformer import (
    TokenFeaturizer,
    TransformerConfig,
    TransformerEncoder,
    TransformerNet,
)
from bimine.errors import ConfigError
from bimine.text.features import FeatureConfig
from bimine.training.losses import LossConfig, ranking_loss
from bimine.training.trainer import Trainer, load_train_config

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SENTENCES = [
    "Hello, world!",
    "北京大学在中国的首都。",
    "",
    "A much longer sentence, with many more words in it than the others have, to pad them.",
    "Москва — столица России.",
]


def small_config(**over) -> TransformerConfig:
    d = {"features": {"buckets": 4096}, "embed_dim": 16, "d_model": 32, "heads": 4, "ffn": 64, "output_dim": 24,
         "layers": 2, **over}
    return TransformerConfig.from_dict(d)


def test_tokens_chunk_scripts_without_spaces_and_count_truncation():
    f = TokenFeaturizer(small_config(max_tokens=6))
    assert f.tokens("Hello, World!") == ["hello", ",", "world", "!"]
    assert f.tokens("北京大学在中国") == ["北京大", "学在中", "国"]
    assert f.tokens("iPhone北京大学") == ["iphone", "北京大", "学"]  # a token mixing scripts is split at the change
    assert f.tokens("") == []
    ids, tok_off, sent_off = f.featurize(["one two three four five six seven", "", "a b"], "en")
    assert sent_off.tolist() == [0, 6, 7, 9]  # cut to 6 tokens; the empty sentence keeps one token
    assert f.truncated == 1
    assert tok_off[7] == tok_off[6]  # that token has no features
    assert len(tok_off) == sent_off[-1] + 1 and tok_off[-1] == len(ids)


@pytest.mark.parametrize("training", [False, True])
def test_padded_batch_equals_each_sentence_alone(training):
    torch.manual_seed(0)
    cfg = small_config()
    net = TransformerNet(cfg).train(training)
    f = TokenFeaturizer(cfg)
    with torch.no_grad():
        batch = net(*f.featurize(SENTENCES, "en"))
        for i, s in enumerate(SENTENCES):
            alone = net(*f.featurize([s], "en"))[0]
            np.testing.assert_allclose(batch[i].numpy(), alone.numpy(), atol=2e-5)


def test_each_pooling_against_a_hand_computed_reference():
    torch.manual_seed(1)
    net = TransformerNet(small_config()).eval()
    f = TokenFeaturizer(net.cfg)
    _, _, sent_off = f.featurize(SENTENCES, "en")
    counts = np.diff(sent_off)
    h = torch.randn(len(SENTENCES), int(counts.max()), net.cfg.d_model)
    valid = torch.arange(h.shape[1])[None, :] < torch.from_numpy(counts)[:, None]
    h[~valid] = 1e4  # padding must not leak into any pooling
    with torch.no_grad():
        for i, n in enumerate(counts):
            rows = h[i, :n]
            w = torch.softmax(rows @ net.attention.weight[0] + net.attention.bias[0], dim=0)
            want = {"max": rows.max(dim=0).values, "mean": rows.mean(dim=0), "first": rows[0],
                    "attention": (w[:, None] * rows).sum(dim=0)}
            for kind, ref in want.items():
                np.testing.assert_allclose(net._pool(kind, h, valid)[i].numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_embedding_gradient_multiplier_scales_only_the_feature_table():
    f = TokenFeaturizer(small_config())
    feats = f.featurize(SENTENCES, "en")
    grads = []
    for mult in (1.0, 25.0):
        torch.manual_seed(3)
        net = TransformerNet(small_config(embedding_grad_multiplier=mult))
        net(*feats).pow(2).sum().backward()
        net.attach_sparse_grads()
        grads.append((net.embedding.weight.grad.to_dense(), [p.grad.clone() for p in net.dense_parameters()]))
    (table1, dense1), (table25, dense25) = grads
    assert table1.abs().sum() > 0
    np.testing.assert_allclose(table25.numpy(), 25 * table1.numpy(), rtol=1e-5, atol=1e-7)
    for a, b in zip(dense1, dense25):
        assert torch.equal(a, b)


def test_length_penalty_adds_the_weighted_mean_norm():
    torch.manual_seed(4)
    net = TransformerNet(small_config())
    f = TokenFeaturizer(net.cfg)
    u = net(*f.featurize(SENTENCES, "en"))
    v = net(*f.featurize(SENTENCES[::-1], "fr"))
    plain = ranking_loss(u, v, LossConfig(length_penalty=0.0))
    with_penalty = ranking_loss(u, v, LossConfig(length_penalty=11.0))
    norms = torch.cat([u.norm(dim=1), v.norm(dim=1)])
    assert float((with_penalty - plain).detach()) == pytest.approx(11.0 * float(norms.mean().detach()), rel=1e-5)


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="multiple of heads"):
        load_train_config(toy_train_dict(**{"model.heads": 5}))
    with pytest.raises(ConfigError, match="pooling"):
        load_train_config(toy_train_dict(**{"model.pooling": "[max, sum]"}))
    with pytest.raises(ConfigError, match="hidden"):
        load_train_config(toy_train_dict(**{"model.hidden": "[32]"}))  # a DAN option
    with pytest.raises(ConfigError, match="encoder: must be dan or transformer"):
        load_train_config(toy_train_dict(encoder="lstm"))


def toy_train_dict(steps=80, **over) -> dict:
    d = {
        "encoder": "transformer",
        "data": {
            "root": str(EXAMPLES),
            "train": [{"name": "ntrex.en-fr", "src": "train.en-fr.tsv", "src_lang": "en", "tgt_lang": "fr"}],
            "dev": [{"name": "ntrex-dev", "src": "dev.en-fr.tsv", "src_lang": "en", "tgt_lang": "fr"}],
        },
        "model": {"features": {"buckets": 16384}, "embed_dim": 32, "d_model": 48, "layers": 1, "heads": 4,
                  "ffn": 96, "output_dim": 32},
        "hard_negatives": {"per_example": 2, "start_step": steps // 2},
        "optim": {"lr": 0.002, "embedding_lr": 0.03, "warmup_steps": 10},
        "train": {"batch_size": 64, "steps": steps, "seed": 0, "threads": 1, "eval_every": steps,
                  "checkpoint_every": 20, "log_every": 10},
        "export_quantize": "none",
    }
    return apply_overrides(d, [f"{k}={v}" for k, v in over.items()])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    run = tmp_path_factory.mktemp("tfm") / "run"
    Trainer(load_train_config(toy_train_dict()), run).fit(progress=False)
    return run


def test_training_learns_and_the_export_loads_without_pickle(trained):
    meta = json.loads((trained / "model" / "config.json").read_text())
    assert meta["architecture"] == "transformer"
    p1 = meta["training"]["dev_p1"]
    # 300 candidates: chance is 0.3%; 80 steps on 977 news pairs must give far more
    assert p1["ntrex-dev/fwd"] > 0.2 and p1["ntrex-dev/bwd"] > 0.2, p1
    from safetensors.numpy import load_file

    from bimine import load_encoder

    weights = load_file(str(trained / "model" / "model.safetensors"))  # plain tensors, no pickle
    enc = load_encoder(trained / "model")
    assert isinstance(enc, TransformerEncoder) and enc.dim == 32 and enc.model_id.startswith("tfm-")
    # the exported encoder gives the training module's vectors
    cfg = TransformerConfig.from_dict(meta["model"])
    net = TransformerNet(cfg).eval()
    net.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    with torch.no_grad():
        ref = F.normalize(net(*TokenFeaturizer(cfg).featurize(SENTENCES, "en")), dim=1).numpy()
    got = enc.encode(SENTENCES, "en")
    np.testing.assert_allclose(got, ref, atol=1e-5)
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    # dynamic int8 linear layers keep the vectors close, under another model id (caches)
    q8 = TransformerEncoder.load(trained / "model", runtime="int8")
    q = q8.encode(SENTENCES, "en")
    assert np.min(np.sum(q * got, axis=1)) > 0.98 and q8.model_id == enc.model_id + "-int8"


def test_resume_gives_the_same_model(tmp_path):
    torch.set_num_threads(1)
    Trainer(load_train_config(toy_train_dict(steps=24)), tmp_path / "a").fit(progress=False)
    Trainer(load_train_config(toy_train_dict(steps=24, **{"train.max_minutes": 0})), tmp_path / "b").fit(
        progress=False)  # stops after one step, as if killed
    assert json.loads((tmp_path / "b" / "checkpoint" / "state.json").read_text())["step"] == 1
    stopped = json.loads((tmp_path / "b" / "model" / "config.json").read_text())["training"]
    # stopped by time after step 1: its dev figures are of that step's model, not of none or an older one
    assert stopped["stopped_by"] == "max_minutes" and stopped["dev_step"] == 1 and stopped["dev_p1"]
    Trainer(load_train_config(toy_train_dict(steps=24)), tmp_path / "b").fit(resume=True, progress=False)
    from safetensors.numpy import load_file

    wa = load_file(str(tmp_path / "a" / "model" / "model.safetensors"))
    wb = load_file(str(tmp_path / "b" / "model" / "model.safetensors"))
    assert wa.keys() == wb.keys()
    for k in wa:
        np.testing.assert_allclose(wa[k], wb[k], atol=1e-6, err_msg=k)


def test_mine_with_a_transformer_model(trained, tmp_path):
    from click.testing import CliRunner

    from bimine.cli import mine  # noqa: F401  (registers the command)
    from bimine.cli.main import cli

    out = tmp_path / "pairs.tsv"
    r = CliRunner().invoke(cli, ["mine", str(EXAMPLES / "sample.en"), str(EXAMPLES / "sample.fr"), "--src-lang", "en",
                                 "--tgt-lang", "fr", "-m", str(trained / "model"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert len(rows) > 50
    assert all(len(x) >= 3 and float(x[0]) > 0 for x in rows)


def test_feature_table_must_match_the_config():
    cfg = small_config()
    weights = TransformerNet(cfg).export_weights("none")
    weights["embedding.weight"] = weights["embedding.weight"][:100]
    with pytest.raises(ConfigError, match="feature table has shape"):
        TransformerEncoder(cfg, weights)
    assert TokenFeaturizer(cfg).inner.config == FeatureConfig.from_dict(cfg.features.to_dict())


def test_train_command_refuses_a_bad_transformer_config_in_one_line(tmp_path):
    from click.testing import CliRunner

    from bimine.cli import train  # noqa: F401  (registers the command)
    from bimine.cli.main import cli

    config = EXAMPLES.parent / "configs" / "example-transformer.yaml"
    for option, says in (("model.heads=5", "model: d_model (64) must be a multiple of heads (5)"),
                         ("encoder=lstm", "encoder: must be dan or transformer, got 'lstm'")):
        r = CliRunner().invoke(cli, ["train", "-c", str(config), "-o", str(tmp_path / "run"), "--set", option])
        lines = [x for x in r.output.splitlines() if x.lower().startswith("error:")]
        assert r.exit_code == 2 and len(lines) == 1 and says in lines[0] and "Traceback" not in r.output, r.output
        assert not (tmp_path / "run").exists()


def test_padded_forward_equals_the_packed_one():
    """``TransformerNet.padded`` (the ONNX export's graph) against the packed module."""
    from bimine.encoders.transformer import pad_tokens, token_vectors

    torch.manual_seed(2)
    net = TransformerNet(small_config()).eval()
    ids, tok_off, sent_off = TokenFeaturizer(net.cfg).featurize(SENTENCES, "en")
    with torch.no_grad():
        vectors = token_vectors(net.embedding, ids, tok_off)
        packed = net.from_token_vectors(vectors, sent_off)
        padded, valid = pad_tokens(vectors.numpy(), sent_off)
        assert padded.shape[:2] == valid.shape and valid.sum() == len(vectors)
        padded[~valid] = 1e4  # whatever the padding holds, it must not reach the output
        got = net.padded(torch.from_numpy(padded), torch.from_numpy(valid))
    np.testing.assert_allclose(got.numpy(), packed.numpy(), atol=1e-4)


def test_onnx_runtime_gives_the_torch_vectors(trained):
    pytest.importorskip("onnxruntime")
    ref = TransformerEncoder.load(trained / "model")
    onnx = TransformerEncoder.load(trained / "model", runtime="onnx", batch_size=2)  # batches of mixed lengths
    np.testing.assert_allclose(onnx.encode(SENTENCES, "en"), ref.encode(SENTENCES, "en"), atol=1e-5)
    assert onnx.model_id == ref.model_id + "-onnx"
    assert onnx.encode([], "en").shape == (0, ref.dim)
    with pytest.raises(ConfigError, match="runtime 'tensorrt'"):
        TransformerEncoder.load(trained / "model", runtime="tensorrt")


def test_encoders_built_in_memory_are_named_by_their_weights():
    """Two models built from tensors (no file) must not share a model id: caches of vectors
    (the embedding store, the teacher cache, benchmarks) are keyed by it."""
    from bimine.encoders.dan import DANConfig, DANEncoder
    from bimine.training.model import TorchDAN

    torch.manual_seed(3)
    cfg = small_config()
    a, b = TransformerNet(cfg).export_weights(), TransformerNet(cfg).export_weights()
    ida = TransformerEncoder(cfg, a).model_id
    assert ida.startswith("tfm-") and ida == TransformerEncoder(cfg, dict(a)).model_id
    assert ida != TransformerEncoder(cfg, b).model_id
    dcfg = DANConfig.from_dict({"features": {"buckets": 1024}, "embed_dim": 8, "hidden": [16], "output_dim": 8})
    da, db = TorchDAN(dcfg).export_weights("none"), TorchDAN(dcfg).export_weights("none")
    assert DANEncoder(dcfg, da).model_id != DANEncoder(dcfg, db).model_id
    assert DANEncoder(dcfg, da).model_id == DANEncoder(dcfg, dict(da)).model_id
    # the same tensors read with other features give other vectors: another id
    other = DANConfig.from_dict({"features": {"buckets": 1024, "char_ngrams": [2, 4]}, "embed_dim": 8,
                                 "hidden": [16], "output_dim": 8})
    assert DANEncoder(other, da).model_id != DANEncoder(dcfg, da).model_id


def test_distillation_pulls_the_transformer_to_its_teacher(trained, tmp_path):
    """``distill.teacher`` works for the transformer as for the DAN: with the teacher's loss,
    both sides of the toy run end far closer to the teacher's vectors of the English side."""
    from conftest import make_tiny_model

    from bimine.encoders import load_encoder

    torch.set_num_threads(1)
    teacher = make_tiny_model(tmp_path / "teacher", dim=32, buckets=4096, seed=5)
    over = {"distill.teacher": str(teacher), "distill.weight": 20.0, "distill.pairs_per_language": 500}
    run = tmp_path / "run"
    Trainer(load_train_config(toy_train_dict(**over)), run).fit(progress=False)
    files = list((run / "teacher-cache").rglob("part-*.npz"))
    assert files and sum(len(np.load(f)["emb"]) for f in files) == 500
    en = ["The river flows past the village.", "Prices rose again this year.", "He was elected in May."]
    fr = ["La rivière passe près du village.", "Les prix ont encore augmenté cette année.", "Il a été élu en mai."]
    t = load_encoder(str(teacher)).encode(en, "en")

    def closeness(folder: Path) -> tuple[float, float]:
        enc = load_encoder(str(folder))
        return (float(np.mean(np.sum(enc.encode(en, "en") * t, axis=1))),
                float(np.mean(np.sum(enc.encode(fr, "fr") * t, axis=1))))

    with_en, with_fr = closeness(run / "model")
    base_en, base_fr = closeness(trained / "model")
    assert with_en > base_en + 0.2 and with_fr > base_fr + 0.2, (with_en, base_en, with_fr, base_fr)
