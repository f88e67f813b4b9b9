"""Build polymem's table of English word frequencies (`core/src/polymem/data/word_frequencies_english.txt.gz`).

The table gives, for each full-text term (a Snowball stem, as `polymem._text.terms` makes it) of
the words wordfreq's small English list holds (frequency of at least one per million words), its
Zipf frequency: log10 of its occurrences per billion words, all the words of the stem together.
Recall's calibration reads it as a prior on how common a word is in the language, which a small
store's own statistics cannot tell (`ScoringPolicy.specificity`).

Run once, with wordfreq installed (it is not a dependency of polymem; the table is what ships):

    pip install wordfreq==3.1.1 && python scripts/build_word_frequencies.py

The data comes from wordfreq (Robyn Speer, https://github.com/rspeer/wordfreq), whose word lists are
licensed CC BY-SA 4.0; so is the table derived from it (see the header the table carries).
"""

from __future__ import annotations

import gzip
import math
import sys
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import wordfreq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core" / "src"))
from polymem._text import _TOKEN_RE, _term  # noqa: E402  (the store's own analysis)

OUT = ROOT / "core" / "src" / "polymem" / "data" / "word_frequencies_english.txt.gz"
HEADER = f"""\
# Zipf frequencies (log10 of occurrences per billion words) of English full-text terms (Snowball stems)
# Derived by polymem's scripts/build_word_frequencies.py from wordfreq {version('wordfreq')} (Robyn Speer,
# https://github.com/rspeer/wordfreq), "small" English list, which is licensed under the Creative
# Commons Attribution-ShareAlike 4.0 license (https://creativecommons.org/licenses/by-sa/4.0/);
# this table is distributed under the same license. wordfreq's English data includes data from
# Wikipedia, Google Books Ngrams, OpenSubtitles, SUBTLEX, Twitter, Reddit and the Leeds Internet Corpus.
"""


def main() -> None:
    totals: Counter[str] = Counter()
    for word, frequency in wordfreq.get_frequency_dict("en", "small").items():
        if _TOKEN_RE.fullmatch(word) and word.isalpha():
            totals[_term(word)] += frequency
    rows = sorted(((term, round(math.log10(f) + 9, 1)) for term, f in totals.items()), key=lambda r: (-r[1], r[0]))
    text = HEADER + "".join(f"{term} {zipf}\n" for term, zipf in rows if zipf >= 3.0)
    with open(OUT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as out:  # reproducible
        out.write(text.encode("utf-8"))
    print(f"{OUT}: {sum(z >= 3.0 for _, z in rows)} terms, {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
