"""``-m st:FOLDER`` and sentence-transformers objects (issue 74): a tiny sentence-transformers model
that the test builds and saves locally (random weights, a made-up vocabulary: never a download)
mines through the command line and the library, with the same pairs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import bimine
from bimine.cli.main import registered

st = pytest.importorskip("sentence_transformers", reason="sentence-transformers is in the test extra")
transformers = pytest.importorskip("transformers")

EX = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    import torch

    torch.manual_seed(0)
    base = tmp_path_factory.mktemp("tiny-st")
    words = sorted({w.lower().strip(".,;:!?\"'()") for line in (EX / "sample.en").read_text(encoding="utf-8").split("\n")
                    for w in line.split()} - {""})[:2000]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    hf = base / "hf"
    hf.mkdir()
    (hf / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = transformers.BertTokenizerFast(vocab_file=str(hf / "vocab.txt"), do_lower_case=True)
    cfg = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=128)
    transformers.BertModel(cfg).save_pretrained(hf)
    tok.save_pretrained(hf)
    # a plain transformers folder: sentence-transformers wraps it with mean pooling
    model = st.SentenceTransformer(str(hf), device="cpu", local_files_only=True)
    out = base / "st-model"
    model.save(str(out))
    return out


def test_st_folder_mines_on_the_command_line_and_in_python(tiny, tmp_path):
    out = tmp_path / "p.tsv"
    r = CliRunner().invoke(registered(), ["mine", str(EX / "sample.en"), str(EX / "sample.en"), "-m", f"st:{tiny}",
                                          "-o", str(out), "--threshold", "1.0", "--no-progress"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    cmd = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert cmd and all(c[1] == c[2] for c in cmd[:20])  # a text against itself: each line finds itself first
    en = (EX / "sample.en").read_text(encoding="utf-8").splitlines()
    by_name = bimine.mine(en, en, model=f"st:{tiny}", threshold=1.0)
    assert [[f"{p['score']:.6f}", p["src"], p["tgt"]] for p in by_name] == cmd
    obj = st.SentenceTransformer(str(tiny), device="cpu")
    by_object = bimine.mine(en, en, model=obj, threshold=1.0)
    assert [(p["src_index"], p["tgt_index"]) for p in by_object] == [(p["src_index"], p["tgt_index"]) for p in by_name]


def test_st_model_id_follows_the_folders_bytes(tiny, tmp_path):
    import shutil

    a = bimine.load_encoder(f"st:{tiny}")
    assert a.model_id == bimine.load_encoder(f"st:{tiny}").model_id and a.model_id.startswith("st-")
    other = tmp_path / "copy"
    shutil.copytree(tiny, other)
    weights = next(p for p in other.rglob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert bimine.load_encoder(f"st:{other}").model_id != a.model_id
    v = a.encode(["The cat sleeps.", "It rains."])
    assert v.shape == (2, 32) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)


def test_st_errors_are_one_line(tmp_path):
    with pytest.raises(bimine.BimineError, match="no such folder"):
        bimine.load_encoder(f"st:{tmp_path / 'missing'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(bimine.BimineError, match="not a sentence-transformers model folder"):
        bimine.load_encoder(f"st:{tmp_path / 'empty'}")
