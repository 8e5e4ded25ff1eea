"""`attnscope serve --model PATH`: a real server process with local checkpoints, and the refusals that stop it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from bench.common import ROOT, free_port

from ..checkpoints import hub_cache, make_checkpoint


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


def hf_env(cache) -> dict[str, str]:
    """This environment with the Hugging Face cache at `cache` (HF_HUB_CACHE) and HF_HUB_OFFLINE unset."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    return {**env, "HF_HUB_CACHE": str(cache)}


def test_serve_a_repo_id_from_the_hugging_face_cache(dirs, tmp_path):
    cache = tmp_path / "hub"
    hub_cache(cache, "acme/My-GPT2", dirs["gpt2"], "4" * 40)
    proc, port = serve("--model", "acme/My-GPT2", "--model", str(dirs["gpt2"]), env=hf_env(cache))
    try:
        models = models_once_up(proc, port)
    finally:
        stop(proc)
    assert [(m["id"], m["architecture"], m["name"].split(" ")[0]) for m in models] == [
        ("minilm", "bert", "all-MiniLM-L6-v2"), ("my-gpt2", "gpt2", "acme/My-GPT2"), ("my-gpt2-2", "gpt2", "my-gpt2")]


def test_a_repo_id_missing_from_the_cache_stops_the_server_before_it_starts(tmp_path):
    proc, _ = serve("--model", "acme/absent", env=hf_env(tmp_path / "hub"))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert out.strip() == (f"attnscope cannot start: acme/absent: no such directory, and not in the Hugging Face cache "
                           f"at {tmp_path / 'hub'} (HF_HUB_CACHE, HF_HOME); attnscope never downloads: run "
                           "`hf download acme/absent` to download it")


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
