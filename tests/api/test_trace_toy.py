"""/api/v1/trace against HF transformers and /api/v1/attention; /api/v1/toy against numbers derived here."""


import numpy as np
import pytest
import torch

from model.checkpoints.registry import minilm_dir
from model.steps import STEPS

from .conftest import attention

TEXT, PAIR = "Attention lets every token look at every other token.", "It is a weighted sum."


def trace(client, **body):
    return client.post("/api/v1/trace", json=body)


@pytest.fixture(scope="module")
def hf_layer3():
    """HF's hidden state entering layer 3, its self-attention context, and its attention modules."""
    import transformers
    directory = str(minilm_dir())
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.BertModel.from_pretrained(directory, attn_implementation="eager").eval()
    attn = model.encoder.layer[3].attention
    seen = {}

    def keep_context(module, args, out):
        seen["context"] = out[0]  # returns None: the output stays unchanged

    hook = attn.self.register_forward_hook(keep_context)
    with torch.no_grad():
        out = model(**tok(TEXT, PAIR, return_tensors="pt"), output_hidden_states=True, output_attentions=True)
    hook.remove()
    return {"input": out.hidden_states[3][0], "context": seen["context"][0], "attn": attn,
            "softmax": out.attentions[3][0]}


def test_trace_has_every_step_in_order(client):
    body = trace(client, text=TEXT, layer=3, head=5).json()
    assert list(body["steps"]) == list(STEPS)
    assert body["heads"] == [5] and body["layer"] == 3
    assert (body["d_model"], body["n_heads"], body["d_head"]) == (384, 12, 32)
    assert body["scale"] == pytest.approx(1 / np.sqrt(32))


def test_trace_equals_hf_and_is_consistent(client, hf_layer3):
    body = trace(client, text=TEXT, text_pair=PAIR, layer=3).json()
    s = {k: (torch.tensor(v) if not isinstance(v, dict) else {n: torch.tensor(m) for n, m in v.items()})
         for k, v in body["steps"].items()}
    ref, attn = hf_layer3, hf_layer3["attn"]
    n = len(body["tokens"])
    tol = 1e-5
    with torch.no_grad():
        assert (s["input"] - ref["input"]).abs().max() <= tol
        assert (s["project"]["q"] - attn.self.query(ref["input"])).abs().max() <= tol
        assert (s["project"]["v"] - attn.self.value(ref["input"])).abs().max() <= tol
        assert s["split"]["k"].shape == (12, n, 32)
        assert torch.equal(s["split"]["k"][7], s["project"]["k"][:, 7 * 32 : 8 * 32])
        assert torch.allclose(s["scale"], s["scores"] * body["scale"], atol=1e-6)
        assert torch.equal(s["mask"], s["scale"])  # an encoder without padding hides nothing
        assert (s["softmax"] - ref["softmax"]).abs().max() <= tol
        assert torch.allclose(s["weighted_sum"], s["softmax"] @ s["split"]["v"], atol=1e-5)
        for h in range(12):  # concat holds every head in its slot
            assert torch.equal(s["concat"][:, h * 32 : (h + 1) * 32], s["weighted_sum"][h])
        assert (s["concat"] - ref["context"]).abs().max() <= tol
        # output = HF's attention output projection on HF's context, before residual and LayerNorm
        assert (s["output"] - attn.output.dense(ref["context"])).abs().max() <= 1e-4


def test_trace_softmax_equals_the_attention_map(client):
    one = trace(client, text=TEXT, layer=4, head=9).json()["steps"]["softmax"]
    maps = attention(client, text=TEXT, layers=[4], heads=[9]).json()["attention"][0]
    assert np.abs(np.array(one) - np.array(maps)).max() <= 1e-6


def test_trace_of_one_head_keeps_full_width_steps(client):
    body = trace(client, text="short one", layer=0, head=11).json()
    n = len(body["tokens"])
    assert np.array(body["steps"]["scores"]).shape == (1, n, n)
    assert np.array(body["steps"]["concat"]).shape == (n, 384)


@pytest.mark.parametrize(
    "body, status, says",
    [
        ({"text": "x", "layer": 6}, 422, "0..5"),
        ({"text": "x", "layer": 0, "head": 12}, 422, "0..11"),
        ({"text": "x"}, 422, "layer"),
        ({"text": "x", "layer": "1"}, 422, "integer"),
        ({"text": " ", "layer": 0}, 422, "blank"),
        ({"text": "x", "layer": 0, "model": "nope"}, 404, "minilm"),
        ({"text": "word " * 600, "layer": 0}, 413, "512"),
    ],
)
def test_trace_errors(client, body, status, says):
    r = trace(client, **body)
    assert r.status_code == status and says in r.json()["detail"]


# --- the worked example, derived independently -------------------------------------------------

X = np.array([[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0]], dtype=float)
V = np.array([[10, 11, 20, 21], [12, 13, 22, 23], [14, 15, 24, 25], [16, 17, 26, 27]], dtype=float)

# Head 0 sees columns 0-1 of X, head 1 columns 2-3; identity weights leave them unchanged.
SCORES_BY_HAND = [
    [[1, 0, 1, 2], [0, 1, 1, 0], [1, 1, 2, 2], [2, 0, 2, 4]],
    [[5, 4, 1, 2], [4, 5, 2, 1], [1, 2, 1, 0], [2, 1, 0, 1]],
]


def softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def reference(q_in, k_in, v_in, n_heads, w=None, causal=False):
    w = w or {}
    q, k, v = (x @ np.array(w.get(n, np.eye(q_in.shape[1]))) for x, n in ((q_in, "q"), (k_in, "k"), (v_in, "v")))
    dh = q.shape[1] // n_heads
    heads = []
    for h in range(n_heads):
        c = slice(h * dh, (h + 1) * dh)
        s = q[:, c] @ k[:, c].T / np.sqrt(dh)
        if causal:
            s = np.where(np.triu(np.ones_like(s), 1) > 0, -np.inf, s)
        heads.append(softmax(s) @ v[:, c])
    return np.concatenate(heads, 1) @ np.array(w.get("o", np.eye(q_in.shape[1])))


def toy(client, **body):
    return client.post("/api/v1/toy", json=body)


def test_worked_example(client):
    body = toy(client).json()
    assert (body["d_model"], body["n_heads"], body["d_head"]) == (4, 2, 2)
    assert body["scale"] == pytest.approx(2 ** -0.5)
    s = body["steps"]
    assert list(s) == list(STEPS)
    assert s["input"] == {"q": X.tolist(), "k": X.tolist(), "v": V.tolist()}
    assert np.array(s["split"]["q"])[:, 0].tolist() == [[1, 0], [2, 1]]  # token 0's two heads
    assert s["scores"] == SCORES_BY_HAND
    np.testing.assert_allclose(s["scale"], np.array(SCORES_BY_HAND) / np.sqrt(2))
    np.testing.assert_allclose(s["softmax"], softmax(np.array(SCORES_BY_HAND) / np.sqrt(2)), atol=1e-12)
    # Row 1 of head 0 has scores [0, 1, 1, 0]: weights 1/(2+2e^(1/sqrt2)) and e^(1/sqrt2)/(2+2e^(1/sqrt2))
    a = np.exp(2 ** -0.5)
    np.testing.assert_allclose(s["softmax"][0][1], [1 / (2 + 2 * a), a / (2 + 2 * a), a / (2 + 2 * a), 1 / (2 + 2 * a)])
    np.testing.assert_allclose(s["weighted_sum"][0][1], [13.0, 14.0], atol=1e-12)  # symmetric weights: the mean
    np.testing.assert_allclose(s["output"], reference(X, X, V, 2), atol=1e-12)
    assert s["concat"] == s["output"]  # identity W_o


def test_empty_request_equals_explicit_worked_example(client):
    explicit = toy(client, queries=X.tolist(), keys=X.tolist(), values=V.tolist(), n_heads=2).json()
    assert toy(client).json() == explicit


def test_toy_with_weights_causal_and_cross_attention(client):
    rng = np.random.default_rng(0)
    q_in, kv_in = rng.normal(size=(3, 6)), rng.normal(size=(5, 6))
    w = {n: rng.normal(size=(6, 6)).round(3).tolist() for n in ("q", "v", "o")}  # k missing: identity
    body = toy(client, queries=q_in.tolist(), keys=kv_in.tolist(), n_heads=3, weights=w, causal=True).json()
    s = body["steps"]
    np.testing.assert_allclose(s["output"], reference(q_in, kv_in, kv_in, 3, w, causal=True), atol=1e-9)
    assert s["mask"][0][0][1:] == [None] * 4  # query 0 sees key 0 only
    assert s["softmax"][0][0][1:] == [0.0] * 4


@pytest.mark.parametrize(
    "body, says",
    [
        ({"queries": [[1, 2], [3]]}, "not rectangular"),
        ({"queries": [[1, 2, 3]]}, "send n_heads"),
        ({"queries": [[1, 2]], "n_heads": 3}, "does not divide"),
        ({"queries": [[1, 2]], "n_heads": 0}, "n_heads"),
        ({"queries": [[1, 2]], "keys": [[1, 2, 3]]}, "same d_model"),
        ({"queries": [[1, 2]], "values": [[1, 2], [3, 4]]}, "one value per key"),
        ({"queries": [[1, 2]], "weights": {"q": [[1]]}}, "must be 2x2"),
        ({"queries": [[1, 2]], "weights": {"x": [[1]]}}, "x"),
        ({"keys": [[1, 2]]}, "queries"),
        ({"queries": [[1e308, 1]]}, "1e+06"),
        ({"queries": [[1] * 65]}, "64"),
        ({"queries": [[1]] * 65}, "64"),
        ({"queries": []}, "queries"),
        ({"queries": [[]]}, "queries"),
        ({"queries": [["1", 2]]}, "number"),
        ({"causal": "yes"}, "causal"),
    ],
)
def test_toy_errors(client, body, says):
    r = toy(client, **body)
    assert r.status_code == 422, r.text
    assert says in r.json()["detail"]


@pytest.mark.parametrize("raw", ['{"queries": [[NaN, 1]]}', '{"queries": [[Infinity, 1]]}', '{"queries": [[1e999]]}'])
def test_toy_non_finite_numbers(client, raw):
    r = client.post("/api/v1/toy", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "finite" in r.json()["detail"]


Q4 = [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1]]
ADDITIVE_1 = {"w_q": [[[1]]], "w_k": [[[1]]], "v": [[1]]}

# Every toy error names its field as a path and its rule as a type (the page marks the field and
# words the problem without reading the sentence); toy rules carry their numbers in ctx.
HTTP_CASES = [
    ({"queries": [[1, 2], [3]]}, ["body", "queries", "1"], "toy_ragged", {"cols": 1, "first_cols": 2}),
    ({"queries": [[1, 2]], "keys": [[1, 2], [3, 4]], "values": [[1, 2], [3, 4, 5]]}, ["body", "values", "1"],
     "toy_ragged", {"cols": 3, "first_cols": 2}),
    ({"queries": [[1, 2, 3]]}, ["body", "n_heads"], "toy_odd_d_model", {"d_model": 3}),
    ({"queries": [[1, 2, 3, 4]], "n_heads": 3}, ["body", "n_heads"], "toy_heads_divide",
     {"n_heads": 3, "d_model": 4}),
    ({"queries": [[1, 2, 3, 4]], "keys": [[1, 2, 3]]}, ["body", "keys"], "toy_columns", {"cols": 3, "d_model": 4}),
    ({"queries": [[1, 2]], "keys": [[1, 2]] * 4, "values": [[1, 2, 3]] * 4}, ["body", "values"], "toy_columns",
     {"cols": 3, "d_model": 2}),
    ({"queries": [[1, 2]], "keys": [[1, 2]] * 4, "values": [[1, 2]] * 3}, ["body", "values"], "toy_value_rows",
     {"values": 3, "keys": 4}),
    ({"queries": [[1, 2]], "values": [[1, 2], [3, 4]]}, ["body", "values"], "toy_value_rows",
     {"values": 2, "keys": 1}),  # keys default to the queries
    ({"queries": [[1, 2]], "weights": {"q": [[1]]}}, ["body", "weights", "q"], "toy_weight_shape",
     {"rows": 1, "cols": 1, "d_model": 2}),
    ({"queries": [[1, 2]], "weights": {"o": [[1, 2], [3]]}}, ["body", "weights", "o", "1"], "toy_ragged",
     {"cols": 1, "first_cols": 2}),
    ({"keys": [[1, 2]]}, ["body", "queries"], "toy_no_queries", {}),
    # the schema states this toy rule too, and answers it under the same type
    ({"queries": [[1, 2], [3, 2e6]]}, ["body", "queries", "1", "1"], "toy_magnitude", {"max": 1e6}),
    # rules of pydantic's own keep pydantic's type, and its ctx where that is numbers and strings
    ({"queries": [[1, 2], [3, "4"]]}, ["body", "queries", "1", "1"], "float_type", None),
    ({"queries": [[1] * 65]}, ["body", "queries", "0"], "too_long",
     {"field_type": "List", "max_length": 64, "actual_length": 65}),
    ({"queries": [[1, 2]], "weights": {"x": [[1]]}}, ["body", "weights", "x"], "extra_forbidden", None),
    ({"queries": [[1, 2]], "n_heads": 0}, ["body", "n_heads"], "greater_than_equal", {"ge": 1}),
    ({"queries": [[1, 2]], "n_heads": "2"}, ["body", "n_heads"], "int_type", None),
    # variants, widths, masks and positions
    ({"queries": Q4, "d_keys": 3, "weights": {"q": np.eye(4).tolist()}}, ["body", "weights", "q"],
     "toy_weight_widths", {"rows": 4, "cols": 4, "want_rows": 4, "want_cols": 6}),
    ({"queries": Q4, "d_values": 1, "weights": {"o": np.eye(4).tolist()}}, ["body", "weights", "o"],
     "toy_weight_widths", {"rows": 4, "cols": 4, "want_rows": 2, "want_cols": 4}),
    ({"queries": Q4, "d_keys": 40}, ["body", "d_keys"], "toy_head_width", {"width": 80, "n_heads": 2, "max": 64}),
    ({"queries": Q4, "straight_through": True}, ["body", "straight_through"], "toy_straight_through",
     {"variant": "scaled_dot"}),
    ({"queries": Q4, "additive": ADDITIVE_1}, ["body", "additive"], "toy_additive_variant", {"variant": "scaled_dot"}),
    ({"queries": Q4, "variant": "additive", "additive": ADDITIVE_1}, ["body", "additive", "w_q"],
     "toy_additive_shape", {"shape": "1x1x1", "want": "2x2x1"}),
    ({"queries": Q4, "variant": "additive", "additive": {"w_q": [[[0.5] * 33] * 2] * 2, "w_k": [[[0.5] * 33] * 2] * 2,
                                                           "v": [[0.5] * 33] * 2}},
     ["body", "additive", "w_q"], "toy_additive_width", {"width": 66, "n_heads": 2, "max": 64}),
    ({"queries": Q4, "hidden_keys": [0, 3]}, ["body", "hidden_keys", "1"], "toy_hidden_key", {"key": 3, "keys": 3}),
    ({"queries": [[1, 2, 3]], "n_heads": 1, "positions": "sinusoidal"}, ["body", "positions"], "toy_sinusoidal_odd",
     {"d_model": 3}),
    ({"queries": Q4, "d_keys": 3, "positions": "rope"}, ["body", "d_keys"], "toy_rope_odd", {"d_keys": 3}),
    ({"queries": Q4, "temperature": 0}, ["body", "temperature"], "greater_than", {"gt": 0.0}),
    ({"queries": Q4, "temperature": -1.5}, ["body", "temperature"], "greater_than", {"gt": 0.0}),
    ({"queries": Q4, "temperature": 1e-300}, ["body", "temperature"], "toy_temperature",
     {"temperature": 1e-300, "min": 1e-6}),
    ({"queries": Q4, "seed": -1}, ["body", "seed"], "greater_than_equal", {"ge": 0}),
    ({"queries": Q4, "seed": 2**32}, ["body", "seed"], "less_than_equal", {"le": 2**32 - 1}),
    ({"queries": Q4, "hidden_keys": [-1]}, ["body", "hidden_keys", "0"], "toy_hidden_key", {"key": -1, "keys": 3}),
    ({"queries": Q4, "variant": "luong"}, ["body", "variant"], "literal_error",
     {"expected": "'scaled_dot', 'dot', 'additive', 'hard', 'sample', 'gumbel', 'linear', 'probsparse', 'general' "
                  "or 'cosine'"}),
    ({"queries": Q4, "variant": "linear", "positions": "alibi"}, ["body", "positions"], "toy_linear_alibi", {}),
    ({"variant": "probsparse", "factor": 0}, ["body", "factor"], "greater_than_equal", {"ge": 1}),
    ({"scale": 2}, ["body", "scale"], "toy_scale_variant", {"variant": "scaled_dot"}),
    ({"variant": "cosine", "scale": 0}, ["body", "scale"], "greater_than", {"gt": 0.0}),
    ({"tau": 0}, ["body", "tau"], "greater_than", {"gt": 0.0}),
    ({"tau": 1e-9}, ["body", "tau"], "toy_tau_range", {"tau": 1e-9, "min": 1e-6, "max": 1e6}),
    ({"delta": [1, 2]}, ["body", "delta"], "toy_delta_length", {"count": 2, "keys": 4}),
    ({"variant": "linear", "delta": [0, -1, 0, 0]}, ["body", "delta"], "toy_linear_delta", {}),
    ({"variant": "probsparse", "factor": 65}, ["body", "factor"], "less_than_equal", {"le": 64}),
    ({"factor": 2}, ["body", "factor"], "toy_factor_variant", {"variant": "scaled_dot"}),
    ({"variant": "probsparse", "queries": [[1, 2]]}, ["body", "queries"], "toy_probsparse_short",
     {"queries": 1, "keys": 1}),
    ({"variant": "probsparse", "hidden_keys": [1]}, ["body", "hidden_keys"], "toy_probsparse_hidden", {}),
    ({"variant": "probsparse", "causal": True, "queries": Q4, "keys": Q4[:2]}, ["body", "keys"],
     "toy_probsparse_causal", {"queries": 3, "keys": 2}),
    ({"queries": Q4, "positions": "learned"}, ["body", "positions"], "literal_error",
     {"expected": "'none', 'sinusoidal', 'rope' or 'alibi'"}),
]


@pytest.mark.parametrize("body, loc, type_, ctx", HTTP_CASES)
def test_toy_errors_carry_the_field_path_type_and_numbers(client, body, loc, type_, ctx):
    r = toy(client, **body)
    assert r.status_code == 422, r.text
    answer = r.json()
    assert isinstance(answer["detail"], str) and answer["detail"]
    (error,) = answer["errors"]
    assert error["loc"] == loc and error["type"] == type_
    assert all(isinstance(part, str) for part in error["loc"])
    assert error.get("ctx") == ctx and set(error) == {"loc", "msg", "type"} | ({"ctx"} if ctx is not None else set())
    assert error["msg"]


def test_toy_error_format(client):
    r = toy(client, queries=[[1, 2]], values=[[1, 2], [3, 4]])
    assert r.json() == {
        "detail": "keys have 1 row but values have 2; send one value per key.",
        "errors": [{"loc": ["body", "values"], "msg": "keys have 1 row but values have 2; send one value per key",
                    "type": "toy_value_rows", "ctx": {"values": 2, "keys": 1}}],
    }


def test_validation_messages_leave_the_path_to_loc_and_detail(client):
    r = toy(client, queries=[[1, 2], [3, 4], [5, "x"]], keys=[[1, "y"]])
    answer = r.json()
    assert answer["detail"] == "queries.2.1: Input should be a valid number; keys.0.1: Input should be a valid number"
    assert [(e["loc"], e["msg"]) for e in answer["errors"]] == [
        (["body", "queries", "2", "1"], "Input should be a valid number"),
        (["body", "keys", "0", "1"], "Input should be a valid number"),
    ]
    unknown = toy(client, queries=[[1, 2]], heads=2).json()
    assert unknown["detail"] == "heads: unknown field; remove it"
    assert unknown["errors"] == [
        {"loc": ["body", "heads"], "msg": "unknown field; remove it", "type": "extra_forbidden"},
    ]


# Rules the schema answers first over HTTP are checked by the model too (run_toy is called without it).
MODEL_LEVEL = [
    (dict(queries=[[1.0, 2.0], [3.0, float("nan")]]), ("queries", "1", "1"), "toy_not_finite", {}),
    (dict(queries=[[1.0, 2.0]], weights={"k": [[1.0, 0.0], [-2e6, 1.0]]}), ("weights", "k", "1", "0"),
     "toy_magnitude", {"max": 1e6}),
    (dict(queries=[[1.0, 2.0]], weights={"z": [[1.0]]}), ("weights", "z"), "toy_weight_name", {"name": "z"}),
    (dict(queries=[]), ("queries",), "toy_empty", {}),
    (dict(queries=[[1.0]], keys=[[]]), ("keys",), "toy_empty", {}),
    (dict(queries=[[1.0]] * 65), ("queries",), "toy_size", {"rows": 65, "cols": 1, "max": 64}),
    (dict(queries=[[1.0, 2.0]], n_heads=0), ("n_heads",), "toy_heads_divide", {"n_heads": 0, "d_model": 2}),
    (dict(variant="luong"), ("variant",), "toy_variant", {"variant": "luong"}),
    (dict(positions="learned"), ("positions",), "toy_positions", {"positions": "learned"}),
    (dict(temperature=0.0), ("temperature",), "toy_temperature", {"temperature": 0.0, "min": 1e-6}),
    (dict(seed=-3), ("seed",), "toy_seed_range", {"seed": -3, "max": 2**32 - 1}),
    (dict(variant="probsparse", factor=0), ("factor",), "toy_factor_range", {"factor": 0, "max": 64}),
    (dict(variant="cosine", scale=-1.0), ("scale",), "toy_scale_range", {"scale": -1.0, "max": 1e6}),
    (dict(delta=[0.0, float("nan"), 0.0, 0.0]), ("delta", "1"), "toy_delta_number", {"max": 1e6}),
    (dict(variant="additive", additive={"w_q": [[[1.0, 2.0], [3.0]]], "w_k": [], "v": []}), ("additive", "w_q"),
     "toy_additive_shape", {"shape": "ragged", "want": "2x2x2"}),
]


@pytest.mark.parametrize("kwargs, loc, type_, ctx", MODEL_LEVEL)
def test_model_level_toy_rules_name_type_cell_and_numbers(kwargs, loc, type_, ctx):
    from model.errors import ToyShapeError
    from model.lab.toy import run_toy

    with pytest.raises(ToyShapeError) as err:
        run_toy(**kwargs)
    assert (err.value.loc, err.value.type, err.value.ctx) == (loc, type_, ctx)
    if len(loc) == 4:
        assert f"row {loc[2]}, column {loc[3]}" in str(err.value)


def test_every_toy_rule_is_tested_and_documented(client):
    from model.errors import TOY_RULES

    tested = {type_ for *_, type_, _ in HTTP_CASES} | {type_ for *_, type_, _ in MODEL_LEVEL}
    assert set(TOY_RULES) <= tested
    description = client.get("/openapi.json").json()["paths"]["/api/v1/toy"]["post"]["description"]
    for rule, (keys, _) in TOY_RULES.items():
        assert f"`{rule}` {{{', '.join(keys)}}}" in description


def test_a_toy_rule_states_exactly_its_numbers():
    from model.errors import ToyShapeError

    with pytest.raises(TypeError, match="toy_columns"):
        ToyShapeError("toy_columns", ("keys",), "keys are too wide", cols=3)


def test_every_toy_error_the_server_gives_names_a_field(client):
    """Random bad requests: every 422 of /toy carries a loc under body naming a request field."""
    rng = np.random.default_rng(1)
    fields = {"queries", "keys", "values", "n_heads", "weights", "causal", "hidden_keys", "d_keys", "d_values",
              "positions"}
    for _ in range(60):
        body = {}
        for name in ("queries", "keys", "values"):
            if rng.random() < 0.6:
                rows, cols = rng.integers(1, 5, size=2)
                m = rng.integers(-3, 4, size=(rows, cols)).tolist()
                if rng.random() < 0.2:
                    m[-1] = m[-1][:-1] or [1, 2, 3]
                body[name] = m
        if rng.random() < 0.5:
            body["n_heads"] = int(rng.integers(1, 5))
        if rng.random() < 0.3:
            side = int(rng.integers(1, 5))
            body["weights"] = {"qkvo"[int(rng.integers(4))]: np.eye(side).tolist()}
        for name in ("d_keys", "d_values"):
            if rng.random() < 0.2:
                body[name] = int(rng.integers(1, 5))
        if rng.random() < 0.2:
            body["hidden_keys"] = [int(rng.integers(0, 5))]
        if rng.random() < 0.2:
            body["positions"] = ["sinusoidal", "rope", "alibi"][int(rng.integers(3))]
        r = toy(client, **body)
        assert r.status_code in (200, 422), r.text
        if r.status_code == 422:
            for error in r.json()["errors"]:
                assert error["loc"][0] == "body" and error["loc"][1] in fields, (body, error)


def test_toy_answer_echoes_the_settings_and_the_defaults_are_the_worked_example(client):
    body = toy(client).json()
    assert {k: body[k] for k in ("variant", "temperature", "seed", "straight_through", "d_keys", "d_values",
                                 "positions", "hidden_keys", "additive", "soft")} == {
        "variant": "scaled_dot", "temperature": 1.0, "seed": 0, "straight_through": False, "d_keys": 2,
        "d_values": 2, "positions": "none", "hidden_keys": [], "additive": None, "soft": None}
    assert body["weights"] == {n: np.eye(4).tolist() for n in "qkvo"}


# probsparse refuses hidden keys (toy_probsparse_hidden); tests/api/test_probsparse_toy.py has it over HTTP
@pytest.mark.parametrize("variant", ["scaled_dot", "dot", "additive", "hard", "sample", "gumbel", "linear", "general",
                                     "cosine"])
def test_toy_variants_over_http(client, variant):
    body = toy(client, variant=variant, temperature=0.5, seed=4, hidden_keys=[2], causal=True).json()
    factor = {"dot": 1.0, "additive": 1.0, "linear": 1.0, "general": 1.0, "cosine": 2 ** 0.5}.get(variant, 2 ** -0.5)
    assert body["scale"] == pytest.approx(factor / 0.5)
    np.testing.assert_allclose(body["steps"]["scale"], np.array(body["steps"]["scores"]) * body["scale"], atol=1e-12)
    weights = np.array(body["steps"]["softmax"])
    assert np.isfinite(weights).all() and (weights[:, :, 2] == 0).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-12)
    assert (body["soft"] is not None) == (variant in ("hard", "sample"))
    assert (body["additive"] is not None) == (variant == "additive")
    if body["soft"] is not None:
        assert set(np.unique(weights)) <= {0.0, 1.0}
        assert np.array(body["soft"]).shape == weights.shape


def test_toy_widths_positions_and_straight_through_over_http(client):
    body = toy(client, queries=Q4, keys=Q4 * 2, d_keys=3, d_values=1, n_heads=2, variant="gumbel",
               straight_through=True, positions="alibi", seed=1).json()
    assert (body["d_keys"], body["d_values"]) == (3, 1)
    assert np.array(body["weights"]["q"]).shape == (4, 6) and np.array(body["weights"]["o"]).shape == (2, 4)
    assert np.array(body["steps"]["weighted_sum"]).shape == (2, 3, 1)
    soft, hard = np.array(body["soft"]), np.array(body["steps"]["softmax"])
    np.testing.assert_array_equal(hard, np.eye(6)[soft.argmax(-1)])
    rope = toy(client, positions="rope").json()["steps"]["split"]["q"]
    assert rope != toy(client).json()["steps"]["split"]["q"]


def test_toy_schema_states_the_variants_and_positions():
    from app.schemas.toy import ToyRequest
    from model.lab.toy import POSITIONS
    from model.lab.variants import VARIANTS

    props = ToyRequest.model_json_schema()["properties"]
    assert tuple(props["variant"]["enum"]) == VARIANTS and tuple(props["positions"]["enum"]) == POSITIONS
    assert props["temperature"]["exclusiveMinimum"] == 0
