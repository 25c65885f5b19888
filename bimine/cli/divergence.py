"""``bimine divergence``, ``bimine select`` and ``bimine train-divergence``: semantic divergence
detection (paper 004) and divergence-based data selection (004 §6)."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import click

from bimine.cli.group import cli
from bimine.cli.options import (
    Finite,
    check_lang_option,
    language_checks,
    pair_input_options,
    prepare_pair_input,
    ray_options,
)


def _io(f):
    options = pair_input_options() + [
        click.option("-o", "--output", required=True, type=click.Path(),
                     help="Scored TSV: header, the input columns, 'divergence' and 'score': the calibrated "
                     "probability that the pair is equivalent (higher = more equivalent)."),
        click.option("-d", "--divergence-model", "div_model", default="default", show_default=True,
                     help="A file from 'bimine train-divergence', or 'default' (shipped with the default model)."),
        click.option("-m", "--model", default="default", show_default=True,
                     help="The sentence encoder the divergence model reads word vectors from."),
        click.option("--block-size", type=click.IntRange(min=1), default=20_000, show_default=True,
                     help="Pairs read, scored and written at a time (memory stays bounded)."),
        click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict",
                     show_default=True, help="On invalid UTF-8: stop with an error, or replace with U+FFFD."),
        click.option("--report", type=click.Path(), default=None, metavar="FILE",
                     help="Also write an HTML report (histogram of the score, dropped pairs)."),
        click.option("--no-progress", is_flag=True, help="Hide the progress bar."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return ray_options(f)


def _go(filtering: bool, div_model: str, options: dict, keep: float | None = None) -> None:
    """The divergence model as the pipeline's one score
    (:func:`bimine.filtering.job.divergence_job`), run like ``score`` / ``filter``; ``options``:
    the command's other parameters."""
    from bimine.cli.filter import execute
    from bimine.filtering.job import divergence_job

    o = dict(options)
    cols = prepare_pair_input(o["input"], o["src"], o["tgt"], o.pop("columns"), o["executor"], o["ray_address"])
    o["progress"] = not o.pop("no_progress")
    # the text against --src-lang / --tgt-lang, as embed and mine do (filter's lang rule does it per pair): a
    # divergence model reads the words of the languages it was trained on, and scores other text as noise
    if o["input"] is not None:
        checks = [(o["input"], o["src_lang"], "--src-lang", cols[0]), (o["input"], o["tgt_lang"], "--tgt-lang", cols[1])]
    else:
        checks = [(o["src"], o["src_lang"], "--src-lang", None), (o["tgt"], o["tgt_lang"], "--tgt-lang", None)]
    with language_checks(checks):
        execute(divergence_job(o.pop("output"), divergence_model=div_model, keep=keep if filtering else None,
                               columns=cols, **o))
    _calibration_warning(div_model)


def _calibration_warning(div_model) -> None:
    """Once per run: a model file without calibration (older, or trained with --calibration-pairs 0)."""
    from bimine.scoring.divergence import DivergenceModel, default_path

    note = DivergenceModel.load(default_path() if div_model == "default" else div_model).calibration_note(
        f"divergence model {div_model}")
    if note:
        click.echo(f"warning: {note}", err=True)


@cli.command()
@_io
def divergence(div_model, **kw) -> None:
    """Score how equivalent in meaning the two sides of each pair are (paper 004): a TSV INPUT
    (--columns picks the sides) or --src and --tgt. One output row per input row, in order;
    'score' is the probability that the pair is equivalent (higher = more equivalent),
    calibrated on held-out clean pairs and as many divergent ones (docs/divergence.md); a
    model file without calibration gives its raw score, which ranks but is no probability,
    and says so."""
    _go(False, div_model, kw)


@cli.command()
@_io
@click.option("--keep", type=Finite(0, 1, min_open=True), default=0.5, show_default=True,
              help="The fraction of pairs to keep: the least divergent (004 §6 keeps half).")
@click.option("--kept", type=click.Path(), default=None, help="Write the kept rows (input columns only) here too.")
def select(div_model, keep, kept, **kw) -> None:
    """Keep the least divergent fraction of a parallel corpus (paper 004 §6): every pair is
    scored like 'bimine divergence'; the output adds 'keep' (1/0) and 'reason'."""
    _go(True, div_model, dict(kw, kept=kept), keep=keep)


@cli.command(name="train-divergence")
@click.option("--src", "srcs", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False),
              help="Source side of a parallel corpus (plain or compressed; repeatable, paired with --tgt in order).")
@click.option("--tgt", "tgts", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False),
              help="Target side, line-aligned with the --src of the same position.")
@click.option("--src-lang", required=True, callback=check_lang_option)
@click.option("--tgt-lang", required=True, callback=check_lang_option)
@click.option("-o", "--output", required=True, type=click.Path(), help="The model file (.safetensors).")
@click.option("--kind", type=click.Choice(["vdpwi", "mm"]), default="vdpwi", show_default=True,
              help="vdpwi: the semantic similarity model of 004 §3; mm: Munteanu & Marcu's linear classifier.")
@click.option("-m", "--model", default="default", show_default=True,
              help="Sentence encoder whose word vectors the vdpwi model reads.")
@click.option("--aligner", type=click.Path(dir_okay=False), default=None,
              help="Word-alignment model file: loaded when it exists, else trained on the corpus and saved here.")
@click.option("--align-pairs", type=click.IntRange(min=1), default=200_000, show_default=True,
              help="Pairs of the corpus (the first ones) the word aligner is trained on.")
@click.option("--positives", type=click.IntRange(min=10), default=5000, show_default=True,
              help="Parallel pairs drawn as positives (004 §5.1: 5,000).")
@click.option("--min-words", type=click.IntRange(min=1), default=1, show_default=True,
              help="Draw positives only among pairs whose sides both have at least this many words.")
@click.option("--ratio", type=click.IntRange(min=1), default=5, show_default=True,
              help="Negatives per positive (004: 1:5).")
@click.option("--hard", type=Finite(0, 1), default=0.5, show_default=True,
              help="Share of the negatives replaced by finer-grained ones (phrase deleted, word replaced, "
              "sentence appended); 0 = the paper's recipe (product negatives only).")
@click.option("--threshold", type=Finite(0, 1), default=0.5, show_default=True,
              help="The model's decision threshold on its calibrated 'score' (what 'threshold: trained' in a filter "
              "pipeline uses), e.g. the best one on labelled development data.")
@click.option("--calibration-pairs", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Held-out pairs of the corpus (not drawn as positives, no side shared with one) that 'score' is "
              "calibrated on, with as many divergent pairs made from them; 0 leaves the model uncalibrated.")
@click.option("--epochs", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--prune", type=Finite(0, 1), default=1e-4, show_default=True,
              help="mm: translation probabilities below this are not stored (0 keeps the full tables: a larger "
              "file, links exactly the aligner's).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--device", default=None, help="vdpwi: the torch device to train on (default: a CUDA GPU when "
              "PyTorch sees one, else the CPU).")
@click.option("--resume", is_flag=True,
              help="vdpwi: go on from OUTPUT.checkpoint, which a stopped run leaves after its last whole epoch "
              "(same corpus and options; give --aligner to keep the word aligner too).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
def train_divergence(srcs, tgts, src_lang, tgt_lang, output, kind, model, aligner, align_pairs, positives,
                     min_words, ratio, hard, threshold, calibration_pairs, epochs, prune, seed, device, resume,
                     no_progress) -> None:
    """Train a divergence model on a parallel corpus, without labels (paper 004 §3, §5.1): a
    word aligner (IBM Models 1-2, both directions) gives the dictionary; positives are
    corpus pairs, negatives pairs of the Cartesian product that pass the length and
    dictionary-coverage filters."""
    from bimine.training.divergence import DivergenceJob, run_train_divergence

    run_train_divergence(DivergenceJob(
        srcs=list(srcs), tgts=list(tgts), src_lang=src_lang, tgt_lang=tgt_lang, output=output, kind=kind, model=model,
        aligner=aligner, align_pairs=align_pairs, positives=positives, min_words=min_words, ratio=ratio, hard=hard,
        threshold=threshold, calibration_pairs=calibration_pairs, epochs=epochs, prune=prune, seed=seed,
        device=device, resume=resume, progress=not no_progress), say=lambda m: click.echo(m, err=True),
        warn=lambda m: click.echo(m, err=True))
    click.echo(f"wrote {output}", err=True)
