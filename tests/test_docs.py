"""Every code block of README.md, docs/ and the adapter READMEs runs, so the docs stay true.

A page's blocks run in order, in one namespace, in a scratch folder (`sqlite:///memory.db`
lands there; `polymem.open()` opens `POLYMEM_URL`, a file there too):

- `python` blocks are executed (top-level `await` allowed). Where the text uses a model the
  reader brings (`model`, `model_client`, `llm`, `my_chat_service`, …), that name is bound to the
  framework's own offline stand-in (STAND_INS below), as the tests do everywhere.
- `sh`/`bash` blocks run in bash, with this interpreter's bin/ first on PATH; port 8080 becomes a
  free port, and a block that starts `polymem serve … &` has it stopped when the page ends.
- `json` blocks are parsed.
- A block not meant to run says so on the line before it, with the reason:
  `<!-- docs: not run (why) -->`; it is counted, never silently passed over.
Blocks without a language are output samples, not code.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from polymem.testing.process import PORT_RETRIES, free_port

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("adapters/*/README.md"))]
FENCE = re.compile(r"(?:^<!-- docs: (?P<directive>.*?) -->\n)?^```(?P<lang>[a-z]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$",
                   re.M | re.S)
RUNNABLE = {"python", "sh", "bash", "json"}
NOT_RUN = re.compile(r"not run \((?P<why>.+)\)")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    not_run: str | None  # the reason given, when the block is marked not to run

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.lang})"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        lang = match["lang"]
        if lang not in RUNNABLE:
            continue
        directive = match["directive"]
        why = NOT_RUN.fullmatch(directive) if directive else None
        if directive and not why:
            raise AssertionError(f"{page.name}: unknown docs directive {directive!r}")
        line = text.count("\n", 0, match.start("body"))
        out.append(Block(page, line, lang, match["body"], why["why"] if why else None))
    return out


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


# -- the models a reader brings, as offline stand-ins ------------------------------------------------

def _scripted(adapter: str = "semantic_kernel") -> types.ModuleType:
    path = ROOT / "adapters" / adapter / "tests" / "scripted.py"
    spec = importlib.util.spec_from_file_location(f"polymem_docs_scripted_{adapter}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _langchain_model() -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    return GenericFakeChatModel(messages=iter([AIMessage("Noted!")] * 100))


def _autogen_client() -> Any:
    from autogen_ext.models.replay import ReplayChatCompletionClient

    return ReplayChatCompletionClient(["Noted!"] * 100)


def _llamaindex_llm() -> Any:
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    return MockFunctionCallingLLM()


def _sk_chat_service() -> Any:
    return _scripted().ScriptedChatCompletion(["Noted!"] * 100)


def _agent_framework_client() -> Any:
    return _scripted("agent_framework").ScriptedChatClient(*["Noted!"] * 100)


def _sk_embedding_service() -> Any:
    from polymem.testing import local_embedder

    return _scripted().LocalEmbeddingService(local_embedder())


STAND_INS: dict[str, Callable[[], Any]] = {
    "model": _langchain_model, "chat_model": _langchain_model,
    "model_client": _autogen_client,
    "llm": _llamaindex_llm,
    "my_chat_service": _sk_chat_service, "embedding_service": _sk_embedding_service,
    "my_chat_client": _agent_framework_client, "chat_client": _agent_framework_client,
}


# -- running a page ------------------------------------------------------------------------------

class PortTaken(Exception):
    """Another process (a test worker's server) took the page's port before its server bound it."""


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Page:
    """One page's run: its namespace, event loop, scratch folder and background processes."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder = folder
        self.monkeypatch = monkeypatch
        self.namespace: dict[str, Any] = {"__name__": "__docs__"}
        self.loop = asyncio.new_event_loop()
        self.port = str(free_port())
        self.env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
                    "POLYMEM_URL": f"sqlite:///{folder / 'default.db'}", "PYTHONWARNINGS": "ignore"}
        self.background: list[subprocess.Popen[bytes]] = []

    def run(self, block: Block) -> None:
        body = block.body.replace("8080", self.port)
        if block.lang == "json":
            json.loads(body)
        elif block.lang == "python":
            self._python(body, block)
        else:
            self._shell(body, block)

    def _python(self, body: str, block: Block) -> None:
        for name, make in STAND_INS.items():
            if name not in self.namespace and re.search(rf"\b{name}\b", body):
                self.namespace[name] = make()
        code = compile("\n" * (block.line) + body, str(block.page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, self.namespace)  # noqa: S307 - the docs' own code
        if asyncio.iscoroutine(result):
            self.loop.run_until_complete(result)

    def _shell(self, body: str, block: Block) -> None:
        # A line ending in `&` starts a server that lives until the page ends; the rest runs in order.
        script: list[str] = []
        for line in body.splitlines():
            if line.rstrip().endswith("&"):
                self._bash(script, block)
                self._start(line.rstrip()[:-1], block)
                script = []
            else:
                script.append(line)
        self._bash(script, block)

    def _bash(self, lines: list[str], block: Block) -> None:
        """Run lines in bash; what they export carries on to the page's later blocks."""
        if not any(line.strip() for line in lines):
            return
        env_out = self.folder / ".docs-env"
        script = "\n".join([*lines, f"env -0 > {env_out}"])
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=self.folder, env=self.env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{block} failed:\n{proc.stdout}\n{proc.stderr}"
        exported = dict(item.split("=", 1) for item in env_out.read_text().split("\0") if "=" in item)
        for name in ("POLYMEM_TOKEN", "POLYMEM_URL", "POLYMEM_HOME", "POLYMEM_EMBEDDER", "POLYMEM_AUTH_DB"):
            if name in exported:
                self.env[name] = exported[name]
                self.monkeypatch.setenv(name, exported[name])

    def _start(self, command: str, block: Block) -> None:
        proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=self.folder, env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        self.background.append(proc)
        deadline = 120.0
        while deadline > 0:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", int(self.port))) == 0:
                    # a listener, but a server that could not bind (another's listener) exits at once
                    asyncio.run(asyncio.sleep(0.3))
                    if proc.poll() is None:
                        return
            if proc.poll() is not None:
                if not _port_is_free(int(self.port)):
                    raise PortTaken(f"port {self.port}, taken by another process before `{command}` bound it")
                raise AssertionError(f"{block}: `{command}` exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            asyncio.run(asyncio.sleep(0.2))
            deadline -= 0.2
        raise AssertionError(f"{block}: `{command}` did not listen on port {self.port}")

    def close(self) -> None:
        for proc in self.background:
            with suppress(ProcessLookupError):  # a server that exited on its own (a port taken)
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        for value in list(self.namespace.values()):
            if hasattr(value, "close") and type(value).__module__.startswith("polymem"):
                result = value.close()
                if asyncio.iscoroutine(result):
                    self.loop.run_until_complete(result)
        self.loop.close()


@contextmanager
def page_run(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Page]:
    folder.mkdir()
    monkeypatch.chdir(folder)
    page = Page(folder, monkeypatch)
    monkeypatch.setenv("POLYMEM_URL", page.env["POLYMEM_URL"])
    try:
        yield page
    finally:
        page.close()


def run_page(page: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block of the page in order, in a fresh folder; again from the start, on another
    port, when another process took the page's port before its server bound it (`PortTaken`)."""
    for attempt in range(PORT_RETRIES):
        try:
            with page_run(folder / f"run-{attempt}", monkeypatch) as run:
                for block in blocks(page):
                    if block.not_run is None:
                        run.run(block)
            return
        except PortTaken:
            continue
    pytest.fail(f"{page}: another process took the page's port {PORT_RETRIES} times")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_code_block_of_the_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_page(page, tmp_path, monkeypatch)


def test_a_page_whose_port_another_process_took_runs_again_on_another_port(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "serving.md"
    page.write_text("```bash\npython -m http.server 8080 --bind 127.0.0.1 &\ncurl -sf http://127.0.0.1:8080/ > /dev/null\n```\n")
    with socket.socket() as taken:  # another process's listener on the port the page is first given
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        real_free_port = free_port
        monkeypatch.setattr(sys.modules[__name__], "free_port", lambda: next(ports, None) or real_free_port())
        run_page(page, tmp_path, monkeypatch)
    assert (tmp_path / "run-0").is_dir() and (tmp_path / "run-1").is_dir() and not (tmp_path / "run-2").exists()


def test_every_block_runs_or_says_why_not() -> None:
    found = all_blocks()
    skipped = [b for b in found if b.not_run is not None]
    assert all(b.not_run and b.not_run.strip() for b in skipped)
    assert all(any(b.not_run is None for b in blocks(page)) for page in PAGES if blocks(page)), \
        "a page with code runs some of it"


def test_the_one_memory_example_shares_ann_memories_with_three_frameworks_and_none_with_bob(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import runpy

    monkeypatch.setattr(sys, "argv", ["one_memory.py", str(tmp_path / "memory.db")])
    runpy.run_path(str(ROOT / "examples" / "one_memory.py"), run_name="__main__")
    ann, bob = capsys.readouterr().out.split("[bob]")
    assert ann.count("allergic to peanuts") == 3, ann
    assert bob.count("(no memory)") == 3 and "peanuts" not in bob, bob


def test_the_api_signature_listings_name_real_methods() -> None:
    import polymem

    listings = [b.body for b in blocks(ROOT / "docs" / "api.md") if b.not_run == "signatures, not calls"]
    owners = {"mem": polymem.Memory, "ses": polymem.Session}
    named = {(owner, name) for body in listings for owner, name in re.findall(r"^(mem|ses)\.(\w+)", body, re.M)}
    assert len(named) > 20
    assert [f"{o}.{n}" for o, n in sorted(named) if not hasattr(owners[o], n)] == []


NOISE = ("Traceback", "Loading weights", "IProgress", "TqdmWarning", "DeprecationWarning", "UserWarning")


@pytest.mark.parametrize("notebook", sorted(ROOT.glob("examples/*/*.ipynb")), ids=lambda p: p.name)
def test_notebooks_are_committed_with_their_outputs_and_no_noise(notebook: Path) -> None:
    import nbformat

    cells = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    printing = [c for c in cells if "print(" in c.source]
    assert printing and all(c.get("outputs") for c in printing), f"run `make notebooks` ({notebook.name})"
    text = json.dumps([c.get("outputs") for c in cells])
    assert not [word for word in NOISE if word in text], f"{notebook.name} shows noise"


if __name__ == "__main__":  # `python tests/test_docs.py`: the count of documentation code blocks
    found = all_blocks()
    skipped = [b for b in found if b.not_run is not None]
    print(f"{len(found)} code blocks in {len(PAGES)} pages: {len(found) - len(skipped)} run by tests, "
          f"{len(skipped)} marked not run:")
    for block in skipped:
        print(f"  {block}: {block.not_run}")


def _page_module(page: Path) -> str | None:
    """A page's Python as one module of a reader's, its blocks in the order the page runs them
    (`test_docs`); the model a reader brings (`STAND_INS`) is theirs, of a type polymem does not know."""
    code = [block for block in blocks(page) if block.lang == "python" and block.not_run is None]
    if not code:
        return None
    body = "\n".join(f"# {block}\n{block.body}" for block in code)
    brought = [f"{name}: Any" for name in STAND_INS if re.search(rf"\b{name}\b", body)]
    return "\n".join(["from typing import Any", *brought, body])


@pytest.mark.parametrize("page", [p for p in PAGES if _page_module(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_of_each_page_type_checks_as_a_readers_module(page: Path, tmp_path: Path,
                                                                  user_mypy: Callable[..., tuple[str, str, int]]) -> None:
    # (top-level `await`, as a notebook or `python -m asyncio` takes it; a name a later block binds
    # again is the page's next example, as a reader copying one block sees it)
    user_code = tmp_path / f"{page.stem.replace('-', '_')}_page.py"
    user_code.write_text(_page_module(page) or "")
    out, err, status = user_mypy(user_code, "--disable-error-code", "top-level-await", "--allow-redefinition")
    assert status == 0, out + err
