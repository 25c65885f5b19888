"""Large-pool retrieval against English: each sentence as mining meets it (issue 73).

Usage:
    python -m benchmarks.pool_retrieval --model default --model e5-small [--langs khm,pbt]
        [--adapt default] [--json .bench/pool_retrieval.json]

xsim over 1,997 NTREX sentences hides weak languages: a sentence only has to beat 1,996 others.
Here each NTREX sentence of the **test half** (lines 1,001-1,997) looks for its English among a
pool of at least 25,000 English sentences: every distinct English line of ``dev/newstest`` (news,
2009-2013: 14,002), ``dev/ud-pud/pud.en`` (news and Wikipedia: 1,000) and NTREX's English (1,997,
its own translations among them), then Tatoeba-test English lines of 8 words or more, in a fixed
hashed order, until the pool holds 25,000 (short everyday sentences: easier distractors than news;
dev holds no more English news). A query is right at rank r when the English line of its NTREX
line (same text) is among its r best candidates.

Two rankings: raw cosine, and the ratio margin as mining uses it (k = 4 neighbours on each side:
cos(x, y) / ((mean of x's 4 best in the pool + mean of y's 4 best among the queries) / 2)). R@1
and R@16 of each, in %.

``--adapt BASE``: also measure BASE adapted to each language by :func:`bimine.training.adapt.adapt_model`
on that language's NTREX lines 1-1,000 (its side only, shuffled, no pairs: the protocol of issue
73) and tested on lines 1,001-1,997: the sentences it learnt from are never searched. Models are
cached per model id (``.bench/cache``, as ``benchmarks.xsim``); results per model id and texts in
the ``--json`` file, which a rerun reads back (``--fresh`` measures again); an adapted run's row
keeps the id of the model it was adapted from and the adaptation's version (the one ``--adapt``'s
folders are named by), and a rerun keeps the row of a language adapted from that same model by that
same version without adapting it again (``--fresh`` measures it again).

``--as-mined BASE``: BASE adapted as ``mine --adapt`` adapts it (:func:`bimine.training.side_adapt.adapt_sides`),
the language's NTREX lines 1-1,000 against the English pool less the test half's English: the
pivot is the fast model's nearest lines of that English (which holds the adaptation lines' own
translations, as a mined corpus holds some), and the served side's step adapts English on them. No
test sentence and no test sentence's English is adapted on; it is not the protocol's "its side
only", which leaves the English side as the base model embeds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time

import numpy as np

from benchmarks.common import CachedEncoder
from benchmarks.harness import Bench
from benchmarks.xsim import NTREX, ntrex_sets
from bimine.encoders import load_encoder
from bimine.text.io import read_lines
from bimine.training.side_adapt import FOLDER_VERSION

POOL_SIZE = 25_000
SPLIT = 1000  # NTREX lines 1..SPLIT adapt, SPLIT+1..1,997 are searched
RANKS = (1, 16)
K = 4


def english_pool(data: str, size: int = POOL_SIZE) -> list[str]:
    """The English pool (see the module docstring): distinct lines, in a fixed order."""
    seen: dict[str, None] = {}

    def add(lines) -> None:
        for line in lines:
            t = line.strip()
            if t:
                seen.setdefault(t, None)

    news = os.path.join(data, "dev/newstest")
    for f in sorted(os.listdir(news)):
        if f.endswith(".en"):
            add(read_lines(os.path.join(news, f)))
    add(read_lines(os.path.join(data, "dev/ud-pud/pud.en")))
    add(read_lines(os.path.join(data, NTREX, "newstest2019-src.eng.txt.gz")))
    extra: dict[str, None] = {}
    tatoeba = os.path.join(data, "dev/tatoeba-test")
    for f in sorted(os.listdir(tatoeba)):
        if f.endswith(".en"):
            for line in read_lines(os.path.join(tatoeba, f)):
                t = line.strip()
                if len(t.split()) >= 8 and t not in seen:
                    extra.setdefault(t, None)
    ranked = sorted(extra, key=lambda t: hashlib.sha256(t.encode("utf-8")).digest())
    for t in ranked[: max(0, size - len(seen))]:
        seen[t] = None
    if len(seen) < size:
        raise SystemExit(f"only {len(seen)} English lines in {data}/dev for a pool of {size}")
    return list(seen)


def ntrex_halves(en_file: str, xx_file: str) -> tuple[list[str], list[str], list[str]]:
    """(adaptation lines 1..SPLIT of the language, test lines after, their English), empty pairs
    left out of the test half."""
    en = list(read_lines(en_file))
    xx = list(read_lines(xx_file))
    if len(en) != len(xx):
        raise SystemExit(f"{xx_file}: {len(xx)} lines, {en_file} has {len(en)}")
    adapt = [t for t in xx[:SPLIT] if t.strip()]
    keep = [j for j in range(SPLIT, len(en)) if en[j].strip() and xx[j].strip()]
    return adapt, [xx[j] for j in keep], [en[j].strip() for j in keep]


def recalls(q: np.ndarray, pool: np.ndarray, gold: np.ndarray, k: int = K) -> dict[str, float]:
    """R@1 and R@16 (in %) of the queries ``q`` (unit rows) over ``pool`` (unit rows), by raw
    cosine and by the ratio margin; ``gold[i]``: the pool row of query i's English."""
    s = q @ pool.T  # (queries, pool)
    out = {}
    kq = min(k, s.shape[1])
    kp = min(k, s.shape[0])
    mx = -np.partition(-s, kq - 1, axis=1)[:, :kq].mean(axis=1)
    my = -np.partition(-s, kp - 1, axis=0)[:kp, :].mean(axis=0)
    margin = s / ((mx[:, None] + my[None, :]) / 2)
    for name, m in (("cos", s), ("margin", margin)):
        right = m[np.arange(len(gold)), gold]
        rank = (m > right[:, None]).sum(axis=1)  # candidates strictly better than the right one
        for r in RANKS:
            out[f"{name}_r{r}"] = round(100.0 * float((rank < r).mean()), 2)
    return out


def english_half(en_file: str) -> list[str]:
    """NTREX's English lines 1..SPLIT (the other side of the adaptation lines; never the test half's)."""
    return [t for t in list(read_lines(en_file))[:SPLIT] if t.strip()]


def measure(enc, pool_vecs: np.ndarray, pool_index: dict[str, int], test: list[str], gold_en: list[str],
            lang: str) -> dict:
    gold = np.array([pool_index[t] for t in gold_en])
    q = enc.encode(test, lang)
    return {"n": len(test), **recalls(q, pool_vecs, gold)}


def _write(path: str, lines: list[str]) -> str:
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.writelines(t.strip() + "\n" for t in lines)
    os.replace(path + ".tmp", path)
    return path


def _run_name(base: str, lang: str) -> str:
    """The folder an adapted run of ``base`` keeps for ``lang``: the base's name (a folder's last part), the language."""
    return f"{os.path.basename(base.rstrip('/')) or base}-{lang}"


def adapted_encoder(base: str, lang: str, adapt_lines: list[str], out_root: str, pivot: list[str] | None = None):
    """``base`` adapted to ``lang`` on ``adapt_lines`` (NTREX 1-1,000), kept under ``out_root``;
    with ``pivot`` (the English of NTREX 1-1,000) as the other side."""
    from bimine.training.adapt import AdaptJob, adapt_model

    folder = os.path.join(out_root, _run_name(base, lang))
    os.makedirs(out_root, exist_ok=True)
    src = _write(os.path.join(out_root, f"ntrex-{lang}.txt"), adapt_lines)
    piv = _write(os.path.join(out_root, f"ntrex-{lang}.pivot.en.txt"), pivot) if pivot else None
    t0 = time.time()
    report = adapt_model(AdaptJob(text=src, lang=lang, output=folder, model=base, sample=len(adapt_lines),
                                  pivot=piv))
    return folder, time.time() - t0, report


def served_side(pool: list[str], gold_en: list[str]) -> list[str]:
    """The English side ``--as-mined`` adapts on: the pool, in its order, less the test half's English."""
    test_en = set(gold_en)
    return [t for t in pool if t not in test_en]


def as_mined_encoder(base: str, lang: str, adapt_lines: list[str], served: list[str], out_root: str):
    """``base`` adapted as ``mine --adapt`` adapts it (:func:`bimine.training.side_adapt.adapt_sides`):
    the weak side NTREX 1-1,000 of ``lang``, the other side ``served`` (the English pool less the
    test half's English), so both the pivot and the served side's step of ``--adapt`` run on text
    that holds no test sentence and no test sentence's English."""
    from bimine.training.side_adapt import Side, adapt_sides

    work = os.path.join(out_root, _run_name(base, lang))
    os.makedirs(work, exist_ok=True)
    src = _write(os.path.join(work, f"ntrex-{lang}.txt"), adapt_lines)
    tgt = _write(os.path.join(work, "pool-less-test.en.txt"), served)
    t0 = time.time()
    done = adapt_sides(base, [Side(src, lang, "--src-lang", lambda: read_lines(src)),
                              Side(tgt, "en", "--tgt-lang", lambda: read_lines(tgt))], work_dir=work, progress=False)
    print(f"  {done.summary}", file=sys.stderr, flush=True)
    return done.model, time.time() - t0, done


def adapted_earlier(row: dict | None, base_id: str, pool: int) -> bool:
    """Whether ``row`` (an adapted run's, from the ``--json`` file) was adapted from the model
    ``base_id`` by this version of the adaptation and measured on a pool of this size."""
    return bool(row) and row.get("base_id") == base_id and row.get("adapt_version") == FOLDER_VERSION \
        and row.get("pool") == pool


def _adapted(m: str, lang: str, en_file: str, adapt: list[str], pool: list[str], gold_en: list[str], args):
    """The encoder of run ``m`` (``adapted:BASE``, ``adapted+pivot:BASE`` or ``as-mined:BASE``) for
    ``lang``, and the seconds its adaptation took (seconds when its folder is reused)."""
    base = m.split(":", 1)[1]
    if m.startswith("as-mined:"):
        folder, secs, _ = as_mined_encoder(base, lang, adapt, served_side(pool, gold_en),
                                           os.path.join(args.adapted_root, "as-mined"))
    else:
        pivot = english_half(en_file) if args.pivot else None
        folder, secs, _ = adapted_encoder(base, lang, adapt, args.adapted_root, pivot)
    return CachedEncoder(folder), secs


def main() -> None:
    b = Bench("pool_retrieval", __doc__)
    b.arg("--model", action="append", default=None, help="default, e5-small or a model folder (repeat)")
    b.arg("--adapt", default=None, help="also measure this model adapted to each language (NTREX 1-1,000)")
    b.arg("--adapted-root", default=".bench/adapted", help="where the adapted models are written")
    b.arg("--pivot", action="store_true", help="with --adapt: NTREX's English lines 1-1,000 as the pivot (the other "
          "side, as 'mine --adapt' has it; not the protocol's 'its side only')")
    b.arg("--as-mined", default=None, metavar="BASE", help="also measure BASE adapted to each language as 'mine "
          "--adapt' adapts it: NTREX 1-1,000 against the English pool less the test half's English (the pivot "
          "chosen there, then the served side's step); not the protocol's 'its side only'")
    b.arg("--data", default="../shared/data")
    b.arg("--langs", default=None, help="comma-separated NTREX codes (khm,pbt,...); default: all")
    b.arg("--pool", type=int, default=POOL_SIZE)
    b.arg("--fresh", action="store_true", help="measure again what the --json file holds")
    args = b.parse()
    if not os.path.isdir(os.path.join(args.data, NTREX)):
        raise SystemExit(f"{args.data}: no {NTREX} (pass --data)")
    sets = ntrex_sets(args.data)
    if args.langs:
        want = set(args.langs.split(","))
        sets = [s for s in sets if s[0] in want]
    pool = english_pool(args.data, args.pool)
    pool_index = {t: i for i, t in enumerate(pool)}
    done = {}
    if not args.fresh and os.path.exists(args.json):
        with open(args.json, encoding="utf-8") as f:
            done = json.load(f).get("results", {})
    results: dict[str, dict] = dict(done)
    models = list(args.model or ["default", "e5-small"])
    tag = "adapted+pivot" if args.pivot else "adapted"
    extra = ([f"{tag}:{args.adapt}"] if args.adapt else []) + ([f"as-mined:{args.as_mined}"] if args.as_mined else [])
    for m in models + extra:
        fixed = None if m in extra else CachedEncoder(m)
        base_id = None if fixed else load_encoder(m.split(":", 1)[1]).model_id
        pool_vecs = None
        for i, (name, lang, en_file, xx_file) in enumerate(sets):
            adapt, test, gold_en = ntrex_halves(en_file, xx_file)
            row = results.get(m, {}).get(name)
            if fixed is None and adapted_earlier(row, base_id, len(pool)):
                continue  # --fresh adapts again
            secs = None
            if fixed is not None:
                enc = fixed
            else:
                enc, secs = _adapted(m, lang, en_file, adapt, pool, gold_en, args)
            if row and row.get("model_id") == enc.model_id and row.get("pool") == len(pool):
                if base_id:  # the folder just reused was adapted from it, by this adaptation
                    row.update(base_id=base_id, adapt_version=FOLDER_VERSION)
                continue
            if pool_vecs is None or fixed is None:
                pool_vecs = enc.encode(pool, "en")
            t0 = time.time()
            r = measure(enc, pool_vecs, pool_index, test, gold_en, lang)
            r.update(model_id=enc.model_id, lang=lang, pool=len(pool))
            if fixed is None:
                r.update(adapt_s=round(secs, 1), adapt_lines=len(adapt), base_id=base_id, adapt_version=FOLDER_VERSION)
            results.setdefault(m, {})[name] = r
            b.extra["results"] = results
            b.save()
            print(f"  {m} {name}: R@1 {r['cos_r1']:.1f} margin {r['margin_r1']:.1f} ({i + 1}/{len(sets)}, "
                  f"{time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    names = [s[0] for s in sets]
    cols = [m for m in results if all(n in results[m] for n in names)]
    lines = ["| language | " + " | ".join(f"{m} R@1 cos / margin (R@16 cos)" for m in cols) + " |",
             "|---|" + "---:|" * len(cols)]
    for n in names:
        lines.append(f"| {n} | " + " | ".join(
            f"{results[m][n]['cos_r1']:.1f} / {results[m][n]['margin_r1']:.1f} ({results[m][n]['cos_r16']:.1f})"
            for m in cols) + " |")
    if names:
        lines.append("| mean | " + " | ".join(
            f"{np.mean([results[m][n]['cos_r1'] for n in names]):.1f} / "
            f"{np.mean([results[m][n]['margin_r1'] for n in names]):.1f} "
            f"({np.mean([results[m][n]['cos_r16'] for n in names]):.1f})" for m in cols) + " |")
    print(f"pool: {len(pool):,} English sentences; queries: NTREX lines {SPLIT + 1}-1,997")
    print("\n".join(lines))
    b.extra["results"] = results
    b.save()


if __name__ == "__main__":
    main()
