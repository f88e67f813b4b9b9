"""Text handling shared by the store: full-text terms, token counts, numbers.

Full-text terms are computed here, not by the database tokenizer, so that
every backend indexes the same terms: lower-cased words reduced by the Snowball
stemmer of the store's language (PyStemmer; English: "inspired", "inspiring",
"inspiration" → "inspir"), the language's function words left out, and CJK
text as overlapping character bigrams plus single characters (SQLite's unicode61
finds nothing in Chinese and trigram misses two-character words; application
bigrams find everything).

`ANALYZER_VERSION` names this analysis; a store records it with its language
(`analyzer_id`), and a store indexed by another version or in another language
re-indexes its full text when it is opened (change the version whenever `terms`
changes its output).
"""

from __future__ import annotations

import gzip
import hashlib
import re
import threading
import unicodedata
from collections.abc import Collection
from functools import lru_cache
from typing import TYPE_CHECKING

import Stemmer

from ._errors import InvalidInput

if TYPE_CHECKING:
    import tiktoken

# Stored beside a full-text index; a mismatch makes the store re-index (see the module doc).
ANALYZER_VERSION = "snowball-1"

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

LANGUAGES = frozenset(Stemmer.algorithms()) - {"porter", "dutch_porter"}  # Snowball's, by their names
"""The languages a store's full text can be analysed in (`polymem.open(..., language=...)`)."""
DEFAULT_LANGUAGE = "english"
_ISO_639_1 = {"ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
              "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french",
              "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
              "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
              "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
              "st": "sesotho", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish"}
_DECADE_RE = re.compile(r"\d+s")


def check_language(language: str) -> str:
    """The Snowball name of `language` (a name such as "german" or an ISO 639-1 code such as "de")."""
    name = _ISO_639_1.get(language.strip().lower(), language.strip().lower()) if isinstance(language, str) else None
    if name not in LANGUAGES:
        raise InvalidInput(f"language must be one of {', '.join(sorted(LANGUAGES))} (or its ISO 639-1 code), "
                           f"got {language!r}")
    return name


def analyzer_id(language: str) -> str:
    """What a store records of the analysis its full text was indexed with."""
    return f"{ANALYZER_VERSION}:{language}"


def language_of(analyzer: str | None) -> str:
    """The language a store's recorded analyzer (`analyzer_id`) indexed in; stores indexed before
    languages existed (or never) are English."""
    if analyzer is None or ":" not in analyzer:
        return DEFAULT_LANGUAGE
    language = analyzer.partition(":")[2]
    return language if language in LANGUAGES else DEFAULT_LANGUAGE


_stemmers = threading.local()  # a Snowball stemmer keeps state while it works: one per thread


def _stemmer(language: str) -> Stemmer.Stemmer:
    per_language: dict[str, Stemmer.Stemmer] = _stemmers.__dict__
    if (stemmer := per_language.get(language)) is None:
        stemmer = per_language[language] = Stemmer.Stemmer(language, 0)  # 0: `_term` caches instead
    return stemmer


def _stopwords(language: str) -> tuple[frozenset[str], frozenset[str]]:
    """(stopwords, function words) of a language: English's are polymem's own (tuned on LoCoMo),
    the others' the `stop-words` package's list (none if it has no list for the language)."""
    return (STOPWORDS, _FUNCTION_WORDS) if language == DEFAULT_LANGUAGE else _listed_stopwords(language)


@lru_cache(maxsize=32)
def _listed_stopwords(language: str) -> tuple[frozenset[str], frozenset[str]]:
    import stop_words  # only a store in another language than English needs it

    try:
        words = frozenset(w.casefold() for w in stop_words.get_stop_words(language))
    except stop_words.StopWordError:
        words = frozenset()
    return words, words


def _normalise_spelling(word: str) -> str:
    # British/American pairs that matter for recall ("colour" vs "color").
    return word.replace("our", "or") if word.endswith(("our", "ours")) and len(word) > 5 else word


@lru_cache(maxsize=1 << 16)
def _term(token: str, language: str = DEFAULT_LANGUAGE) -> str:
    """The indexed form of one word (words repeat, so this is cached): its Snowball stem; numbers
    as they are, a decade ("1990s") as its year."""
    if token.isdigit():
        return token
    if _DECADE_RE.fullmatch(token):
        return token[:-1]
    if language == DEFAULT_LANGUAGE:
        token = _normalise_spelling(token)
    return str(_stemmer(language).stemWord(token))


def terms(text: str, *, for_query: bool = False, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """Full-text terms of `text` in `language`, stopwords left out unless nothing else remains: a
    query drops every stopword, a stored text only the function words (in English it keeps the
    words in STOPWORDS that only a request uses, such as "user" or "know", for queries made of them)."""
    stopwords, function_words = _stopwords(language)
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
        if token in stopwords and (for_query or token in function_words):
            stop_dropped.append(token)
            continue
        out.append(_term(token, language))
    if not out and stop_dropped:  # nothing but stopwords: they are all there is to match
        out = [_term(t, language) for t in stop_dropped]
    return out


HELD_TEXTS_KEPT = 1 << 16
"""How many texts' distinct terms `held_terms` remembers."""
HELD_TEXT_CHARS = 256
"""Texts longer than this are analysed again each time rather than remembered. Measured full
(65,536 texts, the texts included): ~40 MB for memories of a sentence (8 words of a 5,000-word
vocabulary), ~50 MB for 256-character ones of that vocabulary, ~190 MB were every one of them 256
characters of words no other memory uses."""


def held_terms(text: str, language: str = DEFAULT_LANGUAGE) -> Collection[str]:
    """The distinct full-text terms of a stored text (`terms`' output without repeats), for
    telling which of a query's terms it holds. A recall asks this of ~20-30 candidates, mostly the
    same memories from one recall to the next: those of the last `HELD_TEXTS_KEPT` texts of up
    to `HELD_TEXT_CHARS` characters are remembered, as a tuple (a third of a set's memory, and as
    fast to search for a short text's few terms); a longer text's are a set."""
    if len(text) > HELD_TEXT_CHARS:
        return frozenset(terms(text, language=language))
    return _held_terms(text, language)


@lru_cache(maxsize=HELD_TEXTS_KEPT)
def _held_terms(text: str, language: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(terms(text, language=language)))


def query_terms(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """Distinct query terms, most specific first (CJK bigrams before single characters)."""
    seen: dict[str, None] = {}
    for term in terms(text, for_query=True, language=language):
        seen.setdefault(term, None)
    ordered = sorted(seen, key=lambda t: (len(t) == 1 and bool(_CJK_RE.match(t)),))
    return ordered


def is_broad(text: str, language: str = DEFAULT_LANGUAGE) -> bool:
    """Whether a query names nothing: every word of it a stopword or pronoun ("What do you know
    about me?"). Such a question asks for whatever is known, so no memory is more relevant to it
    than another by its words."""
    stopwords = _stopwords(language)[0]
    text = (text if text.isascii() else unicodedata.normalize("NFKC", text)).casefold()
    tokens = _TOKEN_RE.findall(text)
    return all(token.replace("’", "'").split("'")[0] in stopwords for token in tokens)


# Capitalised in English, yet no one's name: a question about "next April" names no one.
_CALENDAR = frozenset("""january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split())
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;]\s+|\n)\W*$")


def named_terms(text: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The terms of the names a query mentions: its capitalised words that do not start a
    sentence and are neither acronyms, stopwords, months nor weekdays ("When did Caroline go to Paris
    in May?" -> caroline, pari)."""
    stopwords = _stopwords(language)[0]
    found: dict[str, None] = {}
    for match in _TOKEN_RE.finditer(text):
        token = match.group(0)
        # An acronym ("the DB", "my PR") names a kind of thing more often than someone.
        if not token[:1].isupper() or token.isupper() or _SENTENCE_START_RE.search(text[:match.start()]):
            continue
        word = token.replace("’", "'").split("'")[0].casefold()
        if word and word not in stopwords and word not in _CALENDAR:
            found.setdefault(_term(word, language), None)
    return list(found)


@lru_cache(maxsize=4)
def word_frequencies(language: str) -> dict[str, float] | None:
    """How common each term (`terms`' form) is in general use of `language`: its Zipf frequency
    (log10 of occurrences per billion words; "like" 6.5, "blue" 5.2, "promotions" 5.1), for the
    terms at least one in a million words uses; None for a language polymem has no table of (only
    English has one: `data/word_frequencies_english.txt.gz`, derived from wordfreq's word lists,
    CC BY-SA 4.0, by `scripts/build_word_frequencies.py`)."""
    from importlib import resources

    table = resources.files("polymem") / "data" / f"word_frequencies_{language}.txt.gz"
    if not table.is_file():
        return None
    with table.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        return {term: float(zipf) for term, _, zipf in (line.rstrip("\n").partition(" ") for line in lines
                                                         if not line.startswith("#"))}


def has_cjk(text: str) -> bool:
    return bool(_CJK_RE.search(text))


# cl100k_base as tiktoken_ext.openai_public defines it; its ranks are read from the copy in data/.
_CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                   r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
_CL100K_SPECIAL_TOKENS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                          "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


@lru_cache(maxsize=1)
def _cl100k() -> tiktoken.Encoding:
    """GPT-4's BPE encoding, built from `data/cl100k_base.tiktoken.gz`: tiktoken's own
    `get_encoding` would download the ranks, which an offline machine cannot."""
    import base64
    from importlib import resources

    import tiktoken

    with (resources.files("polymem") / "data" / "cl100k_base.tiktoken.gz").open("rb") as raw:
        lines = gzip.decompress(raw.read()).splitlines()
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in lines if line)}
    return tiktoken.Encoding("cl100k_base", pat_str=_CL100K_PATTERN, mergeable_ranks=ranks,
                             special_tokens=_CL100K_SPECIAL_TOKENS)


def approx_token_count(text: str) -> int:
    """The number of tokens of `text` in cl100k_base, GPT-4's BPE (through tiktoken, offline):
    the working-memory window's measure where the model's own tokenizer is unknown.

    Special-token markers in `text` ("<|endoftext|>") count as the plain text they are.
    """
    return len(_cl100k().encode_ordinary(text))


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
