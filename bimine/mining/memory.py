"""Mining sentences or vectors held in memory (issue 74): what :func:`bimine.mine` runs.

The steps after embedding are :func:`bimine.mining.pipeline.mine_files`' own (kNN both ways, score
and selection, the dropped pairs, the rescorer, the calibrated confidence), run on
:class:`MemorySide` s instead of stores: the same pairs and scores as ``bimine mine`` on the same
sentences. As a store holds them, the vectors are kept in float16 (the command's stores are), one
copy a side, and read back as float32 a piece at a time by the search.

A side is a list (or any iterable, or a 1-D array) of sentences, embedded here with the model, or a
2-D array of vectors (a user's own LaBSE, SONAR or LASER embeddings: rows L2-normalised here when
they are not), optionally with its sentences beside it (``src_text``) for the dropped-pair rules and
the records' texts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

import numpy as np

from bimine.embed import embed_lines
from bimine.encoders.base import Encoder, as_sentences
from bimine.encoders.languages import resolve_lang
from bimine.errors import InputError, OptionError
from bimine.index.sides import side_from_array
from bimine.langs import normalize_lang
from bimine.mining.job import MineModels, load_mine_models
from bimine.mining.pipeline import Mined, MineReport, apply_rescorer, drop_pairs, mine_sides
from bimine.mining.spec import MineConfig
from bimine.progress import bar
from bimine.scoring.calibration import Calibration
from bimine.text.langcheck import LanguageChecks

log = logging.getLogger(__name__)

#: one side as given: sentences (any iterable of str) or vectors (a 2-D array)
Side = Iterable[str] | np.ndarray

#: sentences embedded per call: the command's batch (bimine.embed), so that the DAN's vectors are its bytes
EMBED_BATCH = 8192
#: rows of a side searched as one shard: the command's store shards (``MineJob.shard_size``), so that a side
#: of more rows is indexed and searched as the command's stores are (and read as float32 a shard at a time)
SHARD_ROWS = 1_000_000


@dataclass
class MemorySide:
    """One side in memory: its vectors (float16, as a store holds them), its sentences (None: vectors
    only) and the rows that may be mined (blank sentences are not)."""

    vectors: np.ndarray
    text: list[str] | None
    valid: np.ndarray

    def texts(self, rows: np.ndarray, errors: str = "strict") -> dict[int, str | None]:
        t = self.text
        return {int(r): (t[r] if t is not None else None) for r in np.asarray(rows).tolist()}

    def take(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors[np.asarray(rows, dtype=np.int64)], dtype=np.float32)


def is_vectors(data: object) -> TypeGuard[np.ndarray]:
    """Whether a side is given as vectors: a 2-D array of numbers (anything else is sentences)."""
    return isinstance(data, np.ndarray) and data.ndim == 2 and data.dtype.kind in "fiu"


def vector_side(x: np.ndarray, name: str, text: Iterable[str] | None = None) -> MemorySide:
    """A side of given vectors: checked (finite, non-empty rows), L2-normalised where a row is not."""
    if x.shape[1] == 0:
        raise InputError(f"{name}: vectors of width 0")
    x = np.asarray(x, dtype=np.float32)
    finite = np.isfinite(x).all(axis=1)
    if not finite.all():
        raise InputError(f"{name}: row {int(np.flatnonzero(~finite)[0])} is not finite (NaN or inf)")
    norms = np.linalg.norm(x, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-3):
        x = x / np.maximum(norms, 1e-12)[:, None]
    texts = None if text is None else as_sentences(text)
    if texts is not None and len(texts) != len(x):
        raise InputError(f"{name}: {len(x)} vectors but {len(texts)} sentences beside them")
    keep = norms > 0
    if texts is not None:  # a blank sentence is never mined, as with sentences alone and in the command
        keep &= np.array([bool(t.strip()) for t in texts], dtype=bool)
    valid = np.flatnonzero(keep).astype(np.int64)
    return MemorySide(x.astype(np.float16), texts, valid)


def text_side(data: Iterable[str], name: str, encoder: Encoder, lang: str, *, batch_size: int | None, progress: bool) -> MemorySide:
    """A side of sentences, embedded in the command's batches (blank ones are never mined)."""
    texts = as_sentences(data)
    out = np.empty((len(texts), encoder.dim), dtype=np.float16)
    row = 0
    with bar(total=len(texts), unit=" lines", desc=f"embed {name}", enabled=progress, force=progress) as pb:
        for emb in embed_lines(encoder, texts, lang, batch_size=batch_size or EMBED_BATCH, progress=pb):
            out[row : row + len(emb)] = emb  # the command's batches, kept in float16 as its stores keep them
            row += len(emb)
    valid = np.array([n for n, t in enumerate(texts) if t.strip()], dtype=np.int64)
    return MemorySide(out, texts, valid)


@dataclass
class MemoryMined:
    """The result of :func:`mine_memory`: the pairs (each a record), and the run's report."""

    pairs: list[dict]
    report: MineReport


def _sides(src: Side, tgt: Side, m: MineModels | None, langs: tuple[str, str], texts: tuple, *,
           batch_size: int | None, progress: bool, warn: Callable[[str], None]) -> tuple[MemorySide, MemorySide]:
    sides = []
    for data, name, lang, text in zip((src, tgt), ("src", "tgt"), langs, texts):
        if is_vectors(data):
            sides.append(vector_side(data, name, text))
        else:
            if text is not None:
                raise OptionError(f"{name}_text: given beside sentences; it goes beside vectors only")
            if m is None:  # _check_request refused sentences without a model
                raise OptionError(f"{name}: sentences need a model to embed them")
            sides.append(text_side(data, name, m.encoder, lang, batch_size=batch_size, progress=progress))
    x, y = sides
    if is_vectors(src) != is_vectors(tgt):
        warn(f"warning: {'src' if is_vectors(src) else 'tgt'} is given as vectors and the other side is embedded by "
             "the model: mine them together only if the vectors come from that same model")
    if x.vectors.shape[1] != y.vectors.shape[1]:
        raise InputError(f"src and tgt vectors differ in width ({x.vectors.shape[1]} and {y.vectors.shape[1]}): "
                         "both sides must come from the same model")
    return x, y


def _records(mined: Mined, x: MemorySide, y: MemorySide, cal: Calibration | None) -> list[dict]:
    conf = cal.confidence(x.take(mined.i), y.take(mined.j)).tolist() if cal is not None else None
    out = []
    for n, (s, a, b) in enumerate(zip(mined.s.tolist(), mined.i.tolist(), mined.j.tolist())):
        rec = {"score": float(s), "src_index": a, "tgt_index": b, "src": mined.src_text.get(a),
               "tgt": mined.tgt_text.get(b)}
        if conf is not None:
            rec["confidence"] = float(conf[n])
        if mined.margin is not None:
            rec["margin"] = float(mined.margin[n])
        out.append(rec)
    return out


def _check_request(src: Side, tgt: Side, model: Any, cfg: MineConfig, *, rescore: str | None, confidence: bool,
                   texts: tuple) -> None:
    vectors = [is_vectors(d) for d in (src, tgt)]
    if any(vectors) and (rescore is not None or confidence):  # a head fits its model's cosines
        raise OptionError(f"{'rescore' if rescore is not None else 'confidence'}: fitted on a model's own cosines, so "
                          "not for given vectors (their model is not known); embed the sentences with the model instead")
    blind = [n for n, v, t in zip(("src", "tgt"), vectors, texts) if v and t is None]
    needs = [o for o, on in (("min_chars", cfg.min_chars), ("drop_copies", cfg.drop_copies),
                             ("dedupe", cfg.dedupe)) if on]
    if blind and needs:
        raise OptionError(f"{', '.join(needs)} read the sentences: give {blind[0]}_text beside the {blind[0]} vectors")
    if model is None and not all(vectors):
        raise OptionError("model=None takes vectors only; give a model to embed the sentences")


@dataclass(frozen=True)
class MemoryJob:
    """What in-memory mining is asked besides its two sides (:func:`bimine.mine`'s options):
    ``cfg`` the mining settings; ``model`` a name, an encoder object, or None (both sides vectors);
    the sides' languages; ``rescore``, ``trained_threshold``, ``confidence`` and ``calibration`` as
    :class:`~bimine.mining.spec.MineJob` has them; ``batch_size`` sentences per call of the model
    (None: :data:`EMBED_BATCH`); ``progress`` bars."""

    cfg: MineConfig = field(default_factory=MineConfig)
    model: Any = "default"
    src_lang: str | None = None
    tgt_lang: str | None = None
    rescore: str | None = None
    trained_threshold: bool = False
    confidence: bool = False
    calibration: str | None = None
    batch_size: int | None = None
    progress: bool = False


def mine_memory(src: Side, tgt: Side, job: MemoryJob, *, src_text: Iterable[str] | None = None,
                tgt_text: Iterable[str] | None = None, warn: Callable[[str], None] | None = None) -> MemoryMined:
    """Mine ``src`` against ``tgt`` (sentences or vectors each: module docstring) as ``job`` asks;
    the pairs best first as records ``score``, ``src_index``, ``tgt_index`` (0-based), ``src``,
    ``tgt`` (None where only vectors were given), ``confidence`` (with ``confidence``), ``margin``
    (the mining score, with ``rescore``, whose probability is then the score)."""
    warn = warn or log.warning
    cfg, model, src_lang, tgt_lang, progress = job.cfg, job.model, job.src_lang, job.tgt_lang, job.progress
    src, tgt = (d if is_vectors(d) else as_sentences(d) for d in (src, tgt))  # a generator is read once, here
    texts = (src_text, tgt_text)
    _check_request(src, tgt, model, cfg, rescore=job.rescore, confidence=job.confidence, texts=texts)
    for lang in (src_lang, tgt_lang):
        if lang is not None:
            normalize_lang(lang)  # a bad code fails before any work, as --src-lang xx does
    m, langs = None, ("und", "und")
    if model is not None:
        m = load_mine_models(model, [src_lang, tgt_lang], cfg, rescore=job.rescore,
                             trained_threshold=job.trained_threshold, confidence=job.confidence,
                             calibration=job.calibration, warn=warn)
        cfg = m.cfg
        langs = (resolve_lang(m.encoder, src_lang, "src_lang"), resolve_lang(m.encoder, tgt_lang, "tgt_lang"))
    checks: list[tuple[Any, str, str, int | None]] = [
        (d, lang, f"{n}_lang", None) for d, lang, n in ((src, src_lang, "src"), (tgt, tgt_lang, "tgt"))
        if lang is not None and not is_vectors(d)]
    with LanguageChecks(checks, warn=warn):  # the command's check of each side's language, on the sentences
        x, y = _sides(src, tgt, m, (normalize_lang(langs[0]), normalize_lang(langs[1])), texts,
                      batch_size=job.batch_size, progress=progress, warn=warn)
    report = MineReport()
    report.src_sentences, report.tgt_sentences = len(x.vectors), len(y.vectors)
    report.src_blank, report.tgt_blank = len(x.vectors) - len(x.valid), len(y.vectors) - len(y.valid)
    rescorer = m.rescorer if m is not None else None
    search_cfg = replace(cfg, threshold=None) if rescorer is not None else cfg
    found = mine_sides(side_from_array(x.vectors, x.valid, shard_rows=SHARD_ROWS),
                       side_from_array(y.vectors, y.valid, shard_rows=SHARD_ROWS), search_cfg,
                       progress=progress, report=report, knn_features=rescorer is not None)
    mined = Mined(found[0], found[1], found[2], knn=found[3] if rescorer is not None else None)
    drop_pairs(cfg, mined, {"src": x, "tgt": y}, "strict", report)
    if rescorer is not None and m is not None:
        apply_rescorer(mined, rescorer, m.encoder, cfg.threshold, langs, report, progress=progress)
    report.written = len(mined.s)
    return MemoryMined(_records(mined, x, y, m.calibration if m is not None else None), report)
