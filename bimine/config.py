"""Loading nested dataclass configs from YAML/dicts; an unknown key is always an error.

Every value is checked against the type hint of its dataclass field before anything is
built, and every error names the dotted key (``train.steps``, ``data.train[0].src_lang``)
and the type expected:

- ``int``: an integer, not ``true``/``false`` (YAML booleans are not numbers) and not
  ``2.5`` (nor ``2.0``: write ``2``);
- ``float``: any number but a boolean; ``1e-3`` is accepted although YAML 1.1 (PyYAML)
  reads it as a string;
- ``bool``: ``true``/``false`` only, not ``1``/``0`` or ``"yes"`` in quotes;
- ``str``: a string (quote numbers meant as text: ``name: "2012"``);
- ``list[X]``, ``tuple[X, ...]``: a list whose items are each checked (``key[i]``);
  ``tuple[X, Y]``: a list of exactly that many items;
- ``X | None``: ``null`` or an ``X``; a dataclass: a mapping, checked recursively.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from typing import Any, TypeVar

import yaml

from bimine.errors import ConfigError

T = TypeVar("T")

_INDEXED = re.compile(r"^(\w+)\[(\d+)\]$")  # a list item in a --set key: data.train[0]
_SCI_FLOAT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")


def bounds(*, min: float | None = None, max: float | None = None, min_open: bool = False,
           max_open: bool = False) -> dict[str, Any]:
    """A field's range, for its ``metadata`` (``field(default=1, metadata=bounds(min=1))``):
    :func:`check_fields` holds every value (each item of a list or tuple) to it. The one
    place a job's ranges are written: a job file, a ``--set`` override, a Python job object and
    the command line's object all go through it (issue 72 §4)."""
    return {"bounds": (min, max, min_open, max_open)}


def check_fields(obj: Any) -> None:
    """Check every field of the dataclass ``obj`` as :func:`from_dict` checks a YAML value (its
    type hint: the same rules and messages) and against its range (:func:`bounds`), converting
    in place what a Python caller may pass for a YAML value: a mapping for a nested config
    (``MineJob(mine={"k": 8})``), a path object for a ``str`` field, a tuple for a list. Each
    job's ``__post_init__`` calls it first, so every way of making a job checks it the same way.
    Raises :class:`ConfigError` naming the field."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        new = _convert(hints[f.name], value, f.name)
        rng = f.metadata.get("bounds")
        if rng is not None:
            _check_range(new, rng, f.name)
        if new is not value:
            object.__setattr__(obj, f.name, new)  # a frozen config too


def _check_range(value: Any, rng: tuple, where: str) -> None:
    lo, hi, lo_open, hi_open = rng
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_range(v, rng, f"{where}[{i}]")
        return
    if value is None or isinstance(value, (bool, str)) or not isinstance(value, (int, float)):
        return
    if lo is not None and (value <= lo if lo_open else value < lo):
        raise ConfigError(f"{where}: must be {'>' if lo_open else '>='} {lo}, got {value!r}")
    if hi is not None and (value >= hi if hi_open else value > hi):
        raise ConfigError(f"{where}: must be {'<' if hi_open else '<='} {hi}, got {value!r}")


def from_dict(cls: type[T], data: dict[str, Any] | None, where: str = "") -> T:
    """Build dataclass ``cls`` from ``data``, recursing into dataclass-typed fields.

    Raises :class:`ConfigError` naming the dotted path of any unknown or missing key or
    wrong type (see the module docstring for the rules), before building anything. Classes
    with their own ``from_dict`` classmethod are checked the same way, then build themselves.
    """
    kwargs = _check_fields(cls, data, where)
    if hasattr(cls, "from_dict") and where:
        try:
            return cls.from_dict(data or {})  # type: ignore[attr-defined]
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where}: {e}") from None
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where or 'config'}: {e}") from None
    except ConfigError as e:  # a nested config's own check names its field: say where that config is
        if where and not str(e).startswith(f"{where}."):
            raise ConfigError(f"{where}.{e}") from None
        raise


def _check_fields(cls: type, data: Any, where: str) -> dict[str, Any]:
    """Checked and converted field values of ``data`` for ``cls``."""
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping (key: value lines), got {_show(data)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    prefix = f"{where}." if where else ""
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise ConfigError(f"{where or 'config'}: keys must be names, got {bad[0]!r}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        known = ", ".join(fields)
        raise ConfigError(f"unknown config key(s): {', '.join(prefix + k for k in unknown)} (known in "
                          f"{where or 'the top level'}: {known})")
    missing = [
        n for n, f in fields.items()
        if n not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"missing config key(s): {', '.join(prefix + k for k in missing)}")
    hints = typing.get_type_hints(cls)
    return {name: _convert(hints[name], value, prefix + name) for name, value in data.items()}


def _show(value: Any) -> str:
    """A value as the user wrote it in YAML: ``true``, ``null``, ``2.5``, ``'big'``, a mapping."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return repr(value)


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _type_name(a) for a in args)
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        if not args or args[0] is Any:
            return "a list"
        return "a list of mappings" if dataclasses.is_dataclass(args[0]) else f"a list of {_type_name(args[0])}"
    if origin is tuple:
        return f"a list of {len(args)} ({', '.join(_type_name(a) for a in args)})"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    return getattr(tp, "__name__", str(tp))


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            try:
                return _convert(inner[0], value, where)
            except ConfigError as e:  # say that null would do too
                one = f"{where}: expected {_type_name(inner[0])}"
                if not str(e).startswith(one):
                    raise
                raise ConfigError(f"{where}: expected {_type_name(tp)}{str(e)[len(one):]}") from None
        else:
            for a in inner:
                try:
                    return _convert(a, value, where)
                except ConfigError:
                    continue
        raise ConfigError(f"{where}: expected {_type_name(tp)}, got {_show(value)}")
    if origin is typing.Literal:
        if value in args:
            return value
        raise ConfigError(f"{where}: expected {_type_name(tp)}, got {_show(value)}")
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value  # built already (and checked by its own __post_init__)
        return from_dict(tp, value, where)
    if tp is os.PathLike:
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        raise ConfigError(f"{where}: expected a path, got {_show(value)}")
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected {_type_name(tp)}, got {_show(value)}")
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise ConfigError(f"{where}: expected {_type_name(tp)}, got {len(value)} item(s)")
            out = [_convert(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value))]
        else:
            item = args[0] if args else Any
            out = [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(out) if origin is tuple else out
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, str) and _SCI_FLOAT.match(value.strip()):
            value = float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ConfigError(f"{where}: must be a finite number, got {value}")
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, os.PathLike):  # a Path from Python for a file name
            return os.fspath(value)
        raise ConfigError(f"{where}: expected str, got {_show(value)} (put quotes around text that looks like "
                          "a number or a boolean)")
    else:
        return value
    raise ConfigError(f"{where}: expected {_type_name(tp)}, got {_show(value)}")


def to_dict(obj: Any) -> Any:
    """Plain-data form of a (nested) dataclass, for JSON/YAML."""
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    return obj


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.sub=value`` strings (values parsed as YAML) to a nested dict in place.

    A key part may index a list: ``data.train[0].max_pairs=1000``. Only the form is checked
    here (``key=value``, sections that are mappings, indexes in range); keys and types are
    checked with the whole config by :func:`from_dict`.
    """
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. train.steps=500")
        key, raw = item.split("=", 1)
        parts = key.strip().split(".")
        if not all(p.strip() for p in parts):
            raise ConfigError(f"--set {item!r}: {key.strip()!r} is not a dotted key like train.steps")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ConfigError(f"--set {item!r}: the value is not valid YAML ({first})") from None
        node: Any = data
        for n, p in enumerate(parts):
            m = _INDEXED.match(p.strip())
            name, index = (m.group(1), int(m.group(2))) if m else (p.strip(), None)
            last = n == len(parts) - 1
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item!r}: {'.'.join(parts[:n])} is {_show(node)}, not a section")
            if index is None:
                if last:
                    node[name] = value
                elif node.get(name) is None:  # absent, or an empty section in the YAML ("train:")
                    node[name] = {}
                node = node[name]
                continue
            seq = node.get(name)
            if not isinstance(seq, list) or not -len(seq) <= index < len(seq):
                size = f"has {len(seq)} item(s)" if isinstance(seq, list) else "is not a list"
                raise ConfigError(f"--set {item!r}: {'.'.join(parts[:n] + [name])} {size}")
            if last:
                seq[index] = value
            node = seq[index]
    return data


def load_yaml(path: str) -> dict[str, Any]:
    """The mapping in the YAML file ``path`` (``-``: stdin; a pipe is read once)."""
    from bimine.streams import readable_path  # loaded on use: most configs are files

    try:
        with open(readable_path(path), encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config ({e.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; is this a YAML config?") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping (key: value lines), got {_show(data)}")
    return data
