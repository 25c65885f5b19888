"""``bimine train-classifier``: train a pair classifier (calibrated confidence, a classifier on
frozen embeddings, or a siamese BiGRU) on clean parallel pairs, for ``bimine score/filter``."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import os

import click

from bimine.cli.group import cli
from bimine.cli.options import Finite, check_lang_option, pair_input

MIN_DEV_AUC = 0.6  # = bimine.filtering.train_classifier.MIN_DEV_AUC (not imported here: it loads the classifiers)


def usable_pairs(blocks, limit: int | None = None) -> tuple[list[str], list[str], int]:
    """Sources, targets and the number of pairs skipped for an empty side, from pair blocks
    (at most ``limit`` pairs)."""
    a, b, skipped = [], [], 0
    for block in blocks:
        for x, y in zip(block.src, block.tgt):
            if not x.strip() or not y.strip():
                skipped += 1
                continue
            a.append(x)
            b.append(y)
        if limit is not None and len(a) >= limit:
            break
    return (a[:limit], b[:limit], skipped) if limit is not None else (a, b, skipped)


MAX_DEV_OVERLAP = 0.5  # more dev pairs than this also in training: refused; more than WARN_DEV_OVERLAP: a warning
WARN_DEV_OVERLAP = 0.1


def same_dev_files(input, src, tgt, dev_src, dev_tgt) -> bool:
    """Whether ``--dev-src``/``--dev-tgt`` are the training files themselves (also through a link)."""
    from bimine.text.sameness import same_file

    train = [p for p in (input, src, tgt) if p]
    return any(same_file(d, p) for d in (dev_src, dev_tgt) for p in train)


def check_dev_apart(src: list[str], tgt: list[str], dev_src: list[str], dev_tgt: list[str], *, same: bool) -> None:
    """Refuse dev pairs that are mostly training pairs (more than :data:`MAX_DEV_OVERLAP` of
    them, compared by the hash of the pair's two stripped sides), and warn above
    :data:`WARN_DEV_OVERLAP`: the dev ROC-AUC, F1 and the decision threshold chosen on them
    would measure what the classifier memorised (train-classifier with the training files as
    dev reported ROC-AUC 0.9998). ``same``: the dev files are the training files."""
    seen = {hash((x.strip(), y.strip())) for x, y in zip(src, tgt)}
    shared = sum(hash((x.strip(), y.strip())) in seen for x, y in zip(dev_src, dev_tgt))
    n = len(dev_src)
    if not n or shared <= WARN_DEV_OVERLAP * n:
        return
    what = (f"{shared:,} of the {n:,} dev pairs ({100 * shared / n:.0f}%) are also training pairs"
            + (" (--dev-src/--dev-tgt are the training files)" if same else ""))
    if shared > MAX_DEV_OVERLAP * n:
        from bimine.errors import ConfigError

        raise ConfigError(f"--dev-src/--dev-tgt: {what}, so the dev ROC-AUC and the threshold chosen on them would "
                          "measure memory, not the classifier; give pairs held out from training, or drop "
                          "--dev-src/--dev-tgt to hold out the last --dev-size pairs")
    click.echo(f"warning: --dev-src/--dev-tgt: {what}: the dev figures and the threshold will be optimistic; "
               "give pairs held out from training", err=True)


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
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Torch threads (one is fastest when other work shares the cores).")
@click.option("--min-dev-auc", type=Finite(min=0, max=1), default=MIN_DEV_AUC, show_default=True,
              help="Refuse to write a classifier whose dev ROC-AUC is below this (0.5 = chance: the pairs are "
                   "probably not translations line by line); 0 writes whatever was learnt.")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True)
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def train_classifier_cmd(kind, input, src, tgt, columns, src_lang, tgt_lang, any_languages, output, model,
                         dev_src, dev_tgt, dev_size, max_pairs, epochs, batch_pairs, lr, negatives, hidden, seed,
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
    from bimine.errors import ConfigError
    from bimine.filtering.pipeline import read_pair_blocks
    from bimine.filtering.train_classifier import (
        ClassifierTrainConfig,
        check_learnt,
        describe,
        train_classifier,
    )
    from bimine.outputs import check_output_file

    cols = pair_input(input, src, tgt, columns)
    if (dev_src is None) != (dev_tgt is None):
        raise click.UsageError("give both --dev-src and --dev-tgt, or neither")
    check_output_file(output, inputs=[p for p in (input, src, tgt, dev_src, dev_tgt) if p])

    def read(inp, s, t, limit=None):
        return usable_pairs(read_pair_blocks(inp, src=s, tgt=t, columns=cols, errors=encoding_errors), limit)

    s, t, skipped = read(input, src, tgt, max_pairs)
    dev = None
    if dev_src is not None:
        ds, dt, dskipped = read(None, dev_src, dev_tgt)
        dev = (ds, dt)
        skipped += dskipped
    if len(s) < 2:
        raise ConfigError(f"{len(s)} usable pair(s): too few to train on")
    if dev is not None:
        check_dev_apart(s, t, *dev, same=same_dev_files(input, src, tgt, dev_src, dev_tgt))
    encoder = None
    if kind in ("confidence", "fc"):
        from bimine.encoders import load_encoder

        encoder = load_encoder(model)
    cfg = ClassifierTrainConfig(kind, epochs=epochs, batch_pairs=batch_pairs, lr=lr, negatives=negatives,
                                hidden=hidden, seed=seed, threads=threads)
    clf = train_classifier(cfg, s, t, src_lang=None if any_languages else src_lang,
                           tgt_lang=None if any_languages else tgt_lang, encoder=encoder, dev=dev,
                           dev_size=dev_size, progress=not no_progress)
    clf.config["skipped_empty"] = skipped
    check_learnt(clf, min_dev_auc)
    clf.save(output)
    note = f"; skipped {skipped:,} pair(s) with an empty side" if skipped else ""
    click.echo(f"{describe(clf)}{note}; wrote {output}", err=True)


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
    import numpy as np

    from bimine.encoders import load_encoder
    from bimine.encoders.base import model_folder, uses_language
    from bimine.errors import ConfigError
    from bimine.filtering.pipeline import read_pair_blocks
    from bimine.filtering.train_classifier import (
        ClassifierTrainConfig,
        check_learnt,
        describe,
        train_classifier,
    )
    from bimine.outputs import check_output_file
    from bimine.scoring.calibration import CALIBRATION_FILE

    cols = pair_input(inputs[0], None, None, columns)
    encoder = load_encoder(model)
    if uses_language(encoder):
        raise ConfigError(f"model {model}'s features depend on the language; calibrate it per language pair with "
                          "'bimine train-classifier confidence --src-lang L --tgt-lang L'")
    if output is None:
        folder = model_folder(encoder)
        if folder is None:
            raise click.UsageError(f"model {model} has no folder to store the head in: give -o FILE")
        output = str(folder / CALIBRATION_FILE)
    check_output_file(output, inputs=inputs)
    groups: list[tuple[list[str], list[str]]] = []
    skipped = 0
    for path in inputs:
        a, b, n_skipped = usable_pairs(read_pair_blocks(path, columns=cols, errors=encoding_errors))
        skipped += n_skipped
        if len(a) < 2:
            raise ConfigError(f"{path}: {len(a)} usable pair(s); need at least 2")
        groups.append((a, b))
        if not one_direction:
            groups.append((b, a))
    total = sum(len(a) for a, _ in groups)
    if total < dev_size + 2 * batch_pairs:
        raise ConfigError(f"{total:,} pairs are too few to hold out {dev_size:,} and train on the rest")
    rng = np.random.default_rng(seed)
    src, tgt, gid, dsrc, dtgt = [], [], [], [], []
    for g, (a, b) in enumerate(groups):
        order = rng.permutation(len(a))
        n_dev = max(1, round(len(a) * dev_size / total))
        for i in order[n_dev:]:
            src.append(a[i])
            tgt.append(b[i])
            gid.append(g)
        dsrc += [a[i] for i in order[:n_dev]]
        dtgt += [b[i] for i in order[:n_dev]]
    cfg = ClassifierTrainConfig("confidence", epochs=epochs, batch_pairs=batch_pairs, seed=seed, threads=threads,
                                retrieved=retrieved)
    clf = train_classifier(cfg, src, tgt, src_lang=None, tgt_lang=None, encoder=encoder, dev=(dsrc, dtgt),
                           progress=not no_progress, groups=np.array(gid))
    clf.config["skipped_empty"] = skipped
    clf.config["inputs"] = [os.path.basename(p) for p in inputs]
    clf.config["both_directions"] = not one_direction
    check_learnt(clf, min_dev_auc)
    clf.save(output)
    note = f"; skipped {skipped:,} pair(s) with an empty side" if skipped else ""
    click.echo(f"{describe(clf)}{note}; wrote {output}", err=True)
