"""``bimine eval``: benchmarks of encoders and mining."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import json

import click

from bimine.cli.group import cli
from bimine.cli.options import MODEL_CHOICES_HELP, check_lang_option
from bimine.mining.select import STRATEGIES
from bimine.scoring.margin import SCORES


@cli.group(name="eval")
def eval_group() -> None:
    """Evaluate models: retrieval precision (P@N), BUCC-style mining F1."""


@eval_group.command()
@click.argument("src", type=str)
@click.argument("tgt", type=str)
@click.option("--src-lang", required=True, callback=check_lang_option)
@click.option("--tgt-lang", required=True, callback=check_lang_option)
@click.option(
    "-m",
    "--model",
    "models",
    multiple=True,
    default=("default",),
    show_default=True,
    help=MODEL_CHOICES_HELP + " Repeat to compare models side by side.",
)
@click.option("--max-lines", type=click.IntRange(min=1), default=None, help="Use only the first N line pairs.")
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
    repeat sentences). Pairs with an empty side are left out and counted; files without a
    pair are an error, and two sides of the same text (one file twice, or a copy) a warning.
    """
    from bimine.eval.benchmark import retrieval_scores
    from bimine.text.sameness import same_file

    rows = []
    for m in models:
        rows.append(retrieval_scores(m, src, tgt, src_lang, tgt_lang, max_lines=max_lines))
        if len(rows) == 1 and rows[0]["same_text"] == rows[0]["n"]:
            same = "are the same file" if same_file(src, tgt) else "hold the same text on every line"
            click.echo(f"warning: {src} and {tgt} {same}: every sentence retrieves itself, so P@N is 100 % "
                       "whatever the model; give the translation as TGT", err=True)
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


@eval_group.command()
@click.option("--train-src", required=True, help="BUCC sentences '<id><TAB><text>' of the source, train split.")
@click.option("--train-tgt", required=True, help="Target sentences, train split.")
@click.option("--train-gold", required=True, help="Gold '<src_id><TAB><tgt_id>', train split.")
@click.option("--test-src", required=True)
@click.option("--test-tgt", required=True)
@click.option("--test-gold", required=True)
@click.option("--src-lang", required=True, callback=check_lang_option)
@click.option("--tgt-lang", required=True, callback=check_lang_option)
@click.option("-m", "--model", default="default", show_default=True, help=MODEL_CHOICES_HELP)
@click.option("--score", "scores", type=click.Choice(SCORES), multiple=True, default=("eq9",), show_default=True,
              help="Score(s) to evaluate (repeatable).")
@click.option("--strategy", "strategies", type=click.Choice(STRATEGIES), multiple=True, default=("max",), show_default=True,
              help="Strategy(ies) (repeatable).")
@click.option("-k", "--k", "k", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--plot", type=click.Path(), default=None,
              help="Save the precision-recall curve of the first score/strategy as a PNG.")
@click.option("--json", "as_json", is_flag=True)
def bucc(train_src, train_tgt, train_gold, test_src, test_tgt, test_gold, src_lang, tgt_lang, model, scores,
         strategies, k, plot, as_json) -> None:
    """Mining P/R/F1: threshold with the best F1 on the train split, applied to the test split."""
    from bimine.encoders import load_encoder
    from bimine.errors import InputError
    from bimine.eval.bucc import bucc_eval, embed_split, read_bucc
    from bimine.mining.spec import MineConfig

    if plot is not None:
        from bimine.outputs import check_output_file

        check_output_file(plot, inputs=(train_src, train_tgt, train_gold, test_src, test_tgt, test_gold),
                          option="--plot")
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise InputError("--plot needs matplotlib: pip install 'bimine[plot]'") from None
    train_split = read_bucc(train_src, train_tgt, train_gold)  # both splits checked before any embedding
    test_split = read_bucc(test_src, test_tgt, test_gold)
    enc = load_encoder(model)
    train = embed_split(train_split, enc, src_lang, tgt_lang)
    test = embed_split(test_split, enc, src_lang, tgt_lang)
    rows = []
    for n, (sc, st) in enumerate((a, b) for a in scores for b in strategies):
        rows.append(bucc_eval(train, test, MineConfig(k=k, score=sc, strategy=st), plot=plot if n == 0 else None))
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    click.echo(f"{'score':<9} {'strategy':<13} {'threshold':>9} {'P':>6} {'R':>6} {'F1':>6}  (test; train F1)")
    for r in rows:
        t = r["test"]
        click.echo(f"{r['score']:<9} {r['strategy']:<13} {r['threshold']:9.4f} {100 * t['precision']:6.2f} "
                   f"{100 * t['recall']:6.2f} {100 * t['f1']:6.2f}  ({100 * r['train']['f1']:.2f})")
