"""The Python API refuses what the REST refuses, with the same rule and the same words: one bad input sent to a
route and to the method, the REST answer's errors[0] (type, loc without "body") and `detail` compared with the
exception's `type`, `loc` and message."""

from __future__ import annotations

import json

import pytest

import attnscope
from model.analysis.lens import NoLMHead

TEXT = "The cat sat on the mat."

# (model, route, body, the same request as a call of the method): each refused by both
CASES = [
    ("minilm", "attention", {"text": ""}, lambda m: m.attention("")),
    ("tiny-gpt2", "attention", {"text": ""}, lambda m: m.attention("")),
    ("minilm", "attention", {"text": "   \n"}, lambda m: m.attention("   \n")),
    ("minilm", "attention", {"text": 123}, lambda m: m.attention(123)),
    ("minilm", "attention", {"text": TEXT, "layers": [0, 0]}, lambda m: m.attention(TEXT, layers=[0, 0])),
    ("minilm", "attention", {"text": TEXT, "layers": [-1]}, lambda m: m.attention(TEXT, layers=[-1])),
    ("minilm", "attention", {"text": TEXT, "layers": [6]}, lambda m: m.attention(TEXT, layers=[6])),
    ("minilm", "attention", {"text": TEXT, "heads": []}, lambda m: m.attention(TEXT, heads=[])),
    ("minilm", "attention", {"text": TEXT, "heads": ["1"]}, lambda m: m.attention(TEXT, heads=["1"])),
    ("minilm", "attention", {"text": TEXT, "edit": {"layer": 0, "temperature": 0}},
     lambda m: m.attention(TEXT, edit={"layer": 0, "temperature": 0})),
    ("minilm", "attention", {"text": TEXT, "edit": {"layer": 0, "heads": [1, 1]}},
     lambda m: m.attention(TEXT, edit={"layer": 0, "heads": [1, 1]})),
    ("minilm", "attention", {"text": TEXT, "edit": {"layer": 0, "hidden_keys": [99]}},
     lambda m: m.attention(TEXT, edit={"layer": 0, "hidden_keys": [99]})),
    ("minilm", "attention", {"text": TEXT, "edit": {"layer": 9}}, lambda m: m.attention(TEXT, edit={"layer": 9})),
    ("minilm", "attention", {"text": TEXT, "edit": {"layer": 0, "colour": 1}},
     lambda m: m.attention(TEXT, edit={"layer": 0, "colour": 1})),
    ("minilm", "trace", {"text": TEXT, "layer": 7}, lambda m: m.trace(TEXT, 7)),
    ("minilm", "contributions", {"text": TEXT, "heads": [12]}, lambda m: m.contributions(TEXT, heads=[12])),
    ("minilm", "aggregate", {"text": TEXT, "kind": "rollout", "residual": 2},
     lambda m: m.rollout(TEXT, residual=2)),
    ("minilm", "metrics", {"text": "\ud800"}, lambda m: m.metrics("\ud800")),
    ("tiny-gpt2", "lens", {"text": TEXT, "position": 50}, lambda m: m.lens(TEXT, position=50)),
    ("tiny-gpt2", "lens", {"text": TEXT, "top_k": 0}, lambda m: m.lens(TEXT, top_k=0)),
    ("tiny-gpt2", "edit/effect", {"text": TEXT, "edit": {"layer": 0, "kind": "probsparse", "ablate": True}},
     lambda m: m.edit_effect(TEXT, {"layer": 0, "kind": "probsparse", "ablate": True})),
    ("tiny-gpt2", "patch", {"clean": TEXT, "corrupted": "A dog.", "answer": [5, 7]},
     lambda m: m.patch(TEXT, "A dog.", answer=[5, 7])),
    ("tiny-gpt2", "patch", {"clean": TEXT, "corrupted": "The dog sat on the mat.", "answer": ["Paris is", 7]},
     lambda m: m.patch(TEXT, "The dog sat on the mat.", answer=["Paris is", 7])),
    ("tiny-gpt2", "patch", {"clean": TEXT, "corrupted": "The dog sat on the mat.", "answer": [10**6, 7]},
     lambda m: m.patch(TEXT, "The dog sat on the mat.", answer=[10**6, 7])),
    ("tiny-gpt2", "patch", {"clean": TEXT, "corrupted": "The dog sat on the mat.", "answer": [5]},
     lambda m: m.patch(TEXT, "The dog sat on the mat.", answer=[5])),
    ("minilm", "patch", {"clean": TEXT, "corrupted": "The dog sat on the mat.", "answer": [5, 7]},
     lambda m: m.patch(TEXT, "The dog sat on the mat.", answer=[5, 7])),
    ("minilm", "patch", {"clean": TEXT, "corrupted": "The dog sat on the mat.", "target": "nothing"},
     lambda m: m.patch(TEXT, "The dog sat on the mat.", target="nothing")),
    ("minilm", "attribution", {"text": TEXT, "target": "A dog.", "steps": 8},
     lambda m: m.attribute(TEXT, "A dog.", steps=8)),
    ("minilm", "attribution", {"text": TEXT, "target": 5}, lambda m: m.attribute(TEXT, 5)),
    ("minilm", "attribution", {"text": TEXT, "target": "A dog.", "baseline": "noise"},
     lambda m: m.attribute(TEXT, "A dog.", baseline="noise")),
    ("tiny-gpt2", "attribution", {"text": TEXT, "target": 10**6}, lambda m: m.attribute(TEXT, 10**6)),
    ("tiny-gpt2", "attribution", {"text": TEXT, "target": 5, "baseline": {"text": "A dog."}},
     lambda m: m.attribute(TEXT, 5, baseline={"text": "A dog."})),
]


@pytest.mark.parametrize(("model_id", "route", "body", "call"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_the_same_refusal_in_the_same_words(models, rest, model_id, route, body, call):
    r = rest.post(f"/api/v1/{route}", content=json.dumps({**body, "model": model_id}),  # escapes a lone surrogate
                  headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    want = r.json()
    with pytest.raises(attnscope.InputError) as caught:
        call(models[model_id])
    error = caught.value
    assert error.type == want["errors"][0]["type"]
    assert list(error.loc) == want["errors"][0]["loc"][1:]
    assert want["detail"] in (str(error), f"{str(error)}.")


def test_a_text_of_the_wrong_type_is_a_type_error_too(minilm):
    with pytest.raises(TypeError, match="text: Input should be a valid string"):
        minilm.attention(123)  # type: ignore[arg-type]
    with pytest.raises(attnscope.ItemError, match=r"texts\[1\]: text: Input should be a valid string") as item:
        minilm.attention_batch(["fine", None])  # type: ignore[list-item]
    assert isinstance(item.value.error, TypeError)


def test_an_encoder_has_no_lens_and_a_blank_text_is_refused_for_every_model(minilm, rest):
    with pytest.raises(NoLMHead, match="has no LM head, which the logit lens needs; load a decoder") as caught:
        minilm.lens(TEXT)
    assert caught.value.type == rest.post("/api/v1/lens", json={"text": TEXT, "model": "minilm"}).json()[
        "errors"][0]["type"]
    with pytest.raises(attnscope.FieldError, match="must not be blank"):
        minilm.encode("")  # MiniLM's tokenizer would make [CLS] [SEP] of it; the REST refuses it
