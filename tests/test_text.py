"""The full-text analyzer: what is indexed and what a query asks for (recall depends on both)."""

from __future__ import annotations

import pytest

from polymem._errors import InvalidInput
from polymem._text import analyzer_id, check_language, language_of, query_terms, terms, word_frequencies

# Part of the sample vocabulary and output published for the Snowball English stemmer (snowballstem.org).
SNOWBALL_ENGLISH = {
    "consigned": "consign", "consignment": "consign", "consistency": "consist", "consistently": "consist",
    "consolations": "consol", "consolatory": "consolatori", "consolidating": "consolid", "consolingly": "consol",
    "consonant": "conson", "conspicuously": "conspicu", "conspiracy": "conspiraci", "conspirators": "conspir",
    "constables": "constabl", "constancy": "constanc", "knackeries": "knackeri", "knavish": "knavish",
    "kneeled": "kneel", "knightly": "knight", "knitting": "knit", "knives": "knive", "knockers": "knocker",
}


@pytest.mark.parametrize(("word", "stem"), sorted(SNOWBALL_ENGLISH.items()))
def test_words_are_reduced_by_the_snowball_english_stemmer(word: str, stem: str) -> None:
    assert terms(word) == [stem] and query_terms(word) == [stem]


def test_german_plurals_and_verb_forms_meet_in_a_german_analysis() -> None:
    assert terms("Die Kinder spielten in den Häusern", language="german") == ["kind", "spielt", "haus"]
    assert query_terms("Wo spielt das Kind im Haus?", "german") == ["spielt", "kind", "haus"]


def test_french_plurals_and_verb_forms_meet_in_a_french_analysis() -> None:
    assert terms("Les chevaux mangeaient des pommes", language="french") == ["cheval", "mang", "pomm"]
    assert query_terms("Le cheval a mangé une pomme", "french") == ["cheval", "mang", "pomm"]


def test_a_language_is_named_by_its_snowball_name_or_iso_code() -> None:
    assert check_language("German") == "german" and check_language("fr") == "french"
    with pytest.raises(InvalidInput, match="language must be one of"):
        check_language("klingon")


def test_a_store_indexed_before_languages_existed_is_english() -> None:
    assert language_of("porter-1") == "english" and language_of(None) == "english"
    assert language_of(analyzer_id("german")) == "german"


def test_inflections_of_one_word_meet() -> None:
    forms = ["inspired", "inspiring", "inspiration", "inspire"]
    assert len({t for form in forms for t in terms(form)}) == 1


def test_function_words_are_not_indexed_but_request_words_are() -> None:
    assert terms("The user went to the park with her dog") == ["user", "went", "park", "dog"]
    assert query_terms("Where did the user go with her dog?") == ["go", "dog"]


def test_text_of_stopwords_only_keeps_them_on_both_sides() -> None:
    assert terms("It is what it is") == ["it", "is", "what", "it", "is"]
    assert query_terms("what is it?") == ["what", "is", "it"]


def test_numbers_spelling_and_chinese() -> None:
    assert terms("Flight 2045 in 1990s, my favourite colour") == ["flight", "2045", "1990", "favourit", "color"]
    assert terms("我喜欢蓝色")[:5] == ["我", "喜", "欢", "蓝", "色"] and "蓝色" in query_terms("蓝色?")


def test_english_word_frequencies_are_known_by_term_and_other_languages_have_none() -> None:
    frequencies = word_frequencies("english")
    assert frequencies is not None
    assert "promotions" not in frequencies  # keyed by the full-text term: "promotions", "promote" are "promot"
    assert frequencies["like"] > frequencies["blue"] > frequencies[terms("promotions")[0]] > 3.0
    assert word_frequencies("german") is None
