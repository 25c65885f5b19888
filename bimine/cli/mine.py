"""``bimine mine``: translation pairs from two monolingual files, as ``score<TAB>src<TAB>tgt``."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import math

import click

from bimine.cli.adapting import adapt_options
from bimine.cli.group import cli
from bimine.cli.options import (
    MODEL_CHOICES_HELP,
    check_lang_option,
    check_ray_address,
    echo_warning,
    executor_options,
    option_given,
)
from bimine.mining.select import STRATEGIES
from bimine.mining.spec import FORMATS
from bimine.scoring.margin import SCORES


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"must be a finite number, not {value}")
    return value


def _threshold(ctx: click.Context, param: click.Parameter, value: str | None) -> float | str | None:
    if value is None or value == "trained":
        return value
    try:
        v = float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number (or 'trained', with --rescore)") from None
    return _finite(ctx, param, v)


@cli.command()
@click.argument("src", type=str)
@click.argument("tgt", type=str)
@click.option("--src-lang", default=None, callback=check_lang_option,
              help="Language of SRC (fr, fra, fra_Latn): checked against the text; needed only by models "
                   "whose features depend on it (not the default model).")
@click.option("--tgt-lang", default=None, callback=check_lang_option, help="Language of TGT (see --src-lang).")
@click.option("-o", "--output", required=True, type=click.Path(),
              help="Output file (its folder must exist; never one of the inputs).")
@click.option("-m", "--model", default="default", show_default=True, help=MODEL_CHOICES_HELP)
@click.option("--strategy", type=click.Choice(STRATEGIES), default="max", show_default=True,
              help="Pair selection: best per source, per target, mutual best, both by score (max), "
                   "or all candidates one-to-one by score (greedy).")
@click.option("--score", type=click.Choice(SCORES), default="eq9", show_default=True,
              help="Candidate score: paper 001 Eq. 9 (ratio margin plus cosine; the best on our dev sets, "
                   "docs/decisions.md), Eq. 10, margin ratio/distance, or absolute (cosine).")
@click.option("-k", "--k", "k", type=click.IntRange(min=1), default=4, show_default=True, help="Neighbours for the margin.")
@click.option("--threshold", type=str, callback=_threshold, default=None,
              help="Keep pairs whose score (in the units of --score; with --rescore, the rescorer's probability, "
                   "and 'trained' = its stored threshold) is at least this; the same test for "
                   "every score. Default: keep every selected candidate, negative scores included. "
                   "Typical cuts for the default model: eq9 ~1.85, ratio ~1.22, distance ~0.10 "
                   "(best F1 on the newstest BUCC-style train splits, docs/benchmarks.md); for the default "
                   "rescorer ~0.25-0.32 on news, its trees alone ~0.05-0.08 (the stored 0.35 and 0.38 were "
                   "chosen on held-out training-data candidates and do not travel: docs/rescoring.md).")
@click.option("--index", "factory", default="auto", show_default=True,
              help="FAISS factory string (Flat, IVF4096,SQ8, IVF4096,PQ128x4fs,Refine(SQfp16), "
                   "OPQ64,IVF65536,PQ64, HNSW32) or auto by size.")
@click.option("--nprobe", type=click.IntRange(min=0), default=0, show_default=True,
              help="IVF lists searched per query; 0 = 3/32 of the lists (384 of 4096: recall@4 0.96 at 1M).")
@click.option("--k-factor", type=click.IntRange(min=1), default=32, show_default=True,
              help="With a Refine(...) index: candidates re-scored per neighbour.")
@click.option("--work-dir", type=click.Path(), default=None,
              help="Keep embeddings and kNN results here; a rerun skips finished steps.")
@click.option("--no-wait", is_flag=True,
              help="A --work-dir another run is using: refuse at once (default: wait for that run to end).")
@click.option("--src-store", type=click.Path(file_okay=False, exists=True), default=None,
              help="Embeddings of SRC from 'bimine embed --store' (checked against SRC and the model).")
@click.option("--tgt-store", type=click.Path(file_okay=False, exists=True), default=None,
              help="Embeddings of TGT from 'bimine embed --store'.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="tsv", show_default=True,
              help="tsv: score, src, tgt (then --line-numbers, --confidence); jsonl/parquet add 1-based line numbers.")
@click.option("--line-numbers", is_flag=True, help="TSV: add 1-based source and target line numbers as columns 4-5.")
@click.option("--confidence", is_flag=True,
              help="Add each pair's calibrated confidence (paper 000 §2.4.2: the probability that it is a "
                   "translation, from the head stored with the model) as the last column.")
@click.option("--calibration", type=click.Path(exists=True, dir_okay=False), default=None,
              help="With --confidence: a head from 'bimine calibrate -o' instead of the model's own.")
@click.option("--rescore", "rescore", default=None,
              help="Re-score the selected pairs with a trained rescorer (paper 001 §6.2): 'default' (shipped with "
                   "the default model: trees, then an e5-small cross-encoder on the candidates they do not rule "
                   "out; 45-70 pairs/s, needs torch and bimine[e5]; with -m e5-small its own trees), 'trees' (the trees "
                   "alone: thousands of pairs/s, base install) or a folder from 'bimine train-rescorer'. Its probability becomes the score "
                   "(and what --threshold applies to; the rescorer's own threshold with --threshold trained); the "
                   "mining score is kept as a last column (margin).")
@click.option("--dedupe", is_flag=True, help="Drop pairs whose (src, tgt) texts repeat an earlier pair.")
@click.option("--drop-copies", is_flag=True, help="Drop pairs whose sides are equal up to case, punctuation, digits.")
@click.option("--min-chars", type=click.IntRange(min=0), default=0, show_default=True, help="Drop pairs with a side shorter than this.")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True)
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Processes encoding batches in parallel; 0 = 1, the fastest measured: bimine's own "
                   "models already encode each batch with one thread per core, e5-small threads itself.")
@click.option("--shard-size", type=click.IntRange(min=1), default=1_000_000, show_default=True,
              help="Lines per embedding shard, and so per key index shard and per kNN task.")
@executor_options("embed the shards and run the kNN searches as tasks on a Ray cluster (needs bimine[ray]); "
                  "the pairs are the same bytes as a local run's.")
@adapt_options
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
def mine(src: str, tgt: str, src_lang: str | None, tgt_lang: str | None, output: str, model: str, strategy: str, score: str,
         k: int, threshold: float, factory: str, nprobe: int, k_factor: int, work_dir: str | None, src_store: str | None,
         tgt_store: str | None, fmt: str, line_numbers: bool, confidence: bool, calibration: str | None,
         rescore: str | None, dedupe: bool, drop_copies: bool, min_chars: int,
         encoding_errors: str, workers: int, shard_size: int, executor: str, ray_address: str | None,
         adapt: bool, adapt_sample: int, no_progress: bool, no_wait: bool) -> None:
    """Mine translation pairs between SRC and TGT (one sentence per line; blank lines are never paired).

    SRC and TGT are files (plain, .gz, .xz, .bz2, .zst) or quoted glob patterns ('news/*.en.gz',
    '**' for subfolders): a side's files are mined as one corpus, and --line-numbers then writes
    FILE:LINE. Steps: embed both sides, index the keys, kNN both ways, score, select, filter, write.
    Output (tsv): score<TAB>source sentence<TAB>target sentence, best first, texts exactly as in the inputs.
    """
    from bimine.index.faiss_index import IndexConfig
    from bimine.mining.job import MineJob, check_index_options, run_mine
    from bimine.mining.spec import MineConfig

    # output, work dir, format, index string and inputs are all checked by mine_files before any work
    check_ray_address(executor, ray_address)
    # a given --k-factor is refused even at its default value; --nprobe 0 is the default (no setting)
    check_index_options(factory, nprobe=option_given("nprobe") and nprobe != 0, k_factor=option_given("k_factor"))
    trained = threshold == "trained"
    cfg = MineConfig(k=k, score=score, strategy=strategy, threshold=None if trained else threshold,
                     index=IndexConfig(factory=factory, nprobe=nprobe, k_factor=k_factor), dedupe=dedupe,
                     drop_copies=drop_copies, min_chars=min_chars)
    job = MineJob(src=src, tgt=tgt, output=output, src_lang=src_lang, tgt_lang=tgt_lang, mine=cfg, model=model,
                  work_dir=work_dir, src_store=src_store, tgt_store=tgt_store, fmt=fmt, line_numbers=line_numbers,
                  confidence=confidence, calibration=calibration, rescore=rescore, trained_threshold=trained,
                  encoding_errors=encoding_errors, workers=workers, shard_size=shard_size, executor=executor,
                  ray_address=ray_address, progress=not no_progress, wait=not no_wait)
    if adapt:
        from dataclasses import replace

        job = replace(job, model=_adapt(job, adapt_sample))
    report = run_mine(job, warn=echo_warning)
    click.echo(report.summary(), err=True)
    from bimine.outputs import shown

    click.echo(f"{report.written} pairs written to {shown(output)}", err=True)


def _adapt(job, sample: int) -> str:
    """``--adapt``: the checks that cost nothing first (inputs, output, threshold), then the adaptation."""
    from bimine.cli.adapting import adapted_model, file_side
    from bimine.mining.job import check_threshold
    from bimine.mining.pipeline import expand_inputs
    from bimine.outputs import check_output_file

    src_files, tgt_files = expand_inputs(job.src), expand_inputs(job.tgt)
    check_threshold(job.mine.score, job.mine.threshold, job.rescore)
    check_output_file(job.output, inputs=src_files + tgt_files)
    errors = job.encoding_errors
    sides = [file_side(job.src, job.src_lang, "--src-lang", src_files, errors),
             file_side(job.tgt, job.tgt_lang, "--tgt-lang", tgt_files, errors)]
    return adapted_model(job.model, sides, work_dir=job.work_dir, sample=sample, progress=job.progress)
