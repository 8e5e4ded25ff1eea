"""Every page for every model, in real Chromium: a real server (../conftest.py local_models_server) serves the
packaged MiniLM and two checkpoints the tests save with transformers (tests/checkpoints.py): a BERT-style
"tiny-bert" and a GPT-2-style, causal "tiny-gpt2" (2 layers x 4 heads, 64 positions, random weights).

The numbers the page drew (Plotly's z, the grid's canvases) and the answers it received are compared with
transformers' own eager attention on the same checkpoint directories: GPT-2's maps are lower-triangular, its
/steps mask step hides the upper triangle (−∞, drawn grey) and its softmax puts 0 there. The model picker lists
every model, keeps the text and the pair when switching, says when an input is too long for the chosen model and
disables the pair field for a model that takes one text (a pair in the URL is kept there, never sent)."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from ..helpers import drawn, show_step, stage
from ..test_explorer import viridis
from ..test_xss import INSPECT, MARKUP

COMPACT = 7.7e-6  # the compact u16 maps' error bound (docs/encoding.md)
REFERENCE = 2e-5  # our float32 forward against transformers' eager float32 forward, plus the u16 rounding
ENGLISH = "Hello world, the cat sat on the mat."
CHINESE = "注意力机制让模型关注输入中"  # every character is in the test WordPiece vocabulary
PAIR = "Where is the dog?"
MARKUP_TEXT = "<b>bold</b> cat <i>x</i>"


# ---- the server and the browser ------------------------------------------------------------------------




class Reference:
    """transformers on the checkpoint directory: its tokenizer and eager attention (the independent reference)."""

    def __init__(self, directory, kind: str) -> None:
        import torch
        import transformers

        self.torch = torch
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
        cls = transformers.GPT2LMHeadModel if kind == "gpt2" else transformers.BertModel
        self.model = cls.from_pretrained(str(directory), attn_implementation="eager").eval()

    def encode(self, text: str, pair: str | None = None):
        return self.tokenizer(text, pair, return_tensors="pt")

    def n_tokens(self, text: str) -> int:
        return int(self.encode(text)["input_ids"].shape[1])

    def attention(self, text: str, pair: str | None = None) -> np.ndarray:
        """(layer, head, query, key)."""
        with self.torch.no_grad():
            out = self.model(**self.encode(text, pair), output_attentions=True)
        return np.stack([a[0].numpy() for a in out.attentions]).astype(np.float64)


@pytest.fixture(scope="module")
def gpt2_ref(local_models_server) -> Reference:
    return Reference(local_models_server.gpt2, "gpt2")


@pytest.fixture(scope="module")
def bert_ref(local_models_server) -> Reference:
    return Reference(local_models_server.bert, "bert")


# ---- helpers --------------------------------------------------------------------------------------------


def link(path: str, **params: object) -> str:
    return f"{path}?{urlencode({k: str(v) for k, v in params.items()})}"


def url_query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def heatmap_z(page: Page) -> np.ndarray:
    return np.array(page.evaluate("() => document.getElementById('heatmap').data[0].z"), dtype=np.float64)


def wait_title(page: Page, title: str) -> None:
    expect(page.locator("#heatmap .gtitle")).to_have_text(title)


def decode_u16(body: bytes) -> tuple[dict, np.ndarray]:
    """A compact answer (static/js/compact.js's layout), decoded here with numpy."""
    assert body[:4] == b"ATN1"
    size = int.from_bytes(body[4:8], "little")
    header = json.loads(body[8:8 + size])
    values = np.frombuffer(body, dtype="<u2", offset=8 + size, count=int(np.prod(header["shape"])))
    return header, values.reshape(header["shape"]).astype(np.float64) / header["scale"]


def upper(matrix: np.ndarray) -> np.ndarray:
    """The entries above the diagonal (keys after the query) of the last two axes."""
    n = matrix.shape[-1]
    return matrix[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]]


def sent_bodies(page: Page) -> list[dict]:
    """Every JSON body the page posts to /api/v1/…, recorded from now on (the list grows)."""
    bodies: list[dict] = []

    def record(request) -> None:
        if request.method == "POST" and "/api/v1/" in request.url:
            bodies.append({"path": urlsplit(request.url).path, **(request.post_data_json or {})})

    page.on("request", record)
    return bodies


def thumb_pixels(page: Page, layer: int, head: int) -> tuple[int, list[int]]:
    result = page.evaluate(
        """([l, h]) => { const canvas = document.querySelector(`button.thumb[data-layer="${l}"][data-head="${h}"] canvas`);
                         return {n: canvas.width,
                                 data: Array.from(canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data)}; }""",
        [layer, head],
    )
    return result["n"], result["data"]


# ---- the picker ------------------------------------------------------------------------------------------


def test_the_picker_lists_every_model_with_what_it_is(page: Page, local_api, local_models_server):
    models = local_api.get("/api/v1/models").json()["models"]
    ids = [m["id"] for m in models]
    assert ids == ["minilm", local_models_server.bert_id, local_models_server.gpt2_id]
    page.goto("/")
    options = page.locator("#model-select option")
    expect(options).to_have_count(3)
    assert options.evaluate_all("(os) => os.map((o) => o.value)") == ids
    expect(options).to_have_text(["minilm", "tiny-bert", "tiny-gpt2 · causal"])
    expect(page.locator("#model-select")).to_have_value("minilm")  # the default
    gpt2 = page.locator("#model-select option[value='tiny-gpt2']").get_attribute("title")
    # the name without the server's English "(gpt2, 2 layers x 4 heads)": the rest is in the page's language
    assert gpt2 == ("tiny-gpt2 · gpt2 · 2 layers × 4 heads · at most 64 tokens · "
                    "causal: each token sees only itself and earlier tokens · one text (no sentence B)")
    bert = page.locator("#model-select option[value='tiny-bert']").get_attribute("title")
    assert bert == "tiny-bert · bert · 2 layers × 4 heads · at most 64 tokens"
    minilm = page.locator("#model-select option[value='minilm']").get_attribute("title") or ""
    assert "6 layers × 12 heads · at most 512 tokens" in minilm


# ---- GPT-2 in the explorer -------------------------------------------------------------------------------


def test_gpt2_grid_and_large_map_are_lower_triangular_and_equal_transformers(page: Page, gpt2_ref):
    expected = gpt2_ref.attention(ENGLISH)
    n = expected.shape[-1]
    with page.expect_response(lambda r: r.url.split("?")[0].endswith("/api/v1/attention/summary")) as summary:
        page.goto(link("/", text=ENGLISH, model="tiny-gpt2", layer=1, head=2))
    wait_title(page, "Layer 1 · Head 2")
    expect(page.locator("#overview button.thumb")).to_have_count(8)
    expect(page.locator("#model-select")).to_have_value("tiny-gpt2")

    # The grid: the summary the page received is the whole of every map (n ≤ 64), lower-triangular.
    header, maps = decode_u16(summary.value.body())
    assert header["shape"] == [2, 4, n, n]
    assert np.abs(maps - expected).max() <= REFERENCE
    assert np.abs(upper(maps)).max() == 0
    assert np.abs(upper(expected)).max() == 0  # transformers' own maps are causal too
    # … and the canvases drawn from it: the colour of 0 above the diagonal, each weight's colour below, on a scale
    # whose top is the largest weight from row n // 4 down (a causal map's first rows are large by construction:
    # docs/pages.md), brighter weights drawn in the top colour.
    for layer, head in [(0, 0), (1, 2)]:
        side, data = thumb_pixels(page, layer, head)
        assert side == n
        matrix = maps[layer, head]
        peak = matrix[n // 4:].max()
        worst = max(abs(data[4 * (q * n + k) + c] - viridis(min(matrix[q, k] / peak, 1.0))[c])
                    for q in range(n) for k in range(n) for c in range(3))
        assert worst <= 1
        above = {tuple(data[4 * (q * n + k):4 * (q * n + k) + 3]) for q in range(n) for k in range(q + 1, n)}
        assert above == {viridis(0.0)}

    # The large map: transformers' numbers, 0 above the diagonal.
    z = heatmap_z(page)
    assert z.shape == (n, n)
    assert np.abs(z - expected[1, 2]).max() <= REFERENCE
    assert np.abs(upper(z)).max() == 0
    assert np.abs(z.sum(axis=1) - 1).max() <= 1e-4
    assert z[0, 0] == pytest.approx(1.0, abs=COMPACT)  # the first token sees only itself

    # The tokens read as typed: no Ġ, no [UNK] marks (byte-level BPE knows every byte).
    ids = gpt2_ref.encode(ENGLISH)["input_ids"][0].tolist()
    readable = [gpt2_ref.tokenizer.decode([i]) for i in ids]
    chips = page.locator("#tokens .chip")
    expect(chips).to_have_count(n)
    assert [c.strip() for c in chips.all_text_contents()] == [r.strip() for r in readable]
    expect(page.locator("#tokens .chip-unknown")).to_have_count(0)
    assert "Ġ" not in "".join(chips.all_text_contents())


def test_gpt2_aggregates_metrics_contributions_edits_and_head_view_open(page: Page, local_api, browser_log):
    text = ENGLISH
    responses: list[tuple[int, str]] = []
    page.on("response", lambda r: responses.append((r.status, r.url)) if "/api/v1/" in r.url else None)
    page.goto(link("/", text=text, model="tiny-gpt2", layer=1, head=3))
    wait_title(page, "Layer 1 · Head 3")

    page.locator("#kind-select").select_option("mean")
    wait_title(page, "Layer 1 · mean over heads")
    mean = heatmap_z(page)
    assert np.abs(upper(mean)).max() == 0
    api_mean = np.array(local_api.post("/api/v1/aggregate", json={"text": text, "model": "tiny-gpt2", "kind": "mean"})
                        .json()["maps"][1])
    assert np.abs(mean - api_mean).max() <= 1e-6

    page.locator("#kind-select").select_option("rollout")
    wait_title(page, "Rollout up to layer 1")
    assert np.abs(upper(heatmap_z(page))).max() <= 1e-7  # a product of lower-triangular maps

    page.locator("#kind-select").select_option("contribution")
    wait_title(page, "Layer 1 · Head 3 · contribution ‖αf(x)‖")
    contribution = heatmap_z(page)
    assert np.abs(upper(contribution)).max() == 0  # a hidden key adds nothing
    assert contribution.max() > 0

    # Every head's metrics: 2 × 4 rows; the grid coloured by one of them.
    expect(page.locator("#metrics-body tr")).to_have_count(8)
    page.locator("#kind-select").select_option("weight")
    wait_title(page, "Layer 1 · Head 3")
    page.locator("#colour-select").select_option("to_previous")
    expect(page.locator("#overview")).to_have_attribute("data-metric", "share to the previous token")

    # The head view of the selected layer, and a what-if edit (GPT-2's maps stay causal).
    expect(page.locator("#head-view svg, #head-view canvas").first).to_be_visible()
    page.locator("#edit-layer").select_option("0")
    page.locator("#edit-heads").fill("1")
    page.locator("#edit-temperature").fill("3")
    page.locator("#edit-apply").click()
    wait_title(page, "Layer 1 · Head 3 (edited)")
    expect(page.locator("#edit-banner")).to_be_visible()
    edited = heatmap_z(page)
    assert np.abs(upper(edited)).max() == 0
    unedited = np.array(local_api.post("/api/v1/attention", json={
        "text": text, "model": "tiny-gpt2", "layers": [1], "heads": [3]}).json()["attention"][0][0])
    assert np.abs(edited - unedited).max() > 1e-4  # the edit of layer 0 changed layer 1

    expect(page.locator("#status")).not_to_have_class(re.compile("is-error"))
    assert responses and all(status < 400 for status, _ in responses), responses
    assert browser_log.console_errors == []


# ---- GPT-2 on /steps -------------------------------------------------------------------------------------


def test_gpt2_steps_hide_the_upper_triangle_and_say_why(page: Page, gpt2_ref):
    expected = gpt2_ref.attention(ENGLISH)
    n = expected.shape[-1]
    page.goto(link("/steps", text=ENGLISH, model="tiny-gpt2", layer=1, head=2, query=3, step="mask"))
    expect(stage(page)).to_have_attribute("data-step", "mask")
    expect(page.locator("#model-select")).to_have_value("tiny-gpt2")

    masked = drawn(page, "mask")
    mask = drawn(page, "mask-matrix")
    scaled = drawn(page, "mask-before")
    assert len(masked) == n and all(len(row) == n for row in masked)
    for q in range(n):
        for k in range(n):
            if k > q:
                assert masked[q][k] is None and mask[q][k] is None, (q, k)  # −∞: hidden
            else:
                assert mask[q][k] == 0 and masked[q][k] == scaled[q][k], (q, k)
    expect(page.locator("#stage-grid")).to_contain_text("mask M: 0 = visible, −∞ = hidden")
    expect(page.locator("#stage-grid")).to_contain_text("grey = −∞")
    # The hidden cells are written "−∞" in the mask, and the note says why.
    assert page.locator('[data-matrix="mask-matrix"] text', has_text="−∞").count() == n * (n - 1) // 2
    expect(page.locator("#stage-note")).to_be_visible()
    expect(page.locator("#stage-note")).to_contain_text("Causal mask")
    note = page.locator("#model-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("tiny-gpt2 is a causal model")
    expect(note).to_contain_text("each token may look only at itself and the tokens before it")

    show_step(page, "softmax")
    weights = np.array(drawn(page, "softmax"), dtype=np.float64)
    assert np.abs(weights - expected[1, 2]).max() <= REFERENCE
    assert np.abs(upper(weights)).max() == 0
    bars = np.array(drawn(page, "softmax-bars", "y"), dtype=np.float64)
    assert np.abs(bars[4:]).max() == 0 and bars[:4].sum() == pytest.approx(1.0, abs=1e-5)  # query 3 sees keys 0…3

    # A bidirectional model has nothing hidden: no note, no −∞.
    page.goto(link("/steps", text="The cat sat on the mat.", model="tiny-bert", layer=1, head=2, query=3, step="mask"))
    expect(stage(page)).to_have_attribute("data-step", "mask")
    expect(page.locator("#model-note")).to_be_hidden()
    assert all(v is not None for row in drawn(page, "mask") for v in row)


def test_gpt2_steps_in_chinese_say_why_too(page: Page):
    page.goto(link("/steps", text=ENGLISH, model="tiny-gpt2", layer=0, head=0, query=2, step="mask", lang="zh"))
    expect(stage(page)).to_have_attribute("data-step", "mask")
    expect(page.locator("#model-note")).to_contain_text("tiny-gpt2 是因果模型")
    expect(page.locator("#model-note")).to_contain_text("每个词元只能看自己和它之前的词元")
    expect(page.locator("#stage-note")).to_contain_text("因果掩码")
    expect(page.locator("#model-select option[value='tiny-gpt2']")).to_have_text("tiny-gpt2 · 因果")


# ---- BERT-style, and Chinese -----------------------------------------------------------------------------


def test_bert_draws_chinese_as_chinese_tokens(page: Page, bert_ref):
    expected = bert_ref.attention(CHINESE)
    page.goto(link("/", text=CHINESE, model="tiny-bert", layer=0, head=1))
    wait_title(page, "Layer 0 · Head 1")
    expect(page.locator("#tokens .chip")).to_have_text(["[CLS]", *CHINESE, "[SEP]"])
    expect(page.locator("#tokens .chip-unknown")).to_have_count(0)
    expect(page.locator("#unknown-note")).to_be_hidden()
    z = heatmap_z(page)
    assert np.abs(z - expected[0, 1]).max() <= REFERENCE
    assert np.abs(upper(z)).max() > 1e-3  # the control: a bidirectional model looks ahead too
    expect(page.locator("#pair-input")).to_be_enabled()

    page.goto(link("/steps", text=CHINESE, model="tiny-bert", layer=1, head=0, query=2, step="softmax"))
    expect(stage(page)).to_have_attribute("data-step", "softmax")
    assert np.abs(np.array(drawn(page, "softmax")) - expected[1, 0]).max() <= REFERENCE
    expect(page.locator("#tokens .chip")).to_have_text(["[CLS]", *CHINESE, "[SEP]"])


# ---- the form's rules: switching, one text, too long -----------------------------------------------------


def test_switching_models_keeps_the_text_and_the_pair(page: Page, bert_ref, gpt2_ref):
    bodies = sent_bodies(page)
    page.goto(link("/", text=ENGLISH, pair=PAIR, model="tiny-bert", layer=0, head=0))
    wait_title(page, "Layer 0 · Head 0")
    n_bert = bert_ref.n_tokens(ENGLISH) + bert_ref.n_tokens(PAIR) - 1  # one [CLS], two [SEP]
    expect(page.locator("#tokens .chip")).to_have_count(n_bert)
    assert {b.get("text_pair") for b in bodies} == {PAIR}
    note = page.locator("#pair-note")
    expect(note).to_be_hidden()

    # GPT-2 takes one text: the field is disabled, the pair stays in it and in the URL, and is not sent.
    bodies.clear()
    page.locator("#model-select").select_option("tiny-gpt2")
    expect(page).to_have_url(re.compile(r"model=tiny-gpt2"))
    expect(page.locator("#tokens .chip")).to_have_count(gpt2_ref.n_tokens(ENGLISH))
    expect(page.locator("#text-input")).to_have_value(ENGLISH)
    expect(page.locator("#pair-input")).to_have_value(PAIR)
    expect(page.locator("#pair-input")).to_be_disabled()
    expect(note).to_be_visible()
    expect(note).to_contain_text("tiny-gpt2 takes one text: sentence B is kept in the link but not sent.")
    assert url_query(page)["text"] == [ENGLISH] and url_query(page)["pair"] == [PAIR]
    assert bodies and all(b.get("text_pair") is None and b.get("model") == "tiny-gpt2" for b in bodies), bodies
    expect(page.locator("#steps-link")).to_have_attribute("href", re.compile(r"pair=Where"))

    # Back on a model with pairs, the pair is sent again.
    bodies.clear()
    page.locator("#model-select").select_option("tiny-bert")
    expect(page.locator("#tokens .chip")).to_have_count(n_bert)
    expect(page.locator("#pair-input")).to_be_enabled()
    expect(note).to_be_hidden()
    assert all(b.get("text_pair") == PAIR for b in bodies)  # (the page may answer from its cache)
    assert url_query(page)["pair"] == [PAIR] and url_query(page)["model"] == ["tiny-bert"]

    # The default model, then GPT-2 again, and the pair dropped with the note's button.
    page.locator("#model-select").select_option("minilm")
    expect(page).to_have_url(re.compile(r"model=minilm"))
    expect(page.locator("#overview button.thumb")).to_have_count(72)
    expect(page.locator("#text-input")).to_have_value(ENGLISH)
    page.locator("#model-select").select_option("tiny-gpt2")
    expect(page.locator("#overview button.thumb")).to_have_count(8)
    page.get_by_role("button", name="Remove sentence B").click()
    expect(page.locator("#pair-input")).to_have_value("")
    expect(note).to_contain_text("tiny-gpt2 takes one text: sentence B is not used.")
    expect(page.locator("#pair-input")).to_have_attribute("placeholder", "not used by this model")
    expect(page).not_to_have_url(re.compile(r"pair="))
    expect(page.locator("#text-input")).to_have_value(ENGLISH)

    # Back restores the link with the pair, still held, not sent.
    page.go_back()
    expect(page.locator("#pair-input")).to_have_value(PAIR)
    expect(page.locator("#pair-input")).to_be_disabled()


def test_a_pair_in_a_gpt2_link_is_kept_not_sent_on_steps(page: Page, gpt2_ref):
    bodies = sent_bodies(page)
    page.goto(link("/steps", text=ENGLISH, pair=PAIR, model="tiny-gpt2", layer=0, head=1, query=1))
    expect(stage(page)).to_have_attribute("data-step", re.compile(r"\w"))
    traces = [b for b in bodies if b["path"] == "/api/v1/trace"]
    assert traces and all(b.get("text_pair") is None for b in traces)
    expect(page.locator("#pair-input")).to_be_disabled()
    expect(page.locator("#pair-input")).to_have_value(PAIR)
    expect(page.locator("#pair-note")).to_contain_text("kept in the link but not sent")
    expect(page.locator("#tokens .chip")).to_have_count(gpt2_ref.n_tokens(ENGLISH))
    assert url_query(page)["pair"] == [PAIR]
    expect(page.locator("#explorer-link")).to_have_attribute("href", re.compile(r"pair=Where"))
    expect(page.locator("#status")).not_to_have_class(re.compile("is-error"))


@pytest.mark.expect_http_errors(413)
def test_a_text_too_long_for_the_model_says_so_and_stays(page: Page, gpt2_ref):
    too_long = " ".join(["cat"] * 80)
    count = gpt2_ref.n_tokens(too_long)
    assert count == 80
    page.goto(link("/", text=ENGLISH, model="tiny-gpt2", layer=0, head=0))
    wait_title(page, "Layer 0 · Head 0")

    page.locator("#text-input").fill(too_long)
    page.locator("#text-input").press("Enter")
    status = page.locator("#status")
    expect(status).to_have_text(f"This input has {count} tokens; tiny-gpt2 takes at most 64. "
                                "Shorten the text or choose another model.")
    expect(status).to_have_class(re.compile("is-error"))
    expect(page.locator("#text-input")).to_have_value(too_long)
    expect(page.locator("#loading")).to_be_hidden()

    # minilm takes 512 tokens: choosing it runs the same text.
    page.locator("#model-select").select_option("minilm")
    expect(page.locator("#overview button.thumb")).to_have_count(72)
    expect(page.locator("#text-input")).to_have_value(too_long)
    expect(status).not_to_have_class(re.compile("is-error"))

    # /steps, in Chinese.
    page.goto(link("/steps", text=too_long, model="tiny-gpt2", lang="zh"))
    expect(status).to_have_text(f"这个输入有 {count} 个词元；tiny-gpt2 最多接受 64 个。请缩短文本或换一个模型。")
    expect(page.locator("#text-input")).to_have_value(too_long)


# ---- at the model's token limit --------------------------------------------------------------------------


def test_gpt2_at_its_full_64_tokens(page: Page, gpt2_ref):
    text = "Hello" + " cat" * 63
    assert gpt2_ref.n_tokens(text) == 64
    expected = gpt2_ref.attention(text)
    page.goto(link("/", text=text, model="tiny-gpt2", layer=1, head=1))
    wait_title(page, "Layer 1 · Head 1")
    expect(page.locator("#tokens .chip")).to_have_count(64)
    z = heatmap_z(page)
    assert z.shape == (64, 64)
    assert np.abs(z - expected[1, 1]).max() <= REFERENCE
    assert np.abs(upper(z)).max() == 0
    expect(page.locator("#status")).not_to_have_class(re.compile("is-error"))

    page.goto(link("/steps", text=text, model="tiny-gpt2", layer=1, head=1, query=40, step="mask"))
    expect(stage(page)).to_have_attribute("data-step", "mask")
    keys0 = int(stage(page).get_attribute("data-keys"))
    masked = drawn(page, "mask")
    rows0 = int(page.evaluate("() => document.querySelector('[data-matrix=\"mask\"]').layout.yaxis.tickvals[0]"))
    for i, row in enumerate(masked):
        for j, value in enumerate(row):
            q, k = rows0 + i, keys0 + j
            assert (value is None) == (k > q), (q, k)
    show_step(page, "softmax")
    weights = np.array(drawn(page, "softmax"), dtype=np.float64)
    window = expected[1, 1][rows0:rows0 + weights.shape[0], keys0:keys0 + weights.shape[1]]
    assert np.abs(weights - window).max() <= REFERENCE


# ---- markup in GPT-2 tokens ------------------------------------------------------------------------------


def test_markup_through_gpt2_stays_text(page: Page, gpt2_ref):
    page.goto("/")
    expect(page.locator("#model-select option")).to_have_count(3)
    baseline = page.evaluate(INSPECT, MARKUP)
    page.goto(link("/", text=MARKUP_TEXT, model="tiny-gpt2", layer=0, head=0))
    wait_title(page, "Layer 0 · Head 0")
    ids = gpt2_ref.encode(MARKUP_TEXT)["input_ids"][0].tolist()
    readable = [gpt2_ref.tokenizer.decode([i]) for i in ids]
    chips = page.locator("#tokens .chip")
    expect(chips).to_have_count(len(ids))
    # A token of spaces only is shown as ␣ (views/tokens.js); every other one as its characters, literally.
    assert "".join(chips.all_text_contents()).replace("␣", "").replace(" ", "") == MARKUP_TEXT.replace(" ", "")
    assert [c.strip() for c in chips.all_text_contents()] == [r.strip() or "␣" for r in readable]
    now = page.evaluate(INSPECT, MARKUP)
    assert now["markup"] == baseline["markup"], "elements were made from the text"
    assert now["onAttributes"] == [] and now["plotlyLinks"] == 0
    assert now["plotlyMarkup"] == [], "Plotly parsed markup in a label"
    ticks = page.evaluate("() => Array.from(document.querySelectorAll('#heatmap .ytick text'), (t) => t.textContent)")
    assert "".join(ticks).replace("␣", "").replace(" ", "") == MARKUP_TEXT.replace(" ", "")

    page.goto(link("/steps", text=MARKUP_TEXT, model="tiny-gpt2", layer=0, head=0, query=1, step="softmax"))
    expect(stage(page)).to_have_attribute("data-step", "softmax")
    steps = page.evaluate(INSPECT, MARKUP)
    assert steps["plotlyMarkup"] == [] and steps["onAttributes"] == []
    assert page.locator("#main b, #main i").count() == 0
