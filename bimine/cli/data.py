"""``bimine data``: build the multilingual training data (the recipe of bimine.data.recipe)."""

from __future__ import annotations

import logging

import click

from bimine.cli.main import cli


@cli.group()
def data() -> None:
    """Build training data from public translation catalogs and documentation."""


@data.command("build")
@click.argument("output", type=click.Path(file_okay=False))
@click.option("--decontam", "keys", type=click.Path(exists=True, dir_okay=False),
              help="Held-out key list (one 16-hex-digit key per line): pairs with a listed side are dropped.")
@click.option("--no-decontam", is_flag=True, help="Build without a key list (say so explicitly).")
@click.option("--sources", default=None, metavar="A,B,...",
              help="Sources to build (default: all). See 'bimine data sources'.")
@click.option("--local", type=click.Path(exists=True, file_okay=False), default=None,
              help="A local training-data folder to add (Bible matrix, tatoeba and other en-xx file pairs).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
def build_cmd(output: str, keys: str | None, no_decontam: bool, sources: str | None, local: str | None,
              no_progress: bool) -> None:
    """Download, extract, clean, de-duplicate and decontaminate English–X pairs into OUTPUT.

    Resumable: run it again after an interruption and it goes on with the next package.
    Needs apt-get and dpkg-deb (Debian or Ubuntu), pip and npm, and a few GB of disk.
    """
    from bimine.data.recipe import build

    if keys is None and not no_decontam:
        raise click.UsageError("give --decontam KEYS (the held-out key list), or --no-decontam")
    if keys is not None and no_decontam:
        raise click.UsageError("--decontam KEYS and --no-decontam contradict each other: give one of them")
    logging.getLogger("bimine").setLevel(logging.INFO)
    names = [s.strip() for s in sources.split(",") if s.strip()] if sources else None
    res = build(output, sources=names, keys=keys, local=local, progress=not no_progress)
    ex, m = res["extract"], res["manifest"]
    click.echo(f"units: {ex['done']} extracted, {ex['skipped']} already done, {len(ex['failed'])} failed")
    for unit, err in ex["failed"].items():
        click.echo(f"  failed {unit}: {err}", err=True)
    big = sum(1 for v in m["languages"].values() if v["pairs"] >= 10_000)
    click.echo(f"{m['total_pairs']:,} pairs in {len(m['languages'])} languages ({big} with 10k+); "
               f"decontamination dropped {m['decontamination']['dropped']:,}; see {output}/README.md")
    if ex["failed"]:
        raise SystemExit(1)


@data.command("sources")
def sources_cmd() -> None:
    """List the recipe's sources."""
    from bimine.data.recipe import SOURCES

    for s in SOURCES.values():
        click.echo(f"{s.name:18s} {s.kind:4s} {s.description} [{s.license_note}]")
