"""The README's tour, run by two source trees, outputs compared byte for byte.

    python -m benchmarks.readme_tour --before DIR [--after .] [--out .bench/readme_tour]

Runs the tour's commands (embed, mine with its options and a store, filter with a report and
a trained classifier, align, docs match, divergence, select, confidence, rescoring) once with
each tree (``PYTHONPATH=TREE python -m bimine ...``, working folder ``OUT/<side>`` holding a
link to the tree's ``examples/``), then lists every output file with its SHA-256 on both sides
and whether they are equal (the time in the HTML report and the training seconds in a
classifier's metadata left out). A refactor that must not change behaviour shows ``same`` on every
row. ``DIR`` is a checkout of the code before the change, e.g.
``git worktree add /tmp/before <rev>``. Writes ``OUT/compare.json`` and prints a Markdown table.

Left out: ``train`` (threads make its floats differ run to run) and the Ray executor (needs a
cluster start; its store is compared with the local one by tests/test_ray_executor.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

# (name, arguments after "bimine"); outputs are written in the working folder
TOUR: list[tuple[str, list[str]]] = [
    ("embed", ["embed", "examples/sample.fr", "--lang", "fr", "-o", "sample.fr.npy"]),
    ("embed-column", ["embed", "examples/bucc/en-fr.train.fr", "--column", "2", "--lang", "fra_Latn", "-o", "col2.npy"]),
    ("mine", ["mine", "examples/sample.en", "examples/sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
              "-o", "pairs.tsv", "--threshold", "1.85"]),
    ("mine-ratio", ["mine", "examples/sample.en", "examples/sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
                    "-o", "p-ratio.tsv", "--score", "ratio", "--strategy", "intersection", "--line-numbers"]),
    ("embed-store-en", ["embed", "examples/sample.en", "--lang", "en", "--store", "-o", "sample.en.store"]),
    ("embed-store-fr", ["embed", "examples/sample.fr", "--lang", "fr", "--store", "-o", "sample.fr.store"]),
    ("mine-store", ["mine", "examples/sample.en", "examples/sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
                    "--src-store", "sample.en.store", "--tgt-store", "sample.fr.store",
                    "--index", "IVF16,PQ128x4fs,Refine(SQfp16)", "--nprobe", "4", "--threshold", "1.85",
                    "--dedupe", "--drop-copies", "--min-chars", "10", "--format", "jsonl", "-o", "pairs.jsonl"]),
    ("mine-confidence", ["mine", "examples/sample.en", "examples/sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
                         "-o", "pairs-conf.tsv", "--confidence"]),
    ("mine-trees", ["mine", "examples/sample.en", "examples/sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
                    "-o", "pairs-trees.tsv", "--rescore", "trees"]),
    ("mine-rescore", ["mine", "examples/sample.en", "examples/sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
                      "-o", "pairs-rescore.tsv", "--rescore", "default"]),
    ("filter", ["filter", "--src", "examples/sample.en", "--tgt", "examples/sample.fr", "--src-lang", "en",
                "--tgt-lang", "fr", "-o", "scored.tsv", "--kept", "kept.tsv", "--report", "report.html"]),
    ("filter-dev", ["filter", "examples/dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-o", "dev-scored.tsv"]),
    ("score", ["score", "examples/dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-o", "dev-score.tsv"]),
    ("train-classifier", ["train-classifier", "confidence", "examples/train.en-fr.tsv", "--src-lang", "en",
                          "--tgt-lang", "fr", "-o", "conf.safetensors", "--dev-size", "200"]),
    ("filter-classifier", ["filter", "--src", "examples/sample.en", "--tgt", "examples/sample.fr", "--src-lang", "en",
                           "--tgt-lang", "fr", "-o", "scored-conf.tsv", "--classifier", "conf.safetensors"]),
    ("align", ["align", "examples/doc.en", "examples/doc.fr", "--src-lang", "en", "--tgt-lang", "fr",
               "-o", "doc.align", "--tsv", "doc.tsv"]),
    ("align-vecalign", ["align", "examples/doc.en", "examples/doc.fr", "--src-lang", "en", "--tgt-lang", "fr",
                        "--method", "vecalign", "-o", "doc-vecalign.align"]),
    ("docs-match", ["docs", "match", "examples/docs.en.jsonl", "examples/docs.fr.jsonl", "--src-lang", "en",
                    "--tgt-lang", "fr", "-o", "doc-pairs.tsv"]),
    ("divergence", ["divergence", "examples/dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-o", "div.tsv"]),
    ("select", ["select", "examples/dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "--keep", "0.5",
                "-o", "selected.tsv", "--kept", "selected-kept.tsv"]),
]


def sha256(path: str) -> str:
    """SHA-256 of the file, but for what differs between two runs of the same code: the time in
    an HTML report's footer, and ``train_seconds`` in a safetensors file's metadata."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".html"):
        data = re.sub(rb"\d{4}-\d\d-\d\d \d\d:\d\d", b"DATE", data)
    elif path.endswith(".safetensors"):
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + n])
        for k, v in (header.get("__metadata__") or {}).items():
            if v.startswith("{"):
                meta = json.loads(v)
                meta.pop("train_seconds", None)
                header["__metadata__"][k] = json.dumps(meta, sort_keys=True)
        data = json.dumps(header, sort_keys=True).encode() + data[8 + n:]
    return hashlib.sha256(data).hexdigest()


def outputs(folder: str) -> dict[str, str]:
    """Every file under ``folder`` (the examples link left out) with its SHA-256."""
    found = {}
    for dp, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "examples")
        for f in sorted(files):
            p = os.path.join(dp, f)
            if f in ("examples", "log.txt") or os.path.islink(p):
                continue
            found[os.path.relpath(p, folder)] = sha256(p)
    return found


def run_tour(tree: str, folder: str, only: set[str] | None) -> dict:
    tree = os.path.abspath(tree)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    os.symlink(os.path.join(tree, "examples"), os.path.join(folder, "examples"))
    env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0")
    codes = {}
    with open(os.path.join(folder, "log.txt"), "w") as log:
        for name, args in TOUR:
            if only and name not in only:
                continue
            t0 = time.time()
            rc = subprocess.run([sys.executable, "-m", "bimine", *args], cwd=folder, env=env,
                                stdout=log, stderr=subprocess.STDOUT).returncode
            codes[name] = rc
            print(f"[readme_tour] {os.path.basename(folder)}: {name}: exit {rc} ({time.time() - t0:.1f} s)",
                  file=sys.stderr)
    return {"tree": tree, "exit": codes, "files": outputs(folder)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="source tree of the code before the change")
    ap.add_argument("--after", default=".", help="source tree after (default: this one)")
    ap.add_argument("--out", default=".bench/readme_tour")
    ap.add_argument("--only", default=None, help="comma-separated tour steps (a quick check)")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    sides = {side: run_tour(tree, os.path.join(args.out, side), only)
             for side, tree in (("before", args.before), ("after", args.after))}
    b, a = sides["before"]["files"], sides["after"]["files"]
    rows = []
    for f in sorted(set(b) | set(a)):
        rows.append({"file": f, "before": b.get(f), "after": a.get(f), "same": b.get(f) == a.get(f)})
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "sides": sides, "rows": rows,
           "all_same": all(r["same"] for r in rows) and sides["before"]["exit"] == sides["after"]["exit"]}
    with open(os.path.join(args.out, "compare.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("| output | before sha256 | after sha256 | |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['file']} | {(r['before'] or '-')[:12]} | {(r['after'] or '-')[:12]} | "
              f"{'same' if r['same'] else '**differs**'} |")
    bad = [k for k, v in sides["after"]["exit"].items() if v != sides["before"]["exit"].get(k)]
    print(f"\nexit codes: before {sides['before']['exit']}\n            after  {sides['after']['exit']}")
    print(f"{sum(r['same'] for r in rows)} of {len(rows)} outputs identical" + (f"; exit codes differ: {bad}" if bad else ""))
    sys.exit(0 if res["all_same"] else 1)


if __name__ == "__main__":
    main()
