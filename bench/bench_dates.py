"""Reading a statement's date: polymem's pattern table (`polymem/_dates.py`) against dateparser's `search_dates`.

    python bench/bench_dates.py [--dateparser-python PATH] [--append]

Both read each statement of two hand-written tables, said on Tuesday 2026-03-10, and are scored on
the start date they give (the day, or the first day of the week, month or year named; None where
the statement holds no date). Table A was written first and the patterns were then written against
it (an in-sample figure); table B was written after the patterns and not tuned on. dateparser
(`pip install dateparser`, a benchmark-only dependency) runs with RELATIVE_BASE, PREFER_DATES_FROM
"past" and PREFER_DAY_OF_MONTH "first", under `--dateparser-python` (a Python that has it) or this
one. Import time is the median of 3 fresh interpreters; "first read" includes what loads lazily.
Prints a table with the machine's load."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATES = ROOT / "core" / "src" / "polymem" / "_dates.py"

TABLE_A = [
    ("I switched to black on March 1st", date(2026, 3, 1)),
    ("I switched to black on the 1st of March", date(2026, 3, 1)),
    ("I switched to black on March 1st, 2024", date(2024, 3, 1)),
    ("I've lived in Lyon since 2024-05-01", date(2024, 5, 1)),
    ("I started running on 2025-11-03", date(2025, 11, 3)),
    ("My daughter was born on 12 May 2019", date(2019, 5, 12)),
    ("Since January 2025 I work at Acme", date(2025, 1, 1)),
    ("I've been vegan since March", date(2026, 3, 1)),
    ("In June I moved to Berlin", date(2025, 6, 1)),
    ("I will start the course in June", date(2026, 6, 1)),
    ("Yesterday I adopted a cat", date(2026, 3, 9)),
    ("Today I started learning Go", date(2026, 3, 10)),
    ("Tomorrow I fly to Rome", date(2026, 3, 11)),
    ("I started a new job last week", date(2026, 3, 2)),
    ("I moved to Oslo last month", date(2026, 2, 1)),
    ("I got married last year", date(2025, 1, 1)),
    ("I stopped eating meat two weeks ago", date(2026, 2, 24)),
    ("I quit smoking 3 days ago", date(2026, 3, 7)),
    ("I sold my car on Monday", date(2026, 3, 9)),
    ("I start my new job next month", date(2026, 4, 1)),
    ("I like blue", None),
    ("I have 2 cats", None),
    ("My locker code is 4417", None),
    ("I may switch to tea", None),
    ("I'm 30 years old", None),
    ("I work from 9 to 5", None),
    ("I march in the parade every year", None),
    ("Call me Sunday", None),
]
TABLE_B = [
    ("We got engaged on Dec 24", date(2025, 12, 24)),
    ("I've worked at Acme since 2019", date(2019, 1, 1)),
    ("I have been sober for 3 months", date(2025, 12, 10)),
    ("Last Friday I broke my arm", date(2026, 3, 6)),
    ("I moved here in the summer of 2021", date(2021, 6, 1)),
    ("Starting May 5 I work remotely", date(2026, 5, 5)),
    ("I was in Paris from 2019 to 2021", date(2019, 1, 1)),
    ("Until April I'm on leave", date(2026, 4, 1)),
    ("I haven't eaten meat since Jan. 3rd", date(2026, 1, 3)),
    ("My sister visited a few days ago", date(2026, 3, 7)),
    ("I changed my number on 2026-02-28", date(2026, 2, 28)),
    ("I turned vegetarian in 2020", date(2020, 1, 1)),
    ("My password is hunter2", None),
    ("I'm allergic to peanuts", None),
    ("I run 5 km every morning", None),
]

READER = r"""
import json, sys, time
from datetime import datetime, timezone
kind, cases = sys.argv[1], json.loads(sys.argv[2])
started = time.perf_counter()
if kind == "patterns":
    import importlib.util
    spec = importlib.util.spec_from_file_location("dates", sys.argv[3])
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    said = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc)
    def read(text):
        start, end = module.read_validity(text, said)
        found = start or end
        return found.date().isoformat() if found else None
else:
    from dateparser.search import search_dates
    settings = {"RELATIVE_BASE": datetime(2026, 3, 10, 12, 0), "PREFER_DATES_FROM": "past",
                "PREFER_DAY_OF_MONTH": "first"}
    def read(text):
        found = search_dates(text, languages=["en"], settings=settings)
        return found[0][1].date().isoformat() if found else None
imported = time.perf_counter()
answers, times = [], []
for text in cases:
    t = time.perf_counter(); answers.append(read(text)); times.append(time.perf_counter() - t)
print(json.dumps({"import": imported - started, "first": times[0], "rest": sum(times[1:]) / max(1, len(times) - 1),
                  "answers": answers}))
"""


def run(python: str, kind: str, texts: list[str]) -> dict[str, object]:
    out = subprocess.run([python, "-c", READER, kind, json.dumps(texts), str(DATES)], capture_output=True, text=True,
                         check=True)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dateparser-python", default=sys.executable)
    parser.add_argument("--append", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    from _results import append, load_average, machine

    load_before = load_average()
    rows = []
    for name, python, kind in (("polymem patterns", sys.executable, "patterns"),
                               ("dateparser search_dates", args.dateparser_python, "dateparser")):
        scores, runs = [], []
        try:
            run(python, kind, ["today"])
        except subprocess.CalledProcessError as exc:
            rows.append(f"| {name} | not measured ({exc.stderr.strip().splitlines()[-1][:80]}) | | | | |")
            continue
        for table in (TABLE_A, TABLE_B):
            texts = [t for t, _ in table]
            trials = [run(python, kind, texts) for _ in range(3)]
            runs += trials
            answers = trials[0]["answers"]
            assert isinstance(answers, list)
            scores.append(sum(a == (w.isoformat() if w else None) for a, (_, w) in zip(answers, table)))
        imports = statistics.median(float(str(r["import"])) for r in runs)
        first = statistics.median(float(str(r["first"])) for r in runs)
        rest = statistics.median(float(str(r["rest"])) for r in runs)
        rows.append(f"| {name} | {scores[0]}/{len(TABLE_A)} | {scores[1]}/{len(TABLE_B)} | {imports * 1000:.1f} ms "
                    f"| {first * 1000:.2f} ms | {rest * 1000:.3f} ms |")
    table = "\n".join(["| reader | table A (in-sample) | table B (held out) | import | first read | each later read |",
                       "|---|---|---|---|---|---|", *rows])
    body = f"; load {load_before} before, {load_average()} after\n\n{table}\n"
    print(f"Machine: {machine()}{body}")
    if args.append:
        append("Reading dates from statements", "bench_dates.py", body)


if __name__ == "__main__":
    main()
