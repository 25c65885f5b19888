"""``bimine score`` and ``bimine filter``: score every pair of a parallel corpus (rules,
language identification, embedding cosine), and keep or drop each with its reason."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import os

import click

from bimine.cli.main import MODEL_CHOICES_HELP, Finite, check_lang_option, cli, load_model, pair_input

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


def pair_input_options() -> list:
    """The input of the pair-scoring commands (score, filter, divergence, select): a TSV or
    two line-aligned files, and the two languages."""
    return [
        click.argument("input", required=False, type=str),
        click.option("--src", type=str, default=None, help="Source side, one sentence per line (with --tgt)."),
        click.option("--tgt", type=str, default=None, help="Target side, line-aligned with --src."),
        click.option("--columns", default="1,2", show_default=True,
                     help="With a TSV INPUT: the 1-based source and target columns (every column is kept)."),
        click.option("--src-lang", required=True, callback=check_lang_option, help="Language of the source side."),
        click.option("--tgt-lang", required=True, callback=check_lang_option, help="Language of the target side."),
    ]


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
        click.option("--no-progress", is_flag=True, help="Hide the progress bar."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return ray_options(f)


def ray_options(f):
    """--executor / --ray-address of the pair-scoring commands."""
    from bimine.cli.embed import executor_options

    return executor_options("score the blocks as tasks on a Ray cluster (needs bimine[ray]; --workers is then "
                            "the cluster's CPUs); the same output as a local run.")(f)


def _run(filtering: bool, input, src, tgt, columns, src_lang, tgt_lang, output, config, rules, model, no_model,
         classifiers, workers, block_size, encoding_errors, report, no_progress, threshold=None, kept=None, top_fraction=None,
         token_budget=None, normalize=False, spec=None, pipeline_name=None, executor="local",
         ray_address=None) -> None:

    from bimine.cli.embed import check_executor
    from bimine.filtering.config import build_filters, default_spec, parse_pipeline
    from bimine.filtering.pipeline import read_pair_blocks, run_pipeline
    from bimine.outputs import check_output_file
    from bimine.progress import bar
    from bimine.text.io import scan_text

    check_executor(executor, ray_address)
    if executor == "ray":
        from bimine.distributed.ray_executor import require_ray

        require_ray()
    cols = pair_input(input, src, tgt, columns)
    inputs = [input] if input is not None else [src, tgt]
    check_output_file(output, inputs=inputs)
    if kept:
        from pathlib import Path

        from bimine.errors import ConfigError

        check_output_file(kept, inputs=inputs, option="--kept")
        if Path(kept).resolve() == Path(output).resolve():
            raise ConfigError(f"--kept {kept}: is also the -o/--output file; choose another name")
    if report:
        from pathlib import Path

        from bimine.errors import ConfigError

        check_output_file(report, inputs=inputs, option="--report")
        for other, option in ((output, "-o/--output"), (kept, "--kept")):
            if other and Path(report).resolve() == Path(other).resolve():
                raise ConfigError(f"--report {report}: is also the {option} file; choose another name")
    if spec is None and config:
        from bimine.config import load_yaml  # YAML errors and !!python tags: one line, naming the file

        spec = parse_pipeline(load_yaml(config), where=config)
    elif spec is None:
        spec = default_spec(rules, model=not no_model)
    default_pipeline = not config and pipeline_name is None and not no_model
    for key, value in (("threshold", threshold), ("top_fraction", top_fraction), ("token_budget", token_budget)):
        if value is not None:
            setattr(spec, key, value)
    if normalize:
        spec.normalize, spec.combine = True, "minmax"
    # a classifier given here takes part in the decision (its own threshold, best dev F1) and in the score
    spec.filters = list(spec.filters) + [{"score": "classifier", "path": p, "threshold": "trained"} for p in classifiers]
    # a classifier needs the model when it scores embeddings (it says so if --no-model)
    needs_model = any(item.get("score") in ("cosine", "margin", "confidence", "rescore", "cover")
                      or (item.get("score") in ("classifier", "divergence") and not no_model) for item in spec.filters)
    encoder = combiners = None
    if needs_model:
        from bimine.filtering.combine import combiners_for

        encoder = load_model(model, [src_lang, tgt_lang], "filter" if filtering else "score")
        combiners = combiners_for(encoder)
        if default_pipeline and combiners is not None and spec.combine is None:  # the default pipeline with the model's trained combination
            extended = default_spec(rules, model=True, combiner=True)
            extended.filters += spec.filters[len(default_spec(rules, model=True).filters):]  # the --classifier items
            for key in ("threshold", "top_fraction", "token_budget"):
                setattr(extended, key, getattr(spec, key))
            spec = extended
    # the trained combination: the default pipeline with a model that ships one, or a pipeline saying combine: model
    selection = spec.selection(combiners if spec.combine == "model" else None)
    cut_note = None
    if default_pipeline and encoder is not None and combiners is None:
        name = encoder.spec.kind if model == "auto" else model  # auto: the model it chose
        cut_note = (f"model {name!r} ships no trained combination: score is the sum of cosine and margin (paper 002 "
                    "Eq. 3), which does not see the rules; sort by it only among the pairs the rules keep")
    weak = []
    if selection.combine == "model":
        from bimine.encoders.languages import SERVED_XSIM, describe, poorly_served
        from bimine.langs import normalize_lang

        # genuine pairs of a language the model serves poorly score low: no default cut, no "not parallel" warning
        weak = poorly_served(encoder, [normalize_lang(src_lang), normalize_lang(tgt_lang)])
        selection.warn_unrelated = not weak
    if (filtering and selection.combine == "model" and selection.threshold is None and selection.top_fraction is None
            and selection.token_budget is None):
        if weak:  # a fixed cut would drop many of its genuine pairs
            cut_note = (f"no default cut on score: the model serves {describe(weak)} less well (above "
                        f"{SERVED_XSIM:g} %), so genuine pairs score low there; sort by score, pass --threshold, or "
                        "use -m e5-small")
        else:
            selection.threshold = combiners.full.cut  # the default cut, chosen on dev (docs/filtering.md)
    filters = build_filters(spec, src_lang=src_lang, tgt_lang=tgt_lang, encoder=encoder,
                            where=config or "the command-line pipeline")
    # the whole input is checked (binary, UTF-8) and counted before any work
    total = None
    if "-" not in inputs:
        counts = [scan_text(p, errors=encoding_errors).lines for p in inputs]
        total = counts[0]
    blocks = read_pair_blocks(input, src=src, tgt=tgt, columns=cols, block_size=block_size,
                              errors=encoding_errors)
    langs = {"src": src_lang, "tgt": tgt_lang}
    notes = [f"the language identifier does not know {langs[side]!r}: the {side} side was not checked"
             for f in filters for side in getattr(f, "unchecked", [])]
    info = {"input": input if input is not None else f"{src} and {tgt} (line-aligned)",
            "languages": f"{src_lang} → {tgt_lang}",
            "pipeline": (pipeline_name or config or f"--rules {rules}" + (" --no-model" if no_model else ""))
            + "".join(f" --classifier {c}" for c in classifiers),
            "model": model if encoder is not None else "none (rules only)"}
    for i, note in enumerate(notes):
        info[f"note {i + 1}" if len(notes) > 1 else "note"] = note
    progress = bar(total=total, unit=" pairs", desc="filter" if filtering else "score", enabled=not no_progress)
    try:
        result = run_pipeline(blocks, filters, output, columns=cols if input is not None else None,
                              filtering=filtering, selection=selection, kept_output=kept, workers=workers,
                              progress=progress, report_path=report, report_info=info, executor=executor,
                              ray_address=ray_address)
    finally:
        progress.close()
    result.notes.extend(notes)
    if cut_note:
        result.notes.append(cut_note)
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    if os.environ.get("BIMINE_TIMINGS"):
        click.echo("timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in result.seconds.items()), err=True)
    click.echo(result.summary(filtering) + f"; wrote {output}" + (f" and {kept}" if kept else "")
               + (f"; report: {report}" if report else ""), err=True)
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
    _run(False, **kw)


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
    _run(True, threshold=threshold, top_fraction=top_fraction, token_budget=token_budget, normalize=normalize,
         kept=kept, **kw)
