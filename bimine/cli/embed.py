"""``bimine embed``: one float32 L2-normalised row per input line, in order, as .npy."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import click

from bimine.cli.group import cli
from bimine.cli.options import (
    MODEL_CHOICES_HELP,
    check_lang_option,
    check_ray_address,
    executor_options,
    language_checks,
    load_model,
    option_given,
)


@cli.command()
@click.argument("input", type=str)
@click.option("-l", "--lang", default=None, callback=check_lang_option,
              help="Language of INPUT (fr, fra or fra_Latn): checked against the text; needed only by models "
                   "whose features depend on it (not the default model).")
@click.option("-m", "--model", default="default", show_default=True, help=MODEL_CHOICES_HELP)
@click.option("-o", "--output", required=True, type=click.Path(),
              help="Output .npy file (a folder with --store); its folder must exist.")
@click.option("--store", is_flag=True, help="Write a sharded float16 store (folder) instead of one .npy; "
              "a rerun resumes at the first unfinished shard.")
@click.option("--shard-size", type=click.IntRange(min=1), default=1_000_000, show_default=True, help="Lines per store shard.")
@click.option("--no-wait", is_flag=True,
              help="With --store: a store another run is building is refused at once (default: wait for it).")
@click.option("--column", type=click.IntRange(min=1), default=None, help="Take this 1-based TSV column of each line.")
@click.option(
    "--encoding-errors",
    type=click.Choice(["strict", "replace"]),
    default="strict",
    show_default=True,
    help="On invalid UTF-8: stop with an error, or replace with U+FFFD.",
)
@click.option("--batch-size", type=click.IntRange(min=1), default=8192, show_default=True, help="Lines read per batch.")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Processes encoding batches in parallel; 0 = 1, the fastest measured: bimine's own "
                   "models already encode each batch with one thread per core, e5-small threads itself.")
@executor_options("embed the store's shards as tasks on a Ray cluster (needs --store and bimine[ray]); "
                  "the store is the same bytes as a local run's.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def embed(
    input: str,
    lang: str | None,
    model: str,
    output: str,
    store: bool,
    shard_size: int,
    no_wait: bool,
    column: int | None,
    encoding_errors: str,
    batch_size: int,
    workers: int,
    executor: str,
    ray_address: str | None,
    no_progress: bool,
) -> None:
    """Embed every line of INPUT (a file, .gz/.xz/.bz2/.zst, or - for stdin) into OUTPUT.npy.

    Row i of the array is line i+1 of INPUT; empty lines get a row too. With --store, OUTPUT
    is a folder of float16 shards and a manifest, which 'bimine mine --src-store' reads.
    """
    from bimine.embed import embed_file, resolve_workers

    # the output path is checked by embed_file / build_store before any work
    if executor == "ray" and not store:
        raise click.UsageError("--executor ray writes a store: add --store")
    if not store and no_wait:
        raise click.UsageError("--no-wait is about a store another run is building: add --store")
    if not store and option_given("shard_size"):
        raise click.UsageError("--shard-size sets the lines per shard of a store: add --store (one .npy file has "
                               "no shards)")
    check_ray_address(executor, ray_address)
    with language_checks([(input, lang, "--lang", column)] if lang is not None else []):
        encoder = load_model(model, [lang], "embed")
        from bimine.encoders.languages import resolve_lang

        lang = resolve_lang(encoder, lang, "--lang")
        workers = resolve_workers(workers)
        if store:
            from bimine.store.store import EmbedRun, build_store

            run = EmbedRun(batch_size=batch_size, workers=workers, executor=executor, ray_address=ray_address,
                           wait=not no_wait)
            st, report = build_store(input, output, encoder, lang, shard_size=shard_size, column=column,
                                     errors=encoding_errors, progress=not no_progress, run=run)
            summary = report.summary() + f"; store {output}: {st.rows} rows in {len(st.manifest['shards'])} shard(s)"
        else:
            summary = embed_file(input, output, lang=lang, model=encoder, workers=workers, column=column,
                                 errors=encoding_errors, batch_size=batch_size, progress=not no_progress).summary()
    click.echo(summary, err=True)
