"""``bimine train-rescorer``: train the second-stage rescorer of mined pairs (paper 001 §6.2)."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import itertools
import json
import os
import time

import click

from bimine.cli.group import cli
from bimine.cli.options import Finite, language_checks


def _tsv_pairs(path: str, skip: int = 0, limit: int | None = None):
    """(other-language, English) pairs of an ``English<TAB>other`` file, lines ``skip``.. on."""
    from bimine.errors import InputError
    from bimine.text.io import read_lines

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
    from bimine.mining.planted import take_gold

    seen_s: set[str] = set()
    seen_t: set[str] = set()
    return sum(take_gold(s, t, seen_s, seen_t) for s, t in pairs)


def _held_out_then_rest(path: str, holdout: int, gold: int, min_words: int = 0):
    """The held-out pairs (the first ``holdout`` lines) with at least ``min_words`` English
    words, then such pairs after them: the gold of a planted corpus comes from the first part
    only, so that part must hold ``gold`` usable pairs (else an error, not trained-on gold)."""
    from bimine.errors import InputError

    held = list(_long_enough(_tsv_pairs(path, 0, holdout), min_words))
    if _usable_gold(held) < gold:
        raise InputError(f"{path}: {_usable_gold(held)} usable held-out pairs"
                         + (f" of {min_words}+ English words" if min_words > 1 else "")
                         + f", fewer than --gold {gold}")
    return itertools.chain(held, _long_enough(_tsv_pairs(path, holdout), min_words))


def _recipe_languages(recipe: str) -> dict[str, int]:
    """Pairs per language of a 'bimine data build' folder (its manifest.json), or a one-line
    error when the folder holds none."""
    from bimine.errors import InputError

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
    from bimine.errors import ConfigError

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


@cli.command("train-rescorer")
@click.argument("pairs", nargs=-1, type=str)
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="Folder to write the rescorer to (rescorer.json, model.txt).")
@click.option("-m", "--model", default="default", show_default=True,
              help="The encoder whose mining the rescorer re-scores (it reads its cosines and word vectors).")
@click.option("--recipe", type=click.Path(file_okay=False, exists=True), default=None,
              help="A folder from 'bimine data build': train on the pairs its model held out "
                   "(data.recipes[].holdout: the first N pairs of each language the encoder never saw).")
@click.option("--holdout", type=click.IntRange(min=1), default=None,
              help="With --recipe: the held-out pairs per language (default: read from the model's training record).")
@click.option("--langs", type=click.IntRange(min=1), default=None,
              help="With --recipe: only the N held-out languages with the most pairs.")
@click.option("--gold", type=click.IntRange(min=10), default=300, show_default=True,
              help="Gold pairs planted in each language's corpus.")
@click.option("--distractors", type=click.IntRange(min=10), default=6000, show_default=True,
              help="Sentences without a translation on each side of a corpus.")
@click.option("--near", type=click.IntRange(min=0), default=10, show_default=True,
              help="Distractors first taken among the N nearest neighbours of each gold sentence (hard negatives); 0: in file order.")
@click.option("--min-words", type=click.IntRange(min=0), default=0, show_default=True,
              help="Only pairs whose English side has at least N words (gold and distractors): planted corpora "
                   "closer to prose such as news than to short interface strings.")
@click.option("--pool", type=click.IntRange(min=100), default=20000, show_default=True,
              help="With --near: the pairs each side's distractors are chosen from.")
@click.option("--ratio", type=click.IntRange(min=0), default=0, show_default=True,
              help="Negatives per positive in training (001: 10); 0 keeps every candidate.")
@click.option("--all-features", "all_features", is_flag=True, default=False,
              help="Also give the trees each side's length in characters and mean word-match cosine; left out "
                   "by default: they follow the training corpora's domain and cost F1 on news (docs/rescoring.md).")
@click.option("--trees", type=click.IntRange(min=1), default=300, show_default=True)
@click.option("--leaves", type=click.IntRange(min=2), default=31, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="LightGBM threads (0: one per core).")
@click.option("--cross", is_flag=True, default=False,
              help="Also train a second stage: a cross-encoder started from multilingual-e5-small (needs the e5 "
                   "extra and PyTorch; ~25 min on 2 cores) that re-scores the candidates the trees rank at or "
                   "above --cross-floor; the final probability is the mean of the two.")
@click.option("--cross-pairs", type=click.IntRange(min=100), default=16000, show_default=True,
              help="With --cross: training pairs (gold pairs, the negatives the trees rank highest (3 per gold) "
                   "and random negatives (1 per gold), sampled down to N).")
@click.option("--cross-layers", type=click.IntRange(min=0, max=12), default=2, show_default=True,
              help="With --cross: e5-small's top layers fine-tuned (the others frozen; only these are stored).")
@click.option("--cross-epochs", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--cross-kind", type=click.Choice(["e5", "scratch"]), default="e5", show_default=True,
              help="With --cross: e5 = started from multilingual-e5-small (the e5 extra); scratch = a small transformer "
                   "over bimine's hashed tokens trained from random weights (issue 15 (b); give it more "
                   "--cross-epochs, e.g. 10; --cross-layers does not apply).")
@click.option("--cross-floor", type=Finite(min=0.0, max=1.0), default=0.001, show_default=True,
              help="With --cross: the trees' probability from which a candidate goes through the cross-encoder.")
def train_rescorer_cmd(pairs: tuple[str, ...], output: str, model: str, recipe: str | None, holdout: int | None,
                       langs: int | None, gold: int, distractors: int, near: int, min_words: int, pool: int,
                       ratio: int, all_features: bool, trees: int, leaves: int, seed: int, threads: int,
                       cross: bool, cross_pairs: int, cross_layers: int, cross_epochs: int, cross_kind: str,
                       cross_floor: float) -> None:
    """Train a rescorer of mined pairs on planted corpora (paper 001 §6.2).

    Each language's corpus hides --gold translation pairs among --distractors sentences a side
    (so that none has its translation on the other side); it is mined with the model as 'bimine
    mine' does (Eq. 9, max, k = 4), and the gold pairs among the selected candidates are the
    positives, the others (the hard negatives the miner proposes) the negatives. The gold pairs
    must be pairs the encoder never trained on (its cosines of its own training pairs are too
    high): with --recipe, the pairs its training held out; else PAIRS, files 'LANG:FILE' of
    'English<TAB>translation' lines the encoder never saw (gold from the first lines).
    80 % of the candidates train gradient-boosted trees, 20 % set the threshold (best F1).
    """
    import numpy as np

    from bimine.encoders import load_encoder
    from bimine.errors import ConfigError
    from bimine.langs import normalize_lang
    from bimine.mining.planted import training_rows
    from bimine.scoring.rescore import DEFAULT_FEATURES, FEATURES, train_rescorer

    if bool(recipe) == bool(pairs):
        raise click.UsageError("give either --recipe or PAIRS (LANG:FILE ...)")
    if os.path.exists(os.path.join(output, "rescorer.json")):
        raise click.UsageError(f"{output} already holds a rescorer; choose another folder")
    count = _recipe_languages(recipe) if recipe else {}
    encoder = load_encoder(model)
    training = getattr(encoder, "training", {}) or {}
    corpora = []
    checks = []  # (file, language, what to check, column): the language warnings of embed and mine
    if recipe:
        held = training.get("held_out", {})
        if holdout is None:
            if not held:
                raise ConfigError(f"model {model} records no held-out pairs (trained without data.recipes[].holdout); "
                                  "give --holdout N only if its training held out the first N pairs of each language")
            holdout = max(held.values())
        chosen = [k for k in sorted(count, key=lambda k: -count[k]) if count[k] >= 10 * holdout
                  and (not held or held.get(f"recipe.en-{k}") == holdout)][:langs]
        if gold > holdout // 2:
            raise click.UsageError(f"--gold {gold}: at most half of the {holdout} held-out pairs per language")
        corpora = [(k, _held_out_then_rest(os.path.join(recipe, "pairs", f"en-{k}.tsv.gz"), holdout, gold, min_words))
                   for k in chosen]
    else:
        for item in pairs:
            lang, sep, path = item.partition(":")
            if not sep or not path:
                raise click.UsageError(f"{item!r}: expected LANG:FILE")
            corpora.append((normalize_lang(lang), _long_enough(_tsv_pairs(path), min_words)))
            checks += [(path, lang, f"the LANG of {item}", 2),
                       (path, "en", "its column order ('English<TAB>translation')", 1)]
    if not corpora:
        raise click.UsageError("no language to train on")
    if cross:
        from bimine.encoders.e5_weights import weights_path

        try:
            import torch  # noqa: F401
        except ImportError:
            raise ConfigError("--cross needs PyTorch: pip install torch (see the README)") from None
        if cross_kind == "e5":
            weights_path()  # the e5 extra, before minutes of mining
    t0 = time.time()
    texts: list | None = [] if cross else None
    with language_checks(checks):
        sizes: list[tuple[str, int, int, int]] = []
        x, y, ids, row_langs = training_rows(encoder, corpora, gold=gold, distractors=distractors, near=near,
                                             pool=pool, seed=seed, log=lambda m: click.echo(m, err=True), texts=texts,
                                             sizes=sizes)
    rng = np.random.default_rng(seed)
    dev_ids = rng.random(int(ids.max()) + 1) < 0.2
    dev = dev_ids[ids]
    train = ~dev
    if ratio:
        neg = np.flatnonzero(train & (y == 0))
        keep = rng.choice(neg, size=min(len(neg), ratio * int((train & (y == 1)).sum())), replace=False)
        train = train & (y == 1)
        train[keep] = True
    _check_both_classes(y, train, dev, gold, distractors, sizes)
    t1 = time.time()
    r = train_rescorer(x[train], y[train], x_dev=x[dev], y_dev=y[dev], encoder=encoder.model_id,
                       features=FEATURES if all_features else DEFAULT_FEATURES, trees=trees,
                       leaves=leaves, seed=seed, threads=threads,
                       extra_meta={"languages": sorted(set(row_langs)), "gold": gold, "distractors": distractors,
                                   "near": near, "min_words": min_words, "ratio": ratio,
                                   "candidates_seconds": round(t1 - t0, 1)})
    r.meta["train_seconds"] = round(time.time() - t1, 1)
    if cross:
        _train_cross_stage(r, x, y, ids, dev_ids, texts, row_langs, pairs=cross_pairs, layers=cross_layers,
                           epochs=cross_epochs, floor=cross_floor, seed=seed, kind=cross_kind)
    r.save(output)
    click.echo(f"{int(train.sum()):,} training rows ({int(y[train].sum()):,} positive), {int(dev.sum()):,} dev rows; "
               f"dev F1 {r.meta['dev_f1']:.3f} at threshold {r.threshold:.3f}; written to {output}", err=True)


def _train_cross_stage(r, x, y, ids, dev_ids, texts, row_langs, *, pairs: int, layers: int, epochs: int, floor: float,
                       seed: int, kind: str = "e5") -> None:
    """Train the cross-encoder stage of rescorer ``r`` on the training candidates (the first copy
    of each: ``ids`` counts candidates, texts in that order), per language the gold pairs, the
    negatives the trees rank highest (3 per gold) and random ones (1 per gold), each pair in a
    random one of its two orders, sampled down to ``pairs``; then set the final threshold (best
    F1 of the combined probability) on the dev candidates."""
    import numpy as np

    from bimine.progress import bar
    from bimine.scoring.cross_encoder import train_cross
    from bimine.scoring.logistic import best_f1_threshold

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
    click.echo(f"cross-encoder: {len(chosen):,} training pairs ({int(lab[chosen].sum()):,} gold), "
               f"{what}, {epochs} epoch(s)", err=True)
    with bar(total=epochs * len(chosen), unit=" pairs", desc="cross-encoder") as b:
        if kind == "scratch":
            from bimine.scoring.cross_scratch import train_scratch_cross

            ce = train_scratch_cross(src, tgt, lab[chosen], epochs=epochs, seed=seed,
                                     log=lambda m: click.echo(m, err=True), progress=b.update)
        else:
            ce = train_cross(src, tgt, lab[chosen], train_layers=layers, epochs=epochs, seed=seed,
                             log=lambda m: click.echo(m, err=True), progress=b.update)
    r.cross = ce
    r.meta["cross"] = {"floor": floor, "train_seconds": round(time.time() - t, 1), **ce.meta["training"]}
    dev = np.flatnonzero(dev_ids)
    if len(dev):
        p_ce = r.cross_probabilities([texts[c][0] for c in dev.tolist()], [texts[c][1] for c in dev.tolist()], p1[dev],
                                      progress=True)
        thr, _, _, f1 = best_f1_threshold(r.combine(p1[dev], p_ce), lab[dev])
        r.meta.update({"threshold": thr, "dev_f1": f1, "trees_threshold": r.meta.get("threshold"),
                       "trees_dev_f1": r.meta.get("dev_f1")})
