"""Burmese written in the Zawgyi font encoding, converted to Unicode before an encoder reads it.

Zawgyi stores Burmese in the Myanmar block's code points, but in visual order and with other
meanings for many of them (the vowel E before its consonant, U+1060-1097 as stacked forms), so a
Zawgyi line is not the text any encoder was trained on. Much of the Burmese web is still written
in it: the NTREX Myanmar reference is 99.9 % Zawgyi, the training text (the Bible, catalogues)
0.25 %. Each line is tested on its own with Google's detector (``myanmartools``; Zawgyi when its
probability is above :data:`THRESHOLD`) and only a Zawgyi line is converted, with ICU's
``Zawgyi-my`` transform (Google's rules, shipped in CLDR; ``pyicu-wheels`` bundles ICU). The
transform must never see Unicode Burmese: it would scramble it (``မြန်မာ`` → ``မွနျမာ``).

The encoders call :func:`to_unicode` on their input (an inference step: the output files keep
the text as it was read, and training reads its text unconverted). A text without a Myanmar-block
code point costs one regular-expression scan of the joined batch.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

#: the Myanmar block (Burmese, Shan, Mon, Karen ... share it; the detector knows Burmese)
MYANMAR = re.compile("[\u1000-\u109f]")
#: a line is Zawgyi when the detector's probability is above this (Google's own cut-off)
THRESHOLD = 0.95
#: what :func:`to_unicode` does, in the keys of caches whose vectors it changes
TRANSFORM = "icu-zawgyi-my"

_local = threading.local()


@lru_cache(maxsize=1)
def _detector():
    from myanmartools import ZawgyiDetector  # loaded on use: only for Myanmar text

    return ZawgyiDetector()


def _transliterator():
    """One ICU transliterator a thread (ICU's are not to be shared between threads)."""
    t = getattr(_local, "zawgyi", None)
    if t is None:
        import icu  # loaded on use: only for Zawgyi text

        t = _local.zawgyi = icu.Transliterator.createInstance("Zawgyi-my")
    return t


def zawgyi_probability(text: str) -> float:
    """The detector's probability that ``text`` is Zawgyi (0.0 without a Myanmar code point)."""
    if not MYANMAR.search(text):
        return 0.0
    return float(_detector().get_zawgyi_probability(text))


def is_zawgyi(text: str) -> bool:
    """Whether :func:`to_unicode` converts ``text``."""
    return zawgyi_probability(text) > THRESHOLD


def convert(text: str) -> str:
    """``text`` from Zawgyi to Unicode, unconditionally (:func:`to_unicode` tests it first)."""
    return _transliterator().transliterate(text)


def to_unicode(sentences: list[str]) -> list[str]:
    """``sentences`` with each Zawgyi line converted to Unicode; the very list given when none
    is (no copy for the batches without Burmese, nearly all of them)."""
    if not sentences or not MYANMAR.search("\n".join(sentences)):
        return sentences
    out = None
    for i, s in enumerate(sentences):
        if is_zawgyi(s):
            if out is None:
                out = list(sentences)
            out[i] = convert(s)
    return sentences if out is None else out


def cache_text(text: str) -> str:
    """The text a vector cache should key ``text``'s vector by: ``text`` itself, or for a line
    the encoders convert, the transform's name and the text, so that a vector cached before the
    conversion (of the Zawgyi code points as they stand) is never read for it."""
    return f"\x00{TRANSFORM}\x00{text}" if is_zawgyi(text) else text
