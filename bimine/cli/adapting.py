"""``--adapt`` on the commands that embed two sides (mine, align, score, filter, docs match): the
option, and each command's sides as :class:`bimine.training.side_adapt.Side` (issue 73)."""

# Library imports sit inside the functions: at the top, every `bimine` call (--help too) would load them.
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import click

ADAPT_SAMPLE = 20_000  # bimine.training.side_adapt.ADAPT_SAMPLE (not imported here: it loads the trainer)


def adapt_options(f):
    """``--adapt`` and ``--adapt-sample``."""
    f = click.option("--adapt-sample", type=click.IntRange(min=10), default=ADAPT_SAMPLE, show_default=True,
                     help="With --adapt: sentences of a side sampled to adapt on (a fixed hashed choice).")(f)
    return click.option(
        "--adapt", is_flag=True,
        help="First adapt the fast model to each side whose language it serves poorly (its stored dev figures) "
             "on a sample of that side ('bimine adapt': minutes; needs bimine[e5] and PyTorch), and then to the other "
             "side's language on that side's lines nearest the sample, then run at the fast model's speed. Kept in --work-dir's 'adapted' folder (else the bimine cache folder) and "
             "reused by a rerun on the same input. With -m auto: the shipped model, adapted.")(f)


def _refuse_stdin(paths, what: str = "a side") -> None:
    if "-" in paths:
        raise click.UsageError(f"--adapt reads {what} twice (a sample, then the job): give a file, not - (stdin)")


def file_side(name: str, lang: str | None, option: str, files: list[str], errors: str):
    """A side read from text files, one sentence a line."""
    from bimine.text.io import read_lines
    from bimine.training.side_adapt import Side

    _refuse_stdin(files)

    def lines() -> Iterator[str]:
        for f in files:
            yield from read_lines(f, errors=errors)

    return Side(name, lang, option, lines)


def collection_side(name: str, lang: str | None, option: str, path: str, fmt: str, splitter: str | None,
                    errors: str):
    """A side read from a document collection (JSONL, TSV, folder), raw text split into sentences."""
    from bimine.documents.collections import read_collection
    from bimine.text.io import read_lines
    from bimine.text.sentences import get_splitter
    from bimine.training.side_adapt import Side

    _refuse_stdin([path])

    def lines() -> Iterator[str]:
        split = get_splitter() if splitter is None else get_splitter(splitter)
        with tempfile.TemporaryDirectory(prefix="bimine-adapt-") as tmp:
            out = os.path.join(tmp, "sentences.txt")
            read_collection(path, out, fmt=fmt, split=lambda text: split(text, lang or "und"), errors=errors)
            yield from read_lines(out)

    return Side(name, lang, option, lines)


def pair_sides(input: str | None, src: str | None, tgt: str | None, columns: tuple[int, int], src_lang: str | None,
               tgt_lang: str | None, errors: str):
    """The two sides of a parallel corpus (a TSV's columns, or two files)."""
    from bimine.filtering.pipeline import read_pair_blocks
    from bimine.training.side_adapt import Side

    _refuse_stdin((input, src, tgt), "the corpus")

    def column(which: str):
        def lines() -> Iterator[str]:
            for block in read_pair_blocks(input, src=src, tgt=tgt, columns=columns, errors=errors):
                yield from getattr(block, which)
        return lines

    where = f"{input} (column {columns[0]} / {columns[1]})" if input else None
    return [Side(f"the source side of {where}" if where else src, src_lang, "--src-lang", column("src")),
            Side(f"the target side of {where}" if where else tgt, tgt_lang, "--tgt-lang", column("tgt"))]


def adapted_model(model: str, sides: list, *, work_dir: str | None, sample: int, progress: bool) -> str:
    """Run :func:`bimine.training.side_adapt.adapt_sides`, print its line; the model to run the job with."""
    from bimine.training.side_adapt import adapt_sides

    result = adapt_sides(model, sides, work_dir=work_dir, sample=sample, progress=progress)
    click.echo(result.summary, err=True)
    return result.model
