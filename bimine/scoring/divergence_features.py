"""The parallel vs non-parallel classifier of Munteanu & Marcu (2005), a baseline of paper 004
(§5.2): a linear classifier over length, word-alignment and dictionary features of a pair.

Features of a pair ``(e, f)`` (words: tokens holding a letter or digit; punctuation is left
out of lengths and alignments):

* length: ``|f|``, ``|e|``, ``|f| / |e|``, ``|e| / |f|``;
* for each symmetrisation of the two IBM Model 2 directions (intersection, union,
  grow-diag-final-and, as in 004's footnote) and for each side: the count and the ratio of
  unaligned words, the three largest fertilities (links per word, 0 when fewer words), the
  longest run of consecutive unaligned words and of consecutive aligned words;
* dictionary: the share of the words of ``e`` that have a translation in ``f`` and the reverse.

The classifier is a logistic regression on standardised features with an L2 penalty, fitted
with SciPy's L-BFGS (a maintained optimiser; the model is 49 numbers); its probability of
"parallel" is the score (higher = more equivalent).
"""

from __future__ import annotations

import numpy as np

from bimine.scoring.ibm import WordAligner, words
from bimine.scoring.logistic import sigmoid
from bimine.text.tokens import TOKENS_VERSION

SYMS = ("intersection", "union", "grow-diag-final-and")
SIDE_FEATURES = ("unaligned", "unaligned_ratio", "fert1", "fert2", "fert3", "longest_unaligned", "longest_aligned")


def feature_names() -> list[str]:
    names = ["len_f", "len_e", "ratio_fe", "ratio_ef"]
    for sym in SYMS:
        for side in ("e", "f"):
            names += [f"{sym}.{side}.{x}" for x in SIDE_FEATURES]
    return names + ["dict_cov_e", "dict_cov_f"]


def _runs(flags: list[bool], value: bool) -> int:
    best = cur = 0
    for x in flags:
        cur = cur + 1 if x == value else 0
        best = max(best, cur)
    return best


def _side(n: int, positions: list[int]) -> list[float]:
    fert = np.bincount(np.asarray(positions, dtype=np.int64), minlength=n) if n else np.zeros(0, np.int64)
    aligned = [bool(x) for x in fert]
    unal = n - sum(aligned)
    top = sorted(fert.tolist(), reverse=True)[:3] + [0, 0, 0]
    return [float(unal), unal / n if n else 0.0, float(top[0]), float(top[1]), float(top[2]),
            float(_runs(aligned, False)), float(_runs(aligned, True))]


def _coverage(ws: list[str], other: set[str], trans: dict[str, set[str]]) -> float:
    if not ws:
        return 0.0
    return sum(1 for w in ws if trans.get(w, set()) & other) / len(ws)


def feature_tokens(s: str, version: int = TOKENS_VERSION) -> list[str]:
    """The word tokens of ``s`` the features look at (punctuation dropped, at most 200), in token
    version ``version`` (the aligner's)."""
    return words(s, 200, version)


def pair_features(src: list[str], tgt: list[str], aligner: WordAligner) -> np.ndarray:
    """``(n, 48)`` float64 features (:func:`feature_names`) of the pairs, links and dictionary
    from the IBM Model 2 ``aligner``."""
    s_tok = [feature_tokens(x, aligner.token_version) for x in src]
    t_tok = [feature_tokens(x, aligner.token_version) for x in tgt]
    links = {sym: aligner.align(s_tok, t_tok, sym) for sym in SYMS}
    return features_from_links(s_tok, t_tok, links, aligner.translations("src"), aligner.translations("tgt"))


def features_from_links(s_tok: list[list[str]], t_tok: list[list[str]], links: dict[str, list[set]],
                        fwd: dict[str, set[str]], bwd: dict[str, set[str]]) -> np.ndarray:
    """The features of tokenised pairs given their links ``(i, j)`` under each of :data:`SYMS`
    and the dictionary in both directions (``fwd``: source word -> its target translations)."""
    out = np.zeros((len(s_tok), len(feature_names())), np.float64)
    for k, (e, f) in enumerate(zip(s_tok, t_tok)):
        le, lf = len(e), len(f)
        row = [float(lf), float(le), lf / le if le else 0.0, le / lf if lf else 0.0]
        for sym in SYMS:
            al = links[sym][k]
            row += _side(le, [i for i, _ in al])
            row += _side(lf, [j for _, j in al])
        row += [_coverage(e, set(f), fwd), _coverage(f, set(e), bwd)]
        out[k] = row
    return out


class LinearClassifier:
    """Logistic regression on standardised features (mean, std from the training data)."""

    def __init__(self, mean: np.ndarray, std: np.ndarray, w: np.ndarray, b: float) -> None:
        self.mean, self.std, self.w, self.b = mean, std, w, float(b)

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, l2: float = 1.0, sample_weight: np.ndarray | None = None,
            ) -> LinearClassifier:
        from scipy.optimize import minimize  # loaded on use: SciPy is heavy or optional

        mean = x.mean(axis=0)
        std = x.std(axis=0)
        std[std == 0] = 1.0
        z = (x - mean) / std
        sw = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, np.float64)
        n = sw.sum()

        def loss(theta):
            w, b = theta[:-1], theta[-1]
            s = z @ w + b
            # log(1 + exp(-s)) for y=1, log(1 + exp(s)) for y=0, stably
            ll = np.logaddexp(0, np.where(y > 0.5, -s, s))
            p = sigmoid(s)
            g = sw * (p - y)
            return (sw @ ll) / n + 0.5 * l2 * (w @ w) / n, np.r_[z.T @ g / n + l2 * w / n, g.sum() / n]

        res = minimize(loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B", options={"maxiter": 1000})
        return cls(mean, std, res.x[:-1], res.x[-1])

    def predict(self, x: np.ndarray) -> np.ndarray:
        s = ((x - self.mean) / self.std) @ self.w + self.b
        return sigmoid(s)

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}.mean": self.mean, f"{prefix}.std": self.std, f"{prefix}.w": self.w,
                f"{prefix}.b": np.array([self.b])}

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray], prefix: str) -> LinearClassifier:
        return cls(a[f"{prefix}.mean"], a[f"{prefix}.std"], a[f"{prefix}.w"], float(a[f"{prefix}.b"][0]))
