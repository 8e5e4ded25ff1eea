"""`attnscope serve --model PATH`: a real server process with local checkpoints, and the refusals that stop it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from bench.common import ROOT, free_port

from ..checkpoints import make_checkpoint

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-cli")
    return {kind: make_checkpoint(kind, root / f"my-{kind}") for kind in ("bert", "gpt2")}


def serve(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "attnscope.cli", "serve", "--port", str(port), *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, port


def models_once_up(proc: subprocess.Popen, port: int) -> list[dict]:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/models", timeout=5) as answer:
                return json.loads(answer.read())["models"]
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the server did not start")


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    out, _ = proc.communicate(timeout=30)
    return out


def test_serve_with_two_checkpoints_lists_them(dirs):
    proc, port = serve("--model", str(dirs["bert"]), "--model", str(dirs["gpt2"]))
    try:
        models = models_once_up(proc, port)
    finally:
        stop(proc)
    assert [(m["id"], m["architecture"], m["causal"]) for m in models] == [
        ("minilm", "bert", False), ("my-bert", "bert", False), ("my-gpt2", "gpt2", True)]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_directory_without_a_checkpoint_stops_the_server_naming_the_file(tmp_path, workers):
    (tmp_path / "notes").mkdir()
    proc, _ = serve("--model", str(tmp_path / "notes"), "--workers", workers)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "attnscope cannot start" in out
    assert f"{tmp_path / 'notes' / 'config.json'}: missing file" in out
    assert "supported architectures: bert, roberta, distilbert, electra, gpt2" in out


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this torch has CUDA: the refusal cannot happen")
@pytest.mark.parametrize("workers", ["1", "2"])
def test_cuda_without_a_cuda_build_of_torch_is_refused(workers):
    proc, _ = serve("--device", "cuda", "--workers", workers)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "torch.cuda.is_available() is False here (a CPU-only torch, or no GPU); use device 'cpu'" in out
