"""POST /api/v1/logit-attribution through HTTP (the test GPT-2 served beside two encoders) and
attnscope.Model.logit_attribution: the answer is the model layer's (tests/model/test_logit_attribution.py holds it
against transformers), its shapes and fields, and the refusals, the same in both."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnscope
from app.schemas.analysis import LogitAttributionRequest
from model.analysis import work
from model.analysis.lens import NoLMHead, PositionOutOfRange
from model.analysis.logit_attribution import AnswerError, logit_attribution
from model.checkpoints import load
from model.errors import InputError
from tests.api.test_work import budget, named_size_fits, text_of

TEXT = "Hello world, attention is all you need."
PATH = "/api/v1/logit-attribution"


def post(client, **body):
    return client.post(PATH, json=body)


@pytest.fixture(scope="module")
def gpt2(local_dirs):
    return load(local_dirs["gpt2"])


@pytest.mark.parametrize("answer, position", [([5], None), ([9, 4], None), ([9, 4], 3)])
def test_the_answer_is_the_models_with_its_shapes(local_client, gpt2, answer, position):
    body = {"text": TEXT, "model": "tiny-gpt2", "answer": answer}
    if position is not None:
        body["position"] = position
    r = post(local_client, **body)
    assert r.status_code == 200, r.text
    got = r.json()
    ids = gpt2.tokenizer.encode(TEXT).ids
    at = len(ids) - 1 if position is None else position
    want = logit_attribution(gpt2.decoder, ids, at, answer)
    layers, heads = gpt2.cfg.n_layers, gpt2.cfg.n_heads
    assert (got["model"], got["position"], len(got["tokens"])) == ("tiny-gpt2", at, len(ids))
    assert [a["id"] for a in got["answer"]] == answer
    assert [a["display"] for a in got["answer"]] == [gpt2.tokenizer.token_text(i)[1] for i in answer]
    assert np.array(got["heads"]).shape == (layers, heads) and len(got["mlp"]) == len(got["attention_bias"]) == layers
    assert np.allclose(got["heads"], want.heads.numpy(), rtol=1e-6, atol=1e-7)
    assert np.allclose(got["mlp"], want.mlp.numpy(), rtol=1e-6, atol=1e-7)
    assert want.attention_bias is not None and np.allclose(got["attention_bias"], want.attention_bias.numpy(),
                                                           rtol=1e-6, atol=1e-7)
    assert got["embeddings"] == pytest.approx(want.embeddings, rel=1e-6, abs=1e-7)
    assert (got["norm"], got["softcap"]) == ("layer", None) and got["norm_bias"] is not None
    parts = (np.sum(got["heads"]) + np.sum(got["mlp"]) + np.sum(got["attention_bias"]) + got["embeddings"]
             + got["norm_bias"])
    assert parts == pytest.approx(got["total"], abs=1e-5) and got["total"] == pytest.approx(got["logit"], abs=1e-5)
    assert got["capped"] == pytest.approx(got["logit"], abs=1e-5)
    with torch.no_grad():  # the model's own next-token logits at that position
        logits = gpt2.decoder.logits(gpt2.run(gpt2.tokenizer.encode(TEXT))[0, at])
    own = float(logits[answer[0]] - logits[answer[1]]) if len(answer) == 2 else float(logits[answer[0]])
    assert got["logit"] == pytest.approx(own, abs=1e-5)


def test_without_a_model_the_first_with_an_lm_head_answers(local_client):
    got = post(local_client, text=TEXT, answer=[1])
    assert got.status_code == 200 and got.json()["model"] == "tiny-gpt2"


@pytest.mark.parametrize("model", ["minilm", "tiny-bert"])
def test_an_encoder_is_refused_naming_the_models_with_a_head(local_client, model):
    r = post(local_client, text=TEXT, model=model, answer=[1])
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert error["type"] == "no_lm_head" and error["loc"] == ["body", "model"]
    assert "direct logit attribution" in error["msg"] and "tiny-gpt2" in error["msg"]


@pytest.mark.parametrize("answer, loc", [
    ([], ["body", "answer"]), ([1, 2, 3], ["body", "answer"]), ([4, 4], ["body", "answer"]),
    ([-1], ["body", "answer", "0"]), (["5"], ["body", "answer", "0"]), ([5.0], ["body", "answer", "0"]),
    ([True], ["body", "answer", "0"]), (None, ["body", "answer"]),
])
def test_answers_the_schema_refuses(local_client, answer, loc):
    body = {"text": TEXT, "model": "tiny-gpt2"} | ({} if answer is None else {"answer": answer})
    r = post(local_client, **body)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == loc, r.text


def test_an_id_beyond_the_vocabulary(local_client, gpt2):
    vocab = gpt2.cfg.vocab_size
    r = post(local_client, text=TEXT, model="tiny-gpt2", answer=[3, vocab])
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert (error["type"], error["loc"], error["ctx"]) == ("answer_out_of_range", ["body", "answer", "1"],
                                                          {"id": vocab, "vocab_size": vocab})
    assert "is not in the vocabulary" in error["msg"] and f"0..{vocab - 1}" in error["msg"]


@pytest.mark.parametrize("position", [9, 100])
def test_a_position_outside_the_input(local_client, position):
    r = post(local_client, text=TEXT, model="tiny-gpt2", answer=[1], position=position)
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert error["type"] == "index_out_of_range" and error["loc"] == ["body", "position"]
    assert error["ctx"] == {"position": position, "tokens": 9}


def test_the_work_budget_names_the_most_tokens_as_the_lens(local_client):
    model = local_client.app.state.hub.get("tiny-gpt2")[1]
    with budget(local_client, work.lens(model.cfg, 20)):
        named_size_fits(local_client, PATH, {"model": "tiny-gpt2", "answer": [1]}, lambda n: text_of(model, n), 40, 20)


def test_documented_with_examples_that_are_answered(local_client):
    spec = local_client.get("/openapi.json").json()
    operation = spec["paths"][PATH]["post"]
    for rule in ("no_lm_head", "index_out_of_range", "answer_out_of_range", "max_tokens", "unknown_model"):
        assert rule in operation["description"], rule
    answer = spec["components"]["schemas"]["LogitAttributionRequest"]["properties"]["answer"]
    stated = (answer["minItems"], answer["maxItems"], answer["uniqueItems"], answer["items"]["minimum"])
    assert stated == (1, 2, True, 0)
    for example in LogitAttributionRequest.model_config["json_schema_extra"]["examples"]:
        r = post(local_client, **example)
        assert r.status_code == 200, r.text


def test_the_python_api_answers_the_same_as_the_route(local_client, local_dirs):
    model = attnscope.load(local_dirs["gpt2"])
    got = model.logit_attribution(TEXT, [9, 4], position=3)
    route = post(local_client, text=TEXT, model="tiny-gpt2", answer=[9, 4], position=3).json()
    assert got.heads.shape == (2, 4) and got.heads.dtype == np.float64 and got.mlp.shape == (2,)
    assert got.attention_bias is not None and got.attention_bias.shape == (2,)
    assert np.allclose(got.heads, route["heads"], rtol=1e-6, atol=1e-7)
    assert (got.position, [i for i, _ in got.answer], got.norm) == (3, [9, 4], "layer")
    assert got.total == pytest.approx(got.logit, abs=1e-5) == pytest.approx(route["logit"], abs=1e-5)
    assert len(got.tokens) == 9 and got.model == "tiny-gpt2"


def test_the_python_api_refuses_as_the_route_does(local_dirs, llama_dirs):
    model = attnscope.load(local_dirs["gpt2"])
    vocab = model.pretrained.cfg.vocab_size
    for answer, rule in (([vocab], "answer_out_of_range"), ([2, 2], "answer_same"), ([], "answer_count"),
                         ([1, 2, 3], "answer_count")):
        with pytest.raises(AnswerError) as caught:
            model.logit_attribution(TEXT, answer)
        assert caught.value.type == rule
    with pytest.raises(InputError, match="not a token id"):
        model.logit_attribution(TEXT, ["5"])  # type: ignore[list-item]
    with pytest.raises(PositionOutOfRange):
        model.logit_attribution(TEXT, [1], position=9)
    with pytest.raises(InputError):
        model.logit_attribution("", [1])
    with pytest.raises(NoLMHead, match="load a decoder") as refused:
        attnscope.load("minilm").logit_attribution(TEXT, [1])
    assert refused.value.type == "no_lm_head"


def test_gemma_2_attributes_the_logit_before_its_soft_cap(llama_dirs):
    got = attnscope.load(llama_dirs["gemma2"]).logit_attribution(TEXT, [5])
    assert got.softcap == 5.0 and got.norm == "rms" and got.attention_bias is None and got.norm_bias is None
    assert got.total == pytest.approx(got.logit, abs=1e-5)
    assert got.capped == pytest.approx(5.0 * np.tanh(got.logit / 5.0), abs=1e-5)
