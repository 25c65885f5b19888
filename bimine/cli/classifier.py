"""``bimine train-classifier``: train a pair classifier (calibrated confidence, a classifier on
frozen embeddings, or a siamese BiGRU) on clean parallel pairs, for ``bimine score/filter``."""

from __future__ import annotations

import click

from bimine.cli.main import check_lang_option, cli, pair_input


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
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Adam learning rate (default: bigru 2e-4 as paper 003, 1e-3).")
@click.option("--negatives", type=click.IntRange(min=1), default=7, show_default=True,
              help="bigru: random negatives per positive and epoch.")
@click.option("--hidden", type=click.IntRange(min=1), default=None,
              help="bigru: GRU state per direction (128); fc: width of the layer (the embedding size).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Torch threads (one is fastest when other work shares the cores).")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True)
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def train_classifier_cmd(kind, input, src, tgt, columns, src_lang, tgt_lang, any_languages, output, model,
                         dev_src, dev_tgt, dev_size, max_pairs, epochs, batch_pairs, lr, negatives, hidden, seed,
                         threads, encoding_errors, no_progress) -> None:
    """Train a KIND classifier on the clean pairs of INPUT (a TSV) or --src/--tgt.

    \b
    confidence  calibrated confidence of the model's cosine (paper 000 §2.4.2)
    fc          a ReLU layer on the model's embeddings, synthetic negatives (002 §2.3)
    bigru       siamese BiGRU on hashed tokens, random negatives (003 §3; no model)

    Pairs with an empty side are skipped and counted. Use the result in a pipeline file
    (`- score: classifier` with `path: OUT`) or with `bimine filter --classifier OUT`.
    """
    from bimine.errors import ConfigError
    from bimine.filtering.pipeline import read_pair_blocks
    from bimine.filtering.train_classifier import ClassifierTrainConfig, describe, train_classifier
    from bimine.outputs import check_output_file

    cols = pair_input(input, src, tgt, columns)
    if (dev_src is None) != (dev_tgt is None):
        raise click.UsageError("give both --dev-src and --dev-tgt, or neither")
    check_output_file(output, inputs=[p for p in (input, src, tgt, dev_src, dev_tgt) if p])

    def read(inp, s, t, limit=None):
        a, b, skipped = [], [], 0
        for block in read_pair_blocks(inp, src=s, tgt=t, columns=cols, errors=encoding_errors):
            for x, y in zip(block.src, block.tgt):
                if not x.strip() or not y.strip():
                    skipped += 1
                    continue
                a.append(x)
                b.append(y)
            if limit is not None and len(a) >= limit:
                break
        return (a[:limit], b[:limit], skipped) if limit is not None else (a, b, skipped)

    s, t, skipped = read(input, src, tgt, max_pairs)
    dev = None
    if dev_src is not None:
        ds, dt, dskipped = read(None, dev_src, dev_tgt)
        dev = (ds, dt)
        skipped += dskipped
    if len(s) < 2:
        raise ConfigError(f"{len(s)} usable pair(s): too few to train on")
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
    clf.save(output)
    note = f"; skipped {skipped:,} pair(s) with an empty side" if skipped else ""
    click.echo(f"{describe(clf)}{note}; wrote {output}", err=True)
