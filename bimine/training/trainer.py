"""``bimine train``: config, training loop, hard negatives, checkpoints, dev P@1, export.

A run folder holds ``config.yaml`` (the resolved config), ``checkpoint/`` (weights,
optimiser state and step, written atomically), ``log.jsonl`` (loss and dev scores) and
``model/`` (the exported encoder: ``config.json`` + ``model.safetensors``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import yaml

from bimine.config import from_dict, to_dict
from bimine.data.prose import check_prose_holdout
from bimine.data.recipe import recipe_corpora
from bimine.encoders import load_encoder
from bimine.encoders.base import model_digest
from bimine.encoders.dan import DANConfig
from bimine.encoders.torch_optim import RowAdam
from bimine.encoders.transformer import TokenFeaturizer, TransformerConfig, TransformerNet
from bimine.errors import ConfigError
from bimine.eval.retrieval import evaluate_retrieval
from bimine.jitcache import import_blas_first
from bimine.langs import normalize_lang
from bimine.mining.knn import knn_exact
from bimine.progress import bar as progress_bar
from bimine.text import subwords
from bimine.text.features import Featurizer
from bimine.text.subwords import digest, to_tensors
from bimine.text.translit import build_table, table_digest, table_to_tensors
from bimine.training import teacher_pieces
from bimine.training.data import (
    BatchSchedule,
    CorpusSpec,
    PairGroup,
    TemperatureSchedule,
    featurize_side,
    load_groups,
)
from bimine.training.distill import DistillConfig, TeacherCache, english_pool, long_enough, teacher_rows
from bimine.training.losses import LossConfig, distill_loss, ranking_loss, word_distill_loss
from bimine.training.model import TorchDAN
from bimine.training.teacher_pieces import TeacherVocab
from bimine.training.words import WordDistillConfig, check_word_config, list_files, load_word_batches
from bimine.weights import load_safetensors, read_json, save_safetensors

log = logging.getLogger(__name__)


@dataclass
class RecipeSpec:
    """A folder built by ``bimine data build``: one training corpus per language with at
    least ``min_pairs`` pairs (only ``languages`` when given), each read up to ``max_pairs``
    (the recipe writes every language's pairs in random order, so the first pairs are a sample).
    ``holdout``: the first ``holdout`` pairs of every language with at least 10x as many are
    left out of training: pairs the encoder never saw, for what is trained on its output
    (a rescorer of mined pairs: its cosines of pairs it trained on are higher than of new ones).
    ``source_caps``: ``{source: n}``, at most ``n`` pairs of each language from that source of
    the recipe (``iso-codes``: most of Lao's and Bashkir's pairs are names of countries,
    languages and currencies), the first ones after the held-out pairs; a pair that the source
    and another both gave counts as the source's."""

    path: str
    min_pairs: int = 1
    max_pairs: int | None = None
    holdout: int = 0
    languages: list[str] = field(default_factory=list)
    source_caps: dict[str, int] = field(default_factory=dict)


@dataclass
class DataConfig:
    """``root``: folder that relative corpus paths start from (default: the config's folder).

    ``sampling_temperature``: ``null`` reads every language pair's data once per epoch (batches
    in proportion to the data); a number T samples the language pair of each batch with
    probability ∝ n ** (1/T) (language-balanced sampling of multilingual models).
    ``language_weights``: ``{lang: w}`` multiplies that probability for the language pairs
    with ``lang`` on one side (not English, which is on every side), e.g. to keep the share
    of the languages a model must stay strong in; needs ``sampling_temperature``.
    ``max_passes``: at most this many expected passes over a language pair's pairs in the run's
    steps; the share a small language gives up goes to the others (``null``: no cap; needs
    ``sampling_temperature``; the cap depends on ``train.steps``, so a run resumes only with
    the steps it started with).
    ``precompute_features``: featurise every sentence once at the start (fast, ~1.2 KB a pair),
    or each batch when it is drawn, in a thread ahead of the training step (a quarter of the
    memory; the same features, so the same model)."""

    train: list[CorpusSpec] = field(default_factory=list)
    dev: list[CorpusSpec] = field(default_factory=list)
    recipes: list[RecipeSpec] = field(default_factory=list)
    root: str | None = None
    dedupe: bool = True
    sampling_temperature: float | None = None
    language_weights: dict[str, float] = field(default_factory=dict)
    max_passes: float | None = None
    precompute_features: bool = True


@dataclass
class HardNegConfig:
    """Hard negatives (paper 000 §2.3).

    per_example: M, the hard negatives appended per selected pair (0 turns them off).
    fraction: share of the training pairs that get hard negatives (paper: 20%).
    baseline: a model folder that retrieves them; when empty, the model being trained
        retrieves them once it has trained ``start_step`` steps with random negatives.
    candidates: how many neighbours are retrieved per source before removing the gold
        target and any text equal to it.
    pool: search at most this many targets of a language pair (a seeded sample of its
        pairs' targets) instead of all of them (null, the paper's): exact search over all
        targets costs (fraction x n) x n dot products, hours for the million pairs of a large
        language pair on a CPU; a pool of n' costs (fraction x n) x n'.
    """

    per_example: int = 0
    fraction: float = 0.2
    baseline: str | None = None
    start_step: int = 2000
    candidates: int = 32
    pool: int | None = None


@dataclass
class OptimConfig:
    """Adam for the dense layers, RowAdam (SparseAdam's update, faster) for the embedding table; linear warm-up, then
    linear decay to ``final_lr_fraction`` of the peak at the last step."""

    lr: float = 1e-3
    embedding_lr: float = 5e-3
    warmup_steps: int = 200
    final_lr_fraction: float = 0.1


@dataclass
class LoopConfig:
    batch_size: int = 512
    steps: int = 10000
    max_minutes: float | None = None
    seed: int = 0
    threads: int = 2
    eval_every: int = 1000
    checkpoint_every: int = 1000
    log_every: int = 50
    dev_max_pairs: int = 2000


ENCODERS = ("dan", "transformer")


@dataclass
class TrainConfig:
    """``encoder``: ``dan`` (``model`` is a :class:`DANConfig`) or ``transformer`` (a
    :class:`~bimine.encoders.transformer.TransformerConfig`, paper 001 §4.2; features are then
    always made per batch, ``data.precompute_features`` notwithstanding)."""

    data: DataConfig = field(default_factory=DataConfig)
    model: DANConfig = field(default_factory=DANConfig)
    encoder: str = "dan"
    loss: LossConfig = field(default_factory=LossConfig)
    hard_negatives: HardNegConfig = field(default_factory=HardNegConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    words: WordDistillConfig = field(default_factory=WordDistillConfig)
    prose: WordDistillConfig = field(default_factory=WordDistillConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: LoopConfig = field(default_factory=LoopConfig)
    export_quantize: str = "int8"


def _check_langs(data: dict) -> None:
    """Language codes of the raw config, each error naming its dotted key. Runs before the
    type check builds anything (DANConfig normalises model.languages as it is built); values
    of the wrong type are left for the type check to report."""
    def items(x) -> list:
        return x if isinstance(x, list) else []

    d = data.get("data") if isinstance(data.get("data"), dict) else {}
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    keys = [(f"data.{part}[{i}].{side}", c.get(side)) for part in ("train", "dev")
            for i, c in enumerate(items(d.get(part))) if isinstance(c, dict) for side in ("src_lang", "tgt_lang")]
    keys += [(f"model.languages[{i}]", x) for i, x in enumerate(items(model.get("languages")))]
    for key, code in keys:
        if not isinstance(code, str):
            continue
        try:
            normalize_lang(code)
        except ConfigError as e:
            raise ConfigError(f"{key}: {e}") from None


def _check_values(cfg: TrainConfig) -> None:
    """Value ranges that would otherwise fail (or divide by zero) only after the data is loaded."""
    t, o, h, m, loss = cfg.train, cfg.optim, cfg.hard_negatives, cfg.model, cfg.loss
    dan = {"model.embed_dim": (m.embed_dim, 1), "model.output_dim": (m.output_dim, 1),
           **{f"model.hidden[{i}]": (x, 1) for i, x in enumerate(m.hidden)}} if isinstance(m, DANConfig) else {}
    at_least = {
        "train.batch_size": (t.batch_size, 1), "train.steps": (t.steps, 1), "train.threads": (t.threads, 1),
        "train.eval_every": (t.eval_every, 1), "train.checkpoint_every": (t.checkpoint_every, 1),
        "train.log_every": (t.log_every, 1), "train.dev_max_pairs": (t.dev_max_pairs, 1),
        "optim.warmup_steps": (o.warmup_steps, 0), "hard_negatives.per_example": (h.per_example, 0),
        "hard_negatives.start_step": (h.start_step, 0), "hard_negatives.candidates": (h.candidates, 1), **dan,
        **{f"data.{part}[{i}].max_pairs": (c.max_pairs, 1) for part in ("train", "dev")
           for i, c in enumerate(getattr(cfg.data, part)) if c.max_pairs is not None},
        **{f"data.{part}[{i}].skip_pairs": (c.skip_pairs, 0) for part in ("train", "dev")
           for i, c in enumerate(getattr(cfg.data, part))},
        **{f"data.recipes[{i}].holdout": (r.holdout, 0) for i, r in enumerate(cfg.data.recipes)},
    }
    if h.pool is not None:
        at_least["hard_negatives.pool"] = (h.pool, 1)
    for key, (value, low) in at_least.items():
        if value < low:
            raise ConfigError(f"{key}: must be >= {low}, got {value}")
    if t.max_minutes is not None and not 0 <= t.max_minutes < math.inf:  # 0: stop after one step
        raise ConfigError(f"train.max_minutes: must be >= 0 or null, got {t.max_minutes}")
    positive = {"optim.lr": o.lr, "optim.embedding_lr": o.embedding_lr, "loss.scale": loss.scale}
    for key, value in positive.items():
        if not value > 0 or not math.isfinite(value):
            raise ConfigError(f"{key}: must be a number > 0, got {value}")
    for key, value in {"optim.final_lr_fraction": o.final_lr_fraction, "hard_negatives.fraction": h.fraction}.items():
        if not 0 <= value <= 1:
            raise ConfigError(f"{key}: must be between 0 and 1, got {value}")
    if not 0 <= loss.length_penalty < math.inf:
        raise ConfigError(f"loss.length_penalty: must be >= 0, got {loss.length_penalty}")
    dc = cfg.distill
    if dc.teacher is not None and (dc.pairs_per_language < 1 or dc.batch_size < 1 or not dc.weight > 0
                                   or (dc.english_pool is not None and dc.english_pool < 1) or dc.min_words < 1):
        raise ConfigError("distill: pairs_per_language, english_pool, min_words and batch_size must be >= 1, weight > 0")
    if loss.similarity not in ("cosine", "dot"):
        raise ConfigError(f"loss.similarity: must be cosine or dot, got {loss.similarity!r}")
    check_word_config(cfg.words)
    check_word_config(cfg.prose, "prose")


def check_train_files(cfg: TrainConfig) -> None:
    """Every corpus file of ``data.train`` and ``data.dev`` exists (paths as resolved against
    ``data.root``), and so does a ``hard_negatives.baseline`` model folder, so a typo fails
    before minutes of loading the corpora listed before it."""
    for part in ("train", "dev"):
        for i, spec in enumerate(getattr(cfg.data, part)):
            for side in ("src", "tgt"):
                rel = getattr(spec, side)
                if rel is None:
                    continue
                path = os.path.join(cfg.data.root or ".", os.path.expandvars(rel))
                if not os.path.isfile(path):
                    what = "is a folder" if os.path.isdir(path) else "no such file"
                    raise ConfigError(f"data.{part}[{i}].{side}: {path}: {what} (relative paths start at data.root, "
                                      f"{cfg.data.root})")
    hn = cfg.hard_negatives
    if hn.per_example > 0 and hn.baseline and hn.baseline not in ("default", "e5-small"):
        if not os.path.isfile(os.path.join(hn.baseline, "config.json")):
            raise ConfigError(f"hard_negatives.baseline: {hn.baseline} is not a model folder (no config.json); "
                              "use 'default', 'e5-small' or a folder written by 'bimine train'")


def recipe_folder(cfg: TrainConfig, recipe) -> str:
    """The folder of a ``data.recipes`` entry (its path is relative to ``data.root``)."""
    return os.path.join(cfg.data.root, os.path.expandvars(recipe.path))


def check_prose_lists(cfg: TrainConfig) -> None:
    """Refuse prose lists drawn from a ``data.recipes`` entry with a smaller holdout than that entry's
    (:func:`bimine.data.prose.check_prose_holdout`): every folder that holds one of the
    ``prose.lists`` files, resolved as training reads them (:func:`list_files`)."""
    recipes = [(recipe_folder(cfg, r), r.holdout) for r in cfg.data.recipes]
    for folder in dict.fromkeys(os.path.dirname(p) for _, p in list_files(cfg.prose.lists, cfg.data.root, "prose")):
        check_prose_holdout(folder, recipes)


def load_train_config(data: dict, base_dir: str = ".") -> TrainConfig:
    """The training config of ``data`` (a YAML mapping with any --set overrides applied).

    Everything that can be checked without reading the corpora is checked here, each error
    naming its dotted key: unknown keys, types (``train.steps: 2.5`` is not an int, YAML
    ``true`` is not a number, ``1`` is not a boolean; see ``bimine.config``), value ranges,
    language codes. :meth:`Trainer.fit` adds the corpus files and the run folder.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"the config must be a mapping (key: value lines), got {type(data).__name__}")
    _check_langs(data)
    encoder = data.get("encoder", "dan")
    if encoder not in ENCODERS:
        raise ConfigError(f"encoder: must be {' or '.join(ENCODERS)}, got {encoder!r}")
    if encoder == "transformer":
        rest = {k: v for k, v in data.items() if k != "model"}
        cfg = from_dict(TrainConfig, rest)
        cfg.model = from_dict(TransformerConfig, data.get("model") or {}, "model")
    else:
        cfg = from_dict(TrainConfig, data)
    _check_values(cfg)
    if cfg.data.root is None:
        cfg.data.root = base_dir
    else:
        cfg.data.root = os.path.join(base_dir, os.path.expandvars(cfg.data.root))
    _add_recipes(cfg)
    _check_sampling(cfg)
    if not cfg.data.train:
        raise ConfigError("data.train lists no corpus")
    _check_export(cfg)
    if not cfg.model.shared:
        langs = {c.src_lang for c in cfg.data.train} | {c.tgt_lang for c in cfg.data.train}

        missing = {normalize_lang(x) for x in langs} - set(cfg.model.languages)
        if missing:
            raise ConfigError(f"model.languages lacks {sorted(missing)} used in data.train")
    return cfg


def _add_recipes(cfg: TrainConfig) -> None:
    """``data.recipes``: their corpora appended to ``data.train``, each source cap checked."""
    for i, r in enumerate(cfg.data.recipes):
        folder = recipe_folder(cfg, r)
        try:
            entries = recipe_corpora(folder, min_pairs=r.min_pairs, max_pairs=r.max_pairs, holdout=r.holdout,
                                     languages=[normalize_lang(x) for x in r.languages] or None)
        except ConfigError as e:
            raise ConfigError(f"data.recipes[{i}]: {e}") from None
        for source, cap in r.source_caps.items():
            if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
                raise ConfigError(f"data.recipes[{i}].source_caps.{source}: must be a whole number >= 0, got {cap!r}")
            units = os.path.join(folder, "units")
            if not os.path.isdir(os.path.join(units, source)):
                have = sorted(os.listdir(units)) if os.path.isdir(units) else []
                raise ConfigError(f"data.recipes[{i}].source_caps: {folder} has no units of source {source!r} "
                                  f"(units/{source}/); its sources: {', '.join(have) or 'none'}")
        for e in entries:
            if r.source_caps:
                e.update(source_caps=dict(r.source_caps), recipe=folder)
        cfg.data.train += [from_dict(CorpusSpec, e) for e in entries]


def _check_sampling(cfg: TrainConfig) -> None:
    """``data.sampling_temperature``, ``language_weights`` (normalised codes) and ``max_passes``."""
    t = cfg.data.sampling_temperature
    if t is not None and not (0 < t < math.inf):
        raise ConfigError(f"data.sampling_temperature: must be a number > 0 or null, got {t}")
    if cfg.data.language_weights:
        if t is None:
            raise ConfigError("data.language_weights: needs data.sampling_temperature (weights act on its sampling)")
        weights = {}
        for code, w in cfg.data.language_weights.items():
            try:
                lang = normalize_lang(code)
            except ConfigError as e:
                raise ConfigError(f"data.language_weights: {e}") from None
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w < math.inf:
                raise ConfigError(f"data.language_weights.{code}: must be a number > 0, got {w!r}")
            if not any(lang in (c.src_lang, c.tgt_lang) for c in cfg.data.train):
                raise ConfigError(f"data.language_weights.{code}: no training corpus has this language")
            weights[lang] = float(w)
        cfg.data.language_weights = weights
    mp = cfg.data.max_passes
    if mp is not None:
        if t is None:
            raise ConfigError("data.max_passes: needs data.sampling_temperature (the cap acts on its sampling)")
        if isinstance(mp, bool) or not isinstance(mp, (int, float)) or not 0 < mp < math.inf:
            raise ConfigError(f"data.max_passes: must be a number > 0 or null, got {mp!r}")


def _check_export(cfg: TrainConfig) -> None:
    """``export_quantize``, checked now: the export runs after the last training step."""
    q = cfg.export_quantize
    if q not in ("int8", "int4", "float16", "none") and not (q.startswith("pq") and q[2:].isdigit()):
        raise ConfigError("export_quantize must be int8, int4, float16, none or pqM (e.g. pq32)")
    d = cfg.model.embed_dim
    if q == "int4" and d % 2:
        raise ConfigError(f"export_quantize int4 needs an even model.embed_dim, got {d}")
    if q.startswith("pq") and (int(q[2:]) < 1 or d % int(q[2:])):
        raise ConfigError(f"export_quantize {q}: model.embed_dim {d} must be a multiple of {q[2:]}")


# --------------------------------------------------------------------------- checkpoints


def _save_checkpoint(
    run: Path,
    step: int,
    model: TorchDAN,
    opts: list[torch.optim.Optimizer],
    groups: list[PairGroup],
    extra: dict,
) -> None:
    tensors = {f"model.{k}": v.detach().contiguous() for k, v in model.state_dict().items()}
    meta: dict = {"step": step, "opt": [], **extra}
    for o, opt in enumerate(opts):
        sd = opt.state_dict()
        scalars: dict = {}
        for pid, st in sd["state"].items():
            for k, v in st.items():
                if torch.is_tensor(v):
                    tensors[f"opt{o}.{pid}.{k}"] = v.contiguous()
                else:
                    scalars[f"{pid}.{k}"] = v
        meta["opt"].append({"param_groups": sd["param_groups"], "scalars": scalars})
    for g, grp in enumerate(groups):
        if grp.hard is not None:
            tensors[f"hard.{g}"] = torch.from_numpy(grp.hard)
    tmp = run / "checkpoint.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    save_safetensors(tmp / "state.safetensors", tensors, atomic=False)  # the folder is renamed into place
    (tmp / "state.json").write_text(json.dumps(meta))
    final = run / "checkpoint"
    old = run / "checkpoint.old"
    if final.exists():
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def run_fingerprint(cfg: TrainConfig, groups: list[PairGroup], translit_table: dict[int, str] | None = None,
                    subword_model: bytes | None = None) -> dict:
    """What a checkpoint's state depends on: the training data (per language pair: size and a
    hash of every text, in order) and the settings that shape the model, the optimiser state
    and the batch sequence. Resuming with any of them changed would silently continue a
    different run (hard-negative rows would even point at other pairs); ``train.steps``,
    ``max_minutes``, threads, logging, checkpointing and dev sets may change."""
    data = []
    for g in groups:
        h = hashlib.sha256()
        for side in (g.src, g.tgt):
            for t in side.texts:
                h.update(t.encode("utf-8", "surrogatepass"))
                h.update(b"\n")
        data.append([g.src_lang, g.tgt_lang, len(g), h.hexdigest()[:16]])
    d = to_dict(cfg)
    settings = {k: d[k] for k in ("model", "loss", "hard_negatives", "optim", "distill")}
    if cfg.distill.min_words == 1:  # absent at its default: older checkpoints keep their fingerprint
        settings["distill"] = {k: v for k, v in settings["distill"].items() if k != "min_words"}
    if cfg.hard_negatives.pool is None:  # absent at its default, as min_words
        settings["hard_negatives"] = {k: v for k, v in settings["hard_negatives"].items() if k != "pool"}
    settings.update(batch_size=cfg.train.batch_size, seed=cfg.train.seed, dedupe=cfg.data.dedupe,
                    sampling_temperature=cfg.data.sampling_temperature)
    for section in ("words", "prose"):  # absent when unused: older checkpoints keep their fingerprint
        if getattr(cfg, section).lists:
            settings[section] = {k: v for k, v in d[section].items() if k != "language_caps" or v}
    if cfg.data.language_weights:  # absent when unused: older checkpoints keep their fingerprint
        settings["language_weights"] = dict(sorted(cfg.data.language_weights.items()))
    if cfg.data.max_passes is not None:  # the same; the cap's probabilities depend on the steps
        settings.update(max_passes=cfg.data.max_passes, steps=cfg.train.steps)
    if translit_table is not None:
        settings["translit_table"] = table_digest(translit_table)
    if subword_model is not None:
        settings["subword_model"] = digest(subword_model)
    return {"data": data, "settings": json.loads(json.dumps(settings, sort_keys=True, default=str))}


def embed_by_language(model: TorchDAN, featurizer: Featurizer, parts: list[tuple[str, list[str]]]) -> torch.Tensor:
    """The model's raw outputs for the texts of ``parts`` (``(language, texts)``, in that order),
    each part featurised for its language (the character n-grams depend on whether it writes
    spaces), then one forward pass per tower for all parts of that tower: with a shared tower,
    one pass for a batch of words of two hundred languages instead of two hundred small ones."""
    feats = [featurizer.featurize(texts, lang) for lang, texts in parts]
    if not isinstance(model, TorchDAN):  # the transformer: one pass per part, as it takes its own inputs
        return torch.cat([model(*f, lang) for f, (lang, _) in zip(feats, parts)])
    towers: dict[str, list[int]] = {}
    for k, (lang, _) in enumerate(parts):
        towers.setdefault(model.cfg.tower_for(lang), []).append(k)
    sizes = [len(texts) for _, texts in parts]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    outs, where = [], []
    for ks in towers.values():
        ids = np.concatenate([feats[k][0] for k in ks])
        offs, base = [np.zeros(1, dtype=feats[ks[0]][1].dtype)], 0
        for k in ks:
            offs.append(feats[k][1][1:] + base)
            base += len(feats[k][0])
        outs.append(model(ids, np.concatenate(offs), parts[ks[0]][0]))
        where += [np.arange(starts[k], starts[k + 1]) for k in ks]
    out = torch.cat(outs)
    if len(towers) == 1:
        return out
    perm = np.empty(int(starts[-1]), dtype=np.int64)
    perm[np.concatenate(where)] = np.arange(int(starts[-1]))
    return out[torch.from_numpy(perm)]


def group_weights(groups, language_weights: dict[str, float]) -> list[float] | None:
    """Sampling weight of each language-pair group: the product of ``language_weights`` of its
    non-English sides (1 when none is listed); ``None`` when no weight is set."""
    if not language_weights:
        return None
    out = []
    for g in groups:
        w = 1.0
        for lang in {g.src_lang, g.tgt_lang} - {"en"}:
            w *= language_weights.get(lang, 1.0)
        out.append(w)
    return out


def check_resume_fingerprint(saved: dict | None, now: dict) -> None:
    """Refuse to resume a run on other data or settings (a checkpoint of an older version,
    without a fingerprint, is resumed with a warning)."""
    if saved is None:
        log.warning("the checkpoint has no record of its data and settings (older bimine): resuming unchecked")
        return
    if saved["data"] != now["data"]:
        old = {f"{a}-{b}": (n, h) for a, b, n, h in saved["data"]}
        new = {f"{a}-{b}": (n, h) for a, b, n, h in now["data"]}
        diff = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        shown = ", ".join(f"{k} ({old.get(k, ('none',))[0]} -> {new.get(k, ('none',))[0]} pairs)" for k in diff[:5])
        raise ConfigError(f"--resume: the training data differ from the checkpoint's: {shown}"
                          f"{' ...' if len(diff) > 5 else ''}; resume with the same data, or start a new run")
    if saved["settings"] != now["settings"]:
        a, b = saved["settings"], now["settings"]
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        steps = " (with data.max_passes, train.steps too: the cap is worked out for the run's steps)" \
            if "steps" in keys else ""
        raise ConfigError(f"--resume: settings differ from the checkpoint's ({', '.join(keys)}); only train.steps, "
                          f"max_minutes, threads, logging, checkpointing and dev sets may change on resume{steps}")


def _load_checkpoint(
    run: Path, model: TorchDAN, opts: list[torch.optim.Optimizer], groups: list[PairGroup]
) -> dict:
    ck = run / "checkpoint"
    if not ck.exists() and (run / "checkpoint.old").exists():
        ck = run / "checkpoint.old"  # a crash between the two renames
    tensors = load_safetensors(ck / "state.safetensors", "pt", "checkpoint", "bimine train without --resume")
    meta = read_json(ck / "state.json", "checkpoint")
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    for o, opt in enumerate(opts):
        m = meta["opt"][o]
        state: dict = {}
        for k, v in tensors.items():
            if k.startswith(f"opt{o}."):
                _, pid, name = k.split(".", 2)
                state.setdefault(int(pid), {})[name] = v
        for k, v in m["scalars"].items():
            pid, name = k.split(".", 1)
            state.setdefault(int(pid), {})[name] = v
        opt.load_state_dict({"state": state, "param_groups": m["param_groups"]})
    for g, grp in enumerate(groups):
        if f"hard.{g}" in tensors:
            grp.hard = tensors[f"hard.{g}"].numpy()
    return meta


def export_model(model: TorchDAN, cfg: TrainConfig, out: Path, info: dict,
                 translit_table: dict[int, str] | None = None, subword_model: bytes | None = None) -> None:
    """Write ``config.json`` + ``model.safetensors`` (atomically: temp folder, then rename).
    A ``translit`` model stores its romanisation table with the weights (the one the run
    used; built from anyascii when not given), a ``subwords`` one its SentencePiece model."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    weights = model.export_weights(cfg.export_quantize)
    if cfg.model.features.translit:
        weights.update(table_to_tensors(translit_table if translit_table is not None else build_table()))
    if cfg.model.features.subwords:
        if subword_model is None:
            raise ConfigError("features.subwords is set, but no subword model was given to export")
        weights.update(to_tensors(subword_model))
    save_safetensors(tmp / "model.safetensors", weights, atomic=False)  # the folder is renamed into place
    meta = {
        "architecture": cfg.encoder,
        "model": cfg.model.to_dict(),
        "quantize": cfg.export_quantize,
        "training": info,
    }
    meta["digest"] = model_digest(meta, tmp / "model.safetensors")  # a later edit of the folder is refused
    (tmp / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)


# --------------------------------------------------------------------------- helpers


@torch.no_grad()
def embed_side(
    model: TorchDAN, side, lang: str, rows: np.ndarray | None = None, batch: int | None = None
) -> np.ndarray:
    """Unit-norm embeddings of ``side`` (all rows, or ``rows``) with the torch model (in
    batches of 4,096 for the DAN, 256 for the transformer)."""
    model.eval()
    rows = np.arange(len(side.texts)) if rows is None else rows
    batch = batch or (4096 if isinstance(model, TorchDAN) else 256)
    out = []
    for i in range(0, len(rows), batch):
        feats = side.gather(rows[i : i + batch])
        out.append(torch.nn.functional.normalize(model(*feats, lang), dim=1).numpy())
    model.train()
    return np.concatenate(out) if out else np.zeros((0, model.cfg.output_dim), dtype=np.float32)


def mine_hard_negatives(
    group: PairGroup, src_emb: np.ndarray, tgt_emb: np.ndarray, rows: np.ndarray, m: int, candidates: int,
    tgt_rows: np.ndarray | None = None,
) -> np.ndarray:
    """For each pair in ``rows``, the ``m`` best-scoring targets that are not its translation.

    ``tgt_emb`` holds the targets of the pairs ``tgt_rows`` (all pairs, in order, when None).
    A candidate is skipped when it is the gold row, when its text equals the gold target's,
    or when its source text equals this pair's source (it is then a translation too).
    Returns ``(len(group), m)`` int64, -1 for rows without hard negatives.
    """
    hard = np.full((len(group), m), -1, dtype=np.int64)
    _, nn = knn_exact(src_emb, tgt_emb, min(candidates, len(tgt_emb)))
    if tgt_rows is not None:  # k <= len(tgt_emb): every neighbour is a real row of the pool
        nn = np.asarray(tgt_rows)[nn]
    t_id, s_id = group.tgt.text_ids, group.src.text_ids
    for r, cand in zip(rows, nn):
        ok = cand[(cand != r) & (t_id[cand] != t_id[r]) & (s_id[cand] != s_id[r])]
        # one candidate per distinct text
        _, first = np.unique(t_id[ok], return_index=True)
        ok = ok[np.sort(first)][:m]
        hard[r, : len(ok)] = ok
    return hard


# --------------------------------------------------------------------------- training


def _pairs_per_language(groups: list[PairGroup]) -> dict[str, int]:
    """Training pairs per language other than English (both sides of a pair without English)."""
    counts: dict[str, int] = {}
    for g in groups:
        for lang in {g.src_lang, g.tgt_lang} - {"en"}:
            counts[lang] = counts.get(lang, 0) + len(g)
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


@dataclass
class _LoopState:
    """Where the training loop stands: the step, the start time (less the seconds of earlier
    sessions), the running loss, the last dev figures and their step, why it stopped."""

    step: int
    t0: float
    loss_avg: float | None = None
    last_dev: dict = field(default_factory=dict)
    last_dev_step: int | None = None
    stop_reason: str = "steps"


class Trainer:
    def __init__(self, cfg: TrainConfig, run_dir: str | os.PathLike) -> None:
        self.cfg = cfg
        self.run = Path(run_dir)
        self.word_batches = None  # teacher vocabulary distillation (words.lists), loaded by fit
        self.prose_batches = None  # sentence-level teacher distillation on prose (prose.lists), loaded by fit
        if cfg.encoder == "transformer":
            self.featurizer = TokenFeaturizer(cfg.model)
        else:
            self.featurizer = Featurizer(cfg.model.features)

    def _new_model(self) -> torch.nn.Module:
        if self.cfg.encoder == "transformer":
            return TransformerNet(self.cfg.model)
        return TorchDAN(self.cfg.model)

    def _lr_factor(self, step: int) -> float:
        o, total = self.cfg.optim, self.cfg.train.steps
        if step < o.warmup_steps:
            return (step + 1) / o.warmup_steps
        frac = (step - o.warmup_steps) / max(1, total - o.warmup_steps)
        return 1.0 - (1.0 - o.final_lr_fraction) * min(1.0, frac)

    def _mine(self, model: TorchDAN | None, groups: list[PairGroup]) -> None:
        hn = self.cfg.hard_negatives
        encoder = None
        if hn.baseline:
            encoder = load_encoder(hn.baseline)
        for g, grp in enumerate(groups):
            rng = np.random.default_rng([self.cfg.train.seed, 7919, g])
            n_sel = int(round(hn.fraction * len(grp)))
            rows = np.sort(rng.choice(len(grp), size=n_sel, replace=False))
            pool = None
            if hn.pool is not None and hn.pool < len(grp):
                pool = np.sort(np.random.default_rng([self.cfg.train.seed, 7927, g]).choice(
                    len(grp), size=hn.pool, replace=False))
            t0 = time.time()
            if encoder is not None:
                src = encoder.encode([grp.src.texts[i] for i in rows], grp.src_lang)
                tgt = encoder.encode([grp.tgt.texts[i] for i in (range(len(grp)) if pool is None else pool)],
                                     grp.tgt_lang)
            else:
                src = embed_side(model, grp.src, grp.src_lang, rows)
                tgt = embed_side(model, grp.tgt, grp.tgt_lang, pool)
            grp.hard = mine_hard_negatives(grp, src, tgt, rows, hn.per_example, hn.candidates, pool)
            log.info(
                f"hard negatives {grp.src_lang}-{grp.tgt_lang}: {n_sel} pairs x {hn.per_example} "
                f"among {len(tgt)} targets in {time.time() - t0:.0f}s"
            )

    def _subword_model(self, groups: list[PairGroup], resume: bool, teacher: TeacherVocab | None = None) -> None:
        """Give the featuriser the run's SentencePiece model (``features.subwords``): on
        ``resume`` the one in ``RUN/subwords.model`` (the checkpoint's fingerprint holds its
        digest), else the ``teacher``'s (``features.subword_vocab: teacher``) or one trained now
        on a sample of ``features.subword_sample`` sentences of each language, and written there
        (a file left by a run killed before its first checkpoint may come from other settings:
        it is never reused)."""
        fc = self.cfg.model.features
        path = self.run / "subwords.model"
        reuse = resume and path.exists()
        if reuse:
            model = path.read_bytes()
        elif teacher is not None:  # features.subword_vocab: teacher: nothing to learn
            model = teacher.model
            log.info(f"subword vocabulary: the teacher's, {teacher.size} pieces in bimine's normalisation")
        else:
            t0 = time.time()
            by_lang: dict[str, list[list[str]]] = {}
            for g in groups:
                by_lang.setdefault(g.src_lang, []).append(g.src.texts)
                by_lang.setdefault(g.tgt_lang, []).append(g.tgt.texts)
            sample = subwords.sample_sentences(by_lang, fc.subword_sample, self.cfg.train.seed, fc.text_norm)
            model = subwords.train_model(sample, fc.subwords, self.cfg.train.threads)
            log.info(f"subword vocabulary: {fc.subwords} pieces from {len(sample)} sentences of "
                     f"{len(by_lang)} languages in {time.time() - t0:.0f}s")
        if not reuse:  # a new vocabulary: written for a later --resume
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(model)
            tmp.rename(path)
        self.featurizer.set_subword_model(model)

    def _teach(self, groups: list[PairGroup], progress: bool) -> None:
        """Teacher vectors of the English side of a fixed sample of each language pair, or of
        the ``english_pool`` shared by all of them (``grp.teacher``, with
        ``grp.teacher_index[row]`` its row there or -1)."""
        dc = self.cfg.distill
        if dc.teacher is None:
            return

        enc = load_encoder(dc.teacher, batch_size=dc.batch_size) if dc.teacher == "e5-small" else load_encoder(dc.teacher)
        if enc.dim != self.cfg.model.output_dim:
            raise ConfigError(f"distill.teacher {dc.teacher} gives {enc.dim}-dim vectors; model.output_dim is "
                              f"{self.cfg.model.output_dim} (they must be equal)")
        folder = dc.cache if os.path.isabs(dc.cache) else str(self.run / dc.cache)
        cache = TeacherCache(folder, enc)
        # (group number, group, its English texts) of the language pairs with English
        english = [(g, grp, (grp.src if grp.src_lang == "en" else grp.tgt).texts)
                   for g, grp in enumerate(groups) if "en" in (grp.src_lang, grp.tgt_lang)]
        if dc.english_pool is not None:
            pool = english_pool([texts for _, _, texts in english], dc.english_pool, self.cfg.train.seed, dc.min_words)
            vectors = cache.embed(pool, progress=progress)  # one matrix shared by every language pair
            at = {t: i for i, t in enumerate(pool)}
            for _, grp, texts in english:
                grp.teacher = vectors
                grp.teacher_index = np.fromiter((at.get(t, -1) for t in texts), dtype=np.int64, count=len(texts))
            covered = sum(int((grp.teacher_index >= 0).sum()) for _, grp, _ in english)
            log.info(f"teacher vectors of {len(pool)} English sentences cover {covered} of "
                     f"{sum(len(grp) for _, grp, _ in english)} pairs")
            return
        for g, grp, texts in english:
            eligible = None if dc.min_words <= 1 else long_enough(texts, dc.min_words)
            rows = teacher_rows(len(grp), dc.pairs_per_language, self.cfg.train.seed, g, eligible)
            grp.teacher = cache.embed([texts[i] for i in rows], progress=progress)
            grp.teacher_index = np.full(len(grp), -1, dtype=np.int64)
            grp.teacher_index[rows] = np.arange(len(rows))
        log.info(f"teacher vectors ready for {sum(g.teacher is not None for g in groups)} language pairs")

    def _distill(self, grp: PairGroup, rows: np.ndarray, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor | None:
        """The distillation loss of a batch: both sides pulled to the teacher's English vector."""
        if grp.teacher is None:
            return None
        t = grp.teacher_index[rows]
        sel = np.flatnonzero(t >= 0)
        if not len(sel):
            return None
        target = torch.from_numpy(grp.teacher[t[sel]].astype(np.float32))
        idx = torch.from_numpy(sel)
        return self.cfg.distill.weight * (distill_loss(u[idx], target) + distill_loss(v[idx], target))

    def _words_loss(self, model: TorchDAN, step: int, prose: bool = False) -> torch.Tensor | None:
        """Teacher vocabulary distillation (:mod:`bimine.training.words`) at ``step``; with
        ``prose``, the same terms on the ``prose:`` lists (sentences)."""
        wb = self.prose_batches if prose else self.word_batches
        if wb is None:
            return None
        rows = wb.rows(step)
        if len(rows) < 2:
            return None
        by_lang: dict[str, list[int]] = {}
        for i in rows.tolist():
            by_lang.setdefault(wb.lang_of[i], []).append(i)
        order = [i for part in by_lang.values() for i in part]
        student = embed_by_language(model, self.featurizer,
                                    [(lang, [wb.words[i] for i in part]) for lang, part in by_lang.items()])
        teacher = torch.from_numpy(wb.teacher[np.array(order, dtype=np.int64)].astype(np.float32))
        wc, lc = (self.cfg.prose if prose else self.cfg.words), self.cfg.loss
        return word_distill_loss(student, teacher, weight=wc.weight, rank_weight=wc.rank_weight, scale=lc.scale,
                                 margin=lc.margin)

    def _batch(self, grp: PairGroup, rows: np.ndarray, model: TorchDAN, feats=None):
        s_feats, t_feats = feats if feats is not None else (grp.src.gather(rows), grp.tgt.gather(rows))
        u = model(*s_feats, grp.src_lang)
        v = model(*t_feats, grp.tgt_lang)
        st, tt = grp.src.text_ids[rows], grp.tgt.text_ids[rows]
        exclude = torch.from_numpy((st[:, None] == st[None, :]) | (tt[:, None] == tt[None, :]))
        hard = excl_hard = None
        if grp.hard is not None:
            h = grp.hard[rows].reshape(-1)
            h = h[h >= 0]
            if len(h):
                hard = model(*grp.tgt.gather(h), grp.tgt_lang)
                excl_hard = torch.from_numpy(
                    (tt[:, None] == grp.tgt.text_ids[h][None, :])
                    | (st[:, None] == grp.src.text_ids[h][None, :])
                )
        return u, v, exclude, hard, excl_hard

    def dev_scores(self, model: TorchDAN, dev: list[tuple[str, PairGroup]]) -> dict[str, float]:
        out = {}
        for name, grp in dev:
            u = embed_side(model, grp.src, grp.src_lang)
            v = embed_side(model, grp.tgt, grp.tgt_lang)
            r = evaluate_retrieval(u, v, grp.src.texts, grp.tgt.texts, ks=(1,))
            out[f"{name}/fwd"] = r["src2tgt"].precision[1]
            out[f"{name}/bwd"] = r["tgt2src"].precision[1]
        return out

    def fit(self, *, resume: bool = False, progress: bool = True) -> Path:
        """Train (or with ``resume`` go on from the run's checkpoint) and export the model; returns
        its folder. The steps: the run and the config checked (:meth:`_check_start`), the data
        loaded (:meth:`_load_data`), the teacher's vectors and the word and prose batches ready
        (:meth:`_teach_all`), the model and optimisers started or resumed (:meth:`_start`), the
        batch schedule (:meth:`_schedule`), the training loop (:meth:`_loop`), the export."""
        teacher = self._check_start(resume)
        torch.set_num_threads(self.cfg.train.threads)
        torch.manual_seed(self.cfg.train.seed)
        self.run.mkdir(parents=True, exist_ok=True)
        (self.run / "config.yaml").write_text(yaml.safe_dump(to_dict(self.cfg), sort_keys=False))
        groups, dev, precompute = self._load_data(resume, teacher)
        fingerprint = self._teach_all(groups, progress)
        model, opts, step, elapsed, loss_avg = self._start(groups, resume, teacher, fingerprint)
        hn = self.cfg.hard_negatives
        if hn.per_example > 0 and hn.baseline and groups[0].hard is None:
            self._mine(None, groups)
        sched = self._schedule(groups)
        state = _LoopState(step=step, t0=time.time() - elapsed, loss_avg=loss_avg)
        self._loop(model, opts, groups, dev, sched, state, fingerprint, precompute, progress)
        return self._export(model, groups, state)

    def _check_start(self, resume: bool):
        """Refuse a resume without a checkpoint or a fresh run over one, missing training files
        and a teacher setting that cannot apply; returns the teacher's pieces check."""
        cfg = self.cfg
        has_checkpoint = (self.run / "checkpoint").exists() or (self.run / "checkpoint.old").exists()
        if resume and not has_checkpoint:
            why = "the folder does not exist" if not self.run.exists() else "it holds no checkpoint"
            raise ConfigError(
                f"--resume: {self.run} has no run to resume ({why}); to start a fresh run there, "
                "run the same command without --resume"
            )
        if has_checkpoint and not resume:
            raise ConfigError(
                f"{self.run} already holds a run; pass --resume to continue it "
                "or choose another --output folder"
            )
        check_train_files(cfg)
        fc = cfg.model.features
        if fc.subword_init == "teacher" and cfg.encoder != "dan":
            raise ConfigError(f"features.subword_init: teacher starts the DAN's table; encoder is {cfg.encoder}")
        return teacher_pieces.check_config(fc)  # before the data: a wrong count is refused at once

    def _load_data(self, resume: bool, teacher) -> tuple[list[PairGroup], list, bool]:
        """The training pairs (featurised ahead when the config says so; the subword vocabulary
        learnt from them first), the dev sets, and whether features were made ahead."""
        cfg = self.cfg
        t_load = time.time()
        precompute = cfg.data.precompute_features and cfg.encoder == "dan"
        with_pieces = bool(cfg.model.features.subwords)
        groups = load_groups(cfg.data.train, self.featurizer, cfg.data.root, dedupe=cfg.data.dedupe,
                             precompute=precompute and not with_pieces)
        if with_pieces:  # the vocabulary is learnt from the training texts, then they are featurised
            self._subword_model(groups, resume, teacher)
            if precompute:
                for g in groups:
                    g.src, g.tgt = featurize_side(g.src), featurize_side(g.tgt)
        dev = []
        for spec in cfg.data.dev:
            spec.max_pairs = spec.max_pairs or cfg.train.dev_max_pairs
            g = load_groups([spec], self.featurizer, cfg.data.root, dedupe=False, precompute=cfg.encoder == "dan")[0]
            dev.append((spec.name or f"{g.src_lang}-{g.tgt_lang}", g))
        n_pairs = sum(len(g) for g in groups)
        log.info(
            f"loaded {n_pairs} training pairs in {len(groups)} language pairs in {time.time() - t_load:.0f}s"
        )
        return groups, dev, precompute

    def _teach_all(self, groups: list[PairGroup], progress: bool) -> str:
        """The teacher's vectors of the pairs, the word and prose batches; returns the run's
        fingerprint (what a resume must find unchanged)."""
        cfg = self.cfg
        self._teach(groups, progress)
        self.word_batches = load_word_batches(cfg.words, cfg.data.root, str(self.run), cfg.model.output_dim,
                                              cfg.train.seed, progress=progress)
        check_prose_lists(cfg)
        self.prose_batches = load_word_batches(cfg.prose, cfg.data.root, str(self.run), cfg.model.output_dim,
                                               cfg.train.seed, progress=progress, section="prose", stream=4344)
        rom, sub = self.featurizer.romanizer, self.featurizer.pieces
        return run_fingerprint(cfg, groups, rom.table if rom is not None else None,
                               sub.model if sub is not None else None)

    def _start(self, groups: list[PairGroup], resume: bool, teacher, fingerprint: str):
        """The model and its two optimisers, fresh (piece rows from the teacher when asked) or
        as the checkpoint left them; also the step, the seconds already trained and the running
        loss (the log's ``loss`` goes on where it stopped, not from one batch's loss)."""
        cfg, fc = self.cfg, self.cfg.model.features
        model = self._new_model()
        if fc.subword_init == "teacher" and not resume:  # (a resumed run loads its rows)
            t_init = time.time()
            n_init = teacher_pieces.start_from_teacher(model, fc, teacher)
            log.info(f"{n_init} piece rows started from the teacher's embeddings in {time.time() - t_init:.0f}s")
        dense = torch.optim.Adam(model.dense_parameters(), lr=cfg.optim.lr)
        sparse = RowAdam(model.sparse_parameters(), lr=cfg.optim.embedding_lr)
        opts = [dense, sparse]
        step, elapsed, loss_avg = 0, 0.0, None
        if resume:
            ck = self.run / "checkpoint"
            ck = ck if ck.exists() else self.run / "checkpoint.old"
            check_resume_fingerprint(json.loads((ck / "state.json").read_text()).get("fingerprint"), fingerprint)
            meta = _load_checkpoint(self.run, model, opts, groups)
            step, elapsed, loss_avg = meta["step"], meta.get("elapsed", 0.0), meta.get("loss_avg")
            log.info(f"resumed from step {step}")
        return model, opts, step, elapsed, loss_avg

    def _schedule(self, groups: list[PairGroup]):
        """Which language pair and rows each step trains on."""
        cfg = self.cfg
        sizes = [len(g) for g in groups]
        if cfg.data.sampling_temperature is None:
            return BatchSchedule(sizes, cfg.train.batch_size, cfg.train.seed)
        sched = TemperatureSchedule(sizes, cfg.train.batch_size, cfg.train.seed, cfg.train.steps,
                                    cfg.data.sampling_temperature, group_weights(groups, cfg.data.language_weights),
                                    cfg.data.max_passes)
        if cfg.data.max_passes is not None:
            log.info(f"max_passes {cfg.data.max_passes}: {int(sched.capped.sum())} of {len(groups)} language pairs capped")
        for g, p in sorted(zip(groups, sched.probs), key=lambda x: -x[1])[:10]:
            log.info(f"sampling {g.src_lang}-{g.tgt_lang}: {len(g)} pairs, p = {p:.4f}")
        return sched

    def _loop(self, model: TorchDAN, opts: list, groups: list[PairGroup], dev: list, sched, state: _LoopState,
              fingerprint: str, precompute: bool, progress: bool) -> None:
        """Train from ``state.step`` to the configured steps (or the time limit): each step's loss
        and update (:meth:`_train_step`), the log, the dev figures and the checkpoints."""
        cfg, hn = self.cfg, self.cfg.hard_negatives
        logf = open(self.run / "log.jsonl", "a")
        bar = progress_bar(total=cfg.train.steps, initial=state.step, enabled=progress, unit="step", desc="train")
        pairs_seen = 0
        t_rate = time.time()
        # features computed per batch: the next batch's are made in a thread while this one trains
        # (the numba featuriser releases the GIL); only that thread calls the schedule
        # the thread may be the first to run numba's kernels: scipy.linalg before them (jitcache)
        pool = None if precompute else ThreadPoolExecutor(1, thread_name_prefix="bimine-batch",
                                                          initializer=import_blas_first)

        def features(s: int):
            g, rows = sched(s)
            return g, rows, (groups[g].src.gather(rows), groups[g].tgt.gather(rows))

        ahead = pool.submit(features, state.step) if pool is not None and state.step < cfg.train.steps else None
        while state.step < cfg.train.steps:
            if hn.per_example > 0 and not hn.baseline and state.step == hn.start_step and groups[0].hard is None:
                self._mine(model, groups)
            if pool is not None:
                g, rows, feats = ahead.result()
                ahead = pool.submit(features, state.step + 1) if state.step + 1 < cfg.train.steps else None
            else:
                (g, rows), feats = sched(state.step), None
            lv = self._train_step(model, opts, groups[g], rows, feats, state.step)
            state.step += 1
            pairs_seen += len(rows)
            state.loss_avg = lv if state.loss_avg is None else 0.98 * state.loss_avg + 0.02 * lv
            bar.update(1)
            if state.step % cfg.train.log_every == 0:
                rate = pairs_seen / max(1e-9, time.time() - t_rate)
                pairs_seen, t_rate = 0, time.time()
                post = {"loss": f"{state.loss_avg:.3f}", "pairs/s": f"{rate:.0f}"}
                if state.last_dev:
                    post["dev P@1"] = f"{np.mean(list(state.last_dev.values())):.3f}"
                bar.set_postfix(post)
                logf.write(json.dumps({"step": state.step, "loss": state.loss_avg, "pairs_per_s": rate,
                                       "elapsed": time.time() - state.t0}) + "\n")
                logf.flush()
            if self._after_step(model, opts, groups, dev, state, fingerprint, logf, bar):
                break
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        bar.close()
        logf.close()

    def _train_step(self, model: TorchDAN, opts: list, grp: PairGroup, rows, feats, step: int) -> float:
        """One update on the batch ``rows`` of ``grp``: the ranking loss, the distillation terms,
        both optimisers stepped; returns the loss (a non-finite one is an error)."""
        cfg = self.cfg
        dense, sparse = opts
        f = self._lr_factor(step)
        dense.param_groups[0]["lr"] = cfg.optim.lr * f
        sparse.param_groups[0]["lr"] = cfg.optim.embedding_lr * f
        u, v, excl, hard, excl_h = self._batch(grp, rows, model, feats)
        loss = ranking_loss(u, v, cfg.loss, hard_negatives=hard, exclude=excl, exclude_hard=excl_h)
        extra = self._distill(grp, rows, u, v)
        if extra is not None:
            loss = loss + extra
        for prose in (False, True):
            extra = self._words_loss(model, step, prose)
            if extra is not None:
                loss = loss + extra
        dense.zero_grad(set_to_none=True)
        sparse.zero_grad(set_to_none=True)
        loss.backward()
        model.attach_sparse_grads()
        dense.step()
        sparse.step()
        lv = float(loss.detach())
        if not math.isfinite(lv):
            raise RuntimeError(f"loss became {lv} at step {step + 1}; lower optim.lr")
        return lv

    def _after_step(self, model: TorchDAN, opts: list, groups: list[PairGroup], dev: list, state: _LoopState,
                    fingerprint: str, logf, bar) -> bool:
        """The dev figures and the checkpoint when due; True when the time limit stops the run."""
        cfg, step = self.cfg, state.step
        over_time = cfg.train.max_minutes is not None and time.time() - state.t0 > 60 * cfg.train.max_minutes
        # the last step is evaluated too when time stops the run: dev_p1 describes the exported model
        if dev and (step % cfg.train.eval_every == 0 or step == cfg.train.steps or over_time):
            state.last_dev, state.last_dev_step = self.dev_scores(model, dev), step
            logf.write(json.dumps({"step": step, "dev": state.last_dev}) + "\n")
            logf.flush()
            bar.set_postfix({"loss": f"{state.loss_avg:.3f}",
                             "dev P@1": f"{np.mean(list(state.last_dev.values())):.3f}"})
        if step % cfg.train.checkpoint_every == 0 or over_time or step == cfg.train.steps:
            _save_checkpoint(self.run, step, model, opts, groups,
                             {"elapsed": time.time() - state.t0, "fingerprint": fingerprint,
                              "loss_avg": state.loss_avg})
        if over_time:
            state.stop_reason = "max_minutes"
        return over_time

    def _export(self, model: TorchDAN, groups: list[PairGroup], state: _LoopState) -> Path:
        """The model folder, with what the run did (``training`` in its config)."""
        cfg = self.cfg
        info = {
            "steps": state.step,
            "stopped_by": state.stop_reason,
            "minutes": round((time.time() - state.t0) / 60, 2),
            "pairs": sum(len(g) for g in groups),
            "seed": cfg.train.seed,
            "dev_p1": state.last_dev,
            "dev_step": state.last_dev_step,  # the step dev_p1 was measured at (the last one)
            "corpora": [s for g in groups for s in g.sources],
            "languages": _pairs_per_language(groups),
        }
        held = {c.name or c.src: c.skip_pairs for c in cfg.data.train if c.skip_pairs}
        if held:  # the first pairs of these corpora were never trained on (data.recipes[].holdout)
            info["held_out"] = held
        rom, sub = self.featurizer.romanizer, self.featurizer.pieces
        export_model(model, cfg, self.run / "model", info, rom.table if rom is not None else None,
                     sub.model if sub is not None else None)
        return self.run / "model"
