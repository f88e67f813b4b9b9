"""Open a store with an embedder, use it, fork, and use it again in the child.

`python fork_worker.py <sqlite path> torch|onnx:<model dir>|hash` prints the child's recall, or
"hung" when the child did not finish within the timeout (`hash`: `polymem.testing.HashEmbedder`,
no model)."""

from __future__ import annotations

import multiprocessing
import sys

import polymem
from polymem.testing import HashEmbedder


def embedder_named(name: str) -> polymem.SentenceTransformerEmbedder | polymem.OnnxEmbedder | HashEmbedder:
    if name == "hash":
        return HashEmbedder()
    if name == "torch":
        return polymem.SentenceTransformerEmbedder()
    return polymem.OnnxEmbedder(name.removeprefix("onnx:"))


def child(path: str, name: str, out: multiprocessing.Queue[str]) -> None:
    with polymem.open(f"sqlite:///{path}", embedder=EMBEDDER) as mem:
        mem.save("The staging database runs on port 5433", user_id="u")
        out.put(mem.recall("which port does staging use?", user_id="u")[0].memory.content)


if __name__ == "__main__":
    import polymem._sqlite

    polymem._sqlite.ALONGSIDE_ROWS = 1  # this small scope's text ranked on another core, as a large one's is
    path, name = sys.argv[1], sys.argv[2]
    EMBEDDER = embedder_named(name)
    with polymem.open(f"sqlite:///{path}", embedder=EMBEDDER) as mem:  # the parent uses the model before forking
        mem.save("The user prefers dark roast coffee " * 20, user_id="u")
        mem.save("The staging cluster was moved to Lisbon", user_id="u")
        mem.save("Green tea in the morning", user_id="u")
        mem.recall("coffee staging", user_id="u")
    context = multiprocessing.get_context("fork")
    results: multiprocessing.Queue[str] = context.Queue()
    worker = context.Process(target=child, args=(path, name, results))
    worker.start()
    worker.join(timeout=float(sys.argv[3]) if len(sys.argv) > 3 else 120)
    if worker.is_alive():
        worker.kill()
        print("hung")
    else:
        print(results.get(timeout=5))
