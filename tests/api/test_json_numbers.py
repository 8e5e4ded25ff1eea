"""The JSON answers of maps: every number is the float32 weight in its shortest round-trip form.

References are independent of the JSON encoder: HF transformers' eager attentions, the compact u16
answer (its own packing of the same float32 maps), numpy's own shortest float32 printing (Dragon4),
max-pooling written here, and the documented response schemas.
"""

import json
from decimal import Decimal

import numpy as np
import pytest
import torch

from app.schemas.api import AttentionResponse, SummaryResponse, TraceResponse
from app.schemas.common import TokenInfo
from model.checkpoints.registry import minilm_dir

from .conftest import attention
from .test_compact import decode_u16

TEXT = 'Le <script>alert("x")</script> & <b>café</b> — 注意 🙂 naïve'
PAIR = "Ça & <i>ok</i>?"


def numbers(body: bytes) -> tuple[dict, np.ndarray]:
    """The answer, and its `attention` numbers exactly as printed (strings), shaped like the maps."""
    raw = json.loads(body, parse_float=str, parse_int=str)
    return raw, np.array(raw["attention"], dtype=object)


def shortest(x: np.float32) -> Decimal:
    """numpy's shortest decimal that reads back as x (Dragon4, unique=True)."""
    return Decimal(np.format_float_scientific(x, unique=True))


@pytest.fixture(scope="module")
def hf_maps() -> np.ndarray:
    import transformers
    directory = str(minilm_dir())
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.BertModel.from_pretrained(directory, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(**tok(TEXT, PAIR, return_tensors="pt"), output_attentions=True)
    return torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, T, T) float32


@pytest.fixture(scope="module")
def answers(client) -> tuple[bytes, bytes]:
    js = attention(client, text=TEXT, text_pair=PAIR)
    assert js.status_code == 200, js.text
    assert js.headers["content-type"] == "application/json"
    u16 = client.post("/api/v1/attention?encoding=u16", json={"text": TEXT, "text_pair": PAIR})
    assert u16.status_code == 200, u16.text
    return js.content, u16.content


def test_every_number_is_a_float32_weight_in_its_shortest_form(answers, hf_maps):
    raw, printed = numbers(answers[0])
    header, _ = decode_u16(answers[1])
    values = np.array(printed.ravel().tolist(), dtype=np.float32).reshape(printed.shape)  # decimal -> float32
    assert values.shape == hf_maps.shape == tuple(header["shape"])
    # The float32 read back is the model's weight: the u16 answer packs the same float32 maps as
    # rint(w * 65535) in float32, so the exact weight must reproduce every packed value.
    packed = np.frombuffer(answers[1], dtype="<u2", offset=8 + int.from_bytes(answers[1][4:8], "little"))
    assert np.array_equal(np.rint(values * np.float32(65535)).astype(np.uint16).ravel(), packed)
    assert np.abs(values - packed.reshape(values.shape) / 65535).max() <= 7.7e-6
    assert np.abs(values - hf_maps).max() <= 1e-5  # another implementation of the same forward
    # Each number is the shortest decimal that reads back as its float32 (not the float64 expansion).
    for text, value in zip(printed.ravel(), values.ravel(), strict=True):
        assert Decimal(text) == shortest(value), (text, value)
        assert np.float32(text) == value
    assert max(len(t) for t in printed.ravel()) <= 15  # e.g. 1.2345678e-10; float64 expansions run to ~20


def test_the_answer_keeps_its_fields_in_order_and_validates_against_the_schema(answers):
    body = json.loads(answers[0])
    assert list(body) == list(AttentionResponse.model_fields) == ["model", "tokens", "layers", "heads", "edited",
                                                                  "attention"]
    assert all(list(t) == list(TokenInfo.model_fields) for t in body["tokens"])
    parsed = AttentionResponse.model_validate_json(answers[0])
    assert parsed.layers == list(range(6)) and parsed.heads == list(range(12))
    assert len(parsed.attention) == 6 and len(parsed.attention[0]) == 12


def test_tokens_with_html_and_non_ascii_text_survive(answers):
    body = json.loads(answers[0].decode("utf-8"))
    header, _ = decode_u16(answers[1])
    assert body["tokens"] == header["tokens"]  # the u16 header is written by json.dumps
    shown = [t for t in body["tokens"] if not t["special"]]
    for t in shown:
        source = (TEXT, PAIR)[t["segment"]][t["start"] : t["end"]]
        assert t["display"] == (source if t["unknown"] else t["text"])
    joined = "".join(t["display"] for t in shown)
    for piece in ("<", "script", ">", '"', "&", "—", "注", "意", "🙂"):  # accents fold: café shows cafe
        assert piece in joined, piece
    assert b"<" in answers[0] and "注".encode() in answers[0]  # raw UTF-8, not \\u escapes or &lt;


def test_chosen_layers_and_heads_keep_their_order(client, hf_maps):
    r = attention(client, text=TEXT, text_pair=PAIR, layers=[5, 2], heads=[11, 0, 6])
    assert r.status_code == 200, r.text
    body = AttentionResponse.model_validate_json(r.content)
    assert body.layers == [5, 2] and body.heads == [11, 0, 6]
    got = np.array(body.attention, dtype=np.float32)
    assert np.abs(got - hf_maps[[5, 2]][:, [11, 0, 6]]).max() <= 1e-5


def test_summary_is_the_max_pool_of_the_maps(client, hf_maps):
    r = client.post("/api/v1/attention/summary", json={"text": TEXT, "text_pair": PAIR, "size": 8, "heads": [3, 9]})
    assert r.status_code == 200, r.text
    body = json.loads(r.content)
    assert list(body) == list(SummaryResponse.model_fields)
    summary = SummaryResponse.model_validate_json(r.content)
    assert summary.size == 8 and len(summary.bins) == 8
    assert summary.bins[0][0] == 0 and summary.bins[-1][1] == hf_maps.shape[-1]
    want = np.array([[[[hf_maps[layer, head, r0:r1, c0:c1].max() for c0, c1 in summary.bins]
                       for r0, r1 in summary.bins] for head in (3, 9)] for layer in range(6)])
    assert np.abs(np.array(summary.attention) - want).max() <= 1e-5
    _, printed = numbers(r.content)
    for text in printed.ravel():
        assert Decimal(text) == shortest(np.float32(text))


def test_trace_softmax_matches_the_attention_answer(client, answers):
    r = client.post("/api/v1/trace", json={"text": TEXT, "text_pair": PAIR, "layer": 3, "head": 4})
    assert r.status_code == 200, r.text
    trace = TraceResponse.model_validate_json(r.content)
    weights = np.array(json.loads(answers[0])["attention"], dtype=np.float32)[3, 4]
    assert np.abs(np.array(trace.steps.model_dump()["softmax"], dtype=np.float32)[0] - weights).max() <= 1e-6


def test_the_json_cap_is_checked_before_the_model_runs(client):
    # Default cap 2,500,000 numbers: all 72 maps at 186 tokens (2,490,912) fit, at 187 (2,517,768) do not.
    fits = attention(client, text=" ".join(["word"] * 184))
    assert fits.status_code == 200
    assert np.array(json.loads(fits.content)["attention"]).shape == (6, 12, 186, 186)
    over = attention(client, text=" ".join(["word"] * 185))
    assert over.status_code == 413
    assert "encoding=u16" in over.json()["detail"]
