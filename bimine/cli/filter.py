"""``bimine score`` and ``bimine filter``: score every pair of a parallel corpus (rules,
language identification, embedding cosine), and keep or drop each with its reason."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import os

import click

from bimine.cli.adapting import adapt_options
from bimine.cli.group import cli
from bimine.cli.options import (
    MODEL_CHOICES_HELP,
    Finite,
    echo_warning,
    pair_input_options,
    prepare_pair_input,
    ray_options,
)

MODEL_HELP = "Model of the embedding scores: " + MODEL_CHOICES_HELP


def _workers_option(ctx, param, value) -> int:
    from bimine.filtering.pipeline import auto_workers

    if str(value).strip().lower() == "auto":
        return auto_workers()
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise click.BadParameter(f"expected 'auto' or a whole number >= 1, got {value!r}")
    return n


def _common(f):
    options = pair_input_options() + [
        click.option("-o", "--output", required=True, type=click.Path(), help="Scored TSV (header, input columns, "
                     "one column per score, the combined 'score')."),
        click.option("-c", "--config", "config", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Pipeline YAML (filters, thresholds, order); replaces --rules/--no-model."),
        click.option("--rules", default="default", show_default=True,
                     help="'default' (all rules), 'none', or a comma-separated list of rules."),
        click.option("-m", "--model", default="default", show_default=True, help=MODEL_HELP),
        click.option("--no-model", is_flag=True, help="No embedding score (rules only)."),
        click.option("--classifier", "classifiers", multiple=True, type=click.Path(exists=True, dir_okay=False),
                     metavar="FILE", help="Add the score of a classifier from 'bimine train-classifier' "
                     "(repeatable; with -c too)."),
        click.option("--workers", default="auto", show_default=True, callback=_workers_option,
                     help="Processes scoring blocks in parallel (rules, language id, embeddings): a number, "
                     "or 'auto' (the usable cores, at most 4; one process when the input is a single block)."),
        click.option("--block-size", type=click.IntRange(min=1), default=20_000, show_default=True,
                     help="Pairs read, scored and written at a time (memory stays bounded)."),
        click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict",
                     show_default=True, help="On invalid UTF-8: stop with an error, or replace with U+FFFD."),
        click.option("--report", type=click.Path(), default=None, metavar="FILE",
                     help="Also write an HTML report here: summary, a histogram of every score and "
                     "(filter) the first dropped pairs of each reason; self-contained, opens offline."),
        adapt_options,
        click.option("--no-progress", is_flag=True, help="Hide the progress bar."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return ray_options(f)


def _run(filtering: bool, options: dict) -> None:
    """The command's ``options`` (click's parameters) as a :class:`~bimine.filtering.job.FilterJob`,
    run by the library; then the summary."""
    from bimine.filtering.job import FilterJob

    o = dict(options)
    cols = prepare_pair_input(o["input"], o["src"], o["tgt"], o.pop("columns"), o["executor"], o["ray_address"])
    o["classifiers"] = list(o["classifiers"])
    o["progress"] = not o.pop("no_progress")
    adapt, sample = o.pop("adapt"), o.pop("adapt_sample")
    job = FilterJob(columns=cols, filtering=filtering, **o)
    if adapt:
        job = _adapted(job, sample)
    execute(job)


def _adapted(job, sample: int):
    """``--adapt``: the job on the model adapted to its poorly served sides (none: as it was)."""
    from dataclasses import replace

    from bimine.cli.adapting import adapted_model, pair_sides
    from bimine.filtering.job import check_outputs

    if job.no_model:
        raise click.UsageError("--adapt adapts the embedding model, which --no-model turns off")
    check_outputs(job)
    sides = pair_sides(job.input, job.src, job.tgt, job.columns, job.src_lang, job.tgt_lang, job.encoding_errors)
    return replace(job, model=adapted_model(job.model, sides, work_dir=None, sample=sample, progress=job.progress))


def execute(job) -> None:
    """Run a :class:`~bimine.filtering.job.FilterJob` and print what it did."""
    from bimine.filtering.job import run_filter
    from bimine.outputs import shown

    out = run_filter(job, warn=echo_warning)
    result, filters, filtering = out.result, out.filters, job.filtering
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    if os.environ.get("BIMINE_TIMINGS"):
        click.echo("timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in result.seconds.items()), err=True)
    click.echo(result.summary(filtering) + f"; wrote {shown(job.output)}" + (f" and {job.kept}" if job.kept else "")
               + (f"; report: {job.report}" if job.report else ""), err=True)
    if filtering and result.failed:
        def fails(n: int) -> str:
            return f"{n:,} pair fails it" if n == 1 else f"{n:,} pairs fail it"

        lines = [f"  {f.name}: {fails(result.failed[f.name])} ({f.reason})" for f in filters if result.failed[f.name]]
        if result.failed["score"]:
            lines.append(f"  score: {result.failed['score']:,} pairs not selected by the combined score")
        click.echo("\n".join(lines), err=True)


@cli.command()
@_common
def score(**kw) -> None:
    """Score every pair of a parallel corpus: a TSV INPUT (--columns picks the sides) or --src
    and --tgt. Writes one output row per input row, in order, with every score and the
    combined 'score' (higher = cleaner)."""
    _run(False, kw)


@cli.command(name="filter")
@_common
@click.option("--threshold", type=Finite(), default=None,
              help="Also drop pairs whose combined 'score' is below this.")
@click.option("--top-fraction", type=Finite(0, 1), default=None,
              help="Keep only the best fraction (of the pairs the filters accept) by combined score.")
@click.option("--token-budget", type=click.IntRange(min=0), default=None,
              help="Keep the best pairs by combined score up to this many target-side tokens (words).")
@click.option("--normalize", is_flag=True, help="Min-max normalise each graded score before the sum (002 Eq. 4).")
@click.option("--kept", type=click.Path(), default=None, help="Write the kept rows (input columns only) here too.")
def filter_(threshold, top_fraction, token_budget, normalize, kept, **kw) -> None:
    """Score every pair like 'bimine score' and decide: the output adds 'keep' (1/0) and
    'reason' (the first filter the pair fails, in pipeline order, or the selection by
    combined score)."""
    _run(True, dict(kw, threshold=threshold, top_fraction=top_fraction, token_budget=token_budget,
                    normalize=normalize, kept=kept))
