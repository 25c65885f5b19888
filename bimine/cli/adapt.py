"""``bimine adapt``: teach the fast model a language from the teacher, on the user's own text (issue 73)."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import logging

import click

from bimine.cli.group import cli
from bimine.cli.options import Finite, check_lang_option


@cli.command()
@click.argument("text", type=str)
@click.option("--lang", required=True, callback=check_lang_option, help="Language of TEXT (one language a run).")
@click.option("-o", "--output", required=True, type=click.Path(),
              help="The adapted model's folder (new or empty; a rerun of the same job resumes or reuses it).")
@click.option("-m", "--model", default="default", show_default=True,
              help="The fast model to adapt: 'default' or a model folder (a previous adaptation adapts further).")
@click.option("--sample", type=click.IntRange(min=10), default=20_000, show_default=True,
              help="Distinct lines of TEXT taken (a fixed hashed choice, whatever the file's order).")
@click.option("--budget", type=Finite(min=0, min_open=True), default=None,
              help="Minutes after which training stops (the result then depends on the machine's speed).")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Training steps [default: 400 plus one per 25 sampled lines, at most 2,000].")
@click.option("--no-fragments", is_flag=True,
              help="Learn from whole lines only (not from the teacher's vectors of their words and word runs).")
@click.option("--pivot", type=str, default=None,
              help="A text of the other side (e.g. the English you will mine against): of its lines, the --sample "
                   "ones the model finds nearest to TEXT's sample are taken (all, where it has no more); the teacher "
                   "pairs them with TEXT's, and the paired lines learn to land on the model's own vectors of them.")
@click.option("--pivot-lang", default="en", show_default=True, callback=check_lang_option,
              help="Language of --pivot (one the model serves).")
@click.option("--no-center", is_flag=True,
              help="Targets are the teacher's vectors as they are (default: less their mean over the sample).")
@click.option("--own-weight", type=click.FloatRange(0, 1), default=None,
              help="Share of each target that is the fast model's own vector of the text before adapting (the rest: "
                   "the teacher's, centred); 0: the teacher's alone. Default: 0.35 where the model's dev xsim error "
                   "for the language is under 25 %, else 0.2.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the batches.")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True)
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
def adapt(text, lang, output, model, sample, budget, steps, no_fragments, pivot, pivot_lang, no_center, own_weight, seed,
          encoding_errors, no_progress) -> None:
    """Adapt the fast model to the language of TEXT (one sentence a line, no pairs needed).

    The teacher (e5-small, 'bimine[e5]') embeds a sample of TEXT, its lines and the runs of words
    they are made of; the fast model learns, for that language only, to put them where the teacher
    does. Other languages keep their vectors exactly. Use the result with -m OUTPUT.
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        raise click.ClickException("adapting needs PyTorch: pip install torch==2.13.0 'bimine[train]'") from None
    from bimine.training.adapt import AdaptJob, adapt_model

    logging.getLogger("bimine").setLevel(logging.INFO)
    job = AdaptJob(text=text, lang=lang, output=output, model=model, sample=sample, budget=budget, steps=steps,
                   fragments=not no_fragments, pivot=pivot, pivot_lang=pivot_lang, center=not no_center, own_weight=own_weight, seed=seed, encoding_errors=encoding_errors, progress=not no_progress)
    report = adapt_model(job)
    click.echo(("already done: " if report.reused else "") + report.summary())
