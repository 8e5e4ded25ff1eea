"""A small GPT grown from a learner's text on a real uvicorn server (/api/v1/labs/lm): a tiny training on a Chinese
text (events, done, the model listed with `trained` true and served by /attention, one token per character shown as
itself), the same model from a JSON text and from an uploaded file, the cap on kept models, deleting, cancelling,
the refusals, and a second server on the same directory (a restart) that lists the kept models."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from bench.common import Server
from tests.api.test_iris import read_events

TRAIN = "/api/v1/labs/lm/train"
MODELS = "/api/v1/labs/lm/models"
TINY = {"steps": 20, "seed": 3, "context": 32, "layers": 1, "heads": 2, "d_model": 16, "eval_every": 10}
CAP = 8000  # bytes: the server's upload cap (ATTNSCOPE_LM_MAX_UPLOAD_BYTES), under 3,000 CJK characters
SENTENCE = "注意力机制让模型学会聚焦重要的信息。"
PIECES = ["注意力机制让模型学会聚焦重要的信息。", "每个汉字都是一个词元。", "我们用自己的文本训练一个小模型，",
          "看它的损失怎样下降，", "再看哪些注意力头学会了看前一个字。", "今天的天气很好，", "我们去公园散步吧。"]


def chinese_text(chars: int = 2_100, seed: int = 0) -> str:
    """Sentences of PIECES in a seeded random order, at least `chars` characters."""
    draw = random.Random(seed)
    parts: list[str] = []
    while sum(map(len, parts)) < chars:
        parts.append(draw.choice(PIECES))
    return "".join(parts)


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lm-models")


@pytest.fixture(scope="module")
def api(lm_dir: Path):
    with Server(ATTNSCOPE_LM_DIR=str(lm_dir), ATTNSCOPE_LM_KEEP="2",
                ATTNSCOPE_LM_MAX_UPLOAD_BYTES=str(CAP)) as server, \
            httpx.Client(base_url=server.base, trust_env=False, timeout=120) as client:
        yield client


def train(api: httpx.Client, **kwargs) -> tuple[str, list]:
    r = api.post(TRAIN, **kwargs)
    assert r.status_code == 202, r.text
    job = r.json()["job"]
    assert r.json()["events"] == f"{TRAIN}/{job}/events"
    with api.stream("GET", f"{TRAIN}/{job}/events") as stream:
        return job, read_events(stream.iter_lines())


def served(api: httpx.Client) -> dict[str, dict]:
    return {m["id"]: m for m in api.get("/api/v1/models").json()["models"]}


def entropy(counts: Counter) -> float:
    total = sum(counts.values())
    return -sum(n / total * math.log(n / total) for n in counts.values())


@pytest.fixture(scope="module")
def first(api: httpx.Client):
    """The model trained from a JSON text: (its id, the job's events)."""
    _, found = train(api, json={"text": chinese_text(), **TINY})
    return found[-1][2]["model"], found


def test_a_tiny_training_streams_evaluations_then_a_served_model(api, first, lm_dir):
    model, found = first
    names = [name for _, name, _ in found]
    assert names == ["eval", "eval", "eval", "done"]
    evals = [data for _, name, data in found if name == "eval"]
    assert [e["step"] for e in evals] == [0, 10, 20] and all(e["steps"] == 20 for e in evals)
    text = chinese_text()
    pairs = Counter(zip(text, text[1:], strict=False))
    firsts = Counter(text[:-1])
    for e in evals:  # the text's own entropies, counted here
        assert e["unigram_entropy"] == pytest.approx(entropy(Counter(text)), rel=1e-6)
        assert e["bigram_entropy"] == pytest.approx(entropy(pairs) - entropy(firsts), rel=1e-6)
        assert isinstance(e["sample"], str) and e["sample"]
        assert set(e["sample"]) <= set(text), "a sample is made of the text's characters"
    assert evals[-1]["train_loss"] < evals[0]["train_loss"]
    done = found[-1][2]
    assert done["steps"] == 20 and len(done["heads"]) == TINY["layers"] * TINY["heads"]
    for head in done["heads"]:
        for score in ("previous_token", "induction", "positional"):
            assert 0.0 <= head[score] <= 1.0 + 1e-6
        assert head["roles"] == [r for r in ("previous_token", "induction", "positional")
                                 if head[r] >= done["thresholds"][r]]
    info = served(api)[model]
    assert info["trained"] is True and (info["n_layers"], info["n_heads"], info["d_model"]) == (1, 2, 16)
    assert info["max_tokens"] == TINY["context"] and info["lm_head"] is True
    assert not any(m["trained"] for mid, m in served(api).items() if mid != model and not mid.startswith("lm-"))
    assert (lm_dir / model / "config.json").is_file()
    assert text not in "".join(p.read_text(errors="replace") for p in (lm_dir / model).iterdir()), \
        "the text is not kept with the model"


def test_the_trained_model_reads_every_character_as_itself(api, first):
    model, _ = first
    r = api.post("/api/v1/attention", json={"text": SENTENCE, "model": model})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [t["display"] for t in body["tokens"]] == list(SENTENCE)
    assert not any(t["unknown"] for t in body["tokens"])
    n = len(SENTENCE)
    assert len(body["attention"]) == 1 and len(body["attention"][0]) == 2 and len(body["attention"][0][0]) == n
    for row in body["attention"][0][1]:
        assert sum(row) == pytest.approx(1.0, abs=1e-4)


def test_an_uploaded_file_gives_the_same_model_then_the_cap_drops_the_oldest(api, first, lm_dir):
    model, _ = first
    files = {"file": ("text.txt", chinese_text().encode("utf-8"), "text/plain")}
    _, found = train(api, files=files, data={name: str(value) for name, value in TINY.items()})
    second = found[-1][2]["model"]
    assert second != model
    assert (lm_dir / second / "model.safetensors").read_bytes() == (lm_dir / model / "model.safetensors").read_bytes()
    listed = api.get(MODELS).json()
    assert [m["id"] for m in listed["models"]] == [second, model] and listed["keep"] == 2
    _, found = train(api, json={"text": chinese_text(seed=1), **TINY, "seed": 4})
    third = found[-1][2]["model"]
    assert [m["id"] for m in api.get(MODELS).json()["models"]] == [third, second]
    assert model not in served(api) and not (lm_dir / model).exists()
    assert api.post("/api/v1/attention", json={"text": SENTENCE, "model": model}).status_code == 404


def test_deleting_a_model_unlists_it_and_removes_its_files(api, lm_dir):
    _, found = train(api, json={"text": chinese_text(seed=2), **TINY})
    model = found[-1][2]["model"]
    assert api.delete(f"{MODELS}/{model}").status_code == 204
    assert model not in served(api) and not (lm_dir / model).exists()
    again = api.delete(f"{MODELS}/{model}")
    assert again.status_code == 404 and again.json()["errors"][0]["type"] == "unknown_model"
    assert api.delete(f"{MODELS}/minilm").status_code == 422  # not a trained model's id


def test_a_cancelled_job_saves_nothing(api, lm_dir):
    before = sorted(p.name for p in lm_dir.iterdir())
    r = api.post(TRAIN, json={"text": chinese_text(), **TINY, "steps": 100_000, "eval_every": 100_000})
    job = r.json()["job"]
    with api.stream("GET", f"{TRAIN}/{job}/events") as stream:
        lines = stream.iter_lines()
        read_events(lines, until=lambda event: event[1] == "eval")
        assert api.delete(f"{TRAIN}/{job}").status_code == 204
        rest = read_events(lines)
    assert rest[-1][1] == "cancelled"
    assert sorted(p.name for p in lm_dir.iterdir() if not p.name.startswith(".")) == \
        [name for name in before if not name.startswith(".")]


@pytest.mark.parametrize(("body", "status", "type_", "loc"), [
    ({"text": "短" * 100}, 422, "string_too_short", ["body", "text"]),
    ({"text": chinese_text(3_000)}, 413, "lm_text_too_large", ["body", "text"]),
    ({"text": chinese_text(), "heads": 3, "d_model": 16}, 422, "lab_setting", ["body", "d_model"]),
    ({"text": chinese_text() + "\x00"}, 422, "lab_setting", ["body", "text"]),
    ({"text": chinese_text(), "steps": 0}, 422, "greater_than_equal", ["body", "steps"]),
])
def test_refusals_say_the_limits(api, body, status, type_, loc):
    r = api.post(TRAIN, json=body)
    assert r.status_code == status, r.text
    error = r.json()["errors"][0]
    assert (error["type"], error["loc"]) == (type_, loc)
    if type_ == "lab_setting" and loc[-1] == "text":
        assert error["ctx"] == {"min": 2000, "max": CAP} and "2,000" in error["msg"]
    if status == 413:
        assert error["ctx"]["limit"] == CAP and f"{CAP:,}" in error["msg"]


def test_an_uploaded_binary_file_is_refused(api):
    files = {"file": ("x.bin", bytes(range(256)) * 10, "application/octet-stream")}
    r = api.post(TRAIN, files=files)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "file"]


def test_a_restarted_server_lists_the_kept_models_and_may_refuse_uploads(api, first, lm_dir):
    kept = [m["id"] for m in api.get(MODELS).json()["models"]]
    assert kept
    settings = Settings(allowed_hosts=["testserver"], lm_dir=lm_dir, lm_uploads=False)
    with TestClient(create_app(settings)) as client:
        models = {m["id"]: m for m in client.get("/api/v1/models").json()["models"]}
        assert all(models[mid]["trained"] for mid in kept)
        assert [m["id"] for m in client.get(MODELS).json()["models"]] == kept
        r = client.post("/api/v1/attention", json={"text": SENTENCE, "model": kept[0]})
        assert [t["display"] for t in r.json()["tokens"]] == list(SENTENCE)
        refused = client.post(TRAIN, json={"text": chinese_text(), **TINY})
        assert refused.status_code == 403 and refused.json()["errors"][0]["type"] == "lm_uploads_off"
