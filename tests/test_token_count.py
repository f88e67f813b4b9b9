"""Token counting: the working-memory window's measure where the model's own tokenizer is unknown."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import tiktoken

import polymem
from polymem import approx_token_count

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
# The hash tiktoken_ext.openai_public checks the downloaded cl100k_base ranks against.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

SAMPLES = [
    "I moved to Lisbon in March 2024 and now work at Acme as a data engineer.",
    '{"city": "Paris", "temperature_c": 12.5, "tags": ["rain", "wind"], "ok": true}',
    "def fit(window: list[Message], budget: int) -> list[Message]:\n    return window[-budget:]\n",
    "我住在上海，每天早上喝咖啡。東京の天気は晴れです。서울은 오늘 맑아요.",
    "Ünïcödé façade, naïve café — “quoted” ‘text’ … 🙂🚀👩‍👩‍👧",
    "a <|endoftext|> marker and <|fim_prefix|> are plain text here",
    "   leading spaces, tabs\tand\r\nnew lines\n\n\ntrailing   ",
    "",
]


def shipped_ranks() -> bytes:
    with (resources.files("polymem") / "data" / "cl100k_base.tiktoken.gz").open("rb") as raw:
        return gzip.decompress(raw.read())


@pytest.fixture
def official_cl100k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tiktoken.Encoding:
    """tiktoken's own cl100k_base, its download answered from a cache holding the ranks."""
    (tmp_path / hashlib.sha1(CL100K_URL.encode()).hexdigest()).write_bytes(shipped_ranks())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return tiktoken.get_encoding("cl100k_base")


def test_the_shipped_ranks_are_the_published_cl100k_base() -> None:
    assert hashlib.sha256(shipped_ranks()).hexdigest() == CL100K_SHA256


@pytest.mark.parametrize("text", SAMPLES)
def test_tokens_are_counted_as_tiktoken_counts_them_in_cl100k_base(text: str,
                                                                     official_cl100k: tiktoken.Encoding) -> None:
    assert approx_token_count(text) == len(official_cl100k.encode_ordinary(text))


def test_long_mixed_documents_are_counted_as_tiktoken_counts_them(official_cl100k: tiktoken.Encoding) -> None:
    root = Path(__file__).resolve().parents[1]
    for document in (root / "README.md", root / "docs" / "api.md", root / "core" / "src" / "polymem" / "_text.py"):
        text = document.read_text(encoding="utf-8")
        assert approx_token_count(text) == len(official_cl100k.encode_ordinary(text)), document.name


def test_a_special_token_marker_in_the_text_is_counted_as_text_not_refused() -> None:
    assert approx_token_count("<|endoftext|>") > 1


def test_counting_tokens_reads_nothing_through_tiktokens_downloader(tmp_path: Path) -> None:
    script = (
        "import tiktoken.load as load\n"
        "def refuse(*args, **kwargs):\n"
        "    raise AssertionError('tiktoken tried to read ' + repr(args))\n"
        "load.read_file = load.read_file_cached = refuse\n"
        "from polymem import approx_token_count\n"
        "print(approx_token_count('hello world'))\n"
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "PATH": "", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"


def test_a_window_holds_as_many_cl100k_tokens_as_its_budget_allows(tmp_path: Path,
                                                                    official_cl100k: tiktoken.Encoding) -> None:
    def tokens(message: polymem.Message) -> int:  # 3: the chat format's framing of each message
        return len(official_cl100k.encode_ordinary(f"{message.role}: {message.content}")) + 3

    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None) as mem:
        session = mem.session("s1", user_id="ann", max_tokens=100, keep_last=1)
        for i in range(40):
            session.add("user", f"note {i}: the delivery to warehouse {i % 7} moved to Thursday")
        window = session.messages()
        dropped = session.transcript()[-len(window) - 1]
    held = sum(tokens(m) for m in window)
    assert held <= 100
    assert held + tokens(dropped) > 100


def test_a_message_takes_its_role_name_and_content_tokens_and_three_for_its_framing(tmp_path: Path) -> None:
    budget = approx_token_count("user ann: hello there") + 3
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None) as mem:
        fits = mem.session("fits", user_id="ann", max_tokens=2 * budget, keep_last=0)
        fits.add("user", "hello there", name="ann")
        fits.add("user", "hello there", name="ann")
        short = mem.session("short", user_id="ann", max_tokens=2 * budget - 1, keep_last=0)
        short.add("user", "hello there", name="ann")
        short.add("user", "hello there", name="ann")
        assert len(fits.messages()) == 2
        assert len(short.messages()) == 1
