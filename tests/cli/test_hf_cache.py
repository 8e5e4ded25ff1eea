"""`attnscope models` and `attnscope attention` with `--model ORG/NAME`: a repo id found in a Hugging Face cache
the test builds (tests/checkpoints.py hub_cache), the same maps as the checkpoint directory it was made from,
the id the server gives it, and a repo id missing from the cache refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attnscope
from attnscope import cli

from ..checkpoints import hub_cache
from ..model.test_hf_cache import refuse_network
from .test_commands import in_process

COMMIT = "3" * 40


@pytest.fixture
def cache(tmp_path, checkpoint_dirs, monkeypatch):
    root = tmp_path / "hf" / "hub"
    hub_cache(root, "acme/Tiny-GPT2", checkpoint_dirs["gpt2"], COMMIT)
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "ATTNSCOPE_MODEL_PATHS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(root.parent))
    refuse_network(monkeypatch)
    return root


def test_attention_of_a_cached_repo(cache, checkpoint_dirs, capsys, tmp_path):
    out = tmp_path / "maps.npz"
    code, err = in_process(["attention", "Hello world", "--model", "acme/Tiny-GPT2", "--out", out, "--quiet"], capsys)
    assert code == 0, err
    z = np.load(out)
    direct = attnscope.load(checkpoint_dirs["gpt2"]).attention("Hello world")
    assert str(z["model"]) == "tiny-gpt2" and np.array_equal(z["maps"], direct.maps)


def test_an_id_from_the_servers_paths_names_a_cached_repo(cache, capsys, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_MODEL_PATHS", "acme/Tiny-GPT2")
    code, _ = in_process(["models", "--json"], capsys)
    assert code == 0
    # ATTNSCOPE_MODEL_PATHS' repo ids are named by their id, as the server lists them
    code, err = in_process(["attention", "Hello", "--model", "tiny-gpt2", "--out", cache.parent / "m.json"], capsys)
    assert code == 0, err
    assert json.loads((cache.parent / "m.json").read_text())["model"] == "tiny-gpt2"


def test_models_json_names_the_repo(cache, capsys):
    assert cli.main(["models", "--model", "acme/Tiny-GPT2", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(m["id"], m["architecture"]) for m in listed] == [("minilm", "bert"), ("tiny-gpt2", "gpt2")]
    assert listed[1]["name"].startswith("acme/Tiny-GPT2 ")


def test_a_repo_missing_from_the_cache_is_refused(cache, capsys, tmp_path):
    code, err = in_process(["attention", "Hi", "--model", "acme/absent", "--out", tmp_path / "x.npz"], capsys)
    assert code == 2
    assert err.strip() == (f"attnscope attention: error: --model acme/absent: no such directory, and not "
                           f"in the Hugging Face cache at {cache} (HF_HUB_CACHE, HF_HOME); attnscope never downloads: "
                           "run `hf download acme/absent` to download it")
    assert not (tmp_path / "x.npz").exists()
