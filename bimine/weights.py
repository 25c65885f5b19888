"""Reading and writing weight files (safetensors) and their JSON configs.

Every writer of a model file goes through :func:`save_safetensors` and :func:`write_json`
(a temporary name beside the file, then a rename: never a half-written file under the final
name; readable by all, as the umask allows). Every loader of a model file (encoders, calibration head, rescorer, cross-encoders, divergence
models, classifiers, training checkpoints) reads through here, so a file that is missing, cut
short, or has an absurd header length is a :class:`~bimine.errors.ConfigError` naming the file
and what it should be, never a ``SafetensorError`` traceback from deep inside the library.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from bimine.errors import ConfigError
from bimine.outputs import atomic_path


def load_safetensors(path: str | os.PathLike, framework: str = "numpy", what: str = "weights",
                     how: str | None = None) -> dict:
    """The tensors of a safetensors file as a dict (``framework``: ``numpy`` or ``pt``).

    ``what`` names the file in the error (``model weights``, ``calibration``), ``how`` says how
    to make a new one."""
    return read_safetensors(path, framework, what, how)[1]


def read_safetensors(path: str | os.PathLike, framework: str, what: str, how: str | None = None
                     ) -> tuple[dict, dict]:
    """(metadata, tensors) of a safetensors file; a missing, truncated or otherwise unreadable
    file is a :class:`ConfigError` that names ``what`` it should be and ``how`` to make one."""
    from safetensors import safe_open  # the library's reader checks the header and every offset

    path = Path(path)
    fix = f" (train one with '{how}')" if how else ""
    if not path.is_file():
        raise ConfigError(f"{what} {path}: no such file{fix}")
    try:
        with safe_open(str(path), framework=framework) as f:
            return f.metadata() or {}, {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:  # noqa: BLE001 - safetensors raises several types on a bad file
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigError(f"{what} {path}: damaged or not a safetensors file ({reason}); copy it again{fix}") from None


def check_safetensors(path: str | os.PathLike, what: str = "weights") -> None:
    """Check a safetensors file's header against its size without reading its tensors (cheap;
    for readers that memory-map the file themselves)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{what} {path}: no such file")
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if n < 2 or 8 + n > size:
            raise ConfigError(f"{what} {path}: damaged or not a safetensors file (header length {n} for a file "
                              f"of {size} bytes); copy it again")
        try:
            header = json.loads(f.read(n))
        except ValueError:
            raise ConfigError(f"{what} {path}: damaged or not a safetensors file (its header is not JSON); "
                              "copy it again") from None
    if not isinstance(header, dict):
        raise ConfigError(f"{what} {path}: damaged or not a safetensors file (its header is not a table)")
    end = max((int(v["data_offsets"][1]) for k, v in header.items()
               if k != "__metadata__" and isinstance(v, dict) and "data_offsets" in v), default=0)
    if 8 + n + end != size:
        raise ConfigError(f"{what} {path}: damaged (its header describes {8 + n + end} bytes, the file has {size}; "
                          "cut short?); copy it again")


def read_json(path: str | os.PathLike, what: str = "config") -> dict:
    """A JSON file that must hold an object; missing or malformed is a one-line ConfigError."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{what} {path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError(f"{what} {path}: cannot be read ({e})") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{what} {path}: expected a JSON object, found {type(obj).__name__}")
    return obj


def _readable(path: str) -> None:
    """Permissions of an ordinary new file (safetensors creates its files owner-only)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def save_safetensors(path: str | os.PathLike, tensors: dict, metadata: dict[str, str] | None = None, *,
                     atomic: bool = True) -> None:
    """Write ``tensors`` (NumPy arrays or torch tensors) and string ``metadata`` to ``path``;
    ``atomic``: through :func:`bimine.outputs.atomic_path` (off where the caller already writes to a
    temporary name or folder)."""
    first = next(iter(tensors.values()), None)
    if first is not None and type(first).__module__.split(".")[0] == "torch":
        from safetensors.torch import save_file  # loaded on use: the torch binding needs torch
    else:
        from safetensors.numpy import save_file  # loaded on use: like the torch binding
    path = str(path)
    if not atomic:
        save_file(tensors, path, metadata=metadata)
        _readable(path)
        return
    with atomic_path(path) as tmp:  # a symbolic link is written through, a device or FIFO as a stream
        save_file(tensors, tmp, metadata=metadata)
        _readable(tmp)


def write_json(path: str | os.PathLike, obj, **dumps) -> None:
    """``obj`` as JSON (``dumps``: options of :func:`json.dumps`) and a final newline at
    ``path``, through :func:`bimine.outputs.atomic_path`."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, **dumps) + "\n")
