"""``bimine train-rescorer``: train the second-stage rescorer of mined pairs (paper 001 §6.2);
the work is :func:`bimine.training.rescorer.run_train_rescorer`."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import click

from bimine.cli.group import cli
from bimine.cli.options import Finite, echo_warning


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
    from bimine.training.rescorer import RescorerJob, run_train_rescorer

    report = run_train_rescorer(RescorerJob(
        output=output, pairs=list(pairs), model=model, recipe=recipe, holdout=holdout, langs=langs, gold=gold,
        distractors=distractors, near=near, min_words=min_words, pool=pool, ratio=ratio, all_features=all_features,
        trees=trees, leaves=leaves, seed=seed, threads=threads, cross=cross, cross_pairs=cross_pairs,
        cross_layers=cross_layers, cross_epochs=cross_epochs, cross_kind=cross_kind, cross_floor=cross_floor),
        say=lambda m: click.echo(m, err=True), warn=echo_warning)
    click.echo(report.summary(), err=True)
