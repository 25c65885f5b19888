"""Each rule on hand-made pairs: the exact score, the direction, the decision."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.filtering.rules import (
    RULES,
    BadCharacters,
    Duplicates,
    EmptySide,
    IdenticalSides,
    LengthRatio,
    MaxLength,
    MinLength,
    NumbersDiffer,
    UrlsDiffer,
    _units,
    length_units,
    numbers,
)


def run(rule, pairs):
    s = rule.score([a for a, _ in pairs], [b for _, b in pairs])
    return s.tolist(), rule.accept(s).tolist()


def test_length_units():
    assert length_units("The cat sleeps.") == 3
    assert length_units("猫在睡觉。") == 3  # 4 Han characters at 1.5 a unit, rounded up
    assert length_units("iPhone手机") == 3
    assert length_units("...") == 0
    assert length_units("") == 0
    assert length_units("don't e-mail") == 4  # \w+ runs
    assert length_units("Привет, мир!") == 2
    assert length_units("สวัสดีครับ") == 2  # Thai: 10 code points at 6 a unit, rounded up
    assert length_units("日本語のテキストです") == 5  # 3 Han (4 sixths each) + 7 kana (2 each): 26 sixths
    assert length_units("一") == 1


def test_marks_stay_inside_their_word():
    """A combining mark (a vowel sign, a virama, an Arabic vowel mark, a decomposed accent) or
    ZWJ continues the word it follows and starts none: cut at each mark (before issue 56's
    fix), a Hindi sentence counted two to three times its words and genuine pairs failed the
    length ratio."""
    assert length_units("हॉलीवुड शादियां शायद ही कभी टिकती हैं।") == 7  # was 14
    assert length_units("नमस्ते दुनिया") == 2
    assert length_units("كَتَبَ الوَلَدُ") == 2  # Arabic with its vowel marks
    assert length_units("Cre\u0300me bru\u0302le\u0301e") == 2  # accents as combining marks
    assert length_units("ශ්\u200dරී") == 1  # Sinhala with a ZWJ
    assert length_units("\u0301 a") == 1  # a mark after a space starts no word
    pairs = [("Hollywood marriages rarely last.", "हॉलीवुड शादियां शायद ही कभी टिकती हैं।"),
             ("Marriage customs differ by country.", "विवाह के रीति-रिवाज देश के अनुसार भिन्न होते हैं।")]
    s, ok = run(LengthRatio(), pairs)
    assert all(ok) and max(s) < 3, s  # 1.75 and 2.0; were 3.5 and 4.2, both dropped
    tgt = [b for _, b in pairs]
    assert _units(tgt).tolist() == [float(length_units(t)) for t in tgt]


def test_khmer_and_thai_translations_pass_the_length_rules():
    """One unit per character made 99 % of NTREX's English-Khmer pairs fail length_ratio 3 (a
    Khmer word is about 6 code points): python -m benchmarks.length_units."""
    pairs = [("Welsh AMs worried about 'looking like muppets'", "Welsh AMs ព្រួយបារម្ភអំពី 'រូបរាងដូចតុត្តាម៉ូផេត'"),
             ("The city's airport has been reopened.", "สนามบินของเมืองได้เปิดให้บริการอีกครั้ง")]
    s, ok = run(LengthRatio(), pairs)
    assert all(ok) and max(s) < 2, s
    tgt = [b for _, b in pairs]
    assert _units(tgt).tolist() == [float(length_units(t)) for t in tgt]


def test_empty_side():
    s, ok = run(EmptySide(), [("Hello there", "Bonjour"), ("  ", "Bonjour"), ("Hi", ""), ("a b", "c")])
    assert s == [7.0, 0.0, 0.0, 1.0] and ok == [True, False, False, True]


def test_identical_sides():
    s, ok = run(IdenticalSides(), [("Save the file.", "save the FILE"), ("Save", "Enregistrer"), ("...", "..."),
                                   ("2019", "2019")])
    assert s == [1.0, 0.0, 0.0, 1.0] and ok == [False, True, True, False]


def test_identical_sides_keep_vowel_signs():
    """A Hindi word and a Marathi one that differ only in their vowel signs are not a copy (the
    key once dropped the marks: कम and काम had one key); a ZWNJ changes no letter, so Persian
    text with and without it is still the same text."""
    pairs = [("कम", "काम"), ("मैं घर जा रहा हूँ।", "मैं घर जा रहा हूँ"), ("किताब", "कताब"),
             ("می\u200cخواهم", "میخواهم"), ("ক্ষমা", "কষমা")]
    s, ok = run(IdenticalSides(), pairs)
    assert s == [0.0, 1.0, 0.0, 1.0, 0.0] and ok == [True, False, True, False, True]


def test_length_ratio_and_lengths():
    pairs = [("The cat sleeps on the mat.", "Le chat dort."), ("one two three four", "一"), ("a", "b c d"),
             ("...", "x y z w")]
    s, ok = run(LengthRatio(), pairs)
    assert s == [2.0, 4.0, 3.0, 4.0] and ok == [True, False, True, False]
    s, ok = run(MinLength(), pairs)
    assert s == [3.0, 1.0, 1.0, 0.0] and ok == [True, True, True, False]
    s, ok = run(MaxLength(threshold=4), pairs)
    assert s == [6.0, 4.0, 3.0, 4.0] and ok == [False, True, True, True]


def test_numbers():
    assert numbers("It costs 1,000.50 dollars in 2019") == {"1000.5": 1, "2019": 1}
    assert numbers("Il coûte 1 000,50 dollars en 2019") == {"1000.5": 1, "2019": 1}
    assert numbers("٢٠١٩") == {"2019": 1}
    pairs = [("In 2019, 3 cats.", "En 2019, 3 chats."), ("In 2019.", "En 2018."), ("No digits.", "Pas de chiffres."),
             ("3 and 3", "3"), ("In 2019", "في ٢٠١٩")]
    s, ok = run(NumbersDiffer(), pairs)  # a changed number fails; a number on one side only is not a change
    assert s == [0.0, 1.0, 0.0, 0.0, 0.0] and ok == [True, False, True, True, True]
    s, ok = run(NumbersDiffer(one_sided=True), pairs)  # the rule before issue 42: every number without an equal
    assert s == [0.0, 2.0, 0.0, 1.0, 0.0] and ok == [True, False, True, False, True]


def test_numbers_changed_against_left_over():
    from bimine.filtering.features import LoneNumbers

    pairs = [("Between forty and fifty percent.", "Entre 40 et 50 %."),  # spelt out on one side: not changed
             ("He left in 2001 and came back in 2008.", "Il part en 2011."),  # 2001/2008 against 2011: one changed
             ("It has 480 seats, 530 rooms.", "Il a 5500 places."),
             ("On 26 June.", "Le 26 juin 1956."),  # a date one side leaves out
             ("Price: 45 euros", "Prix : 99 euros")]
    s, ok = run(NumbersDiffer(), pairs)
    assert s == [0.0, 1.0, 1.0, 0.0, 1.0] and ok == [True, False, False, True, False]
    lone = LoneNumbers().score([a for a, _ in pairs], [b for _, b in pairs])
    assert lone.tolist() == [2.0, 1.0, 1.0, 1.0, 0.0]


def test_numbers_one_number_in_any_convention():
    thousand = ["1,000", "1.000", "1 000", "1\u00a0000", "1\u202f000", "1'000", "١٬٠٠٠", "१,०००", "1000"]
    assert all(numbers(t) == {"1000": 1} for t in thousand), [numbers(t) for t in thousand]
    # decimals: the separator other than the grouping one, trailing zeros dropped
    for same in (["2.5", "2,5", "2,50", "2.500000e", "٢٫٥", "२.५०"], ["1,000.5", "1.000,50", "1 000,5", "١٬٠٠٠٫٥"],
                 ["2", "2.0", "2,00"], ["0.001", "0,0010"], ["100,000", "1,00,000", "100 000"]):
        assert len({frozenset(numbers(t).items()) for t in same}) == 1, [numbers(t) for t in same]
    assert numbers("3.14159 and 10.000.000,00") == {"3.14159": 1, "10000000": 1}
    assert numbers("2.5") != numbers("25") and numbers("2.05") != numbers("2.5")
    assert numbers("12,34,56,789") == {"123456789": 1}  # Indian grouping


def test_numbers_a_separator_only_joins_groups_of_three():
    assert numbers("in 2012 15 people") == numbers("en 2012, 15 personnes") == {"2012": 1, "15": 1}
    assert numbers("In 2012 150 people came") == {"2012": 1, "150": 1}  # a first group of four digits
    assert numbers("1'5") == {"1": 1, "5": 1} and numbers("1 00") == {"1": 1, "00": 1}
    assert numbers("1,000,00") == {"1000": 1, "00": 1} and numbers("1.234.5") == {"1234": 1, "5": 1}
    assert numbers("0.500") == {"0.5": 1}  # 0 never starts a grouped number
    s, ok = run(NumbersDiffer(), [("In 2012 15 people came.", "En 2012, 15 personnes sont venues."),
                                  ("It costs 2.5 euros.", "Ça coûte 2,50 euros."),
                                  ("It costs 2.5 euros.", "Ça coûte 25 euros."),
                                  ("1,000 men", "1 000 hommes"), ("1,000 men", "100 hommes")])
    assert s == [0.0, 0.0, 1.0, 0.0, 1.0] and ok == [True, True, False, True, False]


def test_urls():
    pairs = [("See https://example.org/a.", "Voir https://example.org/a"), ("Mail me@x.org", "Écrire à you@x.org"),
             ("See www.a.com", "Voir le site"), ("No link.", "Pas de lien.")]
    s, ok = run(UrlsDiffer(), pairs)
    assert s == [0.0, 2.0, 1.0, 0.0] and ok == [True, False, False, True]


def test_bad_characters():
    pairs = [("Café", "Café"), ("CafÃ©", "Café"), ("It\u2019s", "Itâ€™s"), ("a\x00b", "ab"), ("x\ufffdy", "xy"),
             ("SÃO PAULO", "São Paulo")]
    s, ok = run(BadCharacters(), pairs)
    assert s == [0.0, 1.0, 1.0, 1.0, 1.0, 0.0] and ok == [True, False, False, False, False, True]


def test_duplicates_keep_the_first_and_carry_state_across_blocks():
    d = Duplicates()
    s1, ok1 = run(d, [("A  b", "C"), ("A b", "C"), ("a b", "C")])
    s2, ok2 = run(d, [("A b", "C "), ("x", "y")])
    assert s1 == [0.0, 1.0, 0.0] and ok1 == [True, False, True]
    assert s2 == [2.0, 0.0] and ok2 == [False, True]
    s, _ = run(Duplicates(lowercase=True), [("A b", "C"), ("a B", "c")])
    assert s == [0.0, 1.0]
    assert d.stateful and not EmptySide().stateful


def test_directions_and_nan():
    r = LengthRatio(threshold=2.0)
    assert r.accept(np.array([1.0, 2.0, 2.5, np.nan])).tolist() == [True, True, False, False]
    assert r.clean_score(np.array([2.0])).tolist() == [-2.0]
    assert EmptySide().clean_score(np.array([2.0])).tolist() == [2.0]


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_scores_one_float_per_pair(name):
    rule = RULES[name]()
    src = ["Hello world 1", "", "猫", "x\x00"]
    tgt = ["Bonjour le monde 1", "Salut", "cat", "y"]
    s = rule.score(src, tgt)
    assert s.dtype == np.float64 and s.shape == (4,) and rule.name == name and rule.reason


def test_language_id_scores_and_relatives():
    from bimine.filtering.langid import LanguageId, language_scores

    s = language_scores(["Le chat dort sur le tapis.", "The cat sleeps on the mat."], "fr")
    assert s[0] > 0.9 and s[1] < 0.05
    # Norwegian text scored as Danish counts: relatives are summed
    no = "Jeg liker å lese bøker om kvelden, og i helgene går jeg ofte tur i skogen."
    assert language_scores([no], "da")[0] > 0.9
    r = LanguageId(src_lang="en", tgt_lang="fra")
    sc, ok = run(r, [("The cat sleeps on the mat.", "Le chat dort sur le tapis."),
                     ("The cat sleeps on the mat.", "The cat sleeps on the mat too."),
                     ("Le chat dort sur le tapis.", "Le chat dort sur le tapis.")])
    assert ok == [True, False, False] and sc[0] > 0.9 and r.unchecked == []


def test_language_id_leaves_unknown_languages_unchecked():
    from bimine.filtering.langid import LanguageId, language_scores

    assert np.isnan(language_scores(["Hello"], "tpi")).all()  # Tok Pisin: not in py3langid
    r = LanguageId(src_lang="en", tgt_lang="tpi")
    assert r.unchecked == ["tgt"]
    s, ok = run(r, [("The cat sleeps on the mat.", "Pusi i slip."), ("Le chat dort sur le tapis.", "Pusi i slip.")])
    assert ok == [True, False] and not np.isnan(s).any()  # judged by the English side alone
    both = LanguageId(src_lang="tpi", tgt_lang="tpi")
    s, ok = run(both, [("Pusi i slip.", "Pusi i slip.")])
    assert np.isnan(s).all() and ok == [True]


def test_batched_language_probs_equal_py3langid():
    """The compiled batch walk gives py3langid's own probabilities (its per-text _decide)."""
    from bimine.filtering.langid import identifier, language_probs

    texts = ["Le chat dort sur le tapis.", "", "ÉCOLE NORMALE", "!!!", "Привет, мир", "猫在睡觉。", "a", "x" * 500,
             "Mixed English und Deutsch avec du français", "Ελληνικά κείμενα", "\ud800 broken", "12345"]
    ref = np.stack([identifier()._decide(t) for t in texts])
    got = language_probs(texts)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=1e-5)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-5)


def test_fused_language_score_equals_the_probability_matrix():
    """language_scores (one compiled pass, no class matrix, texts joined before encoding)
    equals the columns of language_probs it stands for, aliased labels folded; a text with a
    line break or in capitals takes the same path as py3langid."""
    from bimine.filtering.langid import language_columns, language_probs, language_scores

    texts = ["Le chat dort sur le tapis.", "", "ÉCOLE NORMALE", "!!!", "Привет, мир", "猫在睡觉。", "x" * 500,
             "Norsk tekst på bokmål er fint", "Ово је српски текст", "Cafe\u0301 au lait", "\ud800 broken"]
    for lang in ("fr", "en", "no", "da", "sr", "hr", "ru", "zh", "ja"):
        cols = language_columns(lang)
        ref = language_probs(texts)[:, cols].sum(axis=1)
        np.testing.assert_allclose(language_scores(texts, lang), ref, atol=2e-6, err_msg=lang)
        with_break = texts + ["deux\nlignes"]
        ref = language_probs(with_break)[:, cols].sum(axis=1)
        np.testing.assert_allclose(language_scores(with_break, lang), ref, atol=2e-6, err_msg=lang)


def test_pairwise_language_score_against_the_probability_matrix():
    """mode pairwise: p(declared) / (p(declared) + p(best other language)), aliased columns
    folded, computed from language_probs by hand; >= 0.5 exactly when the declared language
    (with its relatives) ranks first."""
    from bimine.filtering.langid import language_columns, language_probs, language_scores

    texts = ["Did Tom say who?", "Le chat dort sur le tapis.", "", "Norsk tekst på bokmål er fint",
             "Ово је српски текст", "猫在睡觉。", "He is very kind.", "x" * 40]
    p = language_probs(texts)
    for lang in ("en", "fr", "no", "sr", "zh", "de"):
        cols = language_columns(lang)
        mine = p[:, cols].sum(axis=1)
        other = p.copy()
        other[:, cols] = 0
        expect = mine / (mine + other.max(axis=1))
        got = language_scores(texts, lang, pairwise=True)
        np.testing.assert_allclose(got, expect, atol=2e-6, err_msg=lang)
        np.testing.assert_array_equal(got >= 0.5, mine >= other.max(axis=1))


def test_short_sentences_pass_the_pairwise_language_rule():
    """Short genuine sentences that py3langid gives under 0.5 (flattened by length) rank their
    language first; a French side declared German still fails."""
    from bimine.filtering.langid import LanguageId, language_scores

    src = ["Did Tom say who?", "Don't forget me.", "He is very kind."]
    tgt = ["汤姆说是谁了吗？", "别忘了我。", "他非常亲切。"]
    assert (language_scores(src, "en") < 0.5).all()  # the probability: too flat to pass
    s = LanguageId(src_lang="en", tgt_lang="zh").score(src, tgt)
    assert (s >= 0.5).all()
    s = LanguageId(src_lang="en", tgt_lang="de").score(["The cat sleeps on the mat."],
                                                        ["Le chat dort sur le tapis."])
    assert s[0] < 0.1
    old = LanguageId(src_lang="en", tgt_lang="zh", mode="probability").score(src, tgt)
    np.testing.assert_allclose(old, np.fmin(language_scores(src, "en"), language_scores(tgt, "zh")))
    from bimine.errors import ConfigError

    with pytest.raises(ConfigError, match="lang mode"):
        LanguageId(mode="top1")


def test_near_copy_catches_edited_copies_and_spares_translations():
    from bimine.filtering.rules import NearCopy, copy_share

    src = "The committee approved the new budget on Tuesday after a long debate."
    copies = [src.lower(), src.rstrip("."), "- " + src, src.replace("new ", ""),
              src.replace("long", "lengthy"), src + " Read more"]
    translations = ["Le comité a approuvé le nouveau budget mardi après un long débat.",
                    "Der Ausschuss hat den neuen Haushalt am Dienstag nach langer Debatte gebilligt.",
                    "El comité aprobó el nuevo presupuesto el martes tras un largo debate."]
    r = NearCopy(src_lang="en", tgt_lang="fr")
    s = r.score([src] * (len(copies) + len(translations)), copies + translations)
    assert (s[: len(copies)] >= 0.8).all() and not r.accept(s[: len(copies)]).any(), s
    assert (s[len(copies):] < 0.5).all() and r.accept(s[len(copies):]).all(), s
    # names, numbers and code are what a translation keeps: they are not counted as copied words
    assert copy_share("Barack Obama met Angela Merkel in 2015 about getValue()",
                      "Barack Obama a rencontré Angela Merkel en 2015 au sujet de getValue()") < 0.5
    # hand count: shorter side 'cat sat mat' (3 words), 2 of them in the other side
    assert copy_share("cat sat mat", "the cat sat on the rug") == pytest.approx(2 / 3)
    # one word on the shorter side: left to the identical rule
    assert copy_share("Home", "Home") == 0.0


def test_near_copy_counts_whole_words_of_scripts_with_marks():
    """A Hindi sentence and its Marathi translation (both Devanagari) share no word; cut at each
    vowel sign, they shared their bare consonants (म, ज, ह, ...) and scored 0.6."""
    from bimine.filtering.rules import copy_share, copy_tokens

    assert copy_tokens("मैं घर जा रहा हूं") == ["मैं", "घर", "जा", "रहा", "हूं"]
    assert copy_share("मैं घर जा रहा हूं", "मी घरी जात आहे") == 0.0
    assert copy_share("सरकार ने नई नीति की घोषणा की", "सरकारने नवीन धोरण जाहीर केले") == 0.0
    # a copied Hindi sentence with one word edited is still a copy: 4 of its 5 words
    assert copy_share("मैं घर जा रहा हूं", "मैं घर जा रहा था") == pytest.approx(4 / 5)


def test_near_copy_is_off_between_close_relatives():
    from bimine.filtering.rules import NearCopy

    a, b = "Vlada je danas usvojila novi zakon o porezima.", "Vlada je danas usvojila novi zakon o porezima."
    assert NearCopy(src_lang="hr", tgt_lang="sr").score([a], [b])[0] == 0.0
    assert NearCopy(src_lang="hr", tgt_lang="en").score([a], [b])[0] == 1.0
