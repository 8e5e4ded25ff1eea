"""Models by Hugging Face repo id (ORG/NAME), found in a local cache the test builds with the hub's layout
(tests/checkpoints.py hub_cache): HF_HUB_CACHE and HF_HOME honoured, refs/main followed, a revision by
branch, tag or commit, a repo that is not there refused naming the cache and the download command, a
directory of the same name preferred, and no socket opened."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest

import attnscope
from model.checkpoints import hfcache, load
from model.errors import CheckpointError, UnknownModel

from ..checkpoints import hub_cache

OLD, NEW = "1" * 40, "2" * 40  # two commits of the same repo


@pytest.fixture(scope="module")
def cache(tmp_path_factory, checkpoint_dirs) -> Path:
    """acme/Tiny-Model: a BERT at commit OLD (tag v1), then a GPT-2 at NEW (main)."""
    root = tmp_path_factory.mktemp("hf") / "hub"
    hub_cache(root, "acme/Tiny-Model", checkpoint_dirs["bert"], OLD, refs=("v1",))
    hub_cache(root, "acme/Tiny-Model", checkpoint_dirs["gpt2"], NEW)
    return root


def refuse_network(monkeypatch) -> None:
    """Offline mode off in huggingface_hub (it reads HF_HUB_OFFLINE once, at import; the test run sets it), so
    only local_files_only keeps it off the network, and any name look-up or connection fails the test."""
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)

    def refuse(*args, **kwargs):
        raise AssertionError(f"network use attempted: {args}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture
def env(monkeypatch, cache):
    """Only HF_HUB_CACHE says where the cache is, and the network is refused (refuse_network)."""
    for name in ("HF_HOME", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    refuse_network(monkeypatch)
    return monkeypatch


def test_the_built_cache_is_one_the_hub_library_reads(cache):
    from huggingface_hub import scan_cache_dir

    [repo] = scan_cache_dir(cache).repos
    assert repo.repo_id == "acme/Tiny-Model" and repo.repo_type == "model"
    assert {r.commit_hash: sorted(r.refs) for r in repo.revisions} == {OLD: ["v1"], NEW: ["main"]}
    snapshot = cache / "models--acme--Tiny-Model" / "snapshots" / NEW
    assert (snapshot / "config.json").is_symlink() and (snapshot / "config.json").resolve().parent.name == "blobs"


def test_a_repo_id_loads_the_snapshot_refs_main_names(env, cache, checkpoint_dirs):
    model = attnscope.load("acme/Tiny-Model")
    assert model.info.id == "tiny-model"  # NAME in lower case, as a directory's id
    assert model.info.architecture == "gpt2" and model.info.causal
    assert model.info.name.startswith("acme/Tiny-Model (gpt2, 2 layers x 4 heads)")
    assert model._model.spec.locate() == cache / "models--acme--Tiny-Model" / "snapshots" / NEW
    direct = attnscope.load(checkpoint_dirs["gpt2"]).attention("Hello world, attention is all you need.")
    cached = model.attention("Hello world, attention is all you need.")
    assert cached.ids == direct.ids and np.array_equal(cached.maps, direct.maps)


@pytest.mark.parametrize("revision", ["v1", OLD])
def test_a_revision_by_tag_or_commit(env, revision):
    model = load(f"acme/Tiny-Model@{revision}")
    assert model.spec.architecture == "bert" and model.spec.id == "tiny-model"
    assert model.spec.locate().name == OLD


def test_hf_home_is_honoured_without_hf_hub_cache(env, cache):
    env.delenv("HF_HUB_CACHE")
    env.setenv("HF_HOME", str(cache.parent))  # the cache is HF_HOME/hub
    assert hfcache.cache_dir() == cache
    assert load("acme/Tiny-Model").spec.architecture == "gpt2"
    env.setenv("HF_HOME", str(cache.parent / "elsewhere"))
    with pytest.raises(CheckpointError, match="elsewhere"):
        load("acme/Tiny-Model")


def test_the_default_cache_is_under_the_home_directory(monkeypatch):
    for name in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert hfcache.cache_dir() == Path.home() / ".cache" / "huggingface" / "hub"
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/me")
    assert hfcache.cache_dir() == Path("/var/cache/me/huggingface/hub")


def test_a_repo_not_in_the_cache_is_refused_naming_the_cache_and_the_command(env, cache):
    with pytest.raises(CheckpointError) as info:
        load("acme/absent-model")
    message = str(info.value)
    assert "\n" not in message
    assert message == (f"acme/absent-model: no such directory, and not in the Hugging Face cache at {cache} "
                       "(HF_HUB_CACHE, HF_HOME); attnscope never downloads: run `hf download acme/absent-model` "
                       "to download it")
    assert not (cache / "models--acme--absent-model").exists()  # nothing was written either


def test_a_revision_not_in_the_cache_is_refused(env, cache):
    with pytest.raises(CheckpointError) as info:
        load("acme/Tiny-Model@v9")
    assert f"the Hugging Face cache at {cache} holds acme/Tiny-Model but no complete snapshot of v9" in str(info.value)
    assert "run `hf download acme/Tiny-Model --revision v9`" in str(info.value)


def test_a_directory_of_the_same_name_wins(env, tmp_path, checkpoint_dirs):
    local = tmp_path / "acme" / "Tiny-Model"
    local.parent.mkdir()
    local.symlink_to(checkpoint_dirs["bert"], target_is_directory=True)
    env.chdir(tmp_path)
    assert not hfcache.is_repo_id("acme/Tiny-Model")
    model = load("acme/Tiny-Model")
    assert model.spec.architecture == "bert" and model.spec.locate() == checkpoint_dirs["bert"].resolve()


def test_the_id_is_made_unique(env):
    assert load("acme/Tiny-Model", taken=["tiny-model"]).spec.id == "tiny-model-2"
    assert load("acme/Tiny-Model", taken=["tiny-model", "tiny-model-2"]).spec.id == "tiny-model-3"


@pytest.mark.parametrize("value", ["acme", "acme/", "/acme/x", "acme/x/y", "acme/x@", "./acme/x"])
def test_what_is_not_shaped_like_a_repo_id_stays_unknown(env, value):
    assert not hfcache.is_repo_id(value)
    with pytest.raises(UnknownModel):
        load(value)


def test_a_name_the_hub_rejects_is_a_checkpoint_error(env):
    assert hfcache.is_repo_id("acme/a--b")
    with pytest.raises(CheckpointError, match="is not a Hugging Face repo id"):
        load("acme/a--b")
