"""``bimine mine``: translation pairs from two monolingual files, as ``score<TAB>src<TAB>tgt``."""

from __future__ import annotations

import os

import click

from bimine.cli.embed import MODEL_HELP
from bimine.cli.main import cli
from bimine.mining.margin import SCORES
from bimine.mining.select import STRATEGIES


@cli.command()
@click.argument("src", type=str)
@click.argument("tgt", type=str)
@click.option("--src-lang", required=True, help="Language of SRC (fr, fra, fra_Latn).")
@click.option("--tgt-lang", required=True, help="Language of TGT.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Output TSV.")
@click.option("-m", "--model", default="default", show_default=True, help=MODEL_HELP)
@click.option(
    "--strategy",
    type=click.Choice(STRATEGIES),
    default="max",
    show_default=True,
    help="Pair selection: best per source, per target, mutual best, or both by score.",
)
@click.option("--score", type=click.Choice(SCORES), default="ratio", show_default=True, help="Margin score.")
@click.option("-k", "--k", "k", type=int, default=4, show_default=True, help="Neighbours for the margin.")
@click.option(
    "--threshold",
    type=float,
    default=0.0,
    show_default=True,
    help="Keep pairs scoring at least this (0 keeps every candidate; ratio ~1.06 is a common cut).",
)
@click.option(
    "--line-numbers", is_flag=True, help="Add 1-based source and target line numbers as columns 4 and 5."
)
@click.option(
    "--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True
)
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
def mine(
    src: str,
    tgt: str,
    src_lang: str,
    tgt_lang: str,
    output: str,
    model: str,
    strategy: str,
    score: str,
    k: int,
    threshold: float,
    line_numbers: bool,
    encoding_errors: str,
    no_progress: bool,
) -> None:
    """Mine translation pairs between SRC and TGT (one sentence per line; empty lines are never paired).

    Output: score<TAB>source sentence<TAB>target sentence, best first, texts exactly as in the inputs.
    """
    import numpy as np

    from bimine.embed import embed_lines
    from bimine.encoders import load_encoder
    from bimine.mining.mine import MineConfig, mine_embeddings
    from bimine.text.io import read_lines

    if k < 1:
        raise click.BadParameter("must be >= 1", param_hint="-k")
    encoder = load_encoder(model)
    cfg = MineConfig(k=k, score=score, strategy=strategy, threshold=threshold)
    texts, embs = [], []
    from tqdm.auto import tqdm

    for path, lang in ((src, src_lang), (tgt, tgt_lang)):
        lines = list(read_lines(path, errors=encoding_errors))
        keep = np.array([i for i, s in enumerate(lines) if s.strip()], dtype=np.int64)
        with tqdm(
            total=len(keep), unit=" lines", desc=f"embed {os.path.basename(path)}", disable=no_progress
        ) as bar:
            parts = list(embed_lines(encoder, (lines[i] for i in keep), lang, progress=bar))
        emb = np.concatenate(parts) if parts else np.zeros((0, encoder.dim), np.float32)
        texts.append((lines, keep))
        embs.append(emb)
    s, i, j = mine_embeddings(embs[0], embs[1], cfg)
    (src_lines, src_keep), (tgt_lines, tgt_keep) = texts
    tmp = f"{output}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for sc, a, b in zip(s.tolist(), src_keep[i].tolist(), tgt_keep[j].tolist()):
            row = f"{sc:.6f}\t{src_lines[a]}\t{tgt_lines[b]}"
            if line_numbers:
                row += f"\t{a + 1}\t{b + 1}"
            f.write(row + "\n")
    os.replace(tmp, output)
    skipped = (len(src_lines) - len(src_keep), len(tgt_lines) - len(tgt_keep))
    msg = f"{len(s)} pairs written to {output} (from {len(src_keep)} x {len(tgt_keep)} sentences"
    if any(skipped):
        msg += f"; {skipped[0]} + {skipped[1]} empty lines not paired"
    click.echo(msg + ")", err=True)
