"""The learned position table of every supported local architecture equals the rows transformers' model adds.

The reference is what transformers' own model does: a forward hook on its position-embedding module
(BERT, RoBERTa, DistilBERT, ELECTRA: embeddings.position_embeddings; GPT-2: wpe) records the rows it adds
to a sentence's tokens. RoBERTa counts positions from padding_idx + 1, ELECTRA's table is embedding_size
wide (16 here, d_model 32).
"""

from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from model.checkpoints import load
from model.nets import positions
from tests.checkpoints import KINDS

WIDTH = {"bert": 32, "roberta": 32, "distilbert": 32, "electra": 16, "gpt2": 32}  # the tables' widths
ROWS = {"bert": 64, "roberta": 64, "distilbert": 64, "electra": 64, "gpt2": 64}  # token positions they cover


@pytest.fixture(scope="module")
def client(checkpoint_dirs):
    settings = Settings(allowed_hosts=["testserver"], model_paths=list(checkpoint_dirs.values()))
    with TestClient(create_app(settings)) as c:
        yield c


def hf_position_module(model, kind: str) -> torch.nn.Embedding:
    """GPT-2 is read as GPT2LMHeadModel, the others as their base model (AutoModel)."""
    return model.transformer.wpe if kind == "gpt2" else model.embeddings.position_embeddings


def rows_added(directory: Path, kind: str, text: str) -> np.ndarray:
    """The position-embedding rows transformers' model adds to the tokens of `text` (its own tokenizer, with
    its special tokens), float64 (T, E)."""
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    cls = transformers.AutoModelForCausalLM if kind == "gpt2" else transformers.AutoModel
    model = cls.from_pretrained(str(directory)).eval()
    seen = []
    hook = hf_position_module(model, kind).register_forward_hook(lambda module, args, out: seen.append(out))
    with torch.no_grad():
        model(**tok(text, return_tensors="pt"))
    hook.remove()
    (added,) = seen
    return added[0].double().numpy()  # (T, E)


def full_table(directory: Path, kind: str) -> np.ndarray:
    cls = transformers.AutoModelForCausalLM if kind == "gpt2" else transformers.AutoModel
    model = cls.from_pretrained(str(directory))
    return hf_position_module(model, kind).weight.detach().double().numpy()


TEXT = "Hello world, the cat sat on the mat. Where is the dog?"


@pytest.mark.parametrize("kind", KINDS)
def test_the_learned_rows_are_the_ones_transformers_adds(checkpoint_dirs, kind):
    model = load(checkpoint_dirs[kind])
    added = rows_added(checkpoint_dirs[kind], kind, TEXT)  # (T, E)
    assert len(model.tokenizer.encode(TEXT)) == added.shape[0]
    ours = positions.learned(model.net, added.shape[0]).numpy()
    assert ours.shape == (added.shape[0], WIDTH[kind])
    assert np.array_equal(ours, added)


@pytest.mark.parametrize("kind", KINDS)
def test_the_whole_table_and_its_limit(checkpoint_dirs, kind):
    model = load(checkpoint_dirs[kind])
    table = full_table(checkpoint_dirs[kind], kind)
    first = 2 if kind == "roberta" else 0  # pad_token_id 1: RoBERTa's first token takes row 2
    assert positions.learned_size(model.net) == (ROWS[kind], WIDTH[kind])
    assert table.shape[0] - first == ROWS[kind]
    assert np.array_equal(positions.learned(model.net, ROWS[kind]).numpy(), table[first:])
    assert ROWS[kind] == model.tokenizer.max_tokens  # a row for every token the model takes
    with pytest.raises(ValueError, match=f"this model has {ROWS[kind]} learned positions"):
        positions.learned(model.net, ROWS[kind] + 1)
    answer = positions.position_table("learned", 5, WIDTH[kind], 1, model.net)
    assert answer.d_model == WIDTH[kind] and np.array_equal(answer.matrix.numpy(), table[first:first + 5])


@pytest.mark.parametrize("kind", KINDS)
def test_the_route_serves_the_true_table(client, checkpoint_dirs, kind):
    r = client.get("/api/v1/positions", params={"kind": "learned", "model": f"tiny-{kind}", "length": ROWS[kind]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["model"], body["length"], body["d_model"]) == (f"tiny-{kind}", ROWS[kind], WIDTH[kind])
    first = 2 if kind == "roberta" else 0
    assert np.array_equal(np.array(body["matrix"]), full_table(checkpoint_dirs[kind], kind)[first:])
    explicit = client.get("/api/v1/positions", params={"kind": "learned", "model": f"tiny-{kind}", "length": 3,
                                                       "d_model": WIDTH[kind]})
    assert explicit.json()["matrix"] == body["matrix"][:3]


@pytest.mark.parametrize("kind", KINDS)
def test_the_route_names_each_models_limits(client, kind):
    long = client.get("/api/v1/positions", params={"kind": "learned", "model": f"tiny-{kind}",
                                                   "length": ROWS[kind] + 1})
    assert long.status_code == 422
    (err,) = long.json()["errors"]
    assert err["loc"] == ["query", "length"] and err["type"] == "positions_learned_length"
    assert err["ctx"] == {"length": ROWS[kind] + 1, "max_positions": ROWS[kind]}
    assert f"send at most {ROWS[kind]}" in err["msg"]
    wrong = 24 if WIDTH[kind] != 24 else 8
    narrow = client.get("/api/v1/positions", params={"kind": "learned", "model": f"tiny-{kind}", "length": 4,
                                                     "d_model": wrong})
    assert narrow.status_code == 422
    (err,) = narrow.json()["errors"]
    assert err["type"] == "positions_learned_d_model" and err["ctx"] == {"d_model": wrong, "model_d_model": WIDTH[kind]}
    assert f"send {WIDTH[kind]}" in err["msg"]
