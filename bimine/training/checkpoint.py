"""Epoch checkpoints of the small PyTorch models trained in epochs (the VDPWI divergence model,
the siamese BiGRU), so that a stopped run goes on where it stopped and ends with the weights of
a run that was never stopped.

One safetensors file (no pickle): the network's tensors (``net.``), the best epoch's
(``best.``), the optimiser's tensor state (``opt.PARAM.NAME``) and PyTorch's random state;
everything else (the epoch reached, the history, NumPy's generator state, the optimiser's
scalars and parameter groups, the fingerprint of the data and settings) as JSON in the file's
metadata. Written under a temporary name and renamed, so a kill leaves the previous
checkpoint whole.
"""

from __future__ import annotations

import json
import os

from bimine.errors import ConfigError

_META = "bimine_checkpoint"


def checkpoint_path(output: str | os.PathLike) -> str:
    """Where a run writing ``output`` keeps its checkpoint: beside it, ``OUTPUT.checkpoint``."""
    return f"{os.fspath(output)}.checkpoint"


def check_start(path: str, resume: bool, command: str) -> bool:
    """Before any work: with ``resume`` a checkpoint must exist; without it, an existing one (a
    stopped run) is not overwritten silently. Returns whether to resume."""
    if resume and not os.path.exists(path):
        raise ConfigError(f"--resume: no checkpoint at {path} (a stopped run of {command} leaves one there)")
    if not resume and os.path.exists(path):
        raise ConfigError(f"{path} holds the checkpoint of a stopped run: --resume goes on from it; "
                          "delete it to start over")
    if resume:
        _read(path, tensors=False)  # unreadable: said now, not after the work that comes before the epochs
    return resume


def fingerprint(path: str) -> str | None:
    """The fingerprint of the data and settings the checkpoint at ``path`` was written for (None:
    no checkpoint there); a file that is no checkpoint is a one-line error."""
    if not os.path.exists(path):
        return None
    return _read(path, tensors=False)[0].get("fingerprint")


def discard(path: str | None) -> None:
    """Remove the checkpoint at ``path`` (if any) once the model it was for is written."""
    if path and os.path.exists(path):
        os.remove(path)


def _read(path: str, tensors: bool = True) -> tuple[dict, dict]:
    """The checkpoint's JSON state and (``tensors``) its tensors, or a one-line error."""
    from safetensors import safe_open

    try:
        with safe_open(path, "pt") as f:
            meta = json.loads((f.metadata() or {})[_META])
            arrays = {k: f.get_tensor(k) for k in f.keys()} if tensors else {}
    except Exception as e:  # safetensors' own error class, a missing key, bad JSON, a read error
        raise ConfigError(f"{path}: not a checkpoint bimine can read ({e}); delete it to start over") from None
    return meta, arrays


def save_checkpoint(path: str, net, opt, best: dict | None, state: dict) -> None:
    """Write the checkpoint: ``net`` and ``opt`` (a torch module and an optimiser or a list of them), the ``best``
    state dict so far (or None) and ``state`` (JSON: epoch, history, NumPy RNG state, ...)."""
    import torch
    from safetensors.torch import save_file

    tensors = {f"net.{k}": v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    if best is not None:
        tensors.update({f"best.{k}": v.detach().cpu().contiguous() for k, v in best.items()})
    scalars: dict[str, object] = {}
    tensor_scalars = []  # scalars held as 0-d tensors (Adam's step), the rest Python numbers (SparseAdam's)
    groups = []
    for i, o in enumerate(_optimizers(opt)):
        sd = o.state_dict()
        prefix = _opt_prefix(i)
        for pid, st in sd["state"].items():
            for name, v in st.items():
                if torch.is_tensor(v) and v.dim() > 0:
                    tensors[f"{prefix}.{pid}.{name}"] = v.detach().cpu().contiguous()
                else:
                    scalars[f"{prefix}.{pid}.{name}"] = float(v) if torch.is_tensor(v) else v
                    if torch.is_tensor(v):
                        tensor_scalars.append(f"{prefix}.{pid}.{name}")
        groups.append(sd["param_groups"])
    tensors["torch_rng"] = torch.get_rng_state()
    meta = {**state, "opt_scalars": scalars, "opt_tensor_scalars": tensor_scalars,
            "param_groups": groups if isinstance(opt, (list, tuple)) else groups[0], "has_best": best is not None}
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        save_file(tensors, tmp, metadata={_META: json.dumps(meta)})
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_checkpoint(path: str, net, opt, expect: str) -> tuple[dict, dict | None]:
    """Load ``path`` into ``net`` and ``opt`` and PyTorch's random state; returns (the JSON state,
    the best state dict or None). ``expect``: the fingerprint of this run's data and settings,
    which must be the checkpoint's."""
    import torch

    meta, tensors = _read(path)
    if meta.get("fingerprint") != expect:
        raise ConfigError(f"--resume: {path} was written for other data or settings; run with the same "
                          "corpus and options, or delete it to start over")
    net.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("net.")})
    best = {k[5:]: v for k, v in tensors.items() if k.startswith("best.")} if meta["has_best"] else None
    opts = _optimizers(opt)
    groups = meta["param_groups"] if isinstance(opt, (list, tuple)) else [meta["param_groups"]]
    if len(groups) != len(opts):
        raise ConfigError(f"--resume: {path} holds {len(groups)} optimiser(s), this run has {len(opts)}; "
                          "delete it to start over")
    for i, o in enumerate(opts):
        prefix = _opt_prefix(i)
        state: dict[int, dict] = {}
        for k, v in tensors.items():
            head, _, rest = k.partition(".")
            if head == prefix:
                pid, name = rest.split(".", 1)
                state.setdefault(int(pid), {})[name] = v
        as_tensor = meta.get("opt_tensor_scalars")
        for k, v in meta["opt_scalars"].items():
            head, _, rest = k.partition(".")
            if i == 0 and not k.startswith("opt"):  # written before the optimisers had a prefix here
                head, rest = prefix, k
            if head == prefix:
                pid, name = rest.split(".", 1)
                tensor = k in as_tensor if as_tensor is not None else name == "step"
                state.setdefault(int(pid), {})[name] = torch.tensor(v) if tensor else v
        o.load_state_dict({"state": state, "param_groups": groups[i]})
    torch.set_rng_state(tensors["torch_rng"])
    return meta, best


def _optimizers(opt) -> list:
    """``opt`` as a list: one torch optimiser, or several (a sparse and a dense one)."""
    return list(opt) if isinstance(opt, (list, tuple)) else [opt]


def _opt_prefix(i: int) -> str:
    """The tensor-name prefix of optimiser ``i``: ``opt`` for the first (as files written with one
    optimiser have it), ``opt1``, ``opt2``, ... after it."""
    return "opt" if i == 0 else f"opt{i}"
