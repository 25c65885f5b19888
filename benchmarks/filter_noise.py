"""Synthetic web-crawl noise for the filtering dev benchmark (issue 10, ``benchmarks.filter_dev``).

Clean pairs are lines of a line-aligned test set (newstest2013 en-xx). Each noisy pair is made
from one line ``i`` of it (``src[i]``, ``tgt[i]``), or from a list of boilerplate strings, by one
of these documented noise types, the kinds of pairs a web crawl hands a filter:

``misaligned``
    Misaligned neighbour: ``src[i]`` with the target of a line 1 or 2 away (``tgt[i+d]``,
    ``d`` in ±1, ±2): the same document, the same topic, the wrong sentence (a sentence aligner
    off by one, a dropped line). That target may also be in the mixture in its own clean pair,
    as in a crawl that aligned it twice.
``partial``
    Partial translation: the target cut after 30-70 % of its words (a truncated crawl line;
    half of the targets of at least 8 words), or one side holding two consecutive sentences
    while the other translates only the first (``src[i] + " " + src[i+1]`` with ``tgt[i]``, or
    the other way round): part of the pair has no counterpart.
``wrong_lang``
    Wrong language: the target replaced by the same line of the test set in a third language
    (newstest 2009-2013 is 4-way parallel: the English sides of en-fr, en-de and en-es are
    byte-identical), e.g. the German sentence for an en-fr pair: a perfect translation in
    the wrong language.
``untranslated``
    Untranslated copy: the target is the source, exact, with a cosmetic change (lower-cased,
    final punctuation dropped, a list dash in front) or with one word dropped.
``unrelated``
    Unrelated pair of similar length: ``src[i]`` with the target of a random line at least 50
    lines away whose length in characters is within ±20 % of ``tgt[i]``'s: what length-based
    rules cannot see (that target may also be in the mixture in its own pair).
``boilerplate``
    Web boilerplate (:data:`BOILERPLATE`, written for this benchmark: menu items, cookie
    notices, copyright lines, pagination): a string paired with its translation (half of
    them), with another boilerplate string (a quarter), or a menu bar of 3-5 items joined by
    ``|`` or ``>`` in both languages (a quarter). Correctly translated boilerplate is still
    noise for a training corpus: it is short, repeated on every page and teaches nothing.
``numbers``
    Changed numbers: the target with some of its digits replaced by other digits (at least
    one; a number's first digit never becomes 0); nothing but digits changes, so the pair
    reads as a translation and only the numbers disagree.

Every generator returns ``None`` when line ``i`` cannot give that noise (no digit to change, a
target too short to cut, no line of similar length...) and never returns a pair equal to the
clean pair of line ``i`` (compared after collapsing white space and case): the builder then
tries the next line. Everything is drawn from :class:`random.Random` streams seeded by the
caller's seed, so the same files and seed give the same mixture.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass

NOISE_TYPES = ("misaligned", "partial", "wrong_lang", "untranslated", "unrelated", "boilerplate", "numbers")

# (en, fr, de, es): written for this benchmark, in the style of the strings web crawls repeat
BOILERPLATE: list[tuple[str, str, str, str]] = [
    ("Click here", "Cliquez ici", "Hier klicken", "Haga clic aquí"),
    ("All rights reserved.", "Tous droits réservés.", "Alle Rechte vorbehalten.", "Todos los derechos reservados."),
    ("Home", "Accueil", "Startseite", "Inicio"),
    ("Contact us", "Contactez-nous", "Kontakt", "Contáctenos"),
    ("Privacy policy", "Politique de confidentialité", "Datenschutzerklärung", "Política de privacidad"),
    ("Terms of use", "Conditions d'utilisation", "Nutzungsbedingungen", "Condiciones de uso"),
    ("This website uses cookies to improve your experience.",
     "Ce site utilise des cookies pour améliorer votre expérience.",
     "Diese Website verwendet Cookies, um Ihr Erlebnis zu verbessern.",
     "Este sitio web utiliza cookies para mejorar su experiencia."),
    ("By continuing to browse this site, you agree to our use of cookies.",
     "En poursuivant votre navigation sur ce site, vous acceptez l'utilisation de cookies.",
     "Wenn Sie diese Website weiter nutzen, stimmen Sie der Verwendung von Cookies zu.",
     "Si continúa navegando por este sitio, acepta el uso de cookies."),
    ("Accept all cookies", "Accepter tous les cookies", "Alle Cookies akzeptieren", "Aceptar todas las cookies"),
    ("Read more", "Lire la suite", "Weiterlesen", "Leer más"),
    ("Log in", "Se connecter", "Anmelden", "Iniciar sesión"),
    ("Sign up for our newsletter", "Inscrivez-vous à notre newsletter", "Melden Sie sich für unseren Newsletter an",
     "Suscríbase a nuestro boletín"),
    ("Share this article", "Partager cet article", "Diesen Artikel teilen", "Compartir este artículo"),
    ("Add to cart", "Ajouter au panier", "In den Warenkorb", "Añadir al carrito"),
    ("Search", "Rechercher", "Suche", "Buscar"),
    ("Previous page", "Page précédente", "Vorherige Seite", "Página anterior"),
    ("Next", "Suivant", "Weiter", "Siguiente"),
    ("Back to top", "Retour en haut", "Nach oben", "Volver arriba"),
    ("Forgot your password?", "Mot de passe oublié ?", "Passwort vergessen?", "¿Olvidó su contraseña?"),
    ("Follow us on Facebook", "Suivez-nous sur Facebook", "Folgen Sie uns auf Facebook", "Síguenos en Facebook"),
    ("Leave a comment", "Laisser un commentaire", "Kommentar hinterlassen", "Deja un comentario"),
    ("Skip to main content", "Aller au contenu principal", "Zum Hauptinhalt springen",
     "Saltar al contenido principal"),
    ("Frequently asked questions", "Questions fréquentes", "Häufig gestellte Fragen", "Preguntas frecuentes"),
    ("Shopping cart", "Panier", "Warenkorb", "Carrito de compras"),
    ("My account", "Mon compte", "Mein Konto", "Mi cuenta"),
    ("Terms and conditions", "Conditions générales de vente", "Allgemeine Geschäftsbedingungen",
     "Términos y condiciones"),
    ("Legal notice", "Mentions légales", "Impressum", "Aviso legal"),
    ("Site map", "Plan du site", "Sitemap", "Mapa del sitio"),
    ("Print this page", "Imprimer cette page", "Diese Seite drucken", "Imprimir esta página"),
    ("Free shipping on all orders", "Livraison gratuite sur toutes les commandes",
     "Kostenloser Versand für alle Bestellungen", "Envío gratuito en todos los pedidos"),
    ("Subscribe", "S'abonner", "Abonnieren", "Suscribirse"),
    ("Download PDF", "Télécharger le PDF", "PDF herunterladen", "Descargar PDF"),
    ("Related articles", "Articles similaires", "Ähnliche Artikel", "Artículos relacionados"),
    ("Select your language", "Choisissez votre langue", "Sprache auswählen", "Seleccione su idioma"),
    ("JavaScript must be enabled to view this page.", "JavaScript doit être activé pour afficher cette page.",
     "JavaScript muss aktiviert sein, um diese Seite anzuzeigen.",
     "JavaScript debe estar habilitado para ver esta página."),
    ("Your cart is empty.", "Votre panier est vide.", "Ihr Warenkorb ist leer.", "Su carrito está vacío."),
    ("Page not found", "Page introuvable", "Seite nicht gefunden", "Página no encontrada"),
    ("Show all", "Tout afficher", "Alle anzeigen", "Mostrar todo"),
    ("Reply", "Répondre", "Antworten", "Responder"),
    ("Powered by WordPress", "Propulsé par WordPress", "Betrieben mit WordPress", "Funciona con WordPress"),
    ("Opening hours", "Heures d'ouverture", "Öffnungszeiten", "Horario de apertura"),
    ("Customer service", "Service client", "Kundenservice", "Atención al cliente"),
    ("Newsletter", "Lettre d'information", "Newsletter", "Boletín"),
    ("About us", "Qui sommes-nous ?", "Über uns", "Quiénes somos"),
]
# templates with numbers: {a} {b} {c} small numbers, {y} a year, {d} a day, {m} a month
BOILERPLATE_TEMPLATES: list[tuple[str, str, str, str]] = [
    ("Page {a} of {b}", "Page {a} sur {b}", "Seite {a} von {b}", "Página {a} de {b}"),
    ("© {y} All rights reserved.", "© {y} Tous droits réservés.", "© {y} Alle Rechte vorbehalten.",
     "© {y} Todos los derechos reservados."),
    ("{c} comments", "{c} commentaires", "{c} Kommentare", "{c} comentarios"),
    ("Posted on {d}/{m}/{y}", "Publié le {d}/{m}/{y}", "Veröffentlicht am {d}.{m}.{y}", "Publicado el {d}/{m}/{y}"),
    ("Showing {a}-{b} of {c} results", "Affichage de {a} à {b} sur {c} résultats", "{a}-{b} von {c} Ergebnissen",
     "Mostrando {a}-{b} de {c} resultados"),
]
BOILERPLATE_LANGS = ("en", "fr", "de", "es")


@dataclass(frozen=True)
class NoisyPair:
    """One pair of the mixture: ``label`` is ``clean`` or a noise type, ``line`` the 0-based line
    of the test set it was made from (-1 for boilerplate), ``detail`` the variant."""

    src: str
    tgt: str
    label: str
    line: int
    detail: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _norm(s: str) -> str:
    return " ".join(s.split()).casefold()


def _letters(s: str) -> str:
    return "".join(ch for ch in s.casefold() if ch.isalnum())


def _changed(src: list[str], tgt: list[str], i: int, new_src: str, new_tgt: str) -> bool:
    return (_norm(new_src), _norm(new_tgt)) != (_norm(src[i]), _norm(tgt[i]))


def misaligned(src: list[str], tgt: list[str], i: int, rng: random.Random) -> NoisyPair | None:
    """``src[i]`` with ``tgt[i+d]``, ``d`` drawn from ±1, ±2 (the first one that exists and holds
    another sentence: a different target, a different source)."""
    shifts = [-2, -1, 1, 2]
    rng.shuffle(shifts)
    for d in shifts:
        j = i + d
        if 0 <= j < len(tgt) and _norm(tgt[j]) != _norm(tgt[i]) and _norm(src[j]) != _norm(src[i]):
            return NoisyPair(src[i], tgt[j], "misaligned", i, f"shift {d:+d}")
    return None


_WORD_END = re.compile(r"\S+")


def partial(src: list[str], tgt: list[str], i: int, rng: random.Random) -> NoisyPair | None:
    """Half the time the target cut after 30-70 % of its words (targets of at least 8 words),
    else (and for shorter targets) one side the concatenation of lines ``i`` and ``i+1`` and
    the other side line ``i`` only. ``None`` only for a short target on the last line."""
    words = list(_WORD_END.finditer(tgt[i]))
    can_merge = i + 1 < len(src) and bool(src[i + 1].strip()) and bool(tgt[i + 1].strip())
    cut = len(words) >= 8 and (not can_merge or rng.random() < 0.5)
    if cut:
        k = min(max(1, round(rng.uniform(0.3, 0.7) * len(words))), len(words) - 1)
        return NoisyPair(src[i], tgt[i][: words[k - 1].end()], "partial", i, "target cut")
    if not can_merge:
        return None
    if rng.random() < 0.5:
        return NoisyPair(src[i] + " " + src[i + 1], tgt[i], "partial", i, "source holds two sentences")
    return NoisyPair(src[i], tgt[i] + " " + tgt[i + 1], "partial", i, "target holds two sentences")


def wrong_language(src: list[str], tgt: list[str], i: int, rng: random.Random,
                   others: dict[str, list[str]]) -> NoisyPair | None:
    """``tgt[i]`` replaced by line ``i`` in another language of ``others`` (a 4-way parallel
    test set: the same sentence, translated into the wrong language); ``None`` when that line
    has the same letters as the target or the source (a name, a number)."""
    langs = sorted(others)
    rng.shuffle(langs)
    for lang in langs:
        t = others[lang][i]
        if t.strip() and _letters(t) != _letters(tgt[i]) and _letters(t) != _letters(src[i]):
            return NoisyPair(src[i], t, "wrong_lang", i, lang)
    return None


_FINAL_PUNCT = re.compile(r"[.!?;:…]+[\"'»”’)]*\s*$")


def untranslated(src: list[str], tgt: list[str], i: int, rng: random.Random) -> NoisyPair | None:
    """The source as its own target: exact (a third), with a cosmetic change (a third:
    lower-cased, final punctuation dropped, or a list dash in front), or with one word dropped
    (a third, sources of at least 4 words). ``None`` when the clean target already has the
    source's letters (a name, a number: copying it is not noise)."""
    s = src[i]
    if not s.strip() or _letters(s) == _letters(tgt[i]):
        return None
    r = rng.random()
    if r < 1 / 3:
        t, detail = s, "exact copy"
    elif r < 2 / 3:
        options = ["lower-cased", "dash in front"] + (["final punctuation dropped"] if _FINAL_PUNCT.search(s) else [])
        detail = rng.choice(options)
        if detail == "lower-cased":
            t = s.lower()
        elif detail == "dash in front":
            t = "- " + s
        else:
            t = _FINAL_PUNCT.sub("", s)
    else:
        words = s.split()
        if len(words) < 4:
            t, detail = s, "exact copy"
        else:
            k = rng.randrange(len(words))
            t, detail = " ".join(words[:k] + words[k + 1:]), "copy with one word dropped"
    if not _changed(src, tgt, i, s, t):
        return None
    return NoisyPair(s, t, "untranslated", i, detail)


def unrelated(src: list[str], tgt: list[str], i: int, rng: random.Random, min_distance: int = 50,
              tolerance: float = 0.2, tries: int = 200) -> NoisyPair | None:
    """``src[i]`` with ``tgt[j]`` of a random line ``j`` at least ``min_distance`` lines away
    whose length in characters is within ``tolerance`` of ``len(tgt[i])``."""
    n = len(tgt)
    lo, hi = (1 - tolerance) * len(tgt[i]), (1 + tolerance) * len(tgt[i])
    for _ in range(tries):
        j = rng.randrange(n)
        if abs(j - i) < min_distance or not lo <= len(tgt[j]) <= hi:
            continue
        if _norm(tgt[j]) == _norm(tgt[i]) or _norm(src[j]) == _norm(src[i]):
            continue
        return NoisyPair(src[i], tgt[j], "unrelated", i, f"target of line {j}")
    return None


def _fill(template: tuple[str, str, str, str], rng: random.Random) -> tuple[str, ...]:
    a = rng.randint(1, 9)
    values = {"a": a, "b": a + rng.randint(1, 40), "c": rng.randint(2, 500), "y": rng.randint(1998, 2013),
              "d": rng.randint(1, 28), "m": rng.randint(1, 12)}
    return tuple(t.format(**values) for t in template)


def boilerplate(rng: random.Random, tgt_lang: str, src_lang: str = "en") -> NoisyPair:
    """A boilerplate pair (see the module docstring): translated (1/2), mismatched (1/4), or a
    translated menu bar (1/4); one in five translated pairs comes from a numbered template."""
    a, b = BOILERPLATE_LANGS.index(src_lang), BOILERPLATE_LANGS.index(tgt_lang)
    r = rng.random()
    if r < 0.5:
        if rng.random() < 0.2:
            item = _fill(rng.choice(BOILERPLATE_TEMPLATES), rng)
            return NoisyPair(item[a], item[b], "boilerplate", -1, "translated template")
        item = rng.choice(BOILERPLATE)
        return NoisyPair(item[a], item[b], "boilerplate", -1, "translated")
    if r < 0.75:
        x, y = rng.sample(range(len(BOILERPLATE)), 2)
        return NoisyPair(BOILERPLATE[x][a], BOILERPLATE[y][b], "boilerplate", -1, "mismatched")
    items = rng.sample(BOILERPLATE, rng.randint(3, 5))
    sep = rng.choice([" | ", " > "])
    return NoisyPair(sep.join(it[a] for it in items), sep.join(it[b] for it in items), "boilerplate", -1,
                     "menu bar")


def change_numbers(text: str, rng: random.Random, p: float = 0.3) -> str | None:
    """``text`` with some digits (each with probability ``p``, at least one) replaced by another
    digit; the first digit of a number of several digits never becomes 0. ``None`` without a
    digit. Only digits change: same length, same characters elsewhere."""
    positions = [k for k, ch in enumerate(text) if "0" <= ch <= "9"]
    if not positions:
        return None
    chosen = [k for k in positions if rng.random() < p] or [rng.choice(positions)]
    chars = list(text)
    for k in chosen:
        leading = (k == 0 or not text[k - 1].isdigit()) and k + 1 < len(text) and text[k + 1].isdigit()
        choices = [d for d in "0123456789" if d != text[k] and not (leading and d == "0")]
        chars[k] = rng.choice(choices)
    return "".join(chars)


def numbers(src: list[str], tgt: list[str], i: int, rng: random.Random) -> NoisyPair | None:
    """``tgt[i]`` with some of its ASCII digits changed (:func:`change_numbers`)."""
    t = change_numbers(tgt[i], rng)
    if t is None or not _changed(src, tgt, i, src[i], t):
        return None
    return NoisyPair(src[i], t, "numbers", i, "digits changed")


def make_noise(kind: str, src: list[str], tgt: list[str], i: int, rng: random.Random, *,
               others: dict[str, list[str]] | None = None, tgt_lang: str = "fr") -> NoisyPair | None:
    """One noisy pair of type ``kind`` from line ``i`` (``None`` when the line cannot give it)."""
    if kind == "misaligned":
        return misaligned(src, tgt, i, rng)
    if kind == "partial":
        return partial(src, tgt, i, rng)
    if kind == "wrong_lang":
        return wrong_language(src, tgt, i, rng, others or {})
    if kind == "untranslated":
        return untranslated(src, tgt, i, rng)
    if kind == "unrelated":
        return unrelated(src, tgt, i, rng)
    if kind == "boilerplate":
        return boilerplate(rng, tgt_lang)
    if kind == "numbers":
        return numbers(src, tgt, i, rng)
    raise ValueError(f"unknown noise type {kind!r}; types: {', '.join(NOISE_TYPES)}")


def build_mixture(src: list[str], tgt: list[str], *, others: dict[str, list[str]], tgt_lang: str,
                  n_clean: int, n_per_type: int, seed: int = 0,
                  types: tuple[str, ...] = NOISE_TYPES) -> list[NoisyPair]:
    """Clean pairs and ``n_per_type`` noisy pairs of each type, shuffled (seeded).

    Every line of the test set (both sides non-blank, no tab) is the source of at most one
    pair, so that no sentence appears in the mixture twice by construction (which a corpus
    margin would notice). The lines are shuffled and split by whether the English side holds
    a digit; the clean pairs and each type but ``numbers`` take that stratum's share of their
    lines from it (17 % in newstest2013), ``numbers`` (which needs a digit) takes only lines
    with digits, last. Within a stratum each takes the next lines of the shuffle that can give
    it: so each type's lines are a random sample of the same lines as the clean ones, bar the
    type's own condition. Each type draws its noise from its own random stream (seeded by
    ``seed`` and its name); the clean lines depend on the English side and ``seed`` only, so
    they are the same lines in en-fr, en-de and en-es.
    Raises ``ValueError`` when the test set runs out of lines (newstest2013 holds 3,000 lines
    of which 523 have a digit: 1,000 clean and 150 per type fit).
    """
    if len(src) != len(tgt) or any(len(o) != len(src) for o in others.values()):
        raise ValueError("the sides of the test set have different lengths")
    usable = [i for i in range(len(src)) if src[i].strip() and tgt[i].strip()
              and "\t" not in src[i] + tgt[i] + "".join(o[i] for o in others.values())]
    random.Random(seed).shuffle(usable)
    digits = [i for i in usable if any(ch.isdigit() for ch in src[i])]
    plain = [i for i in usable if not any(ch.isdigit() for ch in src[i])]
    share = len(digits) / max(len(usable), 1)

    def draw(what: str, n: int, make, with_digits: int) -> list[NoisyPair]:
        made: list[NoisyPair] = []
        for stratum, k in ((digits, with_digits), (plain, n - with_digits)):
            rest, got = [], 0
            for i in stratum:
                p = make(i) if got < k else None
                if p is None:
                    rest.append(i)
                else:
                    made.append(p)
                    got += 1
            stratum[:] = rest
            if got < k:
                raise ValueError(f"only {len(made)} lines left for {what}, {n} asked ({n_clean} clean, "
                                 f"{n_per_type} per type): ask for fewer")
        return made

    out = draw("the clean pairs", n_clean, lambda i: NoisyPair(src[i], tgt[i], "clean", i), round(share * n_clean))
    line_types = [t for t in NOISE_TYPES if t in types and t not in ("numbers", "boilerplate")]
    for kind in line_types + [t for t in ("numbers",) if t in types]:
        rng = random.Random(f"{seed}:{kind}")

        def make(i: int, kind=kind, rng=rng) -> NoisyPair | None:
            return make_noise(kind, src, tgt, i, rng, others=others, tgt_lang=tgt_lang)

        k = n_per_type if kind == "numbers" else round(share * n_per_type)
        out.extend(draw(f"{kind} noise", n_per_type, make, k))
    if "boilerplate" in types:
        rng = random.Random(f"{seed}:boilerplate")
        out.extend(boilerplate(rng, tgt_lang) for _ in range(n_per_type))
    random.Random(f"{seed}:mix").shuffle(out)
    return out
