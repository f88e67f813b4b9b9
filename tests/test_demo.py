"""`make demo` runs the story end to end on an SQLite file."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_demo_tells_the_whole_story(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py"), str(tmp_path / "demo.db")],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    assert "'I like blue.'" in out.split("What colours does the user like?")[1].split("?")[0]
    assert "merged ['I really like blue.']" in out
    assert "superseded" in out and "'My favourite colour is now black'" in out
    assert "User B" not in out.split("Isolation")[1]
    assert (tmp_path / "demo.db").exists()
