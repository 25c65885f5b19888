"""Document collections for ``bimine docs match``: JSONL, TSV or a folder of text files.

A collection is read once, streaming, into a plain text file of its sentences (one per line,
every document's sentences in a row) and an offsets array: document ``d`` is lines
``offsets[d] .. offsets[d+1]-1``. Only the ids and offsets stay in memory; the sentences are
embedded from the file into an embedding store like any corpus.

Inputs:

* **JSONL**: one object per line, ``{"id": ..., "text": "..."}`` (raw text, split into
  sentences) or ``{"id": ..., "sentences": [...]}`` (already split).
* **TSV**: ``doc_id<TAB>sentence`` per line; a document's lines are consecutive.
* **folder**: every regular file directly inside (sorted by name, hidden files skipped) is
  one document, its id the file name; its text is split into sentences.

Every problem names the file and line: malformed JSON, a missing or repeated id, a
document's TSV lines interrupted by another document, a line without a tab. Inside a
sentence, tabs and line breaks become spaces (a sentence is one line of the sentence file);
blank sentences are dropped and counted, and a document left with no sentence is kept with
none (it can match nothing) and counted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bimine.errors import InputError
from bimine.outputs import atomic_path
from bimine.text.io import read_lines

FORMATS = ("auto", "jsonl", "tsv", "folder")


@dataclass
class Collection:
    """The documents of one side: ids in input order, sentence offsets, the sentence file."""

    ids: list[str]
    offsets: np.ndarray
    sentences_path: str
    source: str
    stats: dict = field(default_factory=dict)
    byte_offsets: np.ndarray | None = None  #: where each document's first sentence starts in the file

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    @property
    def n_sentences(self) -> int:
        return int(self.offsets[-1])

    def doc_of_sentence(self) -> np.ndarray:
        """Document number of every sentence (int32)."""
        return np.repeat(np.arange(self.n_docs, dtype=np.int32), np.diff(self.offsets))

    def position_of_sentence(self) -> np.ndarray:
        """0-based position of every sentence inside its document (int32)."""
        starts = np.repeat(self.offsets[:-1], np.diff(self.offsets))
        return (np.arange(self.n_sentences) - starts).astype(np.int32)

    def index_of(self) -> dict[str, int]:
        """Document number of each id."""
        return {d: i for i, d in enumerate(self.ids)}

    def sentences(self, d: int) -> list[str]:
        """The sentences of document ``d``, read from the sentence file (one seek)."""
        n = int(self.offsets[d + 1] - self.offsets[d])
        if n == 0:
            return []
        with open(self.sentences_path, "rb") as f:
            f.seek(int(self.byte_offsets[d]))
            return [f.readline().decode("utf-8").rstrip("\n") for _ in range(n)]


def detect_format(path: str) -> str:
    p = Path(path)
    if p.is_dir():
        return "folder"
    name = p.name.lower()
    for suffix in (".gz", ".xz", ".bz2", ".zst"):
        name = name.removesuffix(suffix)
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith((".tsv", ".txt")):
        return "tsv"

    for line in read_lines(path):
        if line.strip():
            return "jsonl" if line.lstrip().startswith("{") else "tsv"
    return "tsv"


def _clean(s: str) -> str:
    return " ".join(s.split())


def _jsonl_docs(path: str, split: Callable[[str], list[str]]) -> Iterator[tuple[str, list[str], int]]:
    for no, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{no}: not valid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{no}: expected a JSON object with 'id' and 'text' or 'sentences'")
        if "id" not in obj or not isinstance(obj["id"], (str, int)) or isinstance(obj["id"], bool):
            raise InputError(f"{path}:{no}: needs an 'id' (a string or a number)")
        has_text, has_sents = "text" in obj, "sentences" in obj
        if has_text == has_sents:
            raise InputError(f"{path}:{no}: give either 'text' or 'sentences', not {'both' if has_text else 'neither'}")
        if has_text:
            if not isinstance(obj["text"], str):
                raise InputError(f"{path}:{no}: 'text' must be a string")
            sents = split(obj["text"])
        else:
            sents = obj["sentences"]
            if not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
                raise InputError(f"{path}:{no}: 'sentences' must be a list of strings")
        yield str(obj["id"]), sents, no


def _tsv_docs(path: str) -> Iterator[tuple[str, list[str], int]]:
    cur: str | None = None
    sents: list[str] = []
    first = 0
    for no, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        doc, tab, sent = line.partition("\t")
        if not tab:
            raise InputError(f"{path}:{no}: expected 'doc_id<TAB>sentence', found no tab")
        if not doc.strip():
            raise InputError(f"{path}:{no}: empty document id")
        if doc != cur:
            if cur is not None:
                yield cur, sents, first
            cur, sents, first = doc, [], no
        sents.append(sent)
    if cur is not None:
        yield cur, sents, first


def _folder_docs(path: str, split: Callable[[str], list[str]], errors: str) -> Iterator[tuple[str, list[str], int]]:
    files = sorted(f for f in os.listdir(path) if not f.startswith(".") and os.path.isfile(os.path.join(path, f)))
    if not files:
        raise InputError(f"{path}: the folder holds no files")
    for f in files:
        text = "\n".join(read_lines(os.path.join(path, f), errors=errors))
        yield f, split(text), 0


def read_collection(path: str, out_path: str, *, fmt: str = "auto", split: Callable[[str], list[str]] | None = None,
                    errors: str = "strict") -> Collection:
    """Read the collection at ``path`` and write its sentences to ``out_path`` (see the
    module docstring); ``split`` turns raw text into sentences (needed for ``text`` entries
    and folders)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown collection format {fmt!r}; formats: {', '.join(FORMATS)}")
    if path != "-" and not os.path.exists(path):  # - is stdin
        raise InputError(f"{path}: no such file or folder")
    if fmt == "auto":
        fmt = detect_format(path)

    def no_split(text: str) -> list[str]:
        raise InputError(f"{path}: holds raw text, which needs a sentence splitter")

    split = split or no_split
    if fmt == "jsonl":
        docs = _jsonl_docs(path, split)
    elif fmt == "tsv":
        docs = _tsv_docs(path)
    else:
        if not os.path.isdir(path):
            raise InputError(f"{path}: --format folder needs a folder")
        docs = _folder_docs(path, split, errors)
    ids: list[str] = []
    seen: dict[str, int] = {}
    offsets = [0]
    byte_offsets = [0]
    blank = empty_docs = 0
    with atomic_path(out_path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as out:
            for doc_id, sents, no in docs:
                if doc_id in seen:
                    where = f"{path}:{no}" if no else f"{path}/{doc_id}"
                    hint = " (a document's TSV lines must be consecutive)" if fmt == "tsv" else ""
                    raise InputError(f"{where}: document id {doc_id!r} appears again{hint}")
                seen[doc_id] = len(ids)
                ids.append(doc_id)
                kept = size = 0
                for s in sents:
                    c = _clean(s)
                    if not c:
                        blank += 1
                        continue
                    out.write(c + "\n")
                    size += len(c.encode("utf-8")) + 1
                    kept += 1
                empty_docs += kept == 0
                offsets.append(offsets[-1] + kept)
                byte_offsets.append(byte_offsets[-1] + size)
    if not ids:
        raise InputError(f"{path}: holds no documents")
    return Collection(ids=ids, offsets=np.array(offsets, dtype=np.int64), sentences_path=out_path, source=path,
                      stats={"format": fmt, "blank_sentences": blank, "empty_documents": empty_docs},
                      byte_offsets=np.array(byte_offsets, dtype=np.int64))
