"""The `make demo` story (examples/cross_framework.py) runs end to end, offline, on an SQLite file."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.slow
def test_cross_framework_demo_tells_the_story(tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "cross_framework.py"), str(tmp_path / "demo.db")],
                         capture_output=True, text=True, check=True, timeout=600, env=env).stdout
    readers = out.split("2. Five agents")[1].split("3. Isolation")[0]
    for label in ("AutoGen AssistantAgent", "LlamaIndex FunctionAgent", "Semantic Kernel ChatCompletionAgent",
                  "Agent Framework Agent", "LangChain LLMChain"):
        section = readers.split(label)[1].split("\n\n")[0]
        assert "My name is Xiaoming" in section and "I like blue" in section, label
        assert "promotions" not in section.split("Do I like promotions?")[1], label
    assert (tmp_path / "demo.db").exists()
