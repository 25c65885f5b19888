"""Prose per language for sentence-level teacher distillation (issue 43 §1, the data side).

``bimine data prose OUT --recipe R`` draws from a built recipe, for each language, up to
``per_lang`` sentences that are prose rather than interface strings (help pages, manuals, the
Bible, Tatoeba; the pair's English side has at least ``min_words`` words), and writes them to
``OUT/prose/<lang>.tsv.gz`` (one sentence a line), the English sides of the chosen pairs to
``OUT/prose/en.tsv.gz`` (a sample of ``per_lang`` of them), and ``OUT/prose/manifest.json``
(the settings, the recipe's manifest hash, per language the eligible and chosen counts).
Training reads the folder as ``prose.lists`` (:mod:`bimine.training.words`): the student's vector
of each sentence is pulled toward the teacher's (e5-small) vector of the same sentence, with an
in-batch ranking term over sentences of different languages; what the word lists do for words.

The recipe is already decontaminated and its licences recorded (``bimine data build``); the
pairs that training holds out (the first ``holdout`` pairs of a language with ``10 x holdout``
or more, as :func:`bimine.data.recipe.recipe_corpora` skips them) are never drawn. The choice is
a fixed function of the seed; a rerun with the same settings on the same recipe is a no-op.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass

import numpy as np

from bimine.data.recipe import _atomic_write_gz, _atomic_write_json, recipe_corpora
from bimine.data.vocab import interleave_by_rank
from bimine.errors import ConfigError
from bimine.progress import bar
from bimine.text.io import read_lines

FORMAT = "bimine-prose/1"


@dataclass
class ProseConfig:
    """``per_lang``: sentences kept per language; ``min_words``: fewest words on the English
    side of a pair whose translation is kept; ``min_pairs``: languages with fewer pairs in the
    recipe are left out; ``holdout``: as the training config's recipe ``holdout``."""

    recipe: str
    per_lang: int = 300
    min_words: int = 6
    min_pairs: int = 500
    holdout: int = 3000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.per_lang < 1 or self.min_words < 1 or self.min_pairs < 1 or self.holdout < 0:
            raise ConfigError("prose: per_lang, min_words and min_pairs must be >= 1, holdout >= 0")


def eligible_rows(path: str, skip: int, min_words: int) -> tuple[list[str], list[str]]:
    """The distinct translations (and their English sides) of the pairs of a recipe file after
    its first ``skip`` pairs whose English side has at least ``min_words`` words."""
    seen: set[str] = set()
    en, xx = [], []
    for no, line in enumerate(read_lines(path)):
        if no < skip:
            continue
        e, sep, x = line.partition("\t")
        x = x.strip()
        if not sep or not x or x in seen or len(e.split()) < min_words:
            continue
        seen.add(x)
        en.append(e.strip())
        xx.append(x)
    return en, xx


def sample(n: int, k: int, seed: int, salt: str) -> np.ndarray:
    """``min(n, k)`` sorted row numbers of ``range(n)``, a fixed function of ``seed`` and ``salt``."""
    if k >= n:
        return np.arange(n)
    key = int.from_bytes(hashlib.sha256(salt.encode()).digest()[:4], "little")
    return np.sort(np.random.default_rng([seed, key]).choice(n, size=k, replace=False))


def _recipe_hash(folder: str) -> str:
    with open(os.path.join(folder, "manifest.json"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def build_prose(out: str, cfg: ProseConfig, *, progress: bool = True) -> dict:
    """Write ``OUT/prose/`` (see the module docstring); returns the manifest."""
    folder = os.path.join(out, "prose")
    manifest_path = os.path.join(folder, "manifest.json")
    settings = {**asdict(cfg), "recipe": os.path.abspath(cfg.recipe)}
    entries = recipe_corpora(cfg.recipe, min_pairs=cfg.min_pairs, holdout=cfg.holdout)  # no manifest: ConfigError
    recipe_hash = _recipe_hash(cfg.recipe)
    if os.path.isfile(manifest_path):
        with open(manifest_path, encoding="utf-8") as f:
            old = json.load(f)
        if old.get("settings") == settings and old.get("recipe_hash") == recipe_hash and all(
                os.path.isfile(os.path.join(folder, f"{lang}.tsv.gz")) for lang in old.get("languages", {})):
            return old
    os.makedirs(folder, exist_ok=True)
    langs: dict[str, dict] = {}
    english: list[str] = []
    pbar = bar(total=len(entries), desc="prose", unit=" languages", enabled=progress)
    for e in entries:
        pbar.update(1)
        lang = e["tgt_lang"]
        en, xx = eligible_rows(e["src"], e.get("skip_pairs", 0), cfg.min_words)
        rows = sample(len(xx), cfg.per_lang, cfg.seed, lang)
        if not len(rows):
            langs[lang] = {"eligible": 0, "chosen": 0}
            continue
        _atomic_write_gz(os.path.join(folder, f"{lang}.tsv.gz"), [xx[i] for i in rows.tolist()])
        english += [en[i] for i in rows.tolist()]
        langs[lang] = {"eligible": len(xx), "chosen": int(len(rows))}
    pbar.close()
    english = list(dict.fromkeys(english))
    rows = sample(len(english), cfg.per_lang, cfg.seed, "en")
    if len(rows):
        _atomic_write_gz(os.path.join(folder, "en.tsv.gz"), [english[i] for i in rows.tolist()])
        langs["en"] = {"eligible": len(english), "chosen": int(len(rows))}
    written = {k: v for k, v in langs.items() if v["chosen"]}
    for name in os.listdir(folder):  # lists of an earlier build that this one has no sentences for
        if name.endswith(".tsv.gz") and name[: -len(".tsv.gz")] not in written:
            os.remove(os.path.join(folder, name))
    m = {"format": FORMAT, "settings": settings, "recipe_hash": recipe_hash, "languages": written,
         "empty": sorted(k for k, v in langs.items() if not v["chosen"]),
         "sentences": sum(v["chosen"] for v in written.values())}
    _atomic_write_json(manifest_path, m)
    return m


def check_prose_holdout(folder: str, recipes: list[tuple[str, int]]) -> None:
    """Refuse a prose folder (``OUT/prose``, with its manifest) drawn from one of ``recipes``
    (``(folder, holdout)`` of the training config) with a smaller holdout than training uses:
    its sentences could be pairs the training holds out. A folder without a prose manifest (a
    hand-made list) is not checked."""
    path = os.path.join(folder, "manifest.json")
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    if m.get("format") != FORMAT:
        return
    drawn_from = os.path.realpath(m["settings"]["recipe"])
    for recipe, holdout in recipes:
        if os.path.realpath(recipe) == drawn_from and m["settings"]["holdout"] < holdout:
            raise ConfigError(f"{folder} was drawn with holdout {m['settings']['holdout']}, but training holds out "
                              f"{holdout} pairs of {recipe}: rebuild it with 'bimine data prose ... --holdout {holdout}'")


def prose_texts(out: str) -> list[str]:
    """Every sentence of ``OUT/prose/*.tsv.gz`` (for filling a teacher cache), interleaved by rank
    over the languages (every language's first sentence, then every second, ...), so that an
    interrupted teacher run has the first sentences of every language, which a training config's
    ``prose.max_per_language`` reads; each text once."""
    folder = os.path.join(out, "prose")
    if not os.path.isfile(os.path.join(folder, "manifest.json")):
        raise ConfigError(f"{folder}: no manifest.json; build it with 'bimine data prose {out} --recipe R'")
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
        langs = sorted(json.load(f)["languages"])
    return interleave_by_rank([[t for t in read_lines(os.path.join(folder, f"{lang}.tsv.gz")) if t] for lang in langs])
