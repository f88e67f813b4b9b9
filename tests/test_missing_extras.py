"""An optional dependency that is not installed gives `MissingDependencyError` naming the extra
that brings it, never a raw `ModuleNotFoundError`. Absence is simulated in a fresh interpreter whose
import system refuses the blocked packages."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Put before the code under test: every import of a blocked package (or of a module inside it) fails
# as it does when the package is not installed.
_BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = set(sys.argv[1].split(","))

    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Absent())
    import polymem
    try:
""")
_REPORT = textwrap.dedent("""
    except polymem.MissingDependencyError as exc:
        print("MissingDependencyError:", exc)
    except SystemExit as exc:
        print("exit", exc.code)
""")


def run_without(blocked: str, code: str, tmp_path: Path) -> str:
    script = _BLOCKER + textwrap.indent(textwrap.dedent(code), "    ") + _REPORT
    result = subprocess.run([sys.executable, "-c", script, blocked], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "POLYMEM_HOME": str(tmp_path),
                                               "PYTHONPATH": ":".join(sys.path)})
    assert "ModuleNotFoundError" not in result.stderr, result.stderr
    return result.stdout + result.stderr


CASES = {
    # extra: (packages made absent, code that needs them)
    "server": ("fastapi,uvicorn", """
        from polymem.cli import main
        main(["serve", "--url", "memory://", "--no-embedder"])
    """),
    "http": ("httpx", """
        polymem.open("http://127.0.0.1:9", token="t")
    """),
    "mcp": ("mcp", """
        from polymem.cli import main
        main(["mcp", "--url", "memory://", "--no-embedder"])
    """),
    "postgres": ("psycopg,psycopg_pool", """
        polymem.open("postgresql://localhost:9/none", embedder=None)
    """),
    "redis": ("redis", """
        polymem.open("memory://", embedder=None, working_memory="redis://localhost:9")
    """),
    "local": ("sentence_transformers", """
        polymem.SentenceTransformerEmbedder().embed(["hello"])
    """),
    "onnx": ("onnxruntime,tokenizers", """
        from pathlib import Path
        Path("m").mkdir(); Path("m/model.onnx").write_bytes(b"")
        polymem.OnnxEmbedder("m").embed(["hello"])
    """),
    "export": ("onnx,onnxscript,onnxruntime", """
        from polymem._embedders import export_onnx_model
        export_onnx_model("out")
    """),
}


@pytest.mark.parametrize("extra", sorted(CASES))
def test_a_missing_extra_names_the_pip_line(extra: str, tmp_path: Path) -> None:
    blocked, code = CASES[extra]
    out = run_without(blocked, code, tmp_path)
    assert f"pip install polymem[{extra}]" in out, out


def test_without_jinja2_the_web_page_names_the_extra_and_the_api_still_serves(tmp_path: Path) -> None:
    code = """
        from starlette.testclient import TestClient
        from polymem.server import Service, create_app
        with TestClient(create_app(Service("memory://", embedder=None))) as http:
            page = http.get("/ui/memories")
            print(page.status_code, page.text, "| health", http.get("/healthz").status_code)
    """
    out = run_without("jinja2", code, tmp_path)
    assert "501 polymem's web page is not available" in out and "pip install polymem[server]" in out, out
    assert "health 200" in out, out


def test_a_service_with_mcp_but_without_orjson_names_the_extra_rather_than_dropping_mcp(tmp_path: Path) -> None:
    code = """
        from polymem.server import Service, create_app
        create_app(Service("memory://", embedder=None))
        print("created without /mcp")
    """
    out = run_without("orjson", code, tmp_path)
    assert "pip install polymem[mcp]" in out and "created without /mcp" not in out, out


def test_a_service_without_the_mcp_package_serves_the_api_without_mcp(tmp_path: Path) -> None:
    code = """
        from starlette.testclient import TestClient
        from polymem.server import Service, create_app
        with TestClient(create_app(Service("memory://", embedder=None))) as http:
            print("health", http.get("/healthz").status_code, "| mcp", http.post("/mcp", json={}).status_code)
    """
    out = run_without("mcp", code, tmp_path)
    assert "health 200 | mcp 404" in out, out


def test_an_unknown_url_scheme_fails_before_any_model_loads(tmp_path: Path) -> None:
    code = """
        try:
            polymem.open("htp://localhost/memory.db")
        except polymem.InvalidURLError as exc:
            print(exc, "| torch imported:", "torch" in sys.modules, "| sentence_transformers imported:",
                  "sentence_transformers" in sys.modules)
    """
    out = run_without("none", code, tmp_path)
    assert "sqlite://" in out and "postgresql://" in out and "http://" in out, out
    assert "torch imported: False" in out and "sentence_transformers imported: False" in out, out
