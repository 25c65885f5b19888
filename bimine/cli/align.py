"""``bimine align``: align the sentences of a document pair (or of many, with one loaded model)."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import click

from bimine.cli.adapting import adapt_options
from bimine.cli.group import cli
from bimine.cli.options import MODEL_CHOICES_HELP, Finite, check_lang_option, echo_warning

MODEL_HELP = MODEL_CHOICES_HELP
DEFAULT_METHOD = "two-pass"  # the better one on the dev sets (docs/documents.md)


@cli.command()
@click.argument("src", required=False, type=str)
@click.argument("tgt", required=False, type=str)
@click.option("--src-lang", default=None, callback=check_lang_option,
              help="Language of the source document (needed only by models whose features depend on it).")
@click.option("--tgt-lang", default=None, callback=check_lang_option, help="Language of the target document.")
@click.option("-o", "--output", required=True, type=click.Path(),
              help="Beads, one per line '[i,j]:[k]:cost' (0-based lines; with --batch: a folder).")
@click.option("--tsv", "tsv", type=click.Path(), default=None,
              help="Also write the aligned text to this TSV file (src_lines, tgt_lines, cost, src, tgt).")
@click.option("--tsv-all", is_flag=True, help="With --batch or --doc-pairs: also a .tsv of the aligned text "
              "beside each alignment.")
@click.option("--batch", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Align many pairs: a file of lines 'src_file<TAB>tgt_file[<TAB>name]'; -o is then a folder "
                   "that gets NAME.align for each line.")
@click.option("--doc-pairs", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Align matched documents: the output of 'bimine docs match' (src_doc, tgt_doc columns), with "
                   "--src-docs and --tgt-docs; -o is then a folder that gets pair-NNNNN.align and index.tsv.")
@click.option("--src-docs", type=str, default=None, help="With --doc-pairs: the source collection.")
@click.option("--tgt-docs", type=str, default=None, help="With --doc-pairs: the target collection.")
@click.option("-m", "--model", default="default", show_default=True, help=MODEL_HELP)
@click.option("--max-side", type=click.IntRange(1, 10), default=None,
              help="Most sentences on one side of a bead (default: 5 for two-pass, 4 for vecalign).")
@click.option("--max-total", type=click.IntRange(2, 20), default=None,
              help="Most sentences in a bead, both sides together (default: 6 for two-pass, 8 for vecalign).")
@click.option("--method", type=click.Choice(["two-pass", "vecalign"]), default=DEFAULT_METHOD, show_default=True,
              help="two-pass: Bertalign's anchors then many-to-many beads around them (docs/documents.md); "
                   "vecalign: Vecalign's cost and its down-sampled search.")
@click.option("--overlaps", type=click.Choice(["joined", "sum"]), default="joined", show_default=True,
              help="Embed joined runs of sentences, or sum sentence embeddings (no extra encoding: for slow models).")
@click.option("--length-weight", type=Finite(min=0), default=None,
              help="Weight of the length prior (default 0.6, the best on the dev sets: docs/documents.md; 0 = Vecalign's cost).")
@click.option("--token-weight", type=Finite(min=0), default=None,
              help="two-pass: score of a number or name (a token both documents hold, in at most 2 lines of each) "
                   "on both sides of a bead, less as much per one on one side only (default 0.2: bleualign-dev "
                   "0.876 -> 0.902, docs/documents.md; 0 = embeddings alone).")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True,
              help="On invalid UTF-8: stop with an error, or replace with U+FFFD.")
@adapt_options
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def align(src, tgt, src_lang, tgt_lang, output, tsv, tsv_all, batch, doc_pairs, src_docs, tgt_docs, model, max_side,
          max_total, method, overlaps, length_weight, token_weight, encoding_errors, adapt, adapt_sample,
          no_progress) -> None:
    """Align the sentences (one per line) of the document SRC with those of its translation TGT
    (or of many pairs: --batch, or --doc-pairs with the output of 'bimine docs match').

    Writes one bead per line: '[3,4]:[5]:0.21' aligns source lines 3 and 4 (0-based) with
    target line 5; '[]:[6]' and '[7]:[]' are an insertion and a deletion. Every line of both
    files is in exactly one bead, in order.
    """
    from bimine.documents.job import AlignJob, run_align

    job = AlignJob(output=output, src=src, tgt=tgt, batch=batch, doc_pairs=doc_pairs, src_docs=src_docs,
                   tgt_docs=tgt_docs, tsv=tsv, tsv_all=tsv_all, src_lang=src_lang, tgt_lang=tgt_lang, model=model,
                   method=method, max_side=max_side, max_total=max_total, overlaps=overlaps,
                   length_weight=length_weight, token_weight=token_weight,
                   encoding_errors=encoding_errors, progress=not no_progress)
    if adapt:
        from dataclasses import replace

        job = replace(job, model=_adapt(job, adapt_sample))
    run_align(job, warn=echo_warning, say=lambda line: click.echo(line, err=True))


def _adapt(job, sample: int) -> str:
    """``--adapt``: each side's sentences are those of every document aligned on that side."""
    from bimine.cli.adapting import adapted_model, collection_side, file_side
    from bimine.documents.job import read_batch_list

    errors = job.encoding_errors
    if job.doc_pairs is not None:
        sides = [collection_side(job.src_docs, job.src_lang, "--src-lang", job.src_docs, "auto", None, errors),
                 collection_side(job.tgt_docs, job.tgt_lang, "--tgt-lang", job.tgt_docs, "auto", None, errors)]
    else:
        pairs = [(job.src, job.tgt, None)] if job.batch is None else read_batch_list(job.batch)
        names = (job.src, job.tgt) if job.batch is None else (f"the source documents of {job.batch}",
                                                              f"the target documents of {job.batch}")
        sides = [file_side(names[0], job.src_lang, "--src-lang", [p[0] for p in pairs], errors),
                 file_side(names[1], job.tgt_lang, "--tgt-lang", [p[1] for p in pairs], errors)]
    return adapted_model(job.model, sides, work_dir=None, sample=sample, progress=job.progress)
