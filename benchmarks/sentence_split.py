"""Which sentence splitter for raw documents (issue 11 §2): sentencex against pysbd on dev text.

Usage (from the repository root)::

    python -m benchmarks.sentence_split [--group 5] [--json .bench/sentence_split.json]

Text with known sentence boundaries: UD PUD (``dev/ud-pud``: 1,000 news and Wikipedia
sentences in each of 20 languages, in document order) and the newstest 2013 files of
English, German, Spanish and French (3,000 news sentences each). Every ``--group`` (5)
consecutive gold sentences are joined by one space into a paragraph, as running text; each
splitter splits the paragraphs, and a predicted sentence boundary is right when the gold
has a boundary at the same character offset. Per language: boundary precision, recall and
F1, and the share of gold sentences recovered exactly; over all languages: micro F1 and the
splitting speed (sentences per second, in process, one core). pysbd knows 22 languages and
gets its English rules for the others (as ``bimine`` calls it). Without ``../shared/data``
the script says so and exits 0.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from benchmarks.harness import Bench

DEV = Path(os.environ.get("BIMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "dev"
PUD = ("ar cs de en es fi fr gl hi id is it ko pl pt ru sv th tr zh").split()


def texts() -> dict[str, list[str]]:
    from bimine.text.io import read_lines

    out = {}
    for lang in PUD:
        out[f"pud.{lang}"] = [s.strip() for s in read_lines(DEV / "ud-pud" / f"pud.{lang}") if s.strip()]
    for lang in ("en", "de", "es", "fr"):
        other = "de" if lang == "en" else lang
        f = DEV / "newstest" / f"newstest2013.en-{other}.{lang}"
        out[f"newstest2013.{lang}"] = [s.strip() for s in read_lines(f) if s.strip()]
    return out


def boundaries(sentences: list[str], paragraph: str) -> set[int]:
    """Character offsets in ``paragraph`` where each sentence but the first starts."""
    out, pos = set(), 0
    for i, s in enumerate(sentences):
        at = paragraph.find(s, pos)
        if at < 0:  # a splitter that changed the text: locate by length instead
            at = pos
        if i:
            out.add(at)
        pos = at + len(s)
    return out


def main() -> int:
    bench = Bench("sentence_split", __doc__)
    bench.arg("--group", type=int, default=5)
    a = bench.parse()
    if not (DEV / "ud-pud").is_dir():
        print(f"no dev data at {DEV}: nothing to measure")
        return 0
    from bimine.text.sentences import SPLITTERS, get_splitter

    data = texts()
    bench.extra["totals"] = {}
    versions = {}
    for name in SPLITTERS:
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:  # noqa: BLE001
            versions[name] = "not installed"
    print(f"# {bench.command} ({bench.result()['date']}); " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print("| text | " + " | ".join(f"{n} P / R / F1 / exact" for n in SPLITTERS) + " |")
    print("|---|" + "---|" * len(SPLITTERS))
    totals = {n: {"tp": 0, "fp": 0, "fn": 0, "exact": 0, "gold": 0, "seconds": 0.0, "sentences": 0}
              for n in SPLITTERS}
    for key, sents in data.items():
        lang = key.split(".")[1]
        groups = [sents[i: i + a.group] for i in range(0, len(sents), a.group)]
        cells = []
        for name in SPLITTERS:
            if versions[name] == "not installed":
                cells.append("not installed")
                continue
            split = get_splitter(name)
            tp = fp = fn = exact = 0
            t0 = time.perf_counter()
            preds = [split(" ".join(g), lang) for g in groups]
            dt = time.perf_counter() - t0
            for g, pred in zip(groups, preds):
                para = " ".join(g)
                gb, pb = boundaries(g, para), boundaries(pred, para)
                tp += len(gb & pb)
                fp += len(pb - gb)
                fn += len(gb - pb)
                exact += len(set(g) & set(pred))
            t = totals[name]
            for k, v in (("tp", tp), ("fp", fp), ("fn", fn), ("exact", exact), ("gold", len(sents)),
                         ("seconds", dt), ("sentences", len(sents))):
                t[k] += v
            p = tp / (tp + fp) if tp + fp else 0.0
            r = tp / (tp + fn) if tp + fn else 0.0
            f = 2 * p * r / (p + r) if p + r else 0.0
            bench.rows.append({"text": key, "splitter": name, "precision": p, "recall": r, "f1": f,
                               "exact": exact / len(sents)})
            cells.append(f"{p:.3f} / {r:.3f} / **{f:.3f}** / {exact / len(sents):.3f}")
        print(f"| {key} | " + " | ".join(cells) + " |")
        sys.stdout.flush()
    cells = []
    for name, t in totals.items():
        if not t["gold"]:
            cells.append("-")
            continue
        p = t["tp"] / max(t["tp"] + t["fp"], 1)
        r = t["tp"] / max(t["tp"] + t["fn"], 1)
        f = 2 * p * r / (p + r) if p + r else 0.0
        speed = t["sentences"] / t["seconds"] if t["seconds"] else float("nan")
        bench.extra["totals"][name] = {"precision": p, "recall": r, "f1": f, "exact": t["exact"] / t["gold"],
                                       "sentences_per_s": speed, "version": versions[name]}
        cells.append(f"{p:.3f} / {r:.3f} / **{f:.3f}** / {t['exact'] / t['gold']:.3f} ({speed:,.0f} sentences/s)")
    print("| **all (micro)** | " + " | ".join(cells) + " |")
    bench.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
