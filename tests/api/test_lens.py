"""POST /api/v1/lens through HTTP: a GPT-2 checkpoint served beside an encoder, against transformers'
GPT2LMHeadModel on the same directory (lm_head(ln_f(h)) per layer; hidden_states[-1] already has ln_f)."""

from __future__ import annotations

import pytest
import torch
import transformers

from app.schemas.analysis import LensRequest

TEXT = "Hello world, attention is all you need."
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def reference(local_dirs):
    directory = str(local_dirs["gpt2"])
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    lm = transformers.GPT2LMHeadModel.from_pretrained(directory, attn_implementation="eager").eval()
    return tok, lm


def reference_layers(reference, text: str, position: int | None, k: int):
    tok, lm = reference
    ids = tok(text)["input_ids"]
    at = len(ids) - 1 if position is None else position
    with torch.no_grad():
        states = lm(torch.tensor([ids]), output_hidden_states=True).hidden_states
        logits = [lm.lm_head(lm.transformer.ln_f(h[0, at])) for h in states[:-1]] + [lm.lm_head(states[-1][0, at])]
    return ids, at, [torch.softmax(row, -1).topk(k) for row in logits], logits


def lens(client, **body):
    return client.post("/api/v1/lens", json=body)


@pytest.mark.parametrize("position, k", [(None, 5), (0, 5), (3, 1), (None, 20)])
def test_every_layer_equals_transformers(local_client, reference, position, k):
    body = {"text": TEXT, "model": "tiny-gpt2", "top_k": k}
    if position is not None:
        body["position"] = position
    r = lens(local_client, **body)
    assert r.status_code == 200, r.text
    got = r.json()
    ids, at, tops, logits = reference_layers(reference, TEXT, position, k)
    assert (got["model"], got["position"], got["top_k"]) == ("tiny-gpt2", at, k)
    assert [layer["layer"] for layer in got["layers"]] == ["embeddings", 0, 1]
    tok, _ = reference
    for layer, top, row in zip(got["layers"], tops, logits, strict=True):
        predictions = layer["predictions"]
        assert [p["id"] for p in predictions] == top.indices.tolist()
        probabilities = torch.tensor([p["probability"] for p in predictions])
        assert (probabilities - top.values).abs().max().item() <= TOLERANCE
        assert (torch.tensor([p["logit"] for p in predictions]) - row[top.indices]).abs().max().item() <= 1e-4
        for p in predictions:
            assert p["token"] == tok.convert_ids_to_tokens(p["id"])
            assert p["display"] == tok.decode([p["id"]], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            assert "Ġ" not in p["display"]


def test_tokens_are_the_attention_answers_tokens(local_client, reference):
    got = lens(local_client, text=TEXT, model="tiny-gpt2").json()
    attention = local_client.post("/api/v1/attention", json={"text": TEXT, "model": "tiny-gpt2", "layers": [0]})
    assert got["tokens"] == attention.json()["tokens"]
    tok, _ = reference
    assert len(got["tokens"]) == len(tok(TEXT)["input_ids"])
    assert got["tokens"][1]["display"] == " world"


def test_the_last_layer_is_the_models_next_token_prediction(local_client, reference):
    tok, lm = reference
    with torch.no_grad():
        logits = lm(torch.tensor([tok(TEXT)["input_ids"]])).logits[0, -1]
    got = lens(local_client, text=TEXT, model="tiny-gpt2", top_k=3).json()
    assert [p["id"] for p in got["layers"][-1]["predictions"]] == logits.topk(3).indices.tolist()


def test_the_full_token_limit(local_client, reference):
    text = "Hello" + " attention" * 63
    tok, _ = reference
    assert len(tok(text)["input_ids"]) == 64
    got = lens(local_client, text=text, model="tiny-gpt2", position=63)
    assert got.status_code == 200, got.text
    _, _, tops, _ = reference_layers(reference, text, 63, 5)
    assert [[p["id"] for p in layer["predictions"]] for layer in got.json()["layers"]] == \
        [t.indices.tolist() for t in tops]
    over = lens(local_client, text=text + " attention", model="tiny-gpt2")
    assert over.status_code == 413 and over.json()["errors"][0]["type"] == "too_many_tokens"


def test_without_a_model_the_first_with_an_lm_head_answers(local_client):
    got = lens(local_client, text=TEXT)
    assert got.status_code == 200 and got.json()["model"] == "tiny-gpt2"


@pytest.mark.parametrize("model", ["minilm", "tiny-bert"])
def test_a_model_without_an_lm_head_is_refused_naming_those_with_one(local_client, model):
    r = lens(local_client, text=TEXT, model=model)
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert error["type"] == "no_lm_head" and error["loc"] == ["body", "model"]
    assert "has no LM head" in r.json()["detail"] and "tiny-gpt2" in error["msg"] and model in error["msg"]


def test_a_server_without_an_lm_head_model_says_so(client):
    r = lens(client, text=TEXT)
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert error["type"] == "no_lm_head" and "serve a decoder such as GPT-2" in error["msg"]


def test_unknown_model(local_client):
    r = lens(local_client, text=TEXT, model="nope")
    assert r.status_code == 404 and "tiny-gpt2" in r.json()["detail"]


@pytest.mark.parametrize("position", [-1, 9, 100])
def test_a_position_outside_the_input(local_client, position):
    n = len(lens(local_client, text=TEXT, model="tiny-gpt2").json()["tokens"])
    assert n == 9
    r = lens(local_client, text=TEXT, model="tiny-gpt2", position=position)
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert error["type"] == "index_out_of_range" and error["loc"] == ["body", "position"]
    assert error["ctx"] == {"position": position, "tokens": n}
    assert f"positions 0..{n - 1}" in error["msg"]


@pytest.mark.parametrize("top_k", [0, 21, "5", 2.0, True])
def test_top_k_rules(local_client, top_k):
    r = lens(local_client, text=TEXT, model="tiny-gpt2", top_k=top_k)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "top_k"]


def test_pairs_and_unknown_fields_are_refused(local_client):
    r = lens(local_client, text=TEXT, text_pair="Again.", model="tiny-gpt2")
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "pair_not_supported"
    r = lens(local_client, text=TEXT, model="tiny-gpt2", layer=0)
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "extra_forbidden"


def test_documented_with_examples_that_are_answered(local_client):
    spec = local_client.get("/openapi.json").json()
    operation = spec["paths"]["/api/v1/lens"]["post"]
    assert "200" in operation["responses"] and "422" in operation["responses"]
    assert "no_lm_head" in operation["description"]
    media = operation["requestBody"]["content"]["application/json"]
    examples = LensRequest.model_config["json_schema_extra"]["examples"]
    assert [e["value"] for e in media["examples"].values()] == examples
    for example in examples:
        r = lens(local_client, **example)
        assert r.status_code == 200, r.text
    schema = spec["components"]["schemas"]["LensRequest"]["properties"]["top_k"]
    assert (schema["minimum"], schema["maximum"], schema["default"]) == (1, 20, 5)
