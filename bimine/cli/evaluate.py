"""``bimine eval``: benchmarks of encoders and mining."""

from __future__ import annotations

import json

import click

from bimine.cli.embed import MODEL_HELP
from bimine.cli.main import cli


@cli.group(name="eval")
def eval_group() -> None:
    """Evaluate models: retrieval precision (P@N)."""


@eval_group.command()
@click.argument("src", type=str)
@click.argument("tgt", type=str)
@click.option("--src-lang", required=True)
@click.option("--tgt-lang", required=True)
@click.option(
    "-m",
    "--model",
    "models",
    multiple=True,
    default=("default",),
    show_default=True,
    help=MODEL_HELP + " Repeat to compare models side by side.",
)
@click.option("--max-lines", type=int, default=None, help="Use only the first N line pairs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def retrieval(
    src: str,
    tgt: str,
    src_lang: str,
    tgt_lang: str,
    models: tuple[str, ...],
    max_lines: int | None,
    as_json: bool,
) -> None:
    """P@1, P@3, P@10 of finding line i of TGT for line i of SRC among all of TGT, and back.

    A retrieved sentence whose text equals the gold translation counts as correct (test sets
    repeat sentences). Pairs with an empty side are left out and counted.
    """
    from bimine.eval.benchmark import retrieval_scores

    rows = [retrieval_scores(m, src, tgt, src_lang, tgt_lang, max_lines=max_lines) for m in models]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'model':<28} {'dir':<7} {'P@1':>6} {'P@3':>6} {'P@10':>6} {'n':>7}")
    for r in rows:
        for d in ("src2tgt", "tgt2src"):
            p = r[d]
            click.echo(
                f"{r['model']:<28} {d:<7} {100 * p['1']:6.2f} {100 * p['3']:6.2f} "
                f"{100 * p['10']:6.2f} {r['n']:>7}"
            )
        if r["skipped_empty"]:
            click.echo(f"  ({r['skipped_empty']} pairs with an empty side left out)")
