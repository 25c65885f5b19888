"""A subword vocabulary in place of hashed words (issue 9, ``features.subwords``).

A SentencePiece unigram model is trained on a language-balanced sample of the training
sentences (after bimine's own normalisation: NFKC, lower case, punctuation split off), and
each sentence's pieces become rows ``buckets + piece id`` of the embedding table, after its
hashed n-grams. The model's bytes are stored with the weights (``subwords.model``), so a
model never depends on a file beside it, and their hash is part of a run's fingerprint.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np

from bimine.errors import ConfigError

TENSOR = "subwords.model"


def _spm():
    try:
        import sentencepiece
    except ImportError as e:
        raise ConfigError("features.subwords needs the sentencepiece package: pip install sentencepiece") from e
    return sentencepiece


def sample_sentences(texts_by_lang: dict[str, list[list[str]]], per_language: int, seed: int,
                     lowercase: bool = True) -> list[str]:
    """Up to ``per_language`` distinct normalised sentences of each language (drawn with a
    seeded generator from all its texts, in every language pair it appears in), in a fixed
    order: each language gets its share of the vocabulary, whatever its size. ``lowercase``:
    the featuriser's own (``features.lowercase``), so the pieces are learnt from the text they
    will cut."""
    from bimine.text.features import normalize_text

    out: list[str] = []
    for k, lang in enumerate(sorted(texts_by_lang)):
        seen: dict[str, None] = {}
        for texts in texts_by_lang[lang]:
            for t in texts:
                seen.setdefault(t, None)
        distinct = list(seen)
        rng = np.random.default_rng([seed, 4243, k])
        pick = rng.permutation(len(distinct))[:per_language] if len(distinct) > per_language else range(len(distinct))
        for i in sorted(pick):
            s = normalize_text(distinct[i], lowercase)
            if s:
                out.append(s)
    return out


def train_model(sentences: list[str], vocab_size: int, threads: int = 1) -> bytes:
    """The bytes of a SentencePiece unigram model of ``vocab_size`` pieces trained on
    ``sentences`` (already normalised: SentencePiece's own normalisation is turned off)."""
    spm = _spm()
    if not sentences:
        raise ConfigError("features.subwords: no training sentences to build the vocabulary from")
    buf = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=buf, vocab_size=vocab_size, model_type="unigram",
            character_coverage=0.9995, normalization_rule_name="identity", input_sentence_size=0,
            shuffle_input_sentence=False, num_threads=threads, max_sentence_length=4192,
            bos_id=-1, eos_id=-1, minloglevel=2,
        )
    except RuntimeError as e:  # e.g. a vocabulary larger than the sample allows
        raise ConfigError(f"features.subwords: SentencePiece could not train a {vocab_size}-piece vocabulary: {e}") from e
    return buf.getvalue()


def digest(model: bytes) -> str:
    return hashlib.sha256(model).hexdigest()[:16]


def to_tensors(model: bytes) -> dict[str, np.ndarray]:
    return {TENSOR: np.frombuffer(model, dtype=np.uint8).copy()}


def from_tensors(weights) -> bytes | None:
    if TENSOR not in weights:
        return None
    return np.asarray(weights[TENSOR], dtype=np.uint8).tobytes()


class Pieces:
    """Piece ids of normalised sentences with a stored SentencePiece model."""

    def __init__(self, model: bytes, vocab_size: int) -> None:
        spm = _spm()
        self.processor = spm.SentencePieceProcessor(model_proto=model)
        if self.processor.get_piece_size() != vocab_size:
            raise ConfigError(f"the subword model has {self.processor.get_piece_size()} pieces, "
                              f"features.subwords says {vocab_size}")
        self.model = model

    def encode(self, normalized: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)``: the piece ids of sentence i are ``ids[offsets[i]:offsets[i + 1]]``."""
        pieces = self.processor.encode(normalized, out_type=int)
        lens = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
        offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        ids = np.fromiter((i for p in pieces for i in p), dtype=np.int64, count=int(offsets[-1]))
        return ids, offsets
