"""The pivot's sample for ``--adapt`` (issue 73): the lines of the other side that the fast model
finds nearest to the weak side's sample.

The teacher learns from the pivot only where it holds the sample's translations
(:mod:`bimine.training.adapt_targets`). A hashed sample of ``n`` lines of the other side holds a
sampled line's translation with the chance ``n / lines of that side``: 20 % for 20,000 of 100,000
English lines, 2 % of a million. So the pivot is chosen by the fast model instead, at its speed:
each sampled line of the weak side is searched among all of the other side's distinct lines (exact
inner product, FAISS), and the pivot takes their ``k`` nearest, rank by rank (every sampled line's
nearest first, then every second nearest, ...) up to ``n`` lines. The fast model serves the weak
language poorly, not blindly: the translation is among its few nearest far more often than a
hashed sample holds it. Where the nearest lines are fewer than ``n`` distinct ones (a few lines
nearest to many), the hashed sample of the rest fills the pivot up to ``n``; where the other side
holds no more than ``n`` distinct lines the pivot is all of them, as before.

The other side is read three times (its count, the search, the chosen lines' texts), never held
whole: one chunk of vectors and the running nearest at a time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from bimine.embed import batched
from bimine.index.faiss_index import merge_topk
from bimine.progress import bar
from bimine.training.samples import line_hash, sample_lines

CHUNK = 50_000  # lines of the other side embedded and searched at a time
MAX_K = 16  # nearest lines taken per sampled line at most
#: in an adaptation's job key: a change to how the pivot's lines are chosen makes a job of its own
VERSION = 1


def _distinct(lines: Iterable[str]) -> Iterator[str]:
    """The non-empty lines, stripped, each text once (first occurrence), in their order."""
    seen: set[bytes] = set()
    for line in lines:
        t = line.strip()
        if not t:
            continue
        h = line_hash(t)[:12]
        if h not in seen:
            seen.add(h)
            yield t


def nearest_lines(enc, queries: np.ndarray, lines: Iterable[str], lang: str, k: int, *, total: int | None = None,
                  progress: bool = False, chunk: int = CHUNK) -> np.ndarray:
    """For each row of ``queries`` (unit vectors), the ids (positions among ``lines``, which are
    embedded by ``enc`` in ``lang``) of its ``k`` nearest by inner product, best first; -1 where
    there are fewer than ``k`` lines. Exact, chunk by chunk."""
    import faiss

    sims = np.full((len(queries), 0), -np.inf, np.float32)
    ids = np.zeros((len(queries), 0), np.int64)
    start = 0
    with bar(total=total, unit=" lines", desc="adapt: pivot search", enabled=progress) as pb:
        for block in batched(lines, chunk):
            v = np.ascontiguousarray(enc.encode(block, lang), dtype=np.float32)
            index = faiss.IndexFlatIP(v.shape[1])
            index.add(v)
            s, i = index.search(np.ascontiguousarray(queries, dtype=np.float32), min(k, len(block)))
            sims, ids = merge_topk([(sims, ids, 0), (s, i, start)], k)
            start += len(block)
            pb.update(len(block))
    return ids


def chosen_by_rank(ids: np.ndarray, n: int) -> list[int]:
    """Up to ``n`` distinct ids of ``ids`` (queries x ranks): every query's first, in query order,
    then every query's second, and so on; -1 skipped."""
    out: list[int] = []
    taken: set[int] = set()
    for r in range(ids.shape[1]):
        for i in ids[:, r].tolist():
            if i >= 0 and i not in taken:
                taken.add(i)
                out.append(i)
                if len(out) == n:
                    return out
    return out


def side_digest(lines: Iterable[str]) -> tuple[str, int]:
    """A digest of a side's distinct non-empty lines (in their order) and their count."""
    h = hashlib.sha256()
    total = 0
    for t in _distinct(lines):
        h.update(line_hash(t))
        total += 1
    return h.hexdigest(), total


def guided_pivot(enc, sample: list[str], lang: str, pivot_lines: Callable[[], Iterable[str]], pivot_lang: str,
                 n: int, *, total: int | None = None, progress: bool = False,
                 chunk: int = CHUNK) -> tuple[list[str], dict]:
    """The pivot for adapting ``enc`` to ``lang`` on ``sample``: up to ``n`` distinct lines of the
    other side (``pivot_lines()`` reads it afresh each time; ``total``: its distinct lines, where
    known), the ones ``enc`` finds nearest to the sample's lines (module docstring), and what was
    done (``lines``: the side's distinct lines, ``k``: nearest taken per sampled line, ``nearest``:
    the lines taken as nearest, the rest being the hashed sample's; ``guided``: False where all of
    them were taken)."""
    if total is None:
        total = sum(1 for _ in _distinct(pivot_lines()))
    if total <= n or not sample:
        return list(_distinct(pivot_lines())), {"lines": total, "k": 0, "guided": False}
    k = min(MAX_K, -(-n // len(sample)) + 1, total)
    queries = enc.encode(sample, lang)
    ids = nearest_lines(enc, queries, _distinct(pivot_lines()), pivot_lang, k, total=total, progress=progress,
                        chunk=chunk)
    keep = chosen_by_rank(ids, n)
    want = set(keep)
    texts: dict[int, str] = {}

    def others() -> Iterator[str]:
        for i, t in enumerate(_distinct(pivot_lines())):
            if i in want:
                texts[i] = t
            else:
                yield t

    rest = others()
    fill = sample_lines(rest, n - len(keep))[0] if len(keep) < n else []
    for _ in rest:  # the chosen lines' texts, where nothing was left to fill
        pass
    return [texts[i] for i in keep] + fill, {"lines": total, "k": k, "guided": True, "nearest": len(keep)}
