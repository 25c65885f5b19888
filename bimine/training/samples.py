"""The fixed hashed sample of a text's lines that ``bimine adapt`` and ``--adapt`` take (issue 73)."""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable


def line_hash(text: str) -> bytes:
    """SHA-1 of a line: what orders the sample and keys the adapted model."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


def sample_lines(texts: Iterable[str], n: int) -> tuple[list[str], dict]:
    """:func:`bimine.training.adapt.take_sample` of any iterable of lines (a file's, a TSV column's, a collection's
    sentences): the ``n`` distinct non-empty ones (stripped) with the smallest SHA-1, and counts."""
    heap: list[tuple[bytes, bytes, str]] = []  # max-heap by hash (bytes cannot be negated: inverted)
    kept: set[bytes] = set()
    lines = empty = 0
    for line in texts:
        lines += 1
        t = line.strip()
        if not t:
            empty += 1
            continue
        h = line_hash(t)
        if h in kept:
            continue
        inv = bytes(255 - b for b in h)
        if len(heap) < n:
            heapq.heappush(heap, (inv, h, t))
            kept.add(h)
        elif inv > heap[0][0]:
            _, old, _ = heapq.heapreplace(heap, (inv, h, t))
            kept.discard(old)
            kept.add(h)
    out = [t for _, _, t in sorted(heap, reverse=True)]
    return out, {"lines": lines, "empty": empty, "distinct_sampled": len(out)}
