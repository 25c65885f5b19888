"""Languages a DAN model was adapted to by ``bimine adapt`` (issue 73): per-language rows on top
of the model's own.

An adapted model is its base model's folder (the same ``model.safetensors``) plus
``adapters.safetensors``: for each adapted language, the table rows its sample used (``ids``,
sorted) and what adaptation added to them (``delta``: int8 rows times one float32 ``scale`` each), and, where adaptation also moved the
feed-forward stack, that language's own layers. A sentence encoded *as that language* pools
``row + delta`` for those rows; every other language, and a sentence whose language is not given,
gets exactly the base model's vector (the same bytes): adapting to Khmer cannot move English.

``config.json`` records the file's SHA-256 (``adapters.sha256``, checked at load: a file swapped
or edited is refused) and, per language, what it was adapted on; its ``model_id`` names the base
model and the adapters together, so that no cache of the base model's vectors is ever read for
the adapted one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bimine.diskcache import file_digest
from bimine.errors import ConfigError
from bimine.weights import check_safetensors, load_safetensors

ADAPTERS_FILE = "adapters.safetensors"


@dataclass
class Adapter:
    """One adapted language: ``ids`` (sorted table rows), ``delta`` (int8, one row per id) times
    ``scale`` (float32, one per row): what is added to the table's row for this language's
    sentences; ``layers`` (this language's
    feed-forward stack as the encoder keeps it, ``(W^T, b)`` pairs; None: the tower's)."""

    lang: str
    ids: np.ndarray
    delta: np.ndarray
    scale: np.ndarray
    layers: list[tuple[np.ndarray, np.ndarray]] | None = None
    _slot: np.ndarray | None = field(default=None, repr=False)

    def slot(self, rows: int) -> np.ndarray:
        """int32 of ``rows``: the delta row of each table row, -1 where it has none (made once)."""
        if self._slot is None:
            s = np.full(rows, -1, dtype=np.int32)
            s[self.ids] = np.arange(len(self.ids), dtype=np.int32)
            self._slot = s
        return self._slot

    def pool(self, table, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The table's pooled rows (``EmbeddingTable.pool``) plus this language's deltas, pooled
        with the same weights (compiled kernels)."""
        from bimine.encoders import _dan_kernels as K  # numba kernels: compiled on first use

        out = table.pool(ids, offsets)
        extra = np.empty_like(out)
        K.pool_overlay(ids, offsets, self.slot(table.shape[0]), self.delta, self.scale, extra)
        out += extra
        return out

    def delta_rows(self, uniq: np.ndarray) -> np.ndarray:
        """The delta of each (distinct) table row of ``uniq``, zeros where it has none (the
        NumPy reference's overlay)."""
        pos = np.searchsorted(self.ids, uniq)
        pos = np.minimum(pos, max(len(self.ids) - 1, 0))
        hit = (self.ids[pos] == uniq) if len(self.ids) else np.zeros(len(uniq), bool)
        out = np.zeros((len(uniq), self.delta.shape[1]), dtype=np.float32)
        k = pos[hit]
        out[hit] = self.delta[k].astype(np.float32) * self.scale[k][:, None]
        return out


def quantize_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float rows as int8 codes and one float32 scale a row (largest magnitude -> 127)."""
    rows = np.asarray(rows, dtype=np.float32)
    scale = (np.abs(rows).max(axis=1) / 127.0).astype(np.float32) if len(rows) else np.zeros(0, np.float32)
    safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
    codes = np.clip(np.rint(rows / safe[:, None]), -127, 127).astype(np.int8)
    return codes, scale


def adapter_tensors(adapters: dict[str, Adapter]) -> dict[str, np.ndarray]:
    """The tensors of ``adapters.safetensors``: ``<lang>.ids`` (int64), ``<lang>.delta`` (int8),
    ``<lang>.scale`` (float32),
    ``<lang>.layers.<i>.weight``/``.bias`` (as ``model.safetensors`` stores layers: out x in)."""
    out: dict[str, np.ndarray] = {}
    for lang, a in sorted(adapters.items()):
        out[f"{lang}.ids"] = np.ascontiguousarray(a.ids, dtype=np.int64)
        out[f"{lang}.delta"] = np.ascontiguousarray(a.delta, dtype=np.int8)
        out[f"{lang}.scale"] = np.ascontiguousarray(a.scale, dtype=np.float32)
        for i, (wt, b) in enumerate(a.layers or []):
            out[f"{lang}.layers.{i}.weight"] = np.ascontiguousarray(wt.T, dtype=np.float32)
            out[f"{lang}.layers.{i}.bias"] = np.ascontiguousarray(b, dtype=np.float32)
    return out


def read_adapters(folder: Path, record: dict, rows: int, embed_dim: int,
                  layer_dims: list[tuple[int, int]]) -> dict[str, Adapter]:
    """The adapters of the model folder ``folder`` as its config's ``adapters`` entry
    (``record``) describes them, checked: the file's SHA-256, every language's tensors present,
    rows inside the table, shapes those of the model."""
    if not isinstance(record, dict) or not isinstance(record.get("languages"), dict) \
            or not isinstance(record.get("sha256"), str):
        raise ConfigError(f"{folder}/config.json: its \"adapters\" entry is damaged")
    path = Path(folder) / ADAPTERS_FILE
    if not path.is_file():
        raise ConfigError(f"{folder}: the model was adapted to {', '.join(record['languages'])} but has no "
                          f"{ADAPTERS_FILE}")
    check_safetensors(path, "adapted rows")
    if file_digest(path) != record["sha256"]:
        raise ConfigError(f"{path} was changed after the model was adapted (its SHA-256 no longer matches "
                          "config.json): adapt again, or use the base model")
    t = load_safetensors(path, "numpy", "adapted rows")
    out = {}
    for lang in record["languages"]:
        try:
            ids, delta, scale = t[f"{lang}.ids"], t[f"{lang}.delta"], t[f"{lang}.scale"]
        except KeyError as e:
            raise ConfigError(f"{path}: no tensor {e.args[0]!r}") from None
        if ids.ndim != 1 or delta.shape != (len(ids), embed_dim) or scale.shape != (len(ids),) \
                or delta.dtype != np.int8 or (len(ids) and (
                ids.min() < 0 or ids.max() >= rows or np.any(np.diff(ids) <= 0))):
            raise ConfigError(f"{path}: the rows of {lang} do not fit this model's table ({rows} x {embed_dim})")
        layers = None
        if f"{lang}.layers.0.weight" in t:
            layers = []
            for i, (d_in, d_out) in enumerate(layer_dims):
                w, b = t.get(f"{lang}.layers.{i}.weight"), t.get(f"{lang}.layers.{i}.bias")
                if w is None or b is None or w.shape != (d_out, d_in) or b.shape != (d_out,):
                    raise ConfigError(f"{path}: the layers of {lang} are not this model's ({layer_dims})")
                layers.append((np.ascontiguousarray(w.T, dtype=np.float32), b.astype(np.float32)))
        out[lang] = Adapter(lang, ids.astype(np.int64), np.ascontiguousarray(delta),
                            np.ascontiguousarray(scale, dtype=np.float32), layers)
    return out
