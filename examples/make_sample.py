"""How examples/sample.{en,fr} were made (needs the project's shared data; users need not run it).

Source: NTREX-128 (Microsoft; CC BY-SA 4.0), English source newstest2019-src.eng and French
reference newstest2019-ref.fra. Lines 1-300 of both are translations of each other; each side
also gets 60 lines that have no translation on the other side (English lines 301-360,
French lines 361-420). Each side is then shuffled with its own fixed seed, so line numbers
give the pairs away no more than the texts do. Run from the repository root:

    python examples/make_sample.py ../shared/data
"""

from __future__ import annotations

import gzip
import os
import random
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
base = os.path.join(root, "dev/ntrex128/NTREX-128")


def read(name: str) -> list[str]:
    with gzip.open(os.path.join(base, name), "rt", encoding="utf-8") as f:
        return f.read().split("\n")


en = read("newstest2019-src.eng.txt.gz")
fr = read("newstest2019-ref.fra.txt.gz")
sample_en = en[0:300] + en[300:360]
sample_fr = fr[0:300] + fr[360:420]
random.Random(1).shuffle(sample_en)
random.Random(2).shuffle(sample_fr)
here = os.path.dirname(os.path.abspath(__file__))
for name, lines in (("sample.en", sample_en), ("sample.fr", sample_fr)):
    with open(os.path.join(here, name), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")

# BUCC-style files for `bimine eval bucc` (format of the BUCC 2017/2018 shared task:
# "<id><TAB><sentence>" per side, gold "<src_id><TAB><tgt_id>"). Each split hides 150
# translation pairs among 75 + 75 sentences that have no translation on the other side,
# from NTREX lines the sample above does not use: train 421-720, test 721-1020.
for split, a in (("train", 420), ("test", 720)):
    gold = list(range(a, a + 150))
    src_rows = gold + list(range(a + 150, a + 225))  # English: gold and its own distractors
    tgt_rows = gold + list(range(a + 225, a + 300))  # French: gold and other distractors
    rng = random.Random(f"bucc-{split}")
    rng.shuffle(src_rows)
    rng.shuffle(tgt_rows)
    src_id = {r: f"en-{split}-{n:06d}" for n, r in enumerate(src_rows)}
    tgt_id = {r: f"fr-{split}-{n:06d}" for n, r in enumerate(tgt_rows)}
    files = {f"en-fr.{split}.en": [f"{src_id[r]}\t{en[r]}" for r in src_rows],
             f"en-fr.{split}.fr": [f"{tgt_id[r]}\t{fr[r]}" for r in tgt_rows],
             f"en-fr.{split}.gold": [f"{src_id[r]}\t{tgt_id[r]}" for r in sorted(gold, key=lambda r: src_id[r])]}
    os.makedirs(os.path.join(here, "bucc"), exist_ok=True)
    for name, lines in files.items():
        with open(os.path.join(here, "bucc", name), "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(lines) + "\n")

# A small parallel corpus for the README's training example (`configs/example.yaml`):
# NTREX lines 1021-1997 (those the sample and the BUCC files leave), as a 2-column TSV,
# and for its dev set the 300 gold pairs of the BUCC files (lines 421-570 and 721-870).
for name, rows in (("train.en-fr.tsv", range(1020, 1997)), ("dev.en-fr.tsv", [*range(420, 570), *range(720, 870)])):
    with open(os.path.join(here, name), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(f"{en[r]}\t{fr[r]}\n" for r in rows if en[r].strip() and fr[r].strip()))

# Documents for `bimine align` and `bimine docs match` (NTREX keeps the sentences of each news
# story together and in order). doc.en / doc.fr: lines 1-40, the French side without its
# line 21 (so the alignment has a deletion). docs.en.jsonl / docs.fr.jsonl: lines 41-112 cut
# into 6 documents of 12 sentences, the French documents under other ids and in reverse order.
import json  # noqa: E402

doc_fr = fr[0:20] + fr[21:40]
for name, lines in (("doc.en", en[0:40]), ("doc.fr", doc_fr)):
    with open(os.path.join(here, name), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
docs_en = [{"id": f"en-{d + 1}", "sentences": en[40 + 12 * d: 52 + 12 * d]} for d in range(6)]
docs_fr = [{"id": f"fr-{chr(ord('a') + d)}", "sentences": fr[40 + 12 * d: 52 + 12 * d]} for d in reversed(range(6))]
for name, docs in (("docs.en.jsonl", docs_en), ("docs.fr.jsonl", docs_fr)):
    with open(os.path.join(here, name), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
