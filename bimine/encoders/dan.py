"""Deep Averaging Network dual encoder, inference in NumPy (paper 000 §2.2, Fig. 1).

Forward pass for one sentence with hashed features ``f_1..f_n``::

    x = (E[f_1] + ... + E[f_n]) / sqrt(n)               # sum divided by sqrt(length)
    h_l = relu(W_l h_{l-1} + b_l) (+ h_{l-1} if same width)   # residual, skip level 1
    u = W_L h_{L-1} + b_L                               # last layer: no ReLU
    u = u / ||u||                                       # L2-normalised output

The embedding table may be stored as float32/float16, as int8 with one float scale per row
(``embedding.scale``), which quarters its size, or product-quantised (``embedding.codes`` +
``embedding.codebook``, m bytes per row); rows are decoded after the lookup.
With ``shared: false`` each language has its own tower (paper 000); with ``shared: true``
all languages use one (paper 001). Needs only NumPy, numba and safetensors: no torch.

Featurising and pooling run in compiled kernels (``bimine/text/_kernels.py``,
``bimine/encoders/_dan_kernels.py``); a batch is cut into slices encoded in parallel by a few
threads (one per core), each running the kernels and single-threaded BLAS products. The NumPy reference (``backend="numpy"`` or
``BIMINE_BACKEND=numpy``) computes the same sums in the same order, one batch at a time, and
stays for tests and benchmarks.
"""

from __future__ import annotations

import copy
import ctypes
import glob
import json
import mmap
import multiprocessing
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bimine.cleanup import one_thread_per_worker
from bimine.cores import usable_cores
from bimine.diskcache import file_digest
from bimine.encoders.base import Encoder, check_model_digest, check_weights_sha256, weights_digest
from bimine.errors import ConfigError
from bimine.jitcache import in_background, wait_for_background
from bimine.langs import normalize_lang
from bimine.text.features import FeatureConfig, Featurizer, resolve_backend
from bimine.text.subwords import from_tensors, warm_piece_kernels
from bimine.text.translit import table_from_tensors
from bimine.text.zawgyi import to_unicode
from bimine.weights import check_safetensors, load_safetensors, read_json


@dataclass
class DANConfig:
    """Architecture of a DAN encoder (sizes are widths of the vectors)."""

    features: FeatureConfig = field(default_factory=FeatureConfig)
    embed_dim: int = 256
    hidden: tuple[int, ...] = (256, 256)
    output_dim: int = 384
    shared: bool = True
    languages: tuple[str, ...] = ()

    def towers(self) -> list[str]:
        """Names of the towers: ``["shared"]`` or one per language."""
        return ["shared"] if self.shared else list(self.languages)

    def tower_for(self, lang: str) -> str:
        if self.shared:
            return "shared"
        code = normalize_lang(lang)
        if code not in self.languages:
            raise ConfigError(
                f"this model has one encoder per language and none for {lang!r}; "
                f"it knows {', '.join(self.languages)}"
            )
        return code

    def layer_dims(self) -> list[tuple[int, int]]:
        dims = [self.embed_dim, *self.hidden, self.output_dim]
        return list(zip(dims[:-1], dims[1:]))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["features"] = self.features.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> DANConfig:
        d = model_options(cls, d)
        for k in ("hidden", "languages"):
            if k in d:
                d[k] = tuple(d[k])
        if "languages" in d:
            d["languages"] = tuple(normalize_lang(x) for x in d["languages"])
        cfg = cls(**d)
        if not cfg.shared and not cfg.languages:
            raise ConfigError("model.shared: false needs model.languages (one tower per language)")
        return cfg


def model_options(cls, d: dict, feature_defaults: dict | None = None) -> dict:
    """A copy of the model mapping ``d`` for dataclass ``cls``: unknown keys refused, and
    ``features`` built as a :class:`FeatureConfig` (missing keys from ``feature_defaults``)."""
    d = dict(d)
    unknown = set(d) - set(cls.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"unknown model option(s): {sorted(unknown)}")
    f = d.get("features")
    if f is not None and not isinstance(f, FeatureConfig):
        d["features"] = FeatureConfig.from_dict({**(feature_defaults or {}), **f})
    return d


class EmbeddingTable:
    """The n-gram embedding table in one of three storage forms, read row by row.

    dense: ``weight`` (float32/float16); int8: ``weight`` int8 plus ``scale`` (one float per
    row); int4: ``nibbles`` (two 4-bit values per byte) plus ``scale``; pq: ``codes`` (uint8, rows x m) plus ``codebook`` (m x 256 x d/m), product
    quantisation as in FAISS, a row being the concatenation of its m sub-vector centroids.
    """

    def __init__(self, weight=None, scale=None, codes=None, codebook=None, nibbles=None) -> None:
        self.weight, self.scale, self.codes, self.codebook = weight, scale, codes, codebook
        self.nibbles = nibbles
        if nibbles is not None:
            self.shape = (nibbles.shape[0], 2 * nibbles.shape[1])
            self.scale = scale.astype(np.float32).reshape(-1, 1)
        elif codes is not None:
            m, _, dsub = codebook.shape
            self.shape = (codes.shape[0], m * dsub)
            self._sub = np.arange(m)
        else:
            if scale is None and weight.dtype != np.float32:
                self.weight = weight.astype(np.float32)
            self.shape = weight.shape
            if scale is not None:
                self.scale = scale.astype(np.float32).reshape(-1, 1)

    @classmethod
    def from_weights(cls, weights: dict[str, np.ndarray], prefix: str) -> EmbeddingTable:
        if prefix + "nibbles" in weights:
            return cls(nibbles=weights[prefix + "nibbles"], scale=weights[prefix + "scale"])
        if prefix + "codes" in weights:
            return cls(codes=weights[prefix + "codes"], codebook=weights[prefix + "codebook"].astype(np.float32))
        return cls(weight=weights[prefix + "weight"], scale=weights.get(prefix + "scale"))

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """float32 rows ``ids`` of the table."""
        if self.nibbles is not None:
            b = self.nibbles[ids]
            out = np.empty((len(ids), b.shape[1], 2), dtype=np.float32)
            out[:, :, 0] = b & 15
            np.right_shift(b, 4, out=b)
            out[:, :, 1] = b
            out -= 8.0
            out *= self.scale[ids][:, :, None]
            return out.reshape(len(ids), self.shape[1])
        if self.codes is not None:
            c = self.codes[ids]  # (n, m)
            return self.codebook[self._sub, c].reshape(len(ids), self.shape[1])
        rows = self.weight[ids]
        if self.scale is not None:
            rows = rows.astype(np.float32) * self.scale[ids]
        return rows

    def pool(self, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """``(sentences, dim)`` float32: row i = sum of the rows ``ids[offsets[i]:offsets[i+1]]``
        divided by sqrt(their number), in one compiled pass (no decoded copy of the rows)."""
        from bimine.encoders import _dan_kernels as K  # numba kernels: compiled on first use, not at import

        out = np.empty((len(offsets) - 1, self.shape[1]), dtype=np.float32)
        if self.nibbles is not None:
            K.pool_int4(ids, offsets, self.nibbles, self.scale.reshape(-1), out)
        elif self.codes is not None:
            K.pool_pq(ids, offsets, self.codes, self.codebook, out)
        elif self.scale is not None:
            K.pool_scaled(ids, offsets, self.weight, self.scale.reshape(-1), out)
        else:
            K.pool_dense(ids, offsets, self.weight, out)
        return out


_ST_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
              "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def _map_safetensors(path: Path) -> dict[str, np.ndarray] | None:
    """The tensors of a safetensors file as read-only arrays over a memory map of it: no copy,
    pages read on first touch (and shared by forked workers). None for a file this reader does
    not handle (other dtypes, malformed header): the caller then uses ``safetensors`` itself."""
    try:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        n = int.from_bytes(mm[:8], "little")
        header = json.loads(mm[8 : 8 + n])
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = np.dtype(_ST_DTYPES[info["dtype"]])
            begin, end = info["data_offsets"]
            count = int(np.prod(info["shape"], dtype=np.int64))
            if end - begin != count * dtype.itemsize or base + end > len(mm):
                return None
            out[name] = np.frombuffer(mm, dtype=dtype, count=count, offset=base + begin).reshape(info["shape"])
        return out
    except (KeyError, ValueError, TypeError, OSError):
        return None


def _l2_normalize(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


def _forward(h: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]], fused: bool = False) -> np.ndarray:
    """The feed-forward stack on pooled rows ``h``, then L2 normalisation (module docstring).
    ``fused``: bias, ReLU and residual of a hidden layer in one compiled pass (same result)."""
    for j, (wt, b) in enumerate(layers):
        z = h @ wt
        if fused and j < len(layers) - 1 and z.shape == h.shape:
            from bimine.encoders._dan_kernels import (
                relu_residual,  # numba kernels: compiled on first use, not at import
            )

            relu_residual(z, b, h)
            h = z
            continue
        z += b
        if j < len(layers) - 1:
            np.maximum(z, 0, out=z)
            if z.shape == h.shape:
                z += h
        h = z
    return _l2_normalize(h)


def _warm_kernels(featurizer: Featurizer, table: EmbeddingTable, layers: list) -> None:
    """Run the compiled kernels of ``encode`` once on a two-word batch, so that numba loads
    them from its cache (or compiles them) for the very array types of a real batch."""
    text = ["warm up"]
    cps = featurizer.normalized_codepoints(text)
    ids, offsets = featurizer._featurize_numba(text, "und", cps)
    if featurizer.config.subwords:
        warm_piece_kernels(*cps, ids, offsets, featurizer.config.buckets)
    _forward(table.pool(ids, offsets), layers, fused=True)


SLICE_ROWS = 512  # rows encoded by one thread at a time (see DANEncoder.encode)


class _OpenBLAS:
    """Makes NumPy's OpenBLAS single-threaded while encoder threads run, and restores it after.

    OpenBLAS threads spin for a while after each product; with one encoder thread per core
    they would compete with the other encoder threads for the cores (measured: 1.6x slower on
    2 cores). The setting is process-wide, so it is counted: the last encoder call to finish
    restores the previous thread count. Where NumPy does not use OpenBLAS (MKL, Accelerate)
    this does nothing.
    """

    def __init__(self) -> None:
        self._fns: tuple | None = None
        self._lock = threading.Lock()
        self._users = 0
        self._saved = 1

    def _find(self) -> tuple:
        if self._fns is None:
            self._fns = ()
            try:
                self._fns = self._locate()
            except Exception:  # any failure means: leave BLAS alone
                pass
        return self._fns

    @staticmethod
    def _locate() -> tuple:
        here = os.path.dirname(np.__file__)
        paths = [p for d in ("numpy.libs", os.path.join("numpy", ".dylibs")) for p in
                 sorted(glob.glob(os.path.join(here, os.pardir, d, "*openblas*")))]
        if os.path.exists("/proc/self/maps"):
            with open("/proc/self/maps") as f:
                paths += sorted(set(re.findall(r"(/\S*openblas\S*)", f.read())))
        for path in dict.fromkeys(paths):
            lib = ctypes.CDLL(path)
            for prefix in ("scipy_openblas", "openblas"):
                for suffix in ("64_", "", "_64"):
                    get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                    put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                    if get is not None and put is not None:
                        return get, put
        return ()

    @contextmanager
    def single_threaded(self):
        fns = self._find()
        if not fns:
            yield
            return
        get, put = fns
        with self._lock:
            if self._users == 0:
                self._saved = get()
                put(1)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    put(self._saved)


_OPENBLAS = _OpenBLAS()
_POOL_LOCK = threading.Lock()


class DANEncoder(Encoder):
    """DAN encoder; ``encode(sentences, lang)`` returns unit-norm float32 rows.

    ``threads``: how many slices of a batch are encoded at once, each on one core (default:
    one per core, or 1 in a multiprocessing pool worker, whose siblings take the other cores).
    ``backend``: ``"numba"`` (compiled kernels), ``"numpy"`` (the reference) or ``"auto"``.
    """

    def __init__(
        self,
        config: DANConfig,
        weights: dict[str, np.ndarray],
        *,
        model_id: str | None = None,
        batch_size: int = 4096,
        backend: str | None = None,
        threads: int | None = None,
        weights_file: str | os.PathLike | None = None,
        adapters: dict | None = None,
    ) -> None:
        self.config = config
        #: languages adapted by ``bimine adapt`` (:mod:`bimine.encoders.adapters`): code -> Adapter
        self.adapters = dict(adapters or {})
        self.training: dict = {}
        self.backend = resolve_backend(backend)
        self.threads = threads
        self._executor = None
        self._executor_key: tuple[int, int] | None = None
        table = None
        if config.features.translit:
            table = table_from_tensors(weights)
            if table is None:
                raise ConfigError("the model's features use transliteration, but its weights hold no translit.* table")
        pieces = None
        if config.features.subwords:
            pieces = from_tensors(weights)
            if pieces is None:
                raise ConfigError("the model's features use subwords, but its weights hold no subwords.model")
        # the SentencePiece model is set last: the kernels load in the background meanwhile
        self.featurizer = Featurizer(config.features, backend=self.backend, translit_table=table)
        if model_id is None and weights_file is None:  # built in memory: named by its tensors

            model_id = "dan-" + weights_digest(weights, config.to_dict())
        self._model_id = model_id
        self._weights_file = weights_file
        self._sealed: tuple = (weights_file, None)  # (folder, the weights' recorded SHA-256), set by load
        self._digest_box: dict | None = None  # the weights' SHA-256 being computed in the background (load)
        self.dim = config.output_dim
        self.batch_size = batch_size
        self._towers = {}
        for t in config.towers():
            p = f"{t}."
            try:
                table = EmbeddingTable.from_weights(weights, p + "embedding.")
                layers = [
                    (
                        np.ascontiguousarray(weights[f"{p}layers.{i}.weight"].T, dtype=np.float32),
                        weights[f"{p}layers.{i}.bias"].astype(np.float32),
                    )
                    for i in range(len(config.layer_dims()))
                ]
            except KeyError as e:
                raise ConfigError(f"model weights lack tensor {e.args[0]!r}") from None
            for i, ((w, b), (d_in, d_out)) in enumerate(zip(layers, config.layer_dims())):
                if w.shape != (d_in, d_out) or b.shape != (d_out,):
                    raise ConfigError(f"model weights: layer {i} is {w.shape[0]} -> {w.shape[1]}, the config says "
                                      f"{d_in} -> {d_out} (embed_dim, hidden, output_dim); config and weights "
                                      "are not of one model")
            if table.shape != (config.features.rows, config.embed_dim):
                raise ConfigError(
                    f"embedding table has shape {table.shape}, config says "
                    f"({config.features.rows}, {config.embed_dim})"
                )
            self._towers[t] = (table, layers)
        if self.backend == "numba":  # numba's start (~0.4 s) overlaps with SentencePiece reading its model
            warm = self._towers[config.towers()[0]]
            in_background(lambda: _warm_kernels(self.featurizer, *warm), "bimine-warm-up",
                          imports=("sentencepiece",) if pieces is not None else ())
        if pieces is not None:
            self.featurizer.set_subword_model(pieces)

    @property
    def uses_language(self) -> bool:
        """False for a shared model with by-script n-grams: ``encode`` then ignores ``lang``."""
        return not (self.config.shared and self.config.features.by_script)

    @classmethod
    def load(cls, path: str | os.PathLike, **kwargs) -> DANEncoder:
        """Load ``config.json`` + ``model.safetensors`` from the folder ``path``.

        The weights are memory-mapped, not copied: loading takes milliseconds, and forked
        workers share the pages.
        """
        path = Path(path)
        meta = read_json(path / "config.json", "model config")
        if meta.get("architecture") != "dan":
            raise ConfigError(f"{path}/config.json: architecture {meta.get('architecture')!r} is not 'dan'")
        wfile = path / "model.safetensors"
        check_safetensors(wfile, "model weights")  # cut short or an absurd header: one line, not a traceback
        sealed = check_model_digest(path, meta, wfile)  # a folder changed since it was written: refused
        config = DANConfig.from_dict(meta["model"])
        weights = _map_safetensors(wfile)
        if weights is None:
            weights = load_safetensors(wfile, "numpy", "model weights")
        model_id = f"dan-{meta['model_id']}" if meta.get("model_id") else None
        adapters = None
        if meta.get("adapters") is not None:
            from bimine.encoders.adapters import read_adapters

            adapters = read_adapters(path, meta["adapters"], config.features.rows, config.embed_dim,
                                     config.layer_dims())
        enc = cls(config, weights, model_id=model_id, weights_file=wfile, adapters=adapters, **kwargs)
        enc.training = meta.get("training", {})  # the trainer's record (data, held-out pairs, dev figures)
        if adapters:  # the model all the adaptations started from: its vectors, heads and caches
            enc.base_model_id = (meta["adapters"].get("base_model_ids") or [None])[0]
            enc.base_model_ids = tuple(meta["adapters"].get("base_model_ids") or ())  # whose heads it takes
        enc._sealed = (path, sealed)
        if sealed is not None:  # the whole file's SHA-256 (65 ms for the default's 91 MB) on the other core,
            box: dict = {}      # while the kernels and SentencePiece load; checked before the first vector
            in_background(lambda: box.update(sha=file_digest(wfile)), "bimine-weights-digest")
            enc._digest_box = box
        return enc

    def _check_weights(self) -> None:
        """The weights file against the SHA-256 its folder recorded (computed in the background
        since :meth:`load`): a file swapped for another model's of the same tensors is refused
        before it embeds anything."""
        box = self._digest_box
        if box is None:
            return
        wait_for_background()
        whole = box.get("sha") or file_digest(self._weights_file)
        check_weights_sha256(*self._sealed, whole)
        self._digest_box = None
        if self._model_id is None:
            self._model_id = "dan-" + whole[:16]

    @property
    def model_id(self) -> str:
        """``dan-`` + the config's ``model_id``, or the first 16 hex digits of the sha256 of
        the weights file (computed on first use: embedding to .npy never needs it), or of the
        tensors for an encoder built in memory (:func:`~bimine.encoders.base.weights_digest`)."""
        self._check_weights()
        if self._model_id is None:
            self._model_id = "dan-" + file_digest(self._weights_file)[:16]
        return self._model_id

    @model_id.setter
    def model_id(self, value: str) -> None:
        self._model_id = value

    def tower(self, lang: str | None = None) -> tuple[EmbeddingTable, list[tuple[np.ndarray, np.ndarray]]]:
        """The embedding table and feed-forward layers (``(W^T, b)`` pairs) of ``lang``'s tower
        (of the shared model's one tower without it), adapters left out."""
        return self._towers[self.config.tower_for(lang) if lang else self.config.towers()[0]]

    def table(self, lang: str | None = None) -> EmbeddingTable:
        """The embedding table of ``lang``'s tower (of the shared model's one tower without it)."""
        return self._towers[self.config.tower_for(lang) if lang else self.config.towers()[0]][0]

    def features(self, sentences: list[str], lang: str) -> tuple[np.ndarray, np.ndarray]:
        """The feature ids and offsets of ``sentences`` as :meth:`_encode` reads them (a Burmese
        line in Zawgyi as its Unicode text): what a trainer of this model's rows must look up."""
        return self.featurizer.featurize(to_unicode(sentences), lang)

    def pooled(self, sentences: list[str], lang: str) -> np.ndarray:
        """The n-gram embeddings summed and divided by sqrt(n): input of the feed-forward stack."""
        table, _ = self._towers[self.config.tower_for(lang)]
        adapter = self.adapter(lang)
        if self.backend == "numpy":
            return self._pooled_numpy(table, to_unicode(sentences), lang, adapter)
        ids, offsets = self.features(sentences, lang)
        return table.pool(ids, offsets) if adapter is None else adapter.pool(table, ids, offsets)

    def base_view(self) -> DANEncoder:
        """For a job none of whose languages was adapted: this model without its adapters, named
        as the model the adaptations started from (its vectors, byte for byte), so that the heads
        fitted on that model (copied into this folder) and caches of its vectors apply."""
        if not self.adapters or not getattr(self, "base_model_id", None):
            return self
        return self.with_adapters({}, self.base_model_id)

    def with_adapters(self, adapters: dict, model_id: str) -> DANEncoder:
        """This model (the same tables, layers and featuriser, not copied) with ``adapters`` in
        place of its own, named ``model_id``."""
        self._check_weights()  # the weights are still checked against the folder's digest
        view = copy.copy(self)
        view.adapters = dict(adapters)
        view._model_id = model_id
        view._digest_box = None
        return view

    def adapter(self, lang: str | None):
        """The :class:`~bimine.encoders.adapters.Adapter` of ``lang`` (None: not adapted to it, or
        no language given)."""
        if not self.adapters or not lang or lang == "und":
            return None
        return self.adapters.get(normalize_lang(lang))

    def _pooled_numpy(self, table: EmbeddingTable, sentences: list[str], lang: str, adapter=None) -> np.ndarray:
        """The NumPy reference: each distinct feature of the batch is decoded once; the
        per-sentence sums are one sparse (sentences x distinct features) by dense product
        (float32, in feature order, as ``EmbeddingTable.pool`` sums them).
        """
        from scipy.sparse import csr_matrix  # loaded on use: SciPy is heavy or optional

        ids, offsets = self.featurizer.featurize(sentences, lang)
        n = len(sentences)
        if len(ids) == 0:
            return np.zeros((n, table.shape[1]), dtype=np.float32)
        counts = np.diff(offsets)
        uniq, inv = np.unique(ids, return_inverse=True)
        weights = np.repeat((1.0 / np.sqrt(np.maximum(counts, 1))).astype(np.float32), counts)
        bags = csr_matrix((weights, inv.reshape(-1), offsets), shape=(n, len(uniq)))
        out = np.asarray(bags @ table.lookup(uniq), dtype=np.float32)
        if adapter is not None:  # the adapted rows' deltas, pooled apart and added (as Adapter.pool does)
            out += np.asarray(bags @ adapter.delta_rows(uniq), dtype=np.float32)
        return out

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_executor"] = state["_executor_key"] = None  # threads do not travel
        return state

    def _thread_count(self) -> int:
        if self.threads is not None:
            return max(1, self.threads)

        # a pool worker (``bimine embed --workers N``, or any daemonic one) shares the cores with its siblings
        return 1 if one_thread_per_worker() or multiprocessing.current_process().daemon else usable_cores()

    def _pool(self, threads: int):
        key = (os.getpid(), threads)  # a forked child has none of its parent's threads
        with _POOL_LOCK:
            if self._executor_key != key:
                if self._executor is not None and self._executor_key[0] == os.getpid():
                    self._executor.shutdown(wait=False)
                self._executor = ThreadPoolExecutor(threads, thread_name_prefix="bimine-dan")
                self._executor_key = key
            return self._executor

    def _encode(self, sentences: list[str], lang: str) -> np.ndarray:
        """Embed ``sentences`` of language ``lang``: ``(n, dim)`` float32, unit-norm rows (a
        Burmese line in Zawgyi is read as its Unicode text: :mod:`bimine.text.zawgyi`)."""
        if self._digest_box is not None:
            self._check_weights()
        sentences = to_unicode(sentences)
        tower = self.config.tower_for(lang)
        table, layers = self._towers[tower]
        adapter = self.adapter(lang)
        if adapter is not None and adapter.layers is not None:
            layers = adapter.layers
        n = len(sentences)
        out = np.empty((n, self.dim), dtype=np.float32)
        if self.backend == "numpy":
            bs = self.batch_size
            for i in range(0, n, bs):
                out[i : i + bs] = _forward(self._pooled_numpy(table, sentences[i : i + bs], lang, adapter), layers)
            return out

        def run(i: int, j: int) -> None:
            ids, offsets = self.featurizer.featurize(sentences[i:j], lang)
            pooled = table.pool(ids, offsets) if adapter is None else adapter.pool(table, ids, offsets)
            out[i:j] = _forward(pooled, layers, fused=True)

        threads = self._thread_count()
        # slices of a fixed size, whatever the number of threads: a row's float32 value depends
        # on the row count of the BLAS product it is part of (kernels differ by shape), so the
        # slicing must not depend on the machine for every executor and core count to give the
        # same bytes (tests/test_dan_determinism.py)
        slices = [(i, min(i + SLICE_ROWS, n)) for i in range(0, n, SLICE_ROWS)]
        with _OPENBLAS.single_threaded():
            if threads == 1 or len(slices) == 1:
                for i, j in slices:
                    run(i, j)
            else:
                for f in [self._pool(threads).submit(run, i, j) for i, j in slices]:
                    f.result()
        return out
