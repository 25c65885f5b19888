"""Retrieval benchmark on a pair of aligned files, shared by the CLI and benchmarks/."""

from __future__ import annotations

import itertools
import time

from bimine.encoders import Encoder, load_encoder
from bimine.errors import InputError
from bimine.eval.retrieval import evaluate_retrieval
from bimine.text.io import read_parallel


def retrieval_scores(
    model: str | Encoder,
    src: str,
    tgt: str,
    src_lang: str,
    tgt_lang: str,
    *,
    max_lines: int | None = None,
    ks: tuple[int, ...] = (1, 3, 10),
) -> dict:
    """P@k both ways for the aligned files ``src``/``tgt``; pairs with an empty side are left out
    (counted in ``skipped_empty``), and ``same_text`` counts the pairs whose two sides are the
    same text (all of them: the two files are copies and P@k says nothing about the model).
    Files without a pair of text on both sides are an :class:`InputError` (P@k of nothing)."""
    pairs = list(itertools.islice(read_parallel(src, tgt), max_lines))
    kept = [(x, y) for x, y in pairs if x.strip() and y.strip()]
    if not kept:
        empty = f" ({len(pairs):,} line pair(s), each with an empty side)" if pairs else " (both are empty)"
        raise InputError(f"{src}, {tgt}: no line pair with text on both sides{empty}; nothing to evaluate")
    enc = load_encoder(model) if isinstance(model, str) else model
    xs = [x for x, _ in kept]
    ys = [y for _, y in kept]
    t = time.time()
    u = enc.encode(xs, src_lang)
    v = enc.encode(ys, tgt_lang)
    secs = time.time() - t
    res = evaluate_retrieval(u, v, xs, ys, ks)
    return {
        "model": model if isinstance(model, str) else enc.model_id,
        "src": src,
        "tgt": tgt,
        "n": len(kept),
        "skipped_empty": len(pairs) - len(kept),
        "same_text": sum(x.strip() == y.strip() for x, y in kept),
        "embed_seconds": round(secs, 2),
        **{d: {str(k): r.precision[k] for k in ks} for d, r in res.items()},
    }
