"""Text handling shared by the store: full-text terms, token counts, numbers.

Full-text terms are computed here, not by the database tokenizer, so that
every backend indexes the same terms: lower-cased words reduced by the Porter
stemmer ("inspired", "inspiring", "inspiration" → "inspir"), English function
words left out, and CJK text as overlapping character bigrams plus single
characters (SQLite's unicode61 finds nothing in Chinese and trigram misses
two-character words; application bigrams find everything).

`ANALYZER_VERSION` names this analysis: a store indexed by another version re-indexes
its full text when it is opened (change the version whenever `terms` changes its output).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from functools import lru_cache

# Stored beside a full-text index; a mismatch makes the store re-index (see the module doc).
ANALYZER_VERSION = "porter-1"

_CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
)
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_CJK_RE = re.compile(rf"[{_CJK}]")

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "know", "tell", "anything", "something", "any", "please", "user", "users", "s", "t", "don"]
)


# Words a query drops that a stored text may still use meaningfully ("the user likes blue").
_REQUEST_WORDS = frozenset(["know", "tell", "anything", "something", "please", "user", "users"])
_FUNCTION_WORDS = STOPWORDS - _REQUEST_WORDS

_VOWELS = frozenset("aeiou")


def _consonants(word: str) -> list[bool]:
    out: list[bool] = []
    for i, c in enumerate(word):
        out.append(c not in _VOWELS and (c != "y" or i == 0 or not out[i - 1]))
    return out


def _measure(cons: list[bool], end: int) -> int:
    """Porter's m: the number of vowel-consonant sequences in word[:end]."""
    m, i = 0, 0
    while i < end and cons[i]:
        i += 1
    while i < end:
        while i < end and not cons[i]:
            i += 1
        if i >= end:
            break
        m += 1
        while i < end and cons[i]:
            i += 1
    return m


def _has_vowel(cons: list[bool], end: int) -> bool:
    return not all(cons[:end])


def _cvc(word: str, cons: list[bool], end: int) -> bool:
    """*o: word[:end] ends consonant-vowel-consonant, the last not w, x or y."""
    return end >= 3 and cons[end - 1] and not cons[end - 2] and cons[end - 3] and word[end - 1] not in "wxy"


_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
          ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"),
          ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"),
          ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""))
_STEP4 = tuple(sorted(("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
                      "ism", "ate", "iti", "ous", "ive", "ize"), key=len, reverse=True))  # longest match first


def _porter(w: str) -> str:
    """The Porter (1980) stemmer, as published."""
    if len(w) <= 2:
        return w
    # Step 1a
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    # Step 1b
    cons = _consonants(w)
    if w.endswith("eed"):
        if _measure(cons, len(w) - 3) > 0:
            w = w[:-1]
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(cons, len(w) - len(suffix)):
                w = w[: -len(suffix)]
                cons = _consonants(w)
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif len(w) >= 2 and w[-1] == w[-2] and cons[-1] and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(cons, len(w)) == 1 and _cvc(w, cons, len(w)):
                    w += "e"
                break
    # Step 1c
    if w.endswith("y") and _has_vowel(_consonants(w), len(w) - 1):
        w = w[:-1] + "i"
    # Steps 2 and 3
    for rules in (_STEP2, _STEP3):
        for suffix, replacement in rules:
            if w.endswith(suffix):
                if _measure(_consonants(w), len(w) - len(suffix)) > 0:
                    w = w[: -len(suffix)] + replacement
                break
    # Step 4
    for suffix in _STEP4:
        if w.endswith(suffix):
            end = len(w) - len(suffix)
            if _measure(_consonants(w), end) > 1 and (suffix != "ion" or w[end - 1] in "st"):
                w = w[:end]
            break
    # Step 5
    cons = _consonants(w)
    if w.endswith("e"):
        m = _measure(cons, len(w) - 1)
        if m > 1 or (m == 1 and not _cvc(w, cons, len(w) - 1)):
            w = w[:-1]
            cons = cons[:-1]
    if w.endswith("ll") and _measure(cons, len(w)) > 1:
        w = w[:-1]
    return w


def _stem(word: str) -> str:
    """English words by the Porter stemmer; numbers, short and non-ASCII words as they are."""
    if len(word) <= 2 or not word.isascii() or word.isdigit():
        return word
    return _porter(word)


def _normalise_spelling(word: str) -> str:
    # British/American pairs that matter for recall ("colour" vs "color").
    return word.replace("our", "or") if word.endswith(("our", "ours")) and len(word) > 5 else word


@lru_cache(maxsize=1 << 16)
def _term(token: str) -> str:
    """The indexed form of one word (words repeat, so this is cached)."""
    return _stem(_normalise_spelling(token))


def terms(text: str, *, for_query: bool = False) -> list[str]:
    """Full-text terms of `text`, stopwords left out unless nothing else remains: a query
    drops every stopword, a stored text only the function words (it keeps the words in
    STOPWORDS that only a request uses, such as "user" or "know", for queries made of them)."""
    text = (text if text.isascii() else unicodedata.normalize("NFKC", text)).casefold()
    out: list[str] = []
    stop_dropped: list[str] = []
    for token in _TOKEN_RE.findall(text):
        if not token.isascii():
            if _CJK_RE.match(token):
                chars = list(token)
                out.extend(chars)
                out.extend(a + b for a, b in zip(chars, chars[1:]))
                continue
            token = token.replace("’", "'")
        if "'" in token:
            token = token.split("'")[0]
            if not token:
                continue
        if token in STOPWORDS and (for_query or token in _FUNCTION_WORDS):
            stop_dropped.append(token)
            continue
        out.append(_term(token))
    if not out and stop_dropped:  # nothing but stopwords: they are all there is to match
        out = [_term(t) for t in stop_dropped]
    return out


def query_terms(text: str) -> list[str]:
    """Distinct query terms, most specific first (CJK bigrams before single characters)."""
    seen: dict[str, None] = {}
    for term in terms(text, for_query=True):
        seen.setdefault(term, None)
    ordered = sorted(seen, key=lambda t: (len(t) == 1 and bool(_CJK_RE.match(t)),))
    return ordered


def has_cjk(text: str) -> bool:
    return bool(_CJK_RE.search(text))


def approx_token_count(text: str) -> int:
    """An offline token estimate close to BPE tokenizers: ~4 characters per token
    for words, one per CJK character, one per punctuation mark."""
    count = 0
    for match in re.finditer(rf"[{_CJK}]|[^\W_]+|[^\w\s]", text, re.UNICODE):
        piece = match.group(0)
        count += 1 if len(piece) == 1 else math.ceil(len(piece) / 4)
    return count + 1


UNITS = frozenset(
    """% k m b bn mn million millions billion billions thousand thousands hundred dozen percent pct
    usd eur gbp cny rmb jpy chf cad aud dollar dollars euro euros pound pounds yuan yen cent cents
    kg g mg lb lbs oz t ton tons tonne tonnes km m cm mm mi mile miles ft feet inch inches yd
    l ml gal gallon gallons kwh wh w kw mw v a hz ghz mhz gb mb kb tb pb gib mib
    ms s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks
    month months year years yr yrs am pm c f °c °f x times people users items units""".split()
)
_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp", "¥": "cny", "￥": "cny"}
_FIGURE_RE = re.compile(r"([$€£¥￥])?\s?([-+]?\d[\d,]*(?:\.\d+)?)\s*(%|°[cf]|[^\W\d_]{1,12})?", re.UNICODE)


def numbers_with_units(text: str) -> set[str]:
    """Every figure in `text` as "value unit" (unit only when it is a known unit or a
    currency), normalised: "12.5 million", "3,000 EUR" → "3000 eur", "$5" → "5 usd".

    Used to check that a summary kept every figure of what it replaces.
    """
    found: set[str] = set()
    for match in _FIGURE_RE.finditer(text):
        symbol, number, word = match.groups()
        start = match.start(2)
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "."):
            continue
        value = number.replace(",", "")
        unit = ""
        if word is not None and (word.casefold() in UNITS or (word.isupper() and 2 <= len(word) <= 4)):
            unit = word.casefold()
        elif symbol:
            unit = _CURRENCY[symbol]
        found.add(f"{value} {unit}".strip())
    return found


def content_hash(text: str) -> str:
    """Hash of content after folding case and white space: same content, same hash."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
