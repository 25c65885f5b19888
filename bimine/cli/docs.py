"""``bimine docs match``: pair the documents of two collections (paper 000 §2.4.1, 001 §5.3)."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import click

from bimine.cli.adapting import adapt_options
from bimine.cli.group import cli
from bimine.cli.options import MODEL_CHOICES_HELP, Finite, check_lang_option, echo_warning
from bimine.documents.collections import FORMATS
from bimine.documents.match import POSITIONS, RANKS
from bimine.documents.spec import METHODS
from bimine.text.sentences import DEFAULT_SPLITTER, SPLITTERS


@cli.group()
def docs() -> None:
    """Work with documents: match translated documents across two collections."""


@docs.command("match")
@click.argument("src", required=False, type=str)
@click.argument("tgt", required=False, type=str)
@click.option("--src", "src_opt", type=str, default=None, help="Source collection (instead of the first argument).")
@click.option("--tgt", "tgt_opt", type=str, default=None, help="Target collection (instead of the second argument).")
@click.option("--src-lang", default=None, callback=check_lang_option,
              help="Language of the source documents (sentence splitting; models that need it).")
@click.option("--tgt-lang", default=None, callback=check_lang_option, help="Language of the target documents.")
@click.option("-o", "--output", required=True, type=click.Path(),
              help="TSV with a header: src_doc, tgt_doc, score, rank, votes.")
@click.option("-m", "--model", default="default", show_default=True,
              help=MODEL_CHOICES_HELP)
@click.option("--method", type=click.Choice(METHODS), default="eq3", show_default=True,
              help="eq3: sentence neighbours vote by paper 000's Eq. 3; counts: mutually nearest sentence pairs; "
                   "embedding: averaged sentence embeddings (001); two-stage: embedding candidates re-ranked by eq3.")
@click.option("-n", "--neighbours", "n", type=click.IntRange(min=1), default=10, show_default=True,
              help="Nearest target sentences per source sentence (Eq. 3's N).")
@click.option("--w1", type=Finite(), default=5.0, show_default=True, help="Eq. 3: weight of the calibrated confidence.")
@click.option("--w2", type=Finite(), default=-2.0, show_default=True, help="Eq. 3: weight of the position difference.")
@click.option("--positions", type=click.Choice(POSITIONS), default="relative", show_default=True,
              help="Eq. 3's position difference in sentence numbers (as paper 000) or relative to document length.")
@click.option("--rank", "rank", type=click.Choice(RANKS), default="inverted", show_default=True,
              help="Eq. 3's rank term: -r as paper 000 (more votes lower the score), or N+1-r (docs/decisions.md).")
@click.option("--top", type=click.IntRange(min=1), default=1, show_default=True,
              help="Target documents written per source document.")
@click.option("--one-to-one", is_flag=True, help="Each document in at most one pair (greedy by score).")
@click.option("--candidates", type=click.IntRange(min=1), default=20, show_default=True,
              help="two-stage: target documents proposed per source document.")
@click.option("--src-format", type=click.Choice(FORMATS), default="auto", show_default=True)
@click.option("--tgt-format", type=click.Choice(FORMATS), default="auto", show_default=True)
@click.option("--splitter", type=click.Choice(SPLITTERS), default=DEFAULT_SPLITTER, show_default=True,
              help="Sentence splitter for raw text (JSONL 'text', folders).")
@click.option("--calibration", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Confidence head (from 'bimine calibrate -o') instead of the model's own.")
@click.option("--index", default="auto", show_default=True, help="FAISS factory string of the sentence kNN.")
@click.option("--work-dir", type=click.Path(), default=None,
              help="Keep sentence files and embeddings here; a rerun on the same inputs reuses them.")
@click.option("--no-wait", is_flag=True,
              help="A --work-dir another run is using: refuse at once (default: wait for that run to end).")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True)
@adapt_options
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
def match(src, tgt, src_opt, tgt_opt, src_lang, tgt_lang, output, model, method, n, w1, w2, positions, rank, top,
          one_to_one, candidates, src_format, tgt_format, splitter, calibration, index, work_dir, no_wait,
          encoding_errors, adapt, adapt_sample, no_progress) -> None:
    """Find, for each document of SRC, its translation among the documents of TGT.

    A collection is a JSONL file ({"id": ..., "text": ...} or {"id": ..., "sentences": [...]}
    per line), a TSV file (doc_id<TAB>sentence per line, a document's lines together), or a
    folder of text files (one document each). Raw text is split into sentences.
    """
    from bimine.documents.job import run_docs_match
    from bimine.documents.match import Eq3Config
    from bimine.documents.spec import DocMatchConfig, DocsMatchJob

    src, tgt = src or src_opt, tgt or tgt_opt
    if src is None or tgt is None or (src_opt and src != src_opt) or (tgt_opt and tgt != tgt_opt):
        raise click.UsageError("give the two collections, as SRC TGT or with --src and --tgt")
    cfg = DocMatchConfig(method=method, eq3=Eq3Config(n=n, w1=w1, w2=w2, positions=positions, rank=rank), top=top,
                         one_to_one=one_to_one, candidates=candidates, index=index)
    job = DocsMatchJob(src=src, tgt=tgt, output=output, src_lang=src_lang, tgt_lang=tgt_lang, model=model, match=cfg,
                       src_format=src_format, tgt_format=tgt_format, splitter=splitter, calibration=calibration,
                       work_dir=work_dir, encoding_errors=encoding_errors, progress=not no_progress,
                       wait=not no_wait)
    if adapt:
        from dataclasses import replace

        from bimine.cli.adapting import adapted_model, collection_side

        sides = [collection_side(src, src_lang, "--src-lang", src, src_format, splitter, encoding_errors),
                 collection_side(tgt, tgt_lang, "--tgt-lang", tgt, tgt_format, splitter, encoding_errors)]
        job = replace(job, model=adapted_model(model, sides, work_dir=work_dir, sample=adapt_sample,
                                               progress=not no_progress))
    report = run_docs_match(job, warn=echo_warning)
    click.echo(report.summary(), err=True)
    from bimine.outputs import shown

    click.echo(f"{report.written} document pairs written to {shown(output)}", err=True)
