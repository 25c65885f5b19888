"""``bimine train-classifier``: train a pair classifier (calibrated confidence, a classifier on
frozen embeddings, or a siamese BiGRU) on clean parallel pairs, for ``bimine score/filter``."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import click

from bimine.cli.group import cli
from bimine.cli.options import Finite, check_lang_option, echo_warning, pair_input
from bimine.training.defaults import MIN_DEV_AUC


@cli.command("train-classifier")
@click.argument("kind", type=click.Choice(["confidence", "fc", "bigru"]))
@click.argument("input", required=False, type=str)
@click.option("--src", type=str, default=None, help="Source side of the clean pairs, one sentence per line.")
@click.option("--tgt", type=str, default=None, help="Target side, line-aligned with --src.")
@click.option("--columns", default="1,2", show_default=True, help="With a TSV INPUT: the source and target columns.")
@click.option("--src-lang", required=True, callback=check_lang_option, help="Language of the source side.")
@click.option("--tgt-lang", required=True, callback=check_lang_option, help="Language of the target side.")
@click.option("--any-languages", is_flag=True,
              help="Record no language pair (the classifier then scores any pair; for multilingual training data).")
@click.option("-o", "--output", required=True, type=click.Path(), help="The classifier (.safetensors).")
@click.option("-m", "--model", default="default", show_default=True,
              help="Frozen encoder of 'confidence' and 'fc': 'default', 'e5-small' or a model folder.")
@click.option("--dev-src", type=str, default=None, help="Dev pairs (source side) for the decision threshold.")
@click.option("--dev-tgt", type=str, default=None, help="Dev pairs (target side).")
@click.option("--dev-size", type=click.IntRange(min=2), default=500, show_default=True,
              help="Without --dev-src/--dev-tgt: hold out the last N pairs.")
@click.option("--max-pairs", type=click.IntRange(min=2), default=None, help="Train on the first N pairs only.")
@click.option("--epochs", type=click.IntRange(min=1), default=None,
              help="Passes over the pairs (default: bigru 15 as paper 003, fc 10, confidence 5).")
@click.option("--batch-pairs", type=click.IntRange(min=2), default=None, show_default="128",
              help="Positive pairs per batch.")
@click.option("--lr", type=Finite(min=0, min_open=True), default=None,
              help="Adam learning rate (default: bigru 2e-4 as paper 003, 1e-3).")
@click.option("--negatives", type=click.IntRange(min=1), default=7, show_default=True,
              help="bigru: random negatives per positive and epoch.")
@click.option("--hidden", type=click.IntRange(min=1), default=None,
              help="bigru: GRU state per direction (128); fc: width of the layer (the embedding size).")
@click.option("--emb", type=click.IntRange(min=1), default=None,
              help="bigru with hashed tokens: token embedding size (128; paper 003: 512).")
@click.option("--tokens", type=click.Choice(["hashed", "pieces"]), default="hashed", show_default=True,
              help="bigru input: hashed lower-cased words (003's words, any language, no vocabulary), or the "
                   "subword pieces of --init-model with each row started from that model's embedding.")
@click.option("--init-model", default=None, help="bigru --tokens pieces: the model whose pieces it takes (default).")
@click.option("--hard-negatives", type=click.IntRange(min=0), default=0, show_default=True,
              help="bigru: of the --negatives, this many are the batch's targets nearest to the source (0 = "
                   "all random, as 003).")
@click.option("--curve-pairs", type=click.IntRange(min=0), default=1000, show_default=True,
              help="bigru: after each epoch, F1 on the Cartesian product of this many dev pairs (003 §5.1's "
                   "test; the learning curve, stored in the file); 0 = none.")
@click.option("--resume", is_flag=True,
              help="bigru: go on from OUTPUT.checkpoint, which a stopped run leaves (written every "
                   "--checkpoint-minutes and after each epoch; removed once the classifier is written).")
@click.option("--checkpoint-minutes", type=Finite(min=0, min_open=True), default=10.0, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Torch threads (one is fastest when other work shares the cores).")
@click.option("--min-dev-auc", type=Finite(min=0, max=1), default=MIN_DEV_AUC, show_default=True,
              help="Refuse to write a classifier whose dev ROC-AUC is below this (0.5 = chance: the pairs are "
                   "probably not translations line by line); 0 writes whatever was learnt.")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True)
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def train_classifier_cmd(kind, input, src, tgt, columns, src_lang, tgt_lang, any_languages, output, model,
                         dev_src, dev_tgt, dev_size, max_pairs, epochs, batch_pairs, lr, negatives, hidden, emb, tokens,
                         init_model, hard_negatives, curve_pairs, resume, checkpoint_minutes, seed,
                         threads, min_dev_auc, encoding_errors, no_progress) -> None:
    """Train a KIND classifier on the clean pairs of INPUT (a TSV) or --src/--tgt.

    \b
    confidence  calibrated confidence of the model's cosine (paper 000 §2.4.2)
    fc          a ReLU layer on the model's embeddings, synthetic negatives (002 §2.3)
    bigru       siamese BiGRU on hashed tokens, random negatives (003 §3; no model)

    Pairs with an empty side are skipped and counted. A classifier whose dev ROC-AUC is below
    --min-dev-auc (0.6; chance is 0.5) learnt nothing and is not written. Use the result in a pipeline file
    (`- score: classifier` with `path: OUT`) or with `bimine filter --classifier OUT`.
    """
    import logging

    from bimine.training.classifier import ClassifierJob, run_train_classifier

    logging.getLogger("bimine.training.classifier").setLevel(logging.INFO)  # the learning curve, a line an epoch
    cols = pair_input(input, src, tgt, columns)
    click.echo(run_train_classifier(ClassifierJob(
        kind=kind, output=output, src_lang=src_lang, tgt_lang=tgt_lang, input=input, src=src, tgt=tgt, columns=cols,
        any_languages=any_languages, model=model, dev_src=dev_src, dev_tgt=dev_tgt, dev_size=dev_size,
        max_pairs=max_pairs, epochs=epochs, batch_pairs=batch_pairs, lr=lr, negatives=negatives, hidden=hidden,
        seed=seed, threads=threads, min_dev_auc=min_dev_auc, encoding_errors=encoding_errors,
        progress=not no_progress, emb=emb, tokens=tokens, init_model=init_model, hard_negatives=hard_negatives,
        curve_pairs=curve_pairs, resume=resume, checkpoint_minutes=checkpoint_minutes), warn=echo_warning), err=True)


@cli.command("calibrate")
@click.argument("inputs", nargs=-1, required=True, type=str)
@click.option("-m", "--model", default="default", show_default=True,
              help="The model to calibrate: 'default', 'e5-small' or a model folder.")
@click.option("-o", "--output", type=click.Path(), default=None,
              help="Where to write the head (default: calibration.safetensors in the model's folder, where "
                   "mining, filtering and 'docs match' find it; needed for e5-small, which has no folder).")
@click.option("--columns", default="1,2", show_default=True, help="The source and target columns of each INPUT.")
@click.option("--dev-size", type=click.IntRange(min=2), default=1000, show_default=True,
              help="Pairs held out (from every file and direction in proportion) for the dev figures.")
@click.option("--epochs", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--batch-pairs", type=click.IntRange(min=2), default=128, show_default=True,
              help="Pairs per batch: each source against the batch's targets (1 positive, the rest negatives; "
                   "paper 000: 128).")
@click.option("--retrieved", type=click.IntRange(min=0), default=4, show_default=True,
              help="Also score each source against its R nearest training targets (hard negatives, as met in "
                   "mining and document matching); 0 = in-batch negatives only, as paper 000.")
@click.option("--one-direction", is_flag=True, help="Train on INPUT's source -> target only (default: both ways).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True, help="Torch threads.")
@click.option("--min-dev-auc", type=Finite(min=0, max=1), default=MIN_DEV_AUC, show_default=True,
              help="Refuse to write a classifier whose dev ROC-AUC is below this (0.5 = chance: the pairs are "
                   "probably not translations line by line); 0 writes whatever was learnt.")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True)
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def calibrate_cmd(inputs, model, output, columns, dev_size, epochs, batch_pairs, retrieved, one_direction, seed, threads,
                  min_dev_auc, encoding_errors, no_progress) -> None:
    """Train the calibrated confidence of MODEL's cosine (paper 000 §2.4.2) on held-out pairs.

    Each INPUT is a TSV of translation pairs (source<TAB>target, one language pair per file)
    that the model was not trained on. The encoder stays frozen; the head learns a scale and a
    bias from the source embedding, so it never changes which target ranks first. Training
    needs torch (pip install 'bimine[train]'); using the head does not.
    """
    from bimine.training.classifier import CalibrateJob, run_calibrate

    cols = pair_input(inputs[0], None, None, columns)
    click.echo(run_calibrate(CalibrateJob(
        inputs=list(inputs), model=model, output=output, columns=cols, dev_size=dev_size, epochs=epochs,
        batch_pairs=batch_pairs, retrieved=retrieved, one_direction=one_direction, seed=seed, threads=threads,
        min_dev_auc=min_dev_auc, encoding_errors=encoding_errors, progress=not no_progress)), err=True)
