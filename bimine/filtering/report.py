"""The HTML report of ``bimine score`` and ``bimine filter`` (``--report FILE``).

One self-contained file: inline CSS and SVG, no script, nothing fetched from elsewhere, so it
opens offline and can be mailed or archived with the run. It holds

* the run summary: input and outputs, pairs, kept (and the share), the filters in pipeline
  order with their threshold and direction ("clean when ≥ 0.5"), and per filter the pairs
  that fail it and those it dropped first (the reason written in the output);
* one histogram per score column and one of the combined ``score``, drawn by hand from
  :func:`numpy.histogram` (kept and dropped pairs stacked when filtering; the threshold as a
  dashed line with the failing side shaded; NaN values counted, not drawn);
* per drop reason, the first ``per_reason`` (20) dropped pairs: input line, both sides (long
  ones cut, the whole text in the cell's tooltip), the scores that failed and the graded ones.

Every text from the corpus is HTML-escaped; control and bidi-override characters are shown
as visible marks rather than passed to the page.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bimine.filtering.decisions import FilterReport, Selection
    from bimine.scoring.base import PairFilter

EXAMPLES = 20  # dropped pairs shown per reason
SHOW_CHARS = 160  # characters of a sentence shown in an example; the rest is in the tooltip
TITLE_CHARS = 10_000  # characters of a sentence kept in the tooltip


@dataclass
class Example:
    """A dropped pair as the report shows it: input line (1-based), the two sides, every
    filter score (pipeline order) and the combined score."""

    line: int
    src: str
    tgt: str
    scores: list[float]
    total: float


@dataclass
class Examples:
    """The first ``per_reason`` dropped pairs of each reason (an index into the run's
    reasons), so that memory stays bounded whatever the corpus size."""

    per_reason: int = EXAMPLES
    by_reason: dict[int, list[Example]] = field(default_factory=dict)

    def wants(self, reason: int) -> bool:
        return reason >= 0 and len(self.by_reason.get(reason, ())) < self.per_reason

    def add(self, reason: int, example: Example) -> None:
        if self.wants(reason):
            self.by_reason.setdefault(reason, []).append(example)


# ---------------------------------------------------------------------------------------------
# numbers


def fmt_num(v: float) -> str:
    """A number for people: thousands separators, about three significant digits, a real
    minus sign, NaN and ∞ spelled out."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == int(v) and abs(v) < 1e15:
        s = f"{int(v):,}"
    elif abs(v) >= 1e4:
        s = f"{v:,.0f}"
    elif abs(v) >= 100:
        s = f"{v:,.1f}"
    elif abs(v) >= 1e-3:
        s = f"{v:.3g}"
    else:
        s = f"{v:.2e}"
    return s.replace("-", "−")


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "–"


def _nice(x: float, *, up: bool = True) -> float:
    """A "nice" step (1, 2 or 5 × 10^k): the smallest not below ``x`` with ``up``, else the
    nearest."""
    if not x > 0 or not math.isfinite(x):
        return 1.0
    e = math.floor(math.log10(x))
    f = x / 10**e
    if up:
        nf = 1 if f <= 1 else 2 if f <= 2 else 5 if f <= 5 else 10
    else:
        nf = 1 if f < 1.5 else 2 if f < 3.5 else 5 if f < 7.5 else 10
    return nf * 10.0**e


def _ticks(lo: float, hi: float, n: int = 6, integer: bool = False) -> list[float]:
    """About ``n`` round tick values within ``[lo, hi]``."""
    if not hi > lo:
        return [lo]
    step = _nice((hi - lo) / max(n - 1, 1), up=False)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step - 1e-9)
    out = []
    k = first
    while k * step <= hi + 1e-9 * step:
        out.append(round(k * step, 12))
        k += 1
    return out


# ---------------------------------------------------------------------------------------------
# text


_SPECIAL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _mark(ch: str) -> str:
    c = ord(ch)
    if c < 0x20:
        return "^" + chr(c + 0x40)  # caret notation (^@, ^I, ^[): every font has the glyphs
    if c == 0x7F:
        return "^?"
    return f"<U+{c:04X}>"


def _visible(s: str) -> str:
    """``s`` escaped for HTML, control, zero-width and bidi-control characters drawn as marks."""
    return _SPECIAL.sub(lambda m: f'<span class="ctl" title="U+{ord(m.group()):04X}">{html.escape(_mark(m.group()))}'
                        "</span>", html.escape(s))


def _plain(s: str) -> str:
    """``s`` for an attribute: special characters as marks, then escaped."""
    return html.escape(_SPECIAL.sub(lambda m: _mark(m.group()), s), quote=True)


def _text_cell(s: str, lang: str = "") -> str:
    attrs = ' dir="auto"' + (f' lang="{_plain(lang)}"' if lang else "")
    if not s.strip():
        label = "(empty)" if not s else f"(only {len(s)} space{'s' if len(s) != 1 else ''})"
        return f'<td class="text"><span class="muted">{label}</span></td>'
    if len(s) <= SHOW_CHARS:
        return f'<td class="text"{attrs}>{_visible(s)}</td>'
    full = s if len(s) <= TITLE_CHARS else s[:TITLE_CHARS] + f"… ({len(s) - TITLE_CHARS:,} more characters)"
    cut = s[: SHOW_CHARS - 1].rstrip()
    return (f'<td class="text cut"{attrs} title="{_plain(full)}">{_visible(cut)}<span class="more">… '
            f"+{len(s) - len(cut):,} chars</span></td>")


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


# ---------------------------------------------------------------------------------------------
# filters


_NO_THRESHOLD = "higher = cleaner, no threshold"


def _direction(f: PairFilter) -> str:
    """"≥ 0.5", "≤ 3", or, without a threshold, the orientation of the score."""
    if f.threshold is None:
        return _NO_THRESHOLD if f.clean_high else "lower = cleaner, no threshold"
    s = f"{'≥' if f.clean_high else '≤'} {fmt_num(f.threshold)}"
    try:
        if bool(np.asarray(f.accept(np.array([np.nan])))[0]):
            s += " (NaN passes)"
    except Exception:  # a filter whose accept() needs more than a score column
        pass
    return s


def _kind(f: PairFilter) -> str:
    return {"score": "graded score", "feature": "feature"}.get(f.kind, "rule")


def _combined_desc(filters: Sequence[PairFilter], selection: Selection) -> str:
    if selection.combine == "model":
        return ("0 when a rule fails, else the probability that the pair is clean (the model's trained combination "
                "of the graded scores and features; higher = cleaner)")
    graded = [f.name for f in filters if f.kind == "score"]
    if graded:
        s = "sum of " + " + ".join(graded)
        if selection.normalize:
            s += ", each min-max normalised"
        return s + " (higher = cleaner)"
    if any(f.threshold is not None for f in filters):
        return "share of the rules passed (1 = all)"
    return "1 for every pair (no rule)"


def _selection_desc(selection: Selection) -> str | None:
    parts = []
    if selection.threshold is not None:
        parts.append(f"≥ {fmt_num(selection.threshold)}")
    if selection.top_fraction is not None:
        parts.append(f"best {100 * selection.top_fraction:g}%")
    if selection.token_budget is not None:
        parts.append(f"best up to {selection.token_budget:,} target tokens")
    return ", then ".join(parts) if parts else None


# ---------------------------------------------------------------------------------------------
# histograms


@dataclass
class _Hist:
    edges: np.ndarray
    counts: np.ndarray
    dropped: np.ndarray | None
    below: int
    above: int
    integer: bool
    line: float | None  # where the threshold is drawn (None: no threshold, or off the chart)
    off_chart: str | None  # "left"/"right" when the threshold lies far outside the data


def _histogram(vals: np.ndarray, dropped: np.ndarray | None, threshold: float | None,
               clean_high: bool) -> _Hist:
    """Bins for the finite ``vals``: one per integer for integer scores on a short range (with
    at least one failing value beside the threshold), otherwise up to 40 bins of a round
    width. The range covers the threshold when it lies near the data, and leaves out far
    outliers and a long tail on the failing side of the threshold (counted into the first or
    last bar, and said so under the chart)."""
    n = len(vals)
    lo, hi = float(vals.min()), float(vals.max())
    integer = bool(np.all(vals == np.round(vals)))
    short = integer and hi - lo <= 60  # one bar per value, nothing left out
    a, b = lo, hi
    if not short and n >= 50 and hi > lo:
        q_lo, q_hi = (float(x) for x in np.quantile(vals, [0.005, 0.995]))
        central = q_hi - q_lo
        if central > 0:  # a few far outliers would squeeze the bulk into a bin or two
            if q_lo - lo > central:
                a = q_lo
            if hi - q_hi > central:
                b = q_hi
    line, off = None, None
    t = threshold if threshold is not None and math.isfinite(threshold) else None
    if t is not None and not short and a < t < b:
        # a failing side far longer than the clean side: show twice the clean side's width of it
        if not clean_high and b - t > 3 * (t - a):
            b = t + 2 * (t - a)
        elif clean_high and t - a > 3 * (b - t):
            a = t - 2 * (b - t)
    if t is not None:
        span = max(b - a, 1.0 if integer else abs(a) * 0.1 or 1.0)
        if t < a - 2 * span:
            off = "left"
        elif t > b + 2 * span:
            off = "right"
        else:
            a, b = min(a, t), max(b, t)
            if integer and b - a <= 60:  # show the first failing value too
                if clean_high:
                    a = min(a, math.ceil(t) - 1)
                else:
                    b = max(b, math.floor(t) + 1)
    if integer and b - a <= 60:
        edges = np.arange(math.floor(a), math.ceil(b) + 2, dtype=np.float64) - 0.5
    else:
        if b <= a:  # a constant non-integer column
            pad = abs(a) * 0.05 or 0.5
            a, b = a - pad, b + pad
        nb = min(40, max(8, int(math.sqrt(n))))
        step = _nice((b - a) / nb)
        if integer:
            step = max(1.0, step)
            start = math.floor(a / step) * step - 0.5
        else:
            start = math.floor(a / step) * step
        k = max(1, math.ceil((b - start) / step - 1e-9))
        edges = start + step * np.arange(k + 1, dtype=np.float64)
        if edges[-1] < b:
            edges = np.append(edges, edges[-1] + step)
    if t is not None and off is None:
        # with integer scores, draw the line between the last clean value and the first failing one
        line = (math.ceil(t) - 0.5 if clean_high else math.floor(t) + 0.5) if integer else t
        line = min(max(line, edges[0]), edges[-1])
    below = int((vals < edges[0]).sum())
    above = int((vals > edges[-1]).sum())
    counts, _ = np.histogram(np.clip(vals, edges[0], edges[-1]), edges)
    dcounts = None
    if dropped is not None:
        dcounts, _ = np.histogram(np.clip(dropped, edges[0], edges[-1]), edges)
    return _Hist(edges, counts, dcounts, below, above, integer, line, off)


W, H = 580, 250
ML, MR, MT, MB = 58, 16, 30, 40


def _svg(h: _Hist, *, name: str, clean_high: bool, line_label: str | None) -> str:
    pw, ph = W - ML - MR, H - MT - MB
    x0, x1 = float(h.edges[0]), float(h.edges[-1])

    def X(v: float) -> float:
        return ML + (v - x0) / (x1 - x0) * pw

    top = max(int(h.counts.max()), 1)
    ystep = _nice(top / 4, up=True)
    if ystep < 1:
        ystep = 1.0
    ymax = ystep * math.ceil(top * 1.1 / ystep)

    def Y(c: float) -> float:
        return MT + ph - c / ymax * ph

    out = [f'<svg viewBox="0 0 {W} {H}" role="img" aria-label="histogram of {_e(name)}" '
           f'xmlns="http://www.w3.org/2000/svg">']
    # failing side of the threshold
    if h.line is not None:
        lx = X(h.line)
        if clean_high:
            out.append(f'<rect class="fail-zone" x="{ML:.1f}" y="{MT}" width="{lx - ML:.1f}" height="{ph}"/>')
        else:
            out.append(f'<rect class="fail-zone" x="{lx:.1f}" y="{MT}" width="{ML + pw - lx:.1f}" height="{ph}"/>')
    # grid and y axis
    yt = 0.0
    while yt <= ymax + 1e-9:
        y = Y(yt)
        out.append(f'<line class="grid" x1="{ML}" x2="{ML + pw}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{ML - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt_num(yt)}</text>')
        yt += ystep
    out.append(f'<text class="axis-title" transform="translate(13 {MT + ph / 2:.1f}) rotate(-90)" '
               'text-anchor="middle">pairs</text>')
    out += _bars(h, name, X, ymax, ph)
    # x axis
    out.append(f'<line class="axis" x1="{ML}" x2="{ML + pw}" y1="{MT + ph}" y2="{MT + ph}"/>')
    if h.integer and len(h.edges) - 1 <= 60 and np.all(np.diff(h.edges) == 1):
        xt = _ticks(x0 + 0.5, x1 - 0.5, 8, integer=True)
    else:
        xt = _ticks(x0, x1, 7, integer=h.integer)
    for v in xt:
        x = X(v)
        out.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{MT + ph}" y2="{MT + ph + 4}"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{MT + ph + 17}" text-anchor="middle">{fmt_num(v)}</text>')
    out.append(f'<text class="axis-title" x="{ML + pw / 2:.1f}" y="{H - 5}" text-anchor="middle">{_e(name)}</text>')
    out += _threshold_marks(h, X(h.line) if h.line is not None else None, pw, ph, line_label)
    out.append("</svg>")
    return "".join(out)


def _bars(h: _Hist, name: str, X, ymax: float, ph: float) -> list[str]:
    """The histogram's bars (kept below, dropped above), each with its tooltip and, for a few
    bins, its count."""
    out: list[str] = []
    nbins = len(h.counts)
    label_counts = nbins <= 14
    few = h.integer and nbins <= 6 and bool(np.all(np.diff(h.edges) == 1))
    for i in range(nbins):
        c = int(h.counts[i])
        if c == 0:
            continue
        a, b = float(h.edges[i]), float(h.edges[i + 1])
        bx, bw = X(a) + 0.5, max(X(b) - X(a) - 1.0, 1.0)
        if few:  # a handful of integer values: narrower bars, as in a bar chart
            bx, bw = bx + bw * 0.2, bw * 0.6
        d = int(h.dropped[i]) if h.dropped is not None else 0
        kept = c - d
        hk = kept / ymax * ph
        hd = d / ymax * ph
        # a bin that holds a few pairs stays visible
        if 0 < hk < 1.5:
            hk = 1.5
        if 0 < hd < 1.5:
            hd = 1.5
        if h.integer and b - a == 1:
            rng = fmt_num((a + b) / 2)
        else:
            rng = f"{fmt_num(a)} to {fmt_num(b)}"
        if i == 0 and h.below:
            rng += f" (and {h.below:,} below)"
        if i == nbins - 1 and h.above:
            rng += f" (and {h.above:,} above)"
        tip = f"{name} {rng}: {c:,} pairs" + (f", {d:,} dropped" if h.dropped is not None else "")
        out.append(f"<g><title>{_e(tip)}</title>")
        base = MT + ph
        if hk > 0:
            out.append(f'<rect class="bar-kept" x="{bx:.1f}" y="{base - hk:.1f}" width="{bw:.1f}" height="{hk:.1f}"/>')
        if hd > 0:
            out.append(f'<rect class="bar-drop" x="{bx:.1f}" y="{base - hk - hd:.1f}" width="{bw:.1f}" '
                       f'height="{hd:.1f}"/>')
        out.append("</g>")
        if label_counts:
            out.append(f'<text class="count" x="{bx + bw / 2:.1f}" y="{base - hk - hd - 3:.1f}" '
                       f'text-anchor="middle">{fmt_num(c)}</text>')
    return out


def _threshold_marks(h: _Hist, lx: float | None, pw: float, ph: float, line_label: str | None) -> list[str]:
    """The threshold's line and label at ``lx``, or an arrow to it when it is off the chart."""
    out: list[str] = []
    if h.line is not None and line_label:
        out.append(f'<line class="threshold" x1="{lx:.1f}" x2="{lx:.1f}" y1="{MT - 6}" y2="{MT + ph}"/>')
        right = lx < ML + pw * 0.6
        tx = lx + 5 if right else lx - 5
        out.append(f'<text class="threshold-label" x="{tx:.1f}" y="{MT - 10}" '
                   f'text-anchor="{"start" if right else "end"}">{_e(line_label)}</text>')
    elif h.off_chart and line_label:
        if h.off_chart == "right":
            out.append(f'<text class="threshold-label" x="{ML + pw}" y="{MT - 10}" text-anchor="end">'
                       f"{_e(line_label)} →</text>")
        else:
            out.append(f'<text class="threshold-label" x="{ML}" y="{MT - 10}" text-anchor="start">← '
                       f"{_e(line_label)}</text>")
    return out


def _empty_svg(message: str) -> str:
    return (f'<svg viewBox="0 0 {W} {H}" role="img" aria-label="{_e(message)}" xmlns="http://www.w3.org/2000/svg">'
            f'<rect class="empty-plot" x="{ML}" y="{MT}" width="{W - ML - MR}" height="{H - MT - MB}"/>'
            f'<text class="tick" x="{ML + (W - ML - MR) / 2}" y="{MT + (H - MT - MB) / 2}" text-anchor="middle">'
            f"{_e(message)}</text></svg>")


def _score_card(name: str, col: np.ndarray, keep: np.ndarray | None, *, kind: str, direction: str,
                threshold: float | None, clean_high: bool, line_label: str | None, fail: int | None,
                extra: str = "", prefix: str = "clean when ") -> str:
    col = np.asarray(col, dtype=np.float64)
    n = len(col)
    nan = int(np.isnan(col).sum())
    inf = int(np.isinf(col).sum())
    finite = np.isfinite(col)
    vals = col[finite]
    stats = [f"{len(vals):,} values"]
    if nan:
        stats.append(f'<span class="nan">{nan:,} NaN</span> (not drawn)')
    else:
        stats.append("0 NaN")
    if inf:
        stats.append(f"{inf:,} infinite (not drawn)")
    notes = []
    if len(vals):
        q = np.quantile(vals, [0.5])
        stats += [f"min {fmt_num(vals.min())}", f"median {fmt_num(q[0])}", f"mean {fmt_num(vals.mean())}",
                  f"max {fmt_num(vals.max())}"]
        dropped = col[finite & ~keep] if keep is not None else None
        h = _histogram(vals, dropped, threshold, clean_high)
        svg = _svg(h, name=name, clean_high=clean_high, line_label=line_label)
        if h.below:
            notes.append(f"{h.below:,} value{'s' if h.below != 1 else ''} below {fmt_num(h.edges[0])} "
                         "counted in the first bar")
        if h.above:
            notes.append(f"{h.above:,} value{'s' if h.above != 1 else ''} above {fmt_num(h.edges[-1])} "
                         "counted in the last bar")
        if h.off_chart:
            notes.append(f"the threshold ({_e(line_label or '')}) lies far to the {h.off_chart} of the values")
    else:
        svg = _empty_svg("no pairs" if n == 0 else "no finite value")
    head = (f'<div class="card-head"><h3>{_e(name)}</h3><span class="tag">{_e(kind)}</span></div>'
            f'<p class="dir">{_e(prefix)}<b>{_e(direction)}</b>'
            + (f' · <span class="failn">{fail:,} fail it ({_pct(fail, n)})</span>' if fail else "")
            + (f" · {extra}" if extra else "") + "</p>")
    foot = f'<p class="stats">{" · ".join(stats)}</p>'
    if notes:
        foot += f'<p class="note">{"; ".join(notes)}.</p>'
    return f'<section class="card" id="score-{_e(name)}">{head}{svg}{foot}</section>'


# ---------------------------------------------------------------------------------------------
# the page


CSS = """
:root { --kept: #4c78a8; --drop: #e45756; --ink: #1f2328; --muted: #656d76; --line: #d8dee4;
        --soft: #f6f8fa; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", sans-serif; }
main { max-width: 1260px; margin: 0 auto; padding: 22px 28px 56px; }
header h1 { font-size: 23px; margin: 0 0 2px; }
header .sub { color: var(--muted); margin: 0 0 10px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 16px; font-weight: 500; }
nav a:hover { text-decoration: underline; }
h2 { font-size: 18px; margin: 30px 0 10px; padding-bottom: 5px; border-bottom: 1px solid var(--line); }
.tiles { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.tile { border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px; min-width: 150px; background: var(--soft); }
.tile .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.tile .v { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.tile .v small { font-size: 14px; font-weight: 500; color: var(--muted); }
.tile.kept .v { color: var(--kept); } .tile.drop .v { color: var(--drop); }
dl.info { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; margin: 6px 0 14px; }
dl.info dt { color: var(--muted); } dl.info dd { margin: 0; overflow-wrap: anywhere; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--soft); font-weight: 600; font-size: 13px; border-bottom: 1px solid #c4ccd4; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: 600; border-top: 1px solid #c4ccd4; border-bottom: none; }
.filters td.name { font-weight: 600; white-space: nowrap; }
.filters a { color: inherit; text-decoration: none; border-bottom: 1px dotted var(--muted); }
.share { display: flex; align-items: center; gap: 8px; min-width: 150px; }
.wrap { overflow-x: auto; }
@media (max-width: 960px) { .share { min-width: 60px; } .share .track { display: none; } }
.share .track { flex: 1; height: 8px; background: #eef1f4; border-radius: 4px; overflow: hidden; }
.share .fill { display: block; height: 100%; background: var(--drop); }
.share .pc { width: 46px; text-align: right; font-variant-numeric: tabular-nums; color: var(--muted); font-size: 12.5px; }
.muted { color: var(--muted); }
.nowrap { white-space: nowrap; }
.zero { color: #a0a8b0; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 20px; align-items: center; margin: 4px 0 14px;
          color: var(--muted); font-size: 13px; }
.legend .sw { display: inline-block; width: 14px; height: 11px; vertical-align: -1px; margin-right: 6px; border-radius: 2px; }
.legend .sw.kept { background: var(--kept); } .legend .sw.drop { background: var(--drop); }
.legend .sw.zone { background: rgba(228, 87, 86, .12); border: 1px solid rgba(228, 87, 86, .35); }
.legend .sw.thr { width: 0; height: 14px; border-left: 2px dashed #333; border-radius: 0; vertical-align: -3px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr)); gap: 16px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px 10px; background: #fff; }
.card-head { display: flex; align-items: baseline; gap: 10px; }
.card h3 { margin: 0; font-size: 16px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.tag { font-size: 11.5px; color: var(--muted); border: 1px solid var(--line); border-radius: 10px; padding: 0 8px; }
.dir { margin: 3px 0 4px; color: var(--muted); font-size: 13px; } .dir b { color: var(--ink); }
.failn { color: var(--drop); }
.stats { margin: 2px 0 0; color: var(--muted); font-size: 12.5px; font-variant-numeric: tabular-nums; }
.stats .nan { color: #9a6700; font-weight: 600; }
.note { margin: 2px 0 0; color: #9a6700; font-size: 12.5px; }
svg { display: block; width: 100%; height: auto; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", sans-serif; }
svg .tick { font-size: 11px; fill: #57606a; }
svg .count { font-size: 10px; fill: #57606a; }
svg .axis-title { font-size: 11.5px; fill: #57606a; }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .axis { stroke: #8c959f; stroke-width: 1; }
svg .bar-kept { fill: var(--kept); } svg .bar-drop { fill: var(--drop); }
svg g:hover rect { opacity: .8; }
svg .fail-zone { fill: rgba(228, 87, 86, .09); }
svg .threshold { stroke: #24292f; stroke-width: 1.5; stroke-dasharray: 5 3; }
svg .threshold-label { font-size: 11.5px; font-weight: 600; fill: #24292f; }
svg .empty-plot { fill: var(--soft); stroke: var(--line); }
.reason { margin-top: 22px; }
.reason h3 { font-size: 15px; margin: 0 0 2px; }
.reason h3 code { font-size: 14px; background: var(--soft); border: 1px solid var(--line); border-radius: 4px; padding: 0 5px; }
.reason p { margin: 0 0 8px; color: var(--muted); font-size: 13px; }
table.ex { table-layout: fixed; font-size: 13px; }
table.ex td.text { overflow-wrap: anywhere; }
table.ex td.cut { cursor: help; }
table.ex tbody tr:nth-child(even) td { background: #fafbfc; }
.more { color: var(--muted); font-size: 11.5px; white-space: nowrap; }
.ctl { color: #cf222e; background: #ffebe9; border-radius: 3px; padding: 0 2px; font-size: 11px; }
.sc { display: inline-block; white-space: nowrap; margin-right: 12px; font-variant-numeric: tabular-nums; }
.sc .n { color: var(--muted); font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.sc.failed { color: var(--drop); } .sc.failed .n { color: var(--drop); } .sc.first { font-weight: 700; }
.ul { margin: 4px 0 0 18px; padding: 0; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
"""


def _share(n: int, total: int) -> str:
    w = 100 * n / total if total else 0.0
    return (f'<div class="share"><span class="track"><span class="fill" style="width:{w:.2f}%"></span></span>'
            f'<span class="pc">{_pct(n, total)}</span></div>')


def _count(n: int) -> str:
    return '<span class="zero">0</span>' if n == 0 else f"{n:,}"


def _scores_cell(ex: Example, filters: Sequence[PairFilter], reason: int, failing: list[bool]) -> str:
    """The scores that matter for a dropped pair: those of the filters it fails (the first in
    bold), the graded ones and the combined score; every score in the tooltip."""
    everything = " · ".join(f"{f.name} {fmt_num(v)}" for f, v in zip(filters, ex.scores))
    everything += f" · score {fmt_num(ex.total)}"
    parts = []
    for i, (f, v) in enumerate(zip(filters, ex.scores)):
        if failing[i] or f.kind == "score":
            cls = "sc" + (" failed" if failing[i] else "") + (" first" if i == reason else "")
            parts.append(f'<span class="{cls}"><span class="n">{_e(f.name)}</span> {fmt_num(v)}</span>')
    cls = "sc first failed" if reason >= len(filters) else "sc"
    parts.append(f'<span class="{cls}"><span class="n">score</span> {fmt_num(ex.total)}</span>')
    return f'<td title="{_e(everything)}">{"".join(parts)}</td>'


def render_report(
    *,
    filters: Sequence[PairFilter],
    table: np.ndarray,
    total: np.ndarray,
    keep: np.ndarray | None,
    reasons: Sequence[str],
    report: FilterReport,
    selection: Selection,
    examples: Examples | None = None,
    title: str | None = None,
    info: dict[str, str] | None = None,
    filtering: bool = True,
) -> str:
    """The report page: ``table`` holds one column per filter (pipeline order), ``total`` the
    combined score, ``keep`` the decisions (``None``: a run that only scores), ``reasons`` the
    drop reasons (the filters' then the selection's), ``report`` the counts, ``examples`` the
    dropped pairs per reason, ``info`` lines shown under the title (input, outputs, ...). Its
    sections: the header, the summary, the filters' table, the histograms, the dropped pairs."""
    from bimine import __version__  # the package root: complete only once imported

    n = report.pairs
    command = "filter" if filtering else "score"
    title = title or f"bimine {command} report"
    table = np.asarray(table, dtype=np.float64).reshape(n, len(filters))
    keep_arr = np.asarray(keep, dtype=bool) if (filtering and keep is not None) else None
    failing_cols = []
    for i, f in enumerate(filters):
        failing_cols.append(~np.asarray(f.accept(table[:, i]), dtype=bool) if n else np.zeros(0, dtype=bool))
    c = _Page(filters, table, total, keep_arr, reasons, report, selection, examples, filtering, n,
              [int(x.sum()) for x in failing_cols], _selection_desc(selection) if filtering else None)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title><style>{CSS}</style></head><body><main>"]
    when = datetime.now().strftime("%Y-%m-%d %H:%M")
    out.append(f'<header><h1>{_e(title)}</h1><p class="sub">bimine {_e(command)} · {when} · bimine '
               f"{_e(__version__)}</p>")
    out.append('<nav><a href="#summary">Summary</a><a href="#scores">Score histograms</a>'
               + ('<a href="#dropped">Dropped pairs</a>' if filtering else "") + "</nav></header>")
    out += _summary(c, info) + _filters_table(c) + _histograms(c)
    if filtering:
        out += _dropped(c)
    out.append("<footer>Written by bimine " + _e(__version__) + ". Self-contained: no script, nothing loaded "
               "from elsewhere.</footer></main></body></html>")
    return "\n".join(out) + "\n"


@dataclass
class _Page:
    """What the sections of :func:`render_report` read."""

    filters: Sequence[PairFilter]
    table: np.ndarray
    total: np.ndarray
    keep_arr: np.ndarray | None
    reasons: Sequence[str]
    report: FilterReport
    selection: Selection
    examples: Examples | None
    filtering: bool
    n: int
    fail_counts: list[int]
    sel_desc: str | None


def _summary(c: _Page, info: dict[str, str] | None) -> list[str]:
    """The tiles (pairs, kept, dropped, filters), the run's lines and its notes."""
    n, report, filtering, filters = c.n, c.report, c.filtering, c.filters
    out: list[str] = []
    out.append('<h2 id="summary">Summary</h2><div class="tiles">')
    out.append(f'<div class="tile"><div class="k">pairs</div><div class="v">{n:,}</div></div>')
    if filtering:
        dropped = n - report.kept
        out.append(f'<div class="tile kept"><div class="k">kept</div><div class="v">{report.kept:,} '
                   f"<small>{_pct(report.kept, n)}</small></div></div>")
        out.append(f'<div class="tile drop"><div class="k">dropped</div><div class="v">{dropped:,} '
                   f"<small>{_pct(dropped, n)}</small></div></div>")
    out.append(f'<div class="tile"><div class="k">filters</div><div class="v">{len(filters)}</div></div></div>')
    if info:
        out.append('<dl class="info">')
        for k, v in info.items():
            if v:
                out.append(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>")
        out.append("</dl>")
    if report.notes or report.warnings:
        out.append('<ul class="ul note">' + "".join(f"<li><b>warning:</b> {_e(x)}</li>" for x in report.warnings)
                   + "".join(f"<li>{_e(x)}</li>" for x in report.notes) + "</ul>")

    return out


def _filters_table(c: _Page) -> list[str]:
    """One row per filter (and the selection): what fails it, what it dropped first, its reason."""
    n, report, filtering, filters, reasons = c.n, c.report, c.filtering, c.filters, c.reasons
    fail_counts, sel_desc = c.fail_counts, c.sel_desc
    out: list[str] = []
    head = ["#", "filter", "kind", "clean when", "fail it"]
    if filtering:
        head += ["dropped first", "share of pairs dropped"]
    head.append("reason written when dropped" if filtering else "reason")
    num_cols = {"#", "fail it", "dropped first"}
    out.append('<div class="wrap"><table class="filters"><thead><tr>'
               + "".join(f'<th class="num">{h}</th>' if h in num_cols else f"<th>{h}</th>" for h in head)
               + "</tr></thead><tbody>")
    for i, f in enumerate(filters):
        cells = [f'<td class="num muted">{i + 1}</td>',
                 f'<td class="name"><a href="#score-{_e(f.name)}"><code>{_e(f.name)}</code></a></td>',
                 f'<td class="nowrap">{_kind(f)}</td>', f"<td>{_e(_direction(f))}</td>",
                 f'<td class="num">{_count(fail_counts[i])}</td>']
        if filtering:
            d = int(report.dropped_by.get(f.name, 0))
            cells += [f'<td class="num">{_count(d)}</td>', f"<td>{_share(d, n)}</td>"]
        cells.append(f'<td class="muted">{_e(f.reason) if f.threshold is not None else "—"}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    if sel_desc is not None:
        d = int(report.dropped_by.get("score", 0))
        out.append(f'<tr><td class="num muted">{len(filters) + 1}</td>'
                   '<td class="name"><a href="#score-score"><code>score</code></a></td><td>selection</td>'
                   f'<td>{_e(sel_desc)}</td><td class="num">{_count(int(report.failed.get("score", 0)))}</td>'
                   f'<td class="num">{_count(d)}</td><td>{_share(d, n)}</td>'
                   f'<td class="muted">{_e(reasons[-1]) if len(reasons) > len(filters) else ""}</td></tr>')
    if filtering:
        dropped = n - report.kept
        out.append(f'<tr class="total"><td></td><td>all</td><td></td><td></td><td></td>'
                   f'<td class="num">{dropped:,}</td><td>{_share(dropped, n)}</td>'
                   f'<td class="muted">kept {report.kept:,} of {n:,}</td></tr>')
    out.append("</tbody></table></div>")
    out.append('<p class="muted" style="font-size:12.5px;margin-top:6px">'
               + ("<b>fail it</b>: pairs on the failing side of the filter's threshold; <b>dropped first</b>: "
                  "pairs whose first failing filter, in pipeline order, is this one (the reason written in "
                  "the output), so the column adds up to the pairs dropped." if filtering else
                  "<b>fail it</b>: pairs on the failing side of the filter's threshold (<code>score</code> "
                  "drops nothing; <code>bimine filter</code> would drop them).") + "</p>")

    return out


def _histograms(c: _Page) -> list[str]:
    """A histogram card per filter score, then one of the combined score."""
    filters, table, filtering, report, selection = c.filters, c.table, c.filtering, c.report, c.selection
    keep_arr, fail_counts, sel_desc, total = c.keep_arr, c.fail_counts, c.sel_desc, c.total
    out: list[str] = []
    out.append('<h2 id="scores">Score histograms</h2><div class="legend">')
    if filtering:
        out.append('<span><span class="sw kept"></span>kept pairs</span>'
                   '<span><span class="sw drop"></span>dropped pairs (by any filter)</span>')
    else:
        out.append('<span><span class="sw kept"></span>pairs</span>')
    out.append('<span><span class="sw thr"></span>threshold</span>'
               '<span><span class="sw zone"></span>failing side of the threshold</span>'
               "<span>NaN values are counted under each chart, not drawn; hover a bar for its range and count"
               "</span></div>")
    out.append('<div class="grid">')
    for i, f in enumerate(filters):
        line_label = None
        if f.threshold is not None:
            line_label = f"clean {'≥' if f.clean_high else '≤'} {fmt_num(f.threshold)}"
        out.append(_score_card(f.name, table[:, i], keep_arr, kind=_kind(f), direction=_direction(f),
                               threshold=f.threshold, clean_high=f.clean_high, line_label=line_label,
                               fail=fail_counts[i], prefix="clean when " if f.threshold is not None else ""))
    # the combined score: its threshold, or the lowest score a top-fraction / budget selection kept
    thr, label, prefix, direction = None, None, "", _NO_THRESHOLD
    if filtering and selection.threshold is not None:
        thr, label = selection.threshold, f"clean ≥ {fmt_num(selection.threshold)}"
        prefix, direction = "clean when ", f"≥ {fmt_num(selection.threshold)}"
    if filtering and sel_desc and (selection.top_fraction is not None or selection.token_budget is not None):
        prefix, direction = "selection: ", sel_desc
        if keep_arr is not None and keep_arr.any():
            thr = float(np.asarray(total)[keep_arr].min())
            label = f"lowest kept {fmt_num(thr)}"
    fail_total = int(report.failed.get("score", 0)) if filtering else 0
    out.append(_score_card("score", np.asarray(total, dtype=np.float64), keep_arr,
                           kind="combined: " + _combined_desc(filters, selection), direction=direction,
                           threshold=thr, clean_high=True, line_label=label, fail=fail_total, prefix=prefix))
    out.append("</div>")

    return out


def _dropped(c: _Page) -> list[str]:
    """The dropped pairs of each reason: how many, and the first examples with their scores."""
    filters, n, report, reasons, examples = c.filters, c.n, c.report, c.reasons, c.examples
    out: list[str] = []
    out.append('<h2 id="dropped">Dropped pairs, by reason</h2>')
    per = examples.per_reason if examples is not None else EXAMPLES
    names = [f.name for f in filters] + ["score"]
    any_drop = False
    for r, reason in enumerate(reasons):
        name = names[min(r, len(names) - 1)]
        d = int(report.dropped_by.get(name, 0))
        if d == 0:
            continue
        any_drop = True
        exs = examples.by_reason.get(r, []) if examples is not None else []
        shown = (f"all {len(exs):,} shown" if len(exs) == d else
                 f"the first {len(exs):,} in input order shown")
        out.append(f'<section class="reason" id="drop-{_e(name)}"><h3><code>{_e(name)}</code> {_e(reason)}</h3>'
                   f"<p>{d:,} pair{'s' if d != 1 else ''} dropped ({_pct(d, n)} of all); {shown}. "
                   "Hover a cut sentence for the whole text.</p>")
        if exs:
            out.append('<table class="ex"><colgroup><col style="width:74px"><col style="width:34%">'
                       '<col style="width:34%"><col></colgroup><thead><tr><th class="num">line</th>'
                       "<th>source</th><th>target</th><th>scores (failed in red)</th></tr></thead><tbody>")
            for ex in exs:
                failing = []
                for i, f in enumerate(filters):
                    try:
                        failing.append(not bool(np.asarray(f.accept(np.array([ex.scores[i]])))[0]))
                    except Exception:
                        failing.append(i == r)
                out.append(f'<tr><td class="num muted">{ex.line:,}</td>{_text_cell(ex.src)}'
                           f"{_text_cell(ex.tgt)}{_scores_cell(ex, filters, r, failing)}</tr>")
            out.append("</tbody></table>")
        out.append("</section>")
    if not any_drop:
        out.append('<p class="muted">No pair was dropped.</p>')
    elif per:
        out.append(f'<p class="muted" style="font-size:12.5px">Up to {per:,} examples per reason.</p>')
    return out
