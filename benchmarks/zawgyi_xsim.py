"""Is NTREX's Myanmar figure measuring the model or the encoding? xsim error on NTREX-128
Myanmar as shipped (Zawgyi font encoding, issue 56) and converted to Unicode.

Usage:
    python -m benchmarks.zawgyi_xsim [--model default --model e5-small]

The Myanmar reference of NTREX-128 (``newstest2019-ref.mya.txt.gz``) is written in Zawgyi
(Google's detector ``myanmartools``: every sampled line); the models were trained on Unicode
Burmese. Each model embeds the English source, the Myanmar side as it is, and the Myanmar side
converted to Unicode by ``paraencoder`` (``para.zg_to_unicode``; ``pip install paraencoder``,
a benchmark-only package); xsim error as ``benchmarks.xsim`` computes it (ratio margin, k = 4,
mean of the two directions). Also prints how many lines the detector calls Zawgyi before and
after the conversion. Skips (exit 0) where ``../shared/data`` or a package is absent.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from benchmarks.common import CachedEncoder
from benchmarks.xsim import NTREX, read_set, xsim_errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="models to measure (default: default and e5-small)")
    ap.add_argument("--data", default=os.environ.get("BIMINE_SHARED_DATA", "../shared/data"))
    args = ap.parse_args()
    folder = os.path.join(args.data, NTREX)
    mya = os.path.join(folder, "newstest2019-ref.mya.txt.gz")
    if not os.path.exists(mya):
        print(f"skipped: {mya} is not here", file=sys.stderr)
        return
    try:
        from myanmartools import ZawgyiDetector
        from para import zg_to_unicode
    except ImportError as e:
        print(f"skipped: {e.name} is not installed (pip install paraencoder myanmartools)", file=sys.stderr)
        return
    en, raw = read_set(os.path.join(folder, "newstest2019-src.eng.txt.gz"), mya)
    uni = [zg_to_unicode(x) for x in raw]
    detector = ZawgyiDetector()
    zg_raw = sum(detector.get_zawgyi_probability(x) > 0.95 for x in raw)
    zg_uni = sum(detector.get_zawgyi_probability(x) > 0.95 for x in uni)
    print(f"NTREX-128 Myanmar: {len(raw):,} pairs; lines the detector calls Zawgyi (p > 0.95): "
          f"{zg_raw:,} as shipped, {zg_uni:,} after conversion\n")
    print("| model | xsim error, as shipped (Zawgyi) | converted to Unicode | seconds |")
    print("|---|---:|---:|---:|")
    for name in args.model or ["default", "e5-small"]:
        t0 = time.time()
        enc = CachedEncoder(name)
        x_en = enc.encode(en, "en")
        cells = []
        for side in (raw, uni):
            y = enc.encode(side, "my")
            f, b = xsim_errors(y, x_en, side, en)
            cells.append(f"{(f + b) / 2:.1f}")
        print(f"| {name} | {cells[0]} | {cells[1]} | {time.time() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
