"""Checking a ``--device`` value (a PyTorch device) before any work is done with it.

``torch.device("cuda:7")`` is accepted by PyTorch whatever the machine has; the failure comes
later, deep in the first tensor moved there (an ``AssertionError`` on a CPU-only build, a
``RuntimeError`` on a machine with fewer GPUs), after the data was read and the aligner
trained. :func:`check_device` asks PyTorch what it has, up front, and says what to use instead.
"""

from __future__ import annotations

from bimine.errors import ConfigError

_KINDS = ("cpu", "cuda", "mps", "xpu")  # device types a training run can use; "meta" etc. hold no data


def check_device(device: str | None, option: str = "--device") -> str | None:
    """``device`` unchanged when this PyTorch can use it (None: the caller's default), else a
    one-line :class:`ConfigError` naming ``option``, the value and what to use instead.

    Checks: PyTorch parses it; its type is one of cpu, cuda, mps, xpu; a GPU type is
    available in this build and on this machine; its index is below the number of GPUs seen.
    Imports PyTorch (only when ``device`` is given)."""
    if device is None:
        return None
    try:
        import torch  # loaded on use: PyTorch is heavy or optional
    except ImportError:
        raise ConfigError(f"{option} {device}: needs PyTorch: pip install 'bimine[train]'") from None
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise ConfigError(f"{option} {device}: not a device PyTorch knows; use cpu, cuda or cuda:N") from None
    if dev.type not in _KINDS:
        raise ConfigError(f"{option} {device}: a {dev.type!r} device cannot train or score; use cpu or cuda")
    if dev.type == "cpu":
        return device
    if dev.type == "cuda":
        if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
            raise ConfigError(f"{option} {device}: this PyTorch has no CUDA (a CPU-only build); use cpu")
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        what = "CUDA GPU"
    else:
        backend = getattr(torch.backends, dev.type, None) if dev.type == "mps" else getattr(torch, dev.type, None)
        available = backend is not None and backend.is_available()
        count = (1 if dev.type == "mps" else backend.device_count()) if available else 0
        what = f"{dev.type} device"
    if count == 0:
        raise ConfigError(f"{option} {device}: PyTorch sees no {what} on this machine; use cpu")
    if dev.index is not None and dev.index >= count:
        seen = f"{dev.type}:0" if count == 1 else f"{dev.type}:0 to {dev.type}:{count - 1}"
        raise ConfigError(f"{option} {device}: PyTorch sees {count} {what}(s) ({seen}); use one of them or cpu")
    return device
