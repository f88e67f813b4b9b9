"""The wheel carries the web page: its templates and static files are package data."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
UI = CORE / "src" / "polymem" / "server" / "ui"


def test_the_wheel_ships_every_template_and_static_file_of_the_web_page(tmp_path: Path) -> None:
    source = tmp_path / "core"  # built from a copy: a build leaves build/ and egg-info behind
    shutil.copytree(CORE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(source),
                    "-w", str(tmp_path / "dist")], check=True, capture_output=True)
    [wheel] = (tmp_path / "dist").glob("polymem-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"polymem/server/ui/{p.relative_to(UI).as_posix()}"
                for folder in ("templates", "static") for p in (UI / folder).iterdir()}
    assert expected and expected <= shipped
