"""In-memory ``bimine.mine`` against the ``bimine mine`` command on the same sentences (issue 74).

Usage (from the repository root)::

    python -m benchmarks.api_mine [--lines 20000] [--repeats 3] [--data ../shared/data] [--json .bench/api_mine.json]

Input: the first ``--lines`` English and French lines of train/tatoeba-manythings en-fr, the French
side in a fixed shuffled order (so that the pairs are found, not read off), written as two files.
Measured on the same machine, one after the other, ``--repeats`` times each (interleaved):

1. the command, whole process: ``bimine mine EN FR --src-lang en --tgt-lang fr -o OUT --no-progress``
   (start-up, reading, embedding into stores in a temporary work folder, search, writing);
2. the library, whole process: ``python -c`` that reads the two files into lists and calls
   ``bimine.mine(en, fr, src_lang="en", tgt_lang="fr")`` (start-up and reading included: the
   like-for-like figure), and the call alone inside that process;
3. peak resident memory of each process (its own ``ru_maxrss``).

Both give the same pairs (checked: the same count, the same first pairs and scores to 1e-6).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import sys
import tempfile

from benchmarks.harness import Bench, process

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import bimine
en = open(sys.argv[1], encoding="utf-8").read().splitlines()
fr = open(sys.argv[2], encoding="utf-8").read().splitlines()
t1 = time.perf_counter()
pairs = bimine.mine(en, fr, src_lang="en", tgt_lang="fr")
t2 = time.perf_counter()
print(json.dumps({"call_s": t2 - t1, "import_read_s": t1 - t0, "pairs": len(pairs),
                  "head": [[round(p["score"], 6), p["src"], p["tgt"]] for p in pairs[:5]],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    bench = Bench("api_mine", __doc__)
    bench.arg("--data", default="../shared/data")
    bench.arg("--lines", type=int, default=20_000)
    bench.arg("--repeats", type=int, default=3)
    a = bench.parse()
    base = os.path.join(a.data, "train", "tatoeba-manythings", "tatoeba.en-fr")
    if not os.path.exists(base + ".en.gz"):
        print(f"no data at {base}.en.gz: nothing to measure")
        return 0
    side = {}
    for lang in ("en", "fr"):
        with gzip.open(f"{base}.{lang}.gz", "rt", encoding="utf-8") as f:
            side[lang] = [next(f).rstrip("\n") for _ in range(a.lines)]
    random.Random(0).shuffle(side["fr"])
    cmd_runs, lib_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for lang, lines in side.items():
            paths[lang] = os.path.join(tmp, f"in.{lang}")
            with open(paths[lang], "w", encoding="utf-8") as f:
                f.writelines(t + "\n" for t in lines)
        out = os.path.join(tmp, "pairs.tsv")
        for _ in range(a.repeats):
            cmd_runs.append(process(["bimine", "mine", paths["en"], paths["fr"], "--src-lang", "en", "--tgt-lang", "fr",
                                     "-o", out, "--no-progress"]))
            r = process([sys.executable, "-c", CHILD, paths["en"], paths["fr"]])
            lib_runs.append({**r, **json.loads(r["stdout"])})
        with open(out, encoding="utf-8") as f:
            cmd_pairs = [line.rstrip("\n").split("\t") for line in f]
    lib = lib_runs[-1]
    same = len(cmd_pairs) == lib["pairs"] and all(
        abs(float(c[0]) - h[0]) < 1e-6 and c[1:3] == h[1:3] for c, h in zip(cmd_pairs, lib["head"]))

    def med(xs):
        return sorted(xs)[(len(xs) - 1) // 2]

    rows = [
        {"run": "bimine mine (command), whole process", "s": med([r["wall_s"] for r in cmd_runs]),
         "runs": [r["wall_s"] for r in cmd_runs], "peak_rss_mb": med([r["peak_rss_mb"] for r in cmd_runs])},
        {"run": "bimine.mine, whole process (python -c: import, read, mine)", "s": med([r["wall_s"] for r in lib_runs]),
         "runs": [r["wall_s"] for r in lib_runs], "peak_rss_mb": med([r["peak_rss_mb"] for r in lib_runs])},
        {"run": "bimine.mine, the call alone (in that process)", "s": med([r["call_s"] for r in lib_runs]),
         "runs": [r["call_s"] for r in lib_runs], "peak_rss_mb": None},
    ]
    bench.rows.extend(rows)
    bench.extra = {"pairs_command": len(cmd_pairs), "pairs_library": lib["pairs"], "same_pairs": same}
    print(f"# {bench.command} ({bench.result()['date']}): {a.lines:,} x {a.lines:,} sentences; pairs: command "
          f"{len(cmd_pairs):,}, library {lib['pairs']:,}, the same: {same}")
    print(f"| run | seconds (median of {a.repeats}) | runs | peak memory MB |")
    print("|---|---:|---|---:|")
    for r in rows:
        mem = f"{r['peak_rss_mb']:.0f}" if r["peak_rss_mb"] else "-"
        print(f"| {r['run']} | {r['s']:.2f} | {', '.join(f'{x:.2f}' for x in r['runs'])} | {mem} |")
    print(f"library / command, whole process: {rows[1]['s'] / rows[0]['s']:.3f}")
    bench.save()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
