"""Text handling shared by the store: full-text terms, token counts, numbers.

Full-text terms are computed here, not by the database tokenizer, so that
every backend indexes the same terms: lower-cased words with a light suffix
stemmer, and CJK text as overlapping character bigrams plus single
characters (SQLite's unicode61 finds nothing in Chinese and trigram misses
two-character words; application bigrams find everything).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from functools import lru_cache

_CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
)
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_CJK_RE = re.compile(rf"[{_CJK}]")

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "know", "tell", "anything", "something", "any", "please", "user", "users", "s", "t", "don"]
)


def _stem(word: str) -> str:
    """A deliberately light English stemmer: plural and common verb endings."""
    if len(word) <= 3 or not word.isascii():
        return word
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("shes", "ches", "xes", "zes", "sses")):
                return word[:-1]
            return word[: -len(suffix)] + replacement
    return word


def _normalise_spelling(word: str) -> str:
    # British/American pairs that matter for recall ("colour" vs "color").
    return word.replace("our", "or") if word.endswith(("our", "ours")) and len(word) > 5 else word


@lru_cache(maxsize=1 << 16)
def _term(token: str) -> str:
    """The indexed form of one word (words repeat, so this is cached)."""
    return _stem(_normalise_spelling(token))


def terms(text: str, *, for_query: bool = False) -> list[str]:
    """Full-text terms of `text`; a query drops stopwords (unless nothing else remains)."""
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
        if for_query and token in STOPWORDS:
            stop_dropped.append(token)
            continue
        out.append(_term(token))
    if for_query and not out:
        out = [_stem(t) for t in stop_dropped]
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
