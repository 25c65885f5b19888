"""Teacher vocabulary distillation (issue 43): the student learns the teacher's vectors of words.

The default student is trained on software strings, manuals and the Bible, so the names and news
words of most languages never occur in its pairs. The teacher (e5-small) knows them. Beside the
pair loss, each step draws ``batch`` words of the word lists (languages drawn with probability
proportional to ``n ** (1 / temperature)``, words uniformly within a language), embeds them with
the student, and adds

* ``weight`` x the pull term :func:`bimine.training.losses.distill_loss` (student vector of a
  word toward the teacher's vector of the same word), and
* ``rank_weight`` x an in-batch ranking term (:func:`bimine.training.losses.ranking_loss` with
  the student's word vectors as sources and the teacher's as targets, both directions): among the
  batch's words, of different languages, a word's student vector must be closest to its own
  teacher vector; what the pull term alone does not ask.

Word lists are text files (``.gz``/``.xz``/... read as the rest of bimine reads text): one word
per line, or a TSV whose first column is the word (what ``bimine data vocab`` writes:
``OUT/vocab/<lang>.tsv.gz``). Their language is given as ``LANG:PATH`` or taken from the file
name's first dot-separated part (``fr.tsv.gz`` -> ``fr``); a folder stands for every
``<lang>.tsv.gz`` in it. Teacher vectors come from :class:`bimine.training.distill.TeacherCache`
(computed once, cached on disk by text, resumable).
"""

from __future__ import annotations

import glob
import logging
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

from bimine.data.vocab import inventory_words
from bimine.encoders import load_encoder
from bimine.errors import ConfigError
from bimine.langs import normalize_lang
from bimine.text.io import read_lines
from bimine.training.distill import TeacherCache, word_teacher

log = logging.getLogger(__name__)


@dataclass
class WordDistillConfig:
    """``lists``: word lists (see the module docstring; empty: no word distillation).
    ``teacher``: ``e5-small`` or a model folder. ``cache``: folder of the teacher's vectors
    (relative paths start at ``data.root``, as the lists' do, so that runs share the cache that
    ``bimine data vocab --teacher`` fills; null: ``teacher-cache`` in the run folder). ``weight`` / ``rank_weight``: the two terms.
    ``batch``: words per step. ``temperature``: language sampling. ``max_per_language``: the
    first words of each list (lists are ordered most frequent first), null for all;
    ``language_caps``: that cap for the lists of some languages (``{und: null}``: every word of
    the shared-script lists of ``bimine data vocab``, ``OUT/vocab/und``)."""

    lists: list[str] = field(default_factory=list)
    teacher: str = "e5-small"
    cache: str | None = None
    weight: float = 1.0
    rank_weight: float = 1.0
    batch: int = 512
    temperature: float = 3.0
    max_per_language: int | None = None
    teacher_batch: int = 512
    language_caps: dict[str, int | None] = field(default_factory=dict)


def check_word_config(wc: WordDistillConfig, section: str = "words") -> None:
    """Value checks of a ``words:`` (or ``prose:``, the same fields) section, errors naming it."""
    if not wc.lists:
        return
    for key in ("weight", "rank_weight"):
        v = getattr(wc, key)
        if not (0 <= v < math.inf):
            raise ConfigError(f"{section}.{key}: must be a number >= 0, got {v}")
    if wc.weight == 0 and wc.rank_weight == 0:
        raise ConfigError(f"{section}: weight and rank_weight are both 0 (remove {section}.lists to train without them)")
    if wc.batch < 2 or wc.teacher_batch < 1:
        raise ConfigError(f"{section}.batch must be >= 2 (the ranking term needs other texts) and teacher_batch >= 1")
    if not (0 < wc.temperature < math.inf):
        raise ConfigError(f"{section}.temperature: must be a number > 0, got {wc.temperature}")
    if wc.max_per_language is not None and wc.max_per_language < 1:
        raise ConfigError(f"{section}.max_per_language must be >= 1 or null")
    for lang, cap in wc.language_caps.items():
        try:
            normalize_lang(lang)
        except ConfigError as e:
            raise ConfigError(f"{section}.language_caps: {lang!r} is not a language code ({e})") from None
        if cap is not None and (not isinstance(cap, int) or cap < 1):
            raise ConfigError(f"{section}.language_caps.{lang} must be >= 1 or null, got {cap!r}")


def list_files(entries: list[str], root: str, section: str = "words") -> list[tuple[str, str]]:
    """``(lang, path)`` of each word list of ``entries`` (paths relative to ``root``)."""
    out: list[tuple[str, str]] = []
    for entry in entries:
        lang = None
        path = entry
        head, sep, tail = entry.partition(":")
        if sep and head and "/" not in head and not os.path.exists(os.path.join(root, entry)):
            lang, path = head, tail
        path = os.path.join(root, os.path.expandvars(path))
        if os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(path, "*.tsv.gz")))
            if not found:
                raise ConfigError(f"{section}.lists: {path} holds no <lang>.tsv.gz list")
            out += [(os.path.basename(p).split(".")[0], p) for p in found]
            continue
        if not os.path.isfile(path):
            raise ConfigError(f"{section}.lists: {path} does not exist")
        out.append((lang or os.path.basename(path).split(".")[0], path))
    checked = []
    for lang, path in out:
        try:
            checked.append((normalize_lang(lang), path))
        except ConfigError as e:
            raise ConfigError(f"{section}.lists: {path}: the language {lang!r} is not a language code ({e}); "
                              "give it as LANG:PATH") from None
    return checked


def read_words(path: str, limit: int | None = None) -> list[str]:
    """The words of one list (first column; blank lines and duplicates skipped), in order."""
    seen: set[str] = set()
    words: list[str] = []
    for line in read_lines(path):
        w = line.split("\t", 1)[0].strip()
        if not w or w in seen:
            continue
        seen.add(w)
        words.append(w)
        if limit is not None and len(words) >= limit:
            break
    return words


class WordBatches:
    """The words of every list, their teacher vectors, and the batch of each step (a function
    of the seed and the step alone, so a resumed run draws the same batches)."""

    def __init__(self, by_lang: dict[str, list[str]], teacher: np.ndarray, seed: int, batch: int,
                 temperature: float, stream: int = 4343) -> None:
        self.langs = sorted(by_lang)
        self.words: list[str] = []
        self.lang_of: list[str] = []
        self.starts = []
        for lang in self.langs:
            self.starts.append(len(self.words))
            self.words += by_lang[lang]
            self.lang_of += [lang] * len(by_lang[lang])
        self.sizes = np.array([len(by_lang[lang]) for lang in self.langs], dtype=np.int64)
        if len(teacher) != len(self.words):
            raise ValueError(f"{len(teacher)} teacher vectors for {len(self.words)} words")
        self.teacher = teacher
        p = self.sizes.astype(np.float64) ** (1.0 / temperature)
        self.probs = p / p.sum()
        self.seed, self.batch, self.stream = seed, batch, stream

    def __len__(self) -> int:
        return len(self.words)

    def rows(self, step: int) -> np.ndarray:
        """The rows (into :attr:`words`) of step ``step``'s batch, grouped by language."""
        rng = np.random.default_rng([self.seed, self.stream, step])
        counts = rng.multinomial(self.batch, self.probs)
        out = []
        for i, c in enumerate(counts.tolist()):
            if c:
                out.append(self.starts[i] + rng.choice(self.sizes[i], size=min(c, int(self.sizes[i])), replace=False))
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def load_word_batches(wc: WordDistillConfig, root: str, run_dir: str, dim: int, seed: int, *,
                      progress: bool = False, section: str = "words", stream: int = 4343) -> WordBatches | None:
    """The :class:`WordBatches` of ``wc`` (``None`` without lists), teacher vectors computed
    where the cache lacks them. ``section`` names the config section in errors and logs;
    ``stream`` keeps the batches of two sections independent."""
    if not wc.lists:
        return None
    by_lang: dict[str, list[str]] = {}
    caps = {normalize_lang(k): v for k, v in wc.language_caps.items()}
    for lang, path in list_files(wc.lists, root, section):
        words = read_words(path, caps.get(lang, wc.max_per_language))
        have = by_lang.setdefault(lang, [])
        seen = set(have)
        have += [w for w in words if w not in seen]
    by_lang = {k: v for k, v in by_lang.items() if v}
    if not by_lang:
        raise ConfigError(f"{section}.lists: the lists hold no text")
    folder = os.path.join(run_dir, "teacher-cache") if wc.cache is None else os.path.join(root, wc.cache)
    enc = word_teacher("auto", wc.teacher_batch) if wc.teacher == "e5-small" else load_encoder(wc.teacher)
    if enc.dim != dim:
        raise ConfigError(f"{section}.teacher {wc.teacher} gives {enc.dim}-dim vectors; the student's are {dim}-dim")
    cache = TeacherCache(folder, enc)
    words = [w for lang in sorted(by_lang) for w in by_lang[lang]]
    teacher = cache.embed(words, progress=progress)
    log.info(f"{section} distillation: {len(words)} texts of {len(by_lang)} languages")
    return WordBatches(by_lang, teacher, seed, wc.batch, wc.temperature, stream)


def teacher_vectors(out: str, cache: str, *, reader: str = "auto", batch: int = 512, progress: bool = True,
                    shared: bool = True, texts: list[str] | None = None, limit: int | None = None) -> dict:
    """e5-small vectors of every inventory word (the first ``limit`` of each list; or of ``texts``,
    e.g. the sentences of ``bimine data prose``) into the :class:`TeacherCache` folder ``cache`` (resumable: a killed run loses
    at most the shard in progress). ``reader``: see :func:`~bimine.training.distill.word_teacher`
    (``auto``: the runtime ``-m e5-small`` loads, its float32 ONNX Runtime when installed). Returns counts."""
    words = inventory_words(out, shared=shared, limit=limit) if texts is None else texts
    enc = word_teacher(reader, batch)
    tc = TeacherCache(cache, enc, load_vectors=False)
    t0 = time.time()
    made = tc.fill(words, progress=progress)
    dt = time.time() - t0
    return {"words": len(words), "computed": made, "cached_before": len(words) - made, "seconds": round(dt, 1),
            "words_per_s": round(made / dt, 1) if made and dt > 0 else None, "reader": type(enc).__name__,
            "cache": tc.dir}
