"""The fast embedding path: export once, then embed on onnxruntime without torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from polymem import OnnxEmbedder, SentenceTransformerEmbedder

pytestmark = pytest.mark.slow


def test_onnx_vectors_match_the_torch_model(exported: Path) -> None:
    texts = ["I like blue", "What colours does the user like?", "我喜欢蓝色", "Revenue was 12.5 million USD"]
    fast = np.array(OnnxEmbedder(exported).embed(texts))
    reference = np.array(SentenceTransformerEmbedder().embed(texts))
    assert fast.shape == reference.shape == (4, 384)
    assert float((fast * reference).sum(axis=1).min()) > 0.98


def test_a_new_process_embeds_on_onnx_without_importing_torch(exported: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    target = home / "models" / "all-MiniLM-L6-v2-onnx-int8"
    target.parent.mkdir(parents=True)
    target.symlink_to(exported)
    code = ("import sys, polymem; mem = polymem.open('memory://'); mem.save('I like blue', user_id='a'); "
            "print(type(mem.embedder).__name__, 'torch' in sys.modules, mem.recall('colour', user_id='a')[0].memory.content)")
    env = {**os.environ, "POLYMEM_HOME": str(home)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["OnnxEmbedder", "False", "I", "like", "blue"]
