"""/api/v1/trace's `block` (the rest of the layer's block, asked with "block": true), recomputed in float64 with
numpy from the answer's own numbers: MiniLM's post-norm block and the test GPT-2's pre-norm one with its final
norm. (tests/model/test_block.py holds the same steps against transformers' own modules.)"""

import math

import numpy as np

TEXT = "Attention lets every token look at every other token."


def trace(client, **body):
    return client.post("/api/v1/trace", json=body)


def layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def test_trace_walks_the_whole_post_norm_block(client):
    """MiniLM's block after its attention, recomputed in float64 from the answer's own numbers: the residual sum,
    the LayerNorm with the answer's γ, β and eps, GELU (erf), the second sum and norm; the steps in the model's
    order with their caption keys, and without `block` none."""
    body = trace(client, text=TEXT, layer=3, head=5, block=True).json()
    block = body["block"]
    names = [s["name"] for s in block["steps"]]
    assert names == ["block_input", "add_1", "norm_1", "mlp_hidden", "mlp_act", "mlp_out", "add_2", "norm_2"]
    assert list(block["arrays"]) == [*names, "mlp_alone"]
    assert [s["caption_key"] for s in block["steps"]][1:3] == ["steps.block.add_1.post", "steps.block.norm_1.post"]
    assert (block["order"], block["norm"], block["activation"], block["gated"], block["d_ff"]) == (
        "post", "layer", "gelu", False, 1536)
    assert block["output_step"] == "norm_2" and set(block["params"]) == {"norm_1", "norm_2"}
    a = {name: np.array(values, dtype=np.float64) for name, values in block["arrays"].items()}
    assert [list(a[s["name"]].shape) for s in block["steps"]] == [s["shape"] for s in block["steps"]]
    p = {name: (np.array(w["weight"]), np.array(w["bias"])) for name, w in block["params"].items()}
    n = len(body["tokens"])
    assert a["block_input"].shape == (n, 384) and a["mlp_hidden"].shape == (n, 1536)
    np.testing.assert_allclose(a["block_input"], body["steps"]["input"], atol=0)  # post-norm: the same stream
    np.testing.assert_allclose(a["add_1"], a["block_input"] + np.array(body["steps"]["output"]), atol=1e-5)
    np.testing.assert_allclose(a["norm_1"], layer_norm(a["add_1"], *p["norm_1"], block["eps"]), atol=1e-5)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(a["mlp_act"], a["mlp_hidden"] * 0.5 * (1 + erf(a["mlp_hidden"] / math.sqrt(2))),
                               atol=1e-5)
    np.testing.assert_allclose(a["add_2"], a["norm_1"] + a["mlp_out"], atol=1e-5)
    np.testing.assert_allclose(a["norm_2"], layer_norm(a["add_2"], *p["norm_2"], block["eps"]), atol=1e-5)
    np.testing.assert_allclose(a["mlp_alone"], a["mlp_out"], atol=1e-5)  # each token's row by itself: the same
    next_layer = trace(client, text=TEXT, layer=4, head=5, block=True).json()  # the output is what the next layer reads
    np.testing.assert_allclose(a["norm_2"], next_layer["block"]["arrays"]["block_input"], atol=1e-5)
    assert "block" not in trace(client, text=TEXT, layer=3, head=5).json()  # only when asked


def test_trace_walks_a_pre_norm_block_to_the_final_norm(local_client):
    """The test GPT-2's last layer: the norm before each sublayer (norm_1 is what the attention read), the sums
    after them, and the final norm; block_numbers counts exactly the numbers answered."""
    from model.analysis.sizes import block_numbers

    body = local_client.post("/api/v1/trace", json={"text": TEXT, "layer": 1, "model": "tiny-gpt2",
                                                                   "block": True}).json()
    block = body["block"]
    assert [s["name"] for s in block["steps"]] == ["block_input", "norm_1", "add_1", "norm_2", "mlp_hidden",
                                                   "mlp_act", "mlp_out", "add_2", "final_norm"]
    assert block["order"] == "pre" and block["output_step"] == "add_2"
    assert set(block["params"]) == {"norm_1", "norm_2", "final_norm"}
    a = {name: np.array(values, dtype=np.float64) for name, values in block["arrays"].items()}
    p = {name: (np.array(w["weight"]), np.array(w["bias"])) for name, w in block["params"].items()}
    np.testing.assert_allclose(a["norm_1"], body["steps"]["input"], atol=0)  # the attention reads the norm
    np.testing.assert_allclose(a["norm_1"], layer_norm(a["block_input"], *p["norm_1"], block["eps"]), atol=1e-5)
    np.testing.assert_allclose(a["add_1"], a["block_input"] + np.array(body["steps"]["output"]), atol=1e-5)
    np.testing.assert_allclose(a["norm_2"], layer_norm(a["add_1"], *p["norm_2"], block["eps"]), atol=1e-5)
    np.testing.assert_allclose(a["add_2"], a["add_1"] + a["mlp_out"], atol=1e-5)
    np.testing.assert_allclose(a["final_norm"], layer_norm(a["add_2"], *p["final_norm"], block["eps"]), atol=1e-5)
    cfg = local_client.app.state.hub.loaded["tiny-gpt2"].cfg
    assert block_numbers(cfg, 1, len(body["tokens"])) == sum(a[name].size for name in a)
    np.testing.assert_allclose(a["mlp_alone"], a["mlp_out"], atol=1e-5)
