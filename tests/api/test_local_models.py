"""Local checkpoints served beside the packaged model: the model list, every model route, and the
numbers through HTTP against transformers on the same directories."""

from __future__ import annotations

import numpy as np
import pytest
import transformers
from fastapi.testclient import TestClient

from app.hub import StartupError
from app.main import create_app
from app.settings import Settings

from .test_compact import decode_u16

ENGLISH = "The cat sat on the mat."
GPT2_TEXT = "Hello world, attention is all you need."


@pytest.fixture(scope="module")
def references(local_dirs):
    out = {}
    for kind, directory in local_dirs.items():
        tok = transformers.AutoTokenizer.from_pretrained(str(directory))
        model = transformers.AutoModel.from_pretrained(str(directory), attn_implementation="eager").eval()
        out[kind] = tok, model
    return out


def reference_maps(references, kind, text, pair=None):
    import torch
    tok, model = references[kind]
    batch = tok(text, pair, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
    return batch["input_ids"][0].tolist(), np.stack([a[0].numpy() for a in out.attentions])


def test_the_model_list_names_each_checkpoint_without_its_path(local_client, local_dirs):
    models = {m["id"]: m for m in local_client.get("/api/v1/models").json()["models"]}
    assert set(models) == {"minilm", "tiny-bert", "tiny-gpt2"}
    bert, gpt2 = models["tiny-bert"], models["tiny-gpt2"]
    assert (bert["architecture"], bert["causal"], bert["pairs"], bert["lm_head"], bert["local"]) == (
        "bert", False, True, False, True)
    assert (gpt2["architecture"], gpt2["causal"], gpt2["pairs"], gpt2["lm_head"], gpt2["local"]) == (
        "gpt2", True, False, True, True)
    assert (gpt2["n_layers"], gpt2["n_heads"], gpt2["d_model"], gpt2["d_head"], gpt2["max_tokens"]) == (2, 4, 32, 8, 64)
    assert models["minilm"]["default"] and not models["minilm"]["local"]
    body = local_client.get("/api/v1/models").text
    for directory in local_dirs.values():
        assert str(directory) not in body and str(directory.parent) not in body
    assert all(m["path"] is None for m in models.values())


def test_paths_are_shown_only_when_the_user_opts_in(local_dirs):
    settings = Settings(allowed_hosts=["testserver"], model_paths=[local_dirs["gpt2"]], show_model_paths=True)
    with TestClient(create_app(settings)) as client:
        models = {m["id"]: m for m in client.get("/api/v1/models").json()["models"]}
    assert models["tiny-gpt2"]["path"] == str(local_dirs["gpt2"].resolve())


def test_ids_stay_unique_for_directories_of_the_same_name(local_dirs, tmp_path):
    import shutil
    twin = tmp_path / "Tiny GPT2"
    shutil.copytree(local_dirs["gpt2"], twin)
    other = tmp_path / "b" / "tiny-gpt2"
    shutil.copytree(local_dirs["gpt2"], other)
    settings = Settings(allowed_hosts=["testserver"], model_paths=[local_dirs["gpt2"], other, twin])
    with TestClient(create_app(settings)) as client:
        ids = [m["id"] for m in client.get("/api/v1/models").json()["models"]]
    assert ids == ["minilm", "tiny-gpt2", "tiny-gpt2-2", "tiny-gpt2-3"]


def test_the_environment_variable_takes_paths_separated_by_pathsep(local_dirs, monkeypatch):
    import os
    monkeypatch.setenv("ATTNSCOPE_MODEL_PATHS", os.pathsep.join(str(d) for d in local_dirs.values()))
    assert Settings().model_paths == list(local_dirs.values())


def test_a_directory_that_is_not_a_checkpoint_stops_the_server(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    app = create_app(Settings(allowed_hosts=["testserver"], model_paths=[tmp_path / "empty"]))
    with pytest.raises(StartupError) as info, TestClient(app):
        pass
    message = str(info.value)
    assert str(tmp_path / "empty" / "config.json") in message
    assert "supported architectures: bert, roberta, distilbert, electra, gpt2" in message
    assert "ATTNSCOPE_MODEL_PATHS" in message


def test_a_local_default_model(local_dirs):
    settings = Settings(allowed_hosts=["testserver"], model_paths=[local_dirs["gpt2"]], default_model="tiny-gpt2")
    with TestClient(create_app(settings)) as client:
        models = {m["id"]: m["default"] for m in client.get("/api/v1/models").json()["models"]}
        assert models == {"minilm": False, "tiny-gpt2": True}
        assert client.post("/api/v1/attention", json={"text": GPT2_TEXT}).json()["model"] == "tiny-gpt2"


@pytest.mark.parametrize(("kind", "text", "pair"), [
    ("bert", ENGLISH, None), ("bert", "注意力机制", "The cat sat."), ("gpt2", GPT2_TEXT, None),
    ("gpt2", "注意力机制让模型关注输入。", None),
])
def test_maps_over_http_equal_transformers(local_client, references, kind, text, pair):
    ids, ref = reference_maps(references, kind, text, pair)
    body = {"text": text, "model": f"tiny-{kind}"} | ({"text_pair": pair} if pair else {})
    answer = local_client.post("/api/v1/attention", json=body).json()
    maps = np.array(answer["attention"], dtype=np.float32)
    assert len(answer["tokens"]) == len(ids)
    assert maps.shape == ref.shape
    assert np.abs(maps - ref).max() <= 1e-5
    compact = local_client.post("/api/v1/attention?encoding=u16", json=body)
    _, values = decode_u16(compact.content)
    assert np.abs(values - ref).max() <= 1e-4
    if kind == "gpt2":
        upper = np.triu(np.ones(ref.shape[-2:], dtype=bool), k=1)
        assert (maps[..., upper] == 0).all() and (values[..., upper] == 0).all()


def test_gpt2_refuses_a_second_segment(local_client):
    answer = local_client.post("/api/v1/attention", json={"text": "a", "text_pair": "b", "model": "tiny-gpt2"})
    assert answer.status_code == 422
    assert "tiny-gpt2" in answer.json()["detail"]


@pytest.mark.parametrize("model", ["tiny-bert", "tiny-gpt2"])
def test_an_input_over_the_checkpoint_limit_names_it(local_client, model):
    answer = local_client.post("/api/v1/attention", json={"text": "the cat " * 60, "model": model})
    assert answer.status_code == 413
    assert "64" in answer.json()["detail"]


def test_the_gpt2_trace_hides_the_upper_triangle(local_client):
    answer = local_client.post("/api/v1/trace", json={"text": GPT2_TEXT, "model": "tiny-gpt2", "layer": 1}).json()
    steps = answer["steps"]
    mask = np.array(steps["mask"], dtype=object)  # (H, T, T)
    n = mask.shape[-1]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert mask.shape == (4, n, n)
    assert all(v is None for v in mask[:, upper].ravel())  # -inf as JSON null
    assert all(v is not None for v in mask[:, ~upper].ravel())
    softmax = np.array(steps["softmax"], dtype=np.float64)
    assert (softmax[:, upper] == 0).all()


@pytest.mark.parametrize("model", ["tiny-bert", "tiny-gpt2"])
def test_every_analysis_route_answers_for_a_local_model(local_client, model):
    text = {"tiny-bert": ENGLISH, "tiny-gpt2": GPT2_TEXT}[model]
    for route, extra in [("/api/v1/attention/summary", {}), ("/api/v1/aggregate", {"kind": "rollout"}),
                         ("/api/v1/aggregate", {"kind": "mean"}), ("/api/v1/metrics", {}),
                         ("/api/v1/contributions", {"layers": [1], "heads": [0]})]:
        answer = local_client.post(route, json={"text": text, "model": model} | extra)
        assert answer.status_code == 200, (route, answer.text)
    edited = local_client.post("/api/v1/attention", json={
        "text": text, "model": model, "edit": {"layer": 0, "heads": [1], "ablate": True}}).json()
    assert edited["edited"] is True
    plain = local_client.post("/api/v1/attention", json={"text": text, "model": model}).json()
    assert np.allclose(edited["attention"][0], plain["attention"][0])  # the edited layer's own weights stay
    assert not np.allclose(edited["attention"][1], plain["attention"][1])  # the layers after it change
