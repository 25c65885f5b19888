"""What checking a store costs (issue 72 §5): opening a store checks each shard's header and size
(``EmbeddingStore.check``); ``mine`` and a rerun of ``embed --store`` also verify each shard's
bytes against the SHA-256 its manifest recorded when the shard was written
(``EmbeddingStore.verify``), which reads every shard whole.

Usage: python -m benchmarks.store_verify [--rows 1000000] [--dim 384] [--shard-size 1000000]
                                         [--repeats 3] [--dir .bench/store_verify]

Writes a store of ``--rows`` random float16 rows (the bytes of a real store's shards: a float16
array per shard, written with the store's own ``write_shard``), then times, in this process,
the median of ``--repeats`` runs of: ``EmbeddingStore.open(verify=False)`` (the header check),
``verify()`` with the shards in the page cache (a store just written or just read), and
``verify()`` after the page cache was dropped for the shards (``posix_fadvise(DONTNEED)``: the
disk's speed; a lower bound where the kernel keeps pages it was told to drop). Also times
writing the shards with and without the checksum computed as they are written. Prints a
markdown table; the store is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import time
from pathlib import Path

import numpy as np

from bimine.store.store import FORMAT, EmbeddingStore, write_shard


def _drop_cache(folder: Path) -> None:
    for f in folder.glob("shard-*.npy"):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _median(fn, repeats: int, before=None) -> float:
    out = []
    for _ in range(repeats):
        if before is not None:
            before()
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--shard-size", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", default=".bench/store_verify")
    a = ap.parse_args()
    folder = Path(a.dir)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    shards, t_hashed, t_plain = [], 0.0, 0.0
    for i, start in enumerate(range(0, a.rows, a.shard_size)):
        n = min(a.shard_size, a.rows - start)
        x = rng.standard_normal((n, a.dim), dtype=np.float32).astype(np.float16)
        t = time.perf_counter()
        digest = write_shard(folder / f"shard-{i:05d}.npy", x)
        t_hashed += time.perf_counter() - t
        t = time.perf_counter()
        with open(folder / "plain.npy", "wb") as fh:  # the same bytes without the checksum, for the write cost
            np.save(fh, x)
            fh.flush()
            os.fsync(fh.fileno())
        t_plain += time.perf_counter() - t
        (folder / "plain.npy").unlink()
        shards.append({"file": f"shard-{i:05d}.npy", "rows": n, "sha256": digest})
    np.save(folder / "blank-lines.npy", np.zeros(0, dtype=np.int64))
    manifest = {"format": FORMAT, "model_id": "bench", "dim": a.dim, "lang": "en", "input": "bench",
                "input_sha256": "0" * 64, "column": None, "shard_size": a.shard_size, "rows": a.rows,
                "shards": shards, "input_lines": a.rows, "replaced_lines": 0, "blank_lines": 0}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    size = sum((folder / s["file"]).stat().st_size for s in shards)
    st = EmbeddingStore.open(folder, verify=False)
    header = _median(lambda: EmbeddingStore.open(folder, verify=False), a.repeats)
    st.verify()  # warm the page cache
    cached = _median(st.verify, a.repeats)
    cold = _median(st.verify, a.repeats, before=lambda: _drop_cache(folder))
    shutil.rmtree(folder)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"{a.rows:,} rows x {a.dim} float16 in {len(shards)} shard(s), {size / 2**20:,.0f} MiB")
    print()
    print("| step (in process) | seconds | MiB/s |")
    print("|---|---:|---:|")
    print(f"| open, header check only | {header:.4f} | |")
    print(f"| verify, shards in the page cache | {cached:.2f} | {size / 2**20 / cached:,.0f} |")
    print(f"| verify, page cache dropped | {cold:.2f} | {size / 2**20 / cold:,.0f} |")
    print(f"| write the shards, checksum computed as written | {t_hashed:.2f} | {size / 2**20 / t_hashed:,.0f} |")
    print(f"| write the same bytes without it | {t_plain:.2f} | {size / 2**20 / t_plain:,.0f} |")


if __name__ == "__main__":
    main()
