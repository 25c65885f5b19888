"""bimine as a library (issue 74): the public functions ``bimine.load_encoder``, ``bimine.mine``,
``bimine.align``, ``bimine.match_documents``, ``bimine.filter_pairs``, ``bimine.score_pairs``,
``bimine.divergence`` and ``bimine.select``, on sentences and vectors held in memory.

Each is a thin layer over the job object and the function its command runs (``MineJob`` and
``run_mine``'s steps, ``AlignJob``/``run_align``, ``FilterJob``/``run_filter``, ...), so that the
command line and the library give the same results, errors and warnings (docs/api.md). A model is
a name (``"default"``, ``"e5-small"``, ``"auto"``, a model folder, ``"st:FOLDER"``) or an object:
one of bimine's encoders, or anything with ``encode(list[str]) -> array`` (a sentence-transformers
model). Every error a user's value can cause is a :class:`bimine.BimineError` carrying the command
line's one-line message.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypedDict, Unpack

import numpy as np

from bimine.encoders.base import Encoder, as_sentences
from bimine.encoders.languages import load_for_languages
from bimine.encoders.registry import load_encoder as load_named
from bimine.encoders.user import as_encoder
from bimine.errors import BimineError, InputError, OptionError
from bimine.index.faiss_index import IndexConfig
from bimine.mining.memory import MemoryJob, mine_memory
from bimine.mining.spec import MineConfig

log = logging.getLogger("bimine")

#: what a model may be: a name or folder, or an encoder object (bimine's, or any with ``encode(list[str])``)
Model = Any
#: one side: sentences (a list, any iterable, a 1-D array of str) or vectors (a 2-D array, one row a sentence)
SideInput = Iterable[str] | np.ndarray


def _is_name(model: object) -> bool:
    return isinstance(model, (str, os.PathLike))


def _plain(value: Any) -> Any:
    """A NumPy scalar (``np.int64(4)``, ``np.float32(1.5)``) as the Python number it holds."""
    return value.item() if isinstance(value, np.generic) else value


def read_lines(path: str | os.PathLike, *, column: int | None = None, errors: str = "strict") -> list[str]:
    """The lines of a file as the commands read them: plain or compressed (.gz, .xz, .bz2, .zst), a
    byte-order mark dropped, split at ``\\n`` only (``str.splitlines`` also splits at U+2028 and
    form feeds, and its positions then differ from the command's line numbers), ``column`` a TSV
    column; a bad byte is an error naming file and line (``errors="replace"`` replaces it)."""
    from bimine.text.io import read_lines as read

    return list(read(path, column=column, errors=errors))


def load_encoder(model: Model = "default", *, langs: Sequence[str] | None = None, **options: Any) -> Encoder:
    """An encoder: ``"default"`` (the shipped fast model), ``"e5-small"``, a model folder (``bimine
    train``, ``bimine adapt``), ``"st:FOLDER"`` (a local sentence-transformers model, extra
    ``bimine[st]``), or ``"auto"``, which needs ``langs``: the shipped model where it serves every one
    of them well by its stored dev figures, else e5-small, saying which and why in the ``bimine``
    log (as ``-m auto`` says it on the command line). With ``langs``, a language the model serves
    poorly is said in the log too. An object with ``encode`` is returned as a bimine encoder.
    ``options`` go to the model (e.g. ``batch_size``, ``threads``)."""
    if model is None:
        model = "default"
    if not _is_name(model):
        return as_encoder(model)
    if isinstance(langs, str) or (langs is not None and not isinstance(langs, Iterable)):
        raise OptionError(f"langs: a list of language codes, e.g. ['en', 'fr'], not {langs!r}")
    codes = list(langs or [])
    if str(model) == "auto":
        if not codes:
            raise OptionError("model 'auto' chooses by language: give langs, e.g. load_encoder('auto', langs=['en', 'km'])")
        if options:
            raise OptionError("model 'auto' takes no options: it chooses a model; load that one by name with options")
        return load_for_languages("auto", codes, "embed", warn=log.warning)
    enc = load_named(model, **options)
    return load_for_languages(enc, codes, "embed", warn=log.warning) if codes else enc


class MineOptions(TypedDict, total=False):
    """:func:`mine`'s options (the command's, and the in-memory ones), each optional."""

    k: int
    score: str
    strategy: str
    threshold: float | None
    index: str
    rescore: str | None
    confidence: bool
    dedupe: bool
    drop_copies: bool
    min_chars: int
    src_text: Iterable[str] | None
    tgt_text: Iterable[str] | None
    batch_size: int | None
    show_progress_bar: bool
    warn: Callable[[str], None] | None


MINE_DEFAULTS: MineOptions = {"k": 4, "score": "eq9", "strategy": "max", "threshold": None, "index": "auto",
                              "rescore": None, "confidence": False, "dedupe": False, "drop_copies": False,
                              "min_chars": 0, "src_text": None, "tgt_text": None, "batch_size": None,
                              "show_progress_bar": False, "warn": None}


class AlignOptions(TypedDict, total=False):
    """:func:`align`'s options (the command's), each optional."""

    method: str
    max_side: int | None
    max_total: int | None
    overlaps: str
    length_weight: float | None
    token_weight: float | None
    show_progress_bar: bool
    warn: Callable[[str], None] | None


ALIGN_DEFAULTS: AlignOptions = {"method": "two-pass", "max_side": None, "max_total": None, "overlaps": "joined",
                                "length_weight": None, "token_weight": None, "show_progress_bar": False,
                                "warn": None}


class FilterOptions(TypedDict, total=False):
    """:func:`filter_pairs`'s options (the command's), each optional."""

    rules: str
    config: str | None
    classifiers: Sequence[str]
    no_model: bool
    threshold: float | None
    top_fraction: float | None
    token_budget: int | None
    normalize: bool
    report: str | None
    workers: int | str
    show_progress_bar: bool
    warn: Callable[[str], None] | None


FILTER_DEFAULTS: FilterOptions = {"rules": "default", "config": None, "classifiers": (), "no_model": False,
                                  "threshold": None, "top_fraction": None, "token_budget": None,
                                  "normalize": False, "report": None, "workers": "auto",
                                  "show_progress_bar": False, "warn": None}


def _options(given: Mapping[str, Any], defaults: Mapping[str, Any], function: str) -> dict[str, Any]:
    """``given`` over ``defaults``; a name not among them is an :class:`OptionError` naming the
    ones there are (as an unknown option of the command is)."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise OptionError(f"{function}: unknown option(s) {', '.join(unknown)}; its options: {', '.join(defaults)}")
    return {**defaults, **given}


def mine(src: SideInput, tgt: SideInput, *, model: Model = "default", src_lang: str | None = None,
         tgt_lang: str | None = None, **options: Unpack[MineOptions]) -> list[dict[str, Any]]:
    """Mine translation pairs between ``src`` and ``tgt``, as ``bimine mine`` does: the same pairs,
    scores and order as the command gives on the same sentences.

    ``src``/``tgt``: sentences (a list, any iterable, a 1-D array of str), embedded with ``model``,
    or vectors (a 2-D array, one row a sentence: your own LaBSE, SONAR or LASER embeddings; rows
    L2-normalised here where they are not), with their sentences in ``src_text``/``tgt_text`` when
    you want them in the records (and for ``dedupe``, ``drop_copies``, ``min_chars``);
    ``model=None`` where both sides are vectors. ``k``, ``score``, ``strategy``, ``threshold``,
    ``index`` (a FAISS factory string or ``auto``), ``dedupe``, ``drop_copies``, ``min_chars``: as
    the command's options; ``rescore`` (``default``, ``trees`` or a rescorer folder) and
    ``confidence`` as ``--rescore`` and ``--confidence`` (sentences only: they are fitted on the
    model's cosines).

    Returns the pairs best first, each a dict: ``score``, ``src_index`` and ``tgt_index`` (0-based
    positions in ``src`` and ``tgt``), ``src`` and ``tgt`` (the sentences, None where only vectors
    were given), and ``confidence`` / ``margin`` where asked. Warnings (a language the model serves
    poorly, a side that looks like another language) go to ``warn`` (default: the ``bimine`` log).
    ``batch_size``: sentences per call of the model (default: the command's 8,192; with the shipped
    model a multiple of 512 gives the command's bytes, any other size differs in the last bits).
    """
    o = _options(options, MINE_DEFAULTS, "mine")
    cfg = MineConfig(k=_plain(o["k"]), score=o["score"], strategy=o["strategy"], threshold=_plain(o["threshold"]),
                     index=IndexConfig(factory=o["index"]), dedupe=o["dedupe"], drop_copies=o["drop_copies"],
                     min_chars=_plain(o["min_chars"]))  # NumPy scalars as the Python numbers they hold
    job = MemoryJob(cfg, model=model, src_lang=src_lang, tgt_lang=tgt_lang, rescore=o["rescore"],
                    confidence=o["confidence"], batch_size=o["batch_size"], progress=o["show_progress_bar"])
    return mine_memory(src, tgt, job, src_text=o["src_text"], tgt_text=o["tgt_text"], warn=o["warn"]).pairs


@contextmanager
def _named(names: dict[str, str]) -> Iterator[None]:
    """An error of the command's code that names a temporary file of this layer names what the user
    gave instead (``src_docs``, ``pairs (src side)``); the same error class."""
    try:
        yield
    except BimineError as e:
        msg = _renamed(str(e), names)
        if msg == str(e):
            raise
        raise type(e)(msg) from None


def _renamed(text: str, names: dict[str, str]) -> str:
    for path, name in names.items():
        text = text.replace(path, name)
    return text


# --------------------------------------------------------------------------- pairs: filter, score, divergence
def _pair_columns(pairs: Any) -> tuple[list[str], list[str]]:
    """``pairs`` as two lists: an iterable of ``(src, tgt)``, or a pandas DataFrame of two columns.
    A side that is not one line of text (None, a number, a newline or tab inside) is refused,
    naming the pair: the command's files could not hold it either."""
    if hasattr(pairs, "columns") and hasattr(pairs, "itertuples"):  # a pandas DataFrame
        if len(pairs.columns) != 2:
            raise InputError(f"pairs: a DataFrame of {len(pairs.columns)} columns; give its two sides, e.g. "
                             "df[['en', 'fr']]")
        pairs = pairs.itertuples(index=False, name=None)
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
        raise InputError(f"pairs: an iterable of (src, tgt) pairs is needed, got {type(pairs).__name__}")
    src: list[str] = []
    tgt: list[str] = []
    for n, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)):
            raise InputError(f"pairs[{n}]: {pair!r:.60} is a string, not a (src, tgt) pair")
        try:
            a, b = pair
        except (TypeError, ValueError):
            raise InputError(f"pairs[{n}]: {pair!r:.60} is not a (src, tgt) pair") from None
        for side, t in (("src", a), ("tgt", b)):
            if not isinstance(t, str):
                raise InputError(f"pairs[{n}] ({side}): {type(t).__name__} {t!r:.40}, not a string (replace missing "
                                 "values first, e.g. with '')")
            bad = next((c for c in ("\n", "\r", "\t", "\x00") if c in t), None)
            if bad is not None:
                raise InputError(f"pairs[{n}] ({side}): holds {bad!r}; a side is one line of text without tabs "
                                 "(join or split it first)")
        src.append(a)
        tgt.append(b)
    return src, tgt


def _read_scored(path: str, text: tuple[str, ...] = ("src", "tgt", "reason"),
                 whole: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The rows a command wrote as a TSV with a header, one dict each: the ``text`` columns as
    written, ``keep`` as a bool, the ``whole`` columns as ints, every other one as a float."""
    with open(path, encoding="utf-8", newline="\n") as f:
        head = f.readline().rstrip("\n").split("\t")
        out = []
        for line in f:
            cells = line.rstrip("\n").split("\t")
            rec: dict[str, Any] = {}
            for name, cell in zip(head, cells):
                if name in text:
                    rec[name] = cell
                elif name == "keep":
                    rec[name] = cell == "1"
                elif name in whole:
                    rec[name] = int(cell)
                else:
                    rec[name] = float(cell) if cell != "" else None
            out.append(rec)
    return out


def _run_pairs(pairs: Any, make_job: Callable[..., Any], *, src_lang: str | None, tgt_lang: str | None,
               model: Model, progress: bool, warn: Callable[[str], None] | None) -> list[dict[str, Any]]:
    """Write ``pairs`` as two line-aligned files, run the job that ``make_job`` (the command's job
    object, its own options bound) builds for them, with the languages, model and bar every one of
    these commands takes, and read back its rows. The languages are needed, as the command's
    --src-lang and --tgt-lang are."""
    src, tgt = _pair_columns(pairs)
    missing = [n for n, lang in (("src_lang", src_lang), ("tgt_lang", tgt_lang)) if lang is None]
    if missing:
        raise OptionError(f"{' and '.join(missing)} needed: the filters check each side's language (as "
                          "--src-lang/--tgt-lang on the command line)")
    from bimine.cleanup import temp_prefix
    from bimine.filtering.job import run_filter
    from bimine.scoring.pair_scores import clear_embed_cache

    warn = warn or log.warning
    with tempfile.TemporaryDirectory(prefix=temp_prefix("api")) as tmp:
        paths = {}
        for name, lines in (("src", src), ("tgt", tgt)):
            paths[name] = os.path.join(tmp, f"pairs.{name}")
            with open(paths[name], "w", encoding="utf-8", newline="\n", errors="surrogatepass") as f:
                f.writelines(t + "\n" for t in lines)
        out = os.path.join(tmp, "scored.tsv")
        names = {paths["src"]: "pairs (src side)", paths["tgt"]: "pairs (tgt side)", out: "the output"}
        say = warn
        try:
            with _named(names):
                job = make_job(src=paths["src"], tgt=paths["tgt"], output=out, src_lang=src_lang, tgt_lang=tgt_lang,
                               model=model, progress=progress)
                outcome = run_filter(job, warn=lambda line: say(_renamed(line, names)))
        finally:
            clear_embed_cache()  # the last blocks' vectors, and the model that made them, are let go
        for line in outcome.result.warnings:
            say(_renamed(line, names))
        for line in outcome.result.notes:
            log.info(_renamed(line, names))
        return _read_scored(out)


def _workers(model: Model, workers: int | str) -> int | str:
    """One process for a model given as an object: a user's PyTorch model is never run in forked
    workers (where it can hang, and a CUDA one fails); bimine's named models fork as the command does."""
    return workers if _is_name(model) else 1


def filter_pairs(pairs: Any, *, src_lang: str | None = None, tgt_lang: str | None = None, model: Model = "default",
                 **options: Unpack[FilterOptions]) -> list[dict[str, Any]]:
    """Score and decide on each pair as ``bimine filter`` does: one dict per pair, in input order,
    with ``src``, ``tgt``, every score the pipeline computed, the combined ``score`` (higher is
    cleaner), ``keep`` (a bool) and ``reason`` (the first failing filter; "" for a kept pair) --
    the columns of the command's output. ``pairs``: an iterable of ``(src, tgt)`` or a pandas
    DataFrame of two columns. The options are the command's (``rules``, ``config``: a pipeline
    YAML, ``classifiers``, the selection ``threshold`` / ``top_fraction`` / ``token_budget``,
    ``report``: an HTML report written there)."""
    from bimine.filtering.job import FilterJob

    o = _options(options, FILTER_DEFAULTS, "filter_pairs")
    job = partial(FilterJob, rules=o["rules"], config=o["config"], classifiers=list(o["classifiers"]),
                  no_model=o["no_model"], threshold=o["threshold"], top_fraction=o["top_fraction"],
                  token_budget=o["token_budget"], normalize=o["normalize"], report=o["report"],
                  workers=_workers(model, o["workers"]), filtering=True)
    return _run_pairs(pairs, job, src_lang=src_lang, tgt_lang=tgt_lang, model=model,
                      progress=o["show_progress_bar"], warn=o["warn"])


def score_pairs(pairs: Any, *, src_lang: str | None = None, tgt_lang: str | None = None, model: Model = "default",
                rules: str = "default", config: str | None = None, classifiers: Sequence[str] = (),
                no_model: bool = False, workers: int | str = "auto", show_progress_bar: bool = False,
                warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every score of each pair as ``bimine score`` computes them (no decision): one dict per pair,
    in input order, ``src``, ``tgt``, each score and the combined ``score`` (higher is cleaner)."""
    from bimine.filtering.job import FilterJob

    job = partial(FilterJob, rules=rules, config=config, classifiers=list(classifiers), no_model=no_model,
                  workers=_workers(model, workers), filtering=False)
    return _run_pairs(pairs, job, src_lang=src_lang, tgt_lang=tgt_lang, model=model, progress=show_progress_bar,
                      warn=warn)


def divergence(pairs: Any, *, src_lang: str | None = None, tgt_lang: str | None = None,
               divergence_model: str = "default", model: Model = "default", show_progress_bar: bool = False,
               warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Each pair's semantic divergence score as ``bimine divergence`` gives it (paper 004): one dict
    per pair, ``src``, ``tgt``, the gating rules, ``divergence`` and ``score`` (higher: closer in
    meaning)."""
    from bimine.filtering.job import divergence_job

    return _run_pairs(pairs, partial(divergence_job, divergence_model=divergence_model, keep=None), src_lang=src_lang,
                      tgt_lang=tgt_lang, model=model, progress=show_progress_bar, warn=warn)


def select(pairs: Any, keep: float, *, src_lang: str | None = None, tgt_lang: str | None = None,
           divergence_model: str = "default", model: Model = "default", show_progress_bar: bool = False,
           warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """``bimine select``: keep the least divergent ``keep`` fraction of the pairs; one dict per pair
    as :func:`divergence` gives, with ``keep`` and ``reason``."""
    from bimine.filtering.job import divergence_job

    return _run_pairs(pairs, partial(divergence_job, divergence_model=divergence_model, keep=keep), src_lang=src_lang,
                      tgt_lang=tgt_lang, model=model, progress=show_progress_bar, warn=warn)


# --------------------------------------------------------------------------- documents
def align(src_lines: Iterable[str], tgt_lines: Iterable[str], *, src_lang: str | None = None,
          tgt_lang: str | None = None, model: Model = "default", **options: Unpack[AlignOptions]) -> list[dict[str, Any]]:
    """Align the sentences of one document pair as ``bimine align`` does: its beads in order, each a
    dict ``src`` and ``tgt`` (the 0-based sentence numbers of each side: one side empty for an
    insertion or deletion), ``cost`` (lower is better) and ``src_text`` / ``tgt_text`` (the
    sentences, stripped, joined by a space). The options are the command's."""
    from bimine.documents.job import AlignJob, align_in_memory

    src, tgt = as_sentences(src_lines), as_sentences(tgt_lines)
    o = _options(options, ALIGN_DEFAULTS, "align")
    job = AlignJob(output="", src="src", tgt="tgt", src_lang=src_lang, tgt_lang=tgt_lang, model=model,
                   method=o["method"], max_side=o["max_side"], max_total=o["max_total"], overlaps=o["overlaps"],
                   length_weight=o["length_weight"], token_weight=o["token_weight"], progress=o["show_progress_bar"])
    a = align_in_memory(job, src, tgt, warn=o["warn"] or log.warning)
    return [{"src": list(b.src), "tgt": list(b.tgt), "cost": float(b.cost),
             "src_text": " ".join(src[i].strip() for i in b.src), "tgt_text": " ".join(tgt[j].strip() for j in b.tgt)}
            for b in a.beads]


def _documents(docs: Any, name: str) -> list[tuple[str, list[str] | str]]:
    """A collection given in Python: a dict ``{id: text or sentences}``, or a list of texts or of
    sentence lists (ids ``0``, ``1``, ...)."""
    items = list(docs.items()) if isinstance(docs, dict) else list(enumerate(docs)) if isinstance(
        docs, Iterable) and not isinstance(docs, (str, bytes)) else None
    if items is None:
        raise InputError(f"{name}: a dict {{id: text}} or a list of documents is needed, got {type(docs).__name__}")
    out: list[tuple[str, list[str] | str]] = []
    for key, doc in items:
        if isinstance(doc, str):
            out.append((str(key), doc))
        else:
            try:
                out.append((str(key), as_sentences(doc)))
            except InputError as e:
                raise InputError(f"{name}[{key!r}]: {e}") from None
    return out


def match_documents(src_docs: Any, tgt_docs: Any, *, src_lang: str | None = None, tgt_lang: str | None = None,
                    model: Model = "default", method: str = "eq3", top: int = 1, one_to_one: bool = False,
                    show_progress_bar: bool = False, warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Which document of ``tgt_docs`` translates each of ``src_docs``, as ``bimine docs match``
    does. A collection: a dict ``{id: document}`` or a list (ids 0, 1, ...); a document is its raw
    text (split into sentences as the command splits it) or a list of its sentences. One dict per
    match written, as the command's rows: ``src_doc``, ``tgt_doc``, ``score`` and the method's
    columns (``rank``, ``votes``)."""
    import json

    from bimine.cleanup import temp_prefix
    from bimine.documents.job import run_docs_match
    from bimine.documents.spec import DocMatchConfig, DocsMatchJob

    cols = (_documents(src_docs, "src_docs"), _documents(tgt_docs, "tgt_docs"))
    match = DocMatchConfig(method=method, top=top, one_to_one=one_to_one)
    with tempfile.TemporaryDirectory(prefix=temp_prefix("api")) as tmp:
        paths = []
        for name, docs in zip(("src", "tgt"), cols):
            paths.append(os.path.join(tmp, f"{name}.jsonl"))
            with open(paths[-1], "w", encoding="utf-8", newline="\n") as f:
                for key, doc in docs:
                    field = "text" if isinstance(doc, str) else "sentences"
                    f.write(json.dumps({"id": key, field: doc}, ensure_ascii=False) + "\n")
        out = os.path.join(tmp, "doc-pairs.tsv")
        names = {paths[0]: "src_docs", paths[1]: "tgt_docs", out: "the output"}
        say = warn or log.warning
        with _named(names):
            run_docs_match(DocsMatchJob(src=paths[0], tgt=paths[1], output=out, src_lang=src_lang,
                                        tgt_lang=tgt_lang,
                                        model=model, match=match, progress=show_progress_bar),
                           warn=lambda line: say(_renamed(line, names)))
        return _read_scored(out, text=("src_doc", "tgt_doc"), whole=("rank", "votes"))
