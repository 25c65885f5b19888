"""Sentence alignment quality on the dev sets (issue 11 §4): strict and lax P/R/F1.

Usage (from the repository root)::

    python -m benchmarks.align_dev [--model default --model e5-small] [--sets bleualign,dtm,...]
                                   [--method vecalign --method two-pass] [--option margin=False ...]
                                   [--sweep] [--json .bench/align_dev.json]

Sets (all under ``../shared/data/dev``):

* ``bleualign`` — ``bleualign-dev``: one German-French document (468 / 554 lines, 422 gold
  beads), the dev document of the Bleualign set that Vecalign and Bertalign report on (their
  published figures are on the 7 test documents, held out here).
* ``1984.hu``, ``1984.ro``, ``steinbeck``, ``dtm`` — ``hunalign-handaligns``: Orwell's 1984 in
  Hungarian and Romanian against English (~6,500-6,700 lines a side), Steinbeck's Cup of Gold
  in Hungarian (7,031 / 6,813 lines with ``<p>`` paragraph lines), a magazine interview
  (581 / 583); the gold is hunalign's hand-made ladder, read as beads (a one-sided rung step
  is one null bead per sentence).
* ``bible`` — ``bertalign-bible``: English-Chinese (5,000 / 6,301 lines), scored as Bertalign
  scores it (consecutive predicted beads inside one verse merged first) and also plainly.

Scores are Vecalign's (``bimine.eval.alignment``): strict = the exact gold bead, lax = any
shared link; precision over predicted beads with nulls, recall over gold beads without
nulls. "Off gold" counts the predicted beads that overlap no gold bead (the lax misses of
precision: ``skipped``, a null bead where the gold aligns the sentence; ``stray``, a bead whose
sentences the gold links elsewhere) and the gold beads no predicted bead overlaps (``lost``);
``bimine.eval.alignment.stray_beads``. Seconds are in-process wall time of embedding (e5 embeddings are cached in
``.bench/cache`` after the first run, so its seconds are only meaningful on a cold cache) and
of the search. ``--sweep`` also runs a grid of aligner options (length prior, joined vs
summed runs, bead sizes) with the first model on ``bleualign`` and ``dtm``, the two dev sets
used to choose the defaults. Without ``../shared/data`` the script says so and exits 0.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from benchmarks.common import CachedEncoder
from benchmarks.harness import Bench, machine_line, timed
from bimine.documents.align import align_overlaps, embed_overlaps
from bimine.documents.beads import AlignConfig
from bimine.documents.tokens import attach_shared_tokens
from bimine.eval.alignment import merge_by_verse, read_beads, read_ladder, score_alignment, stray_beads
from bimine.text.io import read_lines

DEV = Path(os.environ.get("BIMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "dev"


def _lines(p: Path) -> list[str]:
    """The lines of a file exactly as ``bimine align`` reads them."""
    return list(read_lines(p))


def sets() -> dict[str, dict]:
    """name -> src/tgt lines, languages, gold beads, optional verse ids."""
    out = {}
    b = DEV / "bleualign-dev"
    out["bleualign"] = dict(src=_lines(b / "dev.de"), tgt=_lines(b / "dev.fr"), src_lang="de", tgt_lang="fr",
                            gold=read_beads(b / "dev.defr"))
    h = DEV / "hunalign-handaligns" / "handaligns"
    for name, lang in (("1984.hu", "hu"), ("1984.ro", "ro"), ("steinbeck", "hu"), ("dtm", "hu")):
        out[name] = dict(src=_lines(h / name / "hu.sen"), tgt=_lines(h / name / "en.sen"), src_lang=lang,
                         tgt_lang="en", gold=read_ladder(h / name / "hand.ladder"))
    bb = DEV / "bertalign-bible"
    out["bible"] = dict(src=_lines(bb / "en" / "001"), tgt=_lines(bb / "zh" / "001"), src_lang="en", tgt_lang="zh",
                        gold=read_beads(bb / "gold" / "001.align"), src_verse=_lines(bb / "en.verse"),
                        tgt_verse=_lines(bb / "zh.verse"))
    return out


def run_one(enc, data: dict, config: AlignConfig, cache: dict) -> dict:
    key = (id(enc), id(data), config.max_side, config.overlaps)
    t0 = time.perf_counter()
    if key not in cache:
        cache[key] = (embed_overlaps(data["src"], enc, data["src_lang"], config.max_side, mode=config.overlaps),
                      embed_overlaps(data["tgt"], enc, data["tgt_lang"], config.max_side, mode=config.overlaps))
    src, tgt = cache[key]
    attach_shared_tokens(data["src"], data["tgt"], src, tgt, config)
    t_embed = time.perf_counter() - t0
    a, t_align = timed(lambda: align_overlaps(src, tgt, config))
    pred = [b[:2] for b in a.beads]
    row = {"embed_s": round(t_embed, 2), "align_s": round(t_align["wall_s"], 2), "levels": a.levels,
           "beads": len(pred), **{k: round(v, 4) for k, v in score_alignment(data["gold"], pred).scores().items()},
           "off_gold": stray_beads(data["gold"], pred)}
    if "src_verse" in data:
        merged = merge_by_verse(pred, data["src_verse"], data["tgt_verse"])
        row["verse_merged"] = {k: round(v, 4) for k, v in
                               score_alignment(data["gold"], merged).scores().items()}
        row["verse_merged"]["off_gold"] = stray_beads(data["gold"], merged)
    return row


def fmt(r: dict) -> str:
    off = r["off_gold"]
    return (f"{r['precision_strict']:.3f} / {r['recall_strict']:.3f} / **{r['f1_strict']:.3f}** | "
            f"{r['precision_lax']:.3f} / {r['recall_lax']:.3f} / **{r['f1_lax']:.3f}** | "
            f"{off['skipped']} / {off['stray']} / {off['lost']}")


def main() -> int:
    bench = Bench("align_dev", __doc__)
    bench.arg("--model", action="append", help="default, e5-small or a model folder (repeatable)")
    bench.arg("--sets", default="bleualign,1984.hu,1984.ro,steinbeck,dtm,bible")
    bench.arg("--sweep", action="store_true", help="also a grid of options on bleualign and dtm")
    bench.arg("--overlaps", choices=("joined", "sum"), default="joined",
              help="runs of sentences in the main table: joined text (default) or summed vectors "
                   "(one encoding per sentence: for e5-small, ~4x less encoding)")
    bench.arg("--method", action="append", choices=("vecalign", "two-pass"),
              help="the search (repeatable; default: both, vecalign first)")
    bench.arg("--option", action="append", default=[], metavar="KEY=VALUE",
              help="an AlignConfig option for the two-pass rows (repeatable; Python literals: margin=False)")
    a = bench.parse()
    if not DEV.is_dir():
        print(f"no dev data at {DEV}: nothing to measure")
        return 0
    models = a.model or ["default"]
    all_sets = sets()
    names = a.sets.split(",")
    unknown = [n for n in names if n not in all_sets]
    if unknown:
        bench.parser.error(f"unknown sets {unknown}; known: {', '.join(all_sets)}")
    bench.extra.update(default_config=AlignConfig().__dict__, sweep=[])
    print(f"# {bench.command}  ({bench.result()['date']}, {machine_line(bench.machine)})")
    print("| model | set | lines (src / tgt) | strict P / R / F1 | lax P / R / F1 | off gold: skipped / stray / "
          "lost | embed s | align s |")
    print("|---|---|---|---|---|---|---|---|")
    import ast

    two_pass = {}
    for kv in a.option:
        k, _, v = kv.partition("=")
        try:
            two_pass[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            two_pass[k] = v
    methods = a.method or ["vecalign", "two-pass"]
    encoders = {m: CachedEncoder(m) for m in models}
    cache: dict = {}
    for m, enc in encoders.items():
        for method in methods:
            opts = dict(overlaps=a.overlaps, method=method, **(two_pass if method == "two-pass" else {}))
            label = f"{m}, {method}" + (" (summed runs)" if a.overlaps == "sum" else "")
            for n in names:
                d = all_sets[n]
                r = run_one(enc, d, AlignConfig(**opts), cache)
                bench.rows.append({"model": m, "set": n, "options": opts, **r})
                print(f"| {label} | {n} | {len(d['src'])} / {len(d['tgt'])} | {fmt(r)} | {r['embed_s']} | {r['align_s']} |")
                if "verse_merged" in r:
                    print(f"| {label} | {n} (verse-merged) | | {fmt(r['verse_merged'])} | | |")
                sys.stdout.flush()
    if a.sweep:
        enc = encoders[models[0]]
        grid = [dict()] + [dict(length_weight=w) for w in (0.0, 0.2, 0.4, 0.8, 1.0)] + [
            dict(overlaps="sum"), dict(max_total=5), dict(max_side=2, max_total=4), dict(skip_quantile=0.1),
            dict(skip_quantile=0.3), dict(band=4)]
        print("\n| options | " + " | ".join(f"{s} strict F1 / lax F1" for s in ("bleualign", "dtm")) + " |")
        print("|---|---|---|")
        for opts in grid:
            cells = []
            for n in ("bleualign", "dtm"):
                r = run_one(enc, all_sets[n], AlignConfig(**opts), cache)
                bench.extra["sweep"].append({"model": models[0], "set": n, "options": opts, **r})
                cells.append(f"{r['f1_strict']:.3f} / {r['f1_lax']:.3f}")
            print(f"| {opts or 'defaults'} | " + " | ".join(cells) + " |")
            sys.stdout.flush()
    bench.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
