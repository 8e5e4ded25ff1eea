"""What-if edits on POST /api/v1/attention and its summary, checked through the API.

The edited layer is checked against numpy on the unedited /trace of that layer: the layers before an
edit are unchanged, so the edited layer's input, and its scaled scores, are the unedited ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import attention
from .test_compact import decode_u16, post

TEXT = "The cat sat on the mat because it was tired of the long day."


def maps(client, **body) -> tuple[dict, np.ndarray]:
    r = attention(client, text=TEXT, **body)
    assert r.status_code == 200, r.text
    answer = r.json()
    return answer, np.array(answer["attention"])


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_scores(client, layer: int, head: int) -> np.ndarray:
    r = client.post("/api/v1/trace", json={"text": TEXT, "layer": layer, "head": head})
    assert r.status_code == 200, r.text
    return np.array(r.json()["steps"]["scale"][0], dtype=np.float64)


def test_an_edit_that_changes_nothing_gives_exactly_the_unedited_answer(client):
    plain, before = maps(client)
    assert plain["edited"] is False
    answer, after = maps(client, edit={"layer": 3, "heads": None, "temperature": 1, "hidden_keys": [], "ablate": False})
    assert answer["edited"] is True
    assert np.array_equal(before, after)
    compact = decode_u16(post(client, "attention", "u16", text=TEXT, edit={"layer": 3}).content)
    assert compact[0]["edited"] is True
    assert np.abs(compact[1] - before).max() <= 1 / 131070 + 1e-7


def test_temperature_changes_its_layer_as_numpy_says_and_every_later_layer(client):
    _, before = maps(client)
    _, after = maps(client, edit={"layer": 2, "heads": [5], "temperature": 3})
    assert np.array_equal(after[:2], before[:2])  # layers before the edit: bit for bit the same
    others = [h for h in range(12) if h != 5]
    assert np.array_equal(after[2, others], before[2, others])  # the other heads of the edited layer too
    reference = softmax(scaled_scores(client, 2, 5) / 3)
    assert np.abs(after[2, 5] - reference).max() <= 1e-5
    assert np.abs(after[2, 5] - before[2, 5]).max() > 0.05
    for layer in range(3, 6):
        assert np.abs(after[layer] - before[layer]).max() > 1e-3, layer


def test_hidden_keys_get_no_weight_from_the_edited_heads_only(client):
    _, before = maps(client)
    _, after = maps(client, edit={"layer": 1, "heads": [0, 7], "hidden_keys": [0, 4]})
    assert np.all(after[1, [0, 7]][:, :, [0, 4]] == 0)
    np.testing.assert_allclose(after[1].sum(axis=-1), 1, atol=1e-5)
    scores = scaled_scores(client, 1, 7)
    scores[:, [0, 4]] = -np.inf
    assert np.abs(after[1, 7] - softmax(scores)).max() <= 1e-5
    assert np.array_equal(after[1, 1], before[1, 1])
    assert np.abs(after[2] - before[2]).max() > 1e-3


def test_ablation_keeps_the_layers_weights_and_changes_the_later_layers(client):
    _, before = maps(client)
    _, after = maps(client, edit={"layer": 0, "ablate": True})
    assert np.array_equal(after[0], before[0])  # the weights are still computed and shown
    assert np.abs(after[1] - before[1]).max() > 1e-2  # every head's output zeroed: layer 1 sees another input


def test_edited_answers_never_stand_in_for_the_unedited_ones(client):
    _, first = maps(client)
    maps(client, edit={"layer": 2, "temperature": 0.1})
    summary = decode_u16(post(client, "attention/summary", "u16", text=TEXT, size=4,
                              edit={"layer": 2, "temperature": 0.1}).content)
    assert summary[0]["edited"] is True
    _, again = maps(client)
    assert np.array_equal(first, again)
    plain = decode_u16(post(client, "attention/summary", "u16", text=TEXT, size=4).content)
    assert plain[0]["edited"] is False and not np.array_equal(plain[1], summary[1])


@pytest.mark.parametrize("encoding", ["json", "u16"])
@pytest.mark.parametrize(("edit", "loc", "rule"), [
    ({"layer": 6}, ["body", "edit", "layer"], "index_out_of_range"),
    ({"layer": 0, "heads": [3, 12]}, ["body", "edit", "heads", "1"], "index_out_of_range"),
    ({"layer": 0, "hidden_keys": [99]}, ["body", "edit", "hidden_keys", "0"], "edit_hidden_key"),
])
def test_an_edit_out_of_range_is_422_before_any_answer_starts(client, encoding, edit, loc, rule):
    r = client.post(f"/api/v1/attention?encoding={encoding}", json={"text": TEXT, "edit": edit})
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert (error["loc"], error["type"]) == (loc, rule)
