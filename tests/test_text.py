"""The full-text analyzer: what is indexed and what a query asks for (recall depends on both)."""

from __future__ import annotations

import pytest

from polymem._text import query_terms, terms

# Outputs of the published Porter (1980) algorithm.
PORTER = {
    "caresses": "caress", "ponies": "poni", "cats": "cat", "feed": "feed", "agreed": "agre", "plastered": "plaster",
    "bled": "bled", "motoring": "motor", "sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size",
    "hopping": "hop", "tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "filing": "file",
    "happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit", "rational": "ration",
    "digitizer": "digit", "predication": "predic", "operator": "oper", "feudalism": "feudal", "decisiveness": "decis",
    "hopefulness": "hope", "callousness": "callous", "triplicate": "triplic", "formative": "form",
    "formalize": "formal", "electrical": "electr", "goodness": "good", "revival": "reviv", "allowance": "allow",
    "inference": "infer", "airliner": "airlin", "gyroscopic": "gyroscop", "adjustable": "adjust",
    "defensible": "defens", "irritant": "irrit", "replacement": "replac", "adoption": "adopt", "communism": "commun",
    "activate": "activ", "effective": "effect", "bowdlerize": "bowdler", "probate": "probat", "rate": "rate",
    "cease": "ceas", "controlling": "control", "rolling": "roll", "generalizations": "gener",
}


@pytest.mark.parametrize(("word", "stem"), sorted(PORTER.items()))
def test_words_are_reduced_by_the_porter_stemmer(word: str, stem: str) -> None:
    assert terms(word) == [stem] and query_terms(word) == [stem]


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
