"""The pages with local models, in real Chromium on a real server (../conftest.py local_models_server: MiniLM, a
BERT-style "tiny-bert" and a GPT-2-style, causal "tiny-gpt2" that takes one text; 2 layers x 4 heads, d_head 8).

/compare picks models as the other pages do and, for tiny-gpt2, keeps the second segments of a link in their
(disabled) fields and in the URL but never sends them; its maps are the API's, lower-triangular. /steps at 800 px
writes numbers only in cells wide enough for them (no label runs into its neighbour), at 1400 px too, and /toy
still writes its own. The explorer's key of token kinds shows only the kinds the input has, and the metrics
table leaves out the metrics that are 0 for every head whatever the weights (no [CLS] or [SEP] in a GPT-2
input, no next token for a causal model), saying so; each shown value is checked against numpy on the API's
maps. The logit lens asks through api.js getLens and shows a control character as its picture."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote, urlencode

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from ..helpers import english_left, show_step, stage
from ..test_compare import drawn as compare_drawn
from ..test_compare import query_of, wait_drawn

COMPACT = 7.7e-6  # the compact u16 maps' error bound (docs/encoding.md)
GPT2 = "tiny-gpt2"
BERT = "tiny-bert"
CAT = "Hello world, the cat sat on the mat."
DOG = "Hello world, the dog sat on the mat."
PAIR_A = "Where is it?"
PAIR_B = "Who knows."


# ---- the server and the browser ------------------------------------------------------------------------




def link(path: str, **params: object) -> str:
    return f"{path}?{urlencode({k: str(v) for k, v in params.items()})}"


def posted(page: Page, path: str) -> list[dict]:
    """Every JSON body the page posts to `path` from now on (the list grows)."""
    bodies: list[dict] = []
    page.on("request", lambda r: bodies.append(r.post_data_json or {})
            if r.method == "POST" and r.url.split("?")[0].endswith(path) else None)
    return bodies


def api_statuses(page: Page) -> list[tuple[int, str]]:
    statuses: list[tuple[int, str]] = []
    page.on("response", lambda r: statuses.append((r.status, r.url)) if "/api/v1/" in r.url else None)
    return statuses


def attention(api, text: str, pair: str | None, model: str, layers=None, heads=None) -> tuple[list[dict], np.ndarray]:
    """(tokens, maps (layer, head, query, key)) as POST /api/v1/attention answers them in JSON."""
    response = api.post("/api/v1/attention", json={"text": text, "text_pair": pair, "model": model,
                                                   "layers": layers, "heads": heads})
    assert response.status_code == 200, response.text
    body = response.json()
    return body["tokens"], np.array(body["attention"], dtype=np.float64)


def upper(matrix: np.ndarray) -> np.ndarray:
    n = matrix.shape[-1]
    rows, cols = np.triu_indices(n, 1)
    return matrix[..., rows, cols]


def options(page: Page) -> list[list[str]]:
    return page.evaluate("() => [...document.querySelectorAll('#model-select option')].map((o) => [o.value, o.textContent, o.title])")


# ---- /compare ------------------------------------------------------------------------------------------


def test_compare_gpt2_keeps_the_pairs_of_a_link_unsent_and_draws_the_apis_causal_maps(page: Page, local_api):
    bodies = posted(page, "/api/v1/attention")
    statuses = api_statuses(page)
    url = (f"/compare?a={quote(CAT)}&a_pair={quote(PAIR_A)}&b={quote(DOG)}&b_pair={quote(PAIR_B)}"
           f"&model={GPT2}&layer=1&head=2")
    page.goto(url)
    wait_drawn(page)

    # The pair fields: disabled, holding the link's segments, the note saying so; the URL keeps them.
    for field, value in (("#compare-a-pair", PAIR_A), ("#compare-b-pair", PAIR_B)):
        expect(page.locator(field)).to_be_disabled()
        expect(page.locator(field)).to_have_value(value)
        expect(page.locator(field)).to_have_attribute("placeholder", "not used by this model")
    note = page.locator("#compare-pair-note")
    expect(note).to_be_visible()
    expect(note.locator(".pair-note-text")).to_have_text(
        "tiny-gpt2 takes one text: the second segments are kept in the link but not sent.")
    expect(page.get_by_role("button", name="Remove the second segments")).to_be_visible()
    assert query_of(page.url)["a_pair"] == [PAIR_A] and query_of(page.url)["b_pair"] == [PAIR_B]

    # Never sent: no 422, every request without text_pair.
    assert len(bodies) >= 2 and all(b.get("text_pair") is None and b.get("model") == GPT2 for b in bodies), bodies
    assert statuses and all(status < 400 for status, _ in statuses), statuses
    expect(page.locator("#status")).not_to_have_class(re.compile("is-error"))

    # The maps are the API's answers for the texts alone: lower-triangular, A − B their difference.
    _, ref_a = attention(local_api, CAT, None, GPT2, [1], [2])
    _, ref_b = attention(local_api, DOG, None, GPT2, [1], [2])
    a, b, diff = (np.array(compare_drawn(page, side)["z"], dtype=np.float64) for side in ("a", "b", "diff"))
    assert a.shape == ref_a[0, 0].shape == b.shape
    assert np.abs(a - ref_a[0, 0]).max() <= COMPACT and np.abs(b - ref_b[0, 0]).max() <= COMPACT
    assert np.abs(upper(a)).max() == 0 and np.abs(upper(b)).max() == 0
    assert np.abs(diff - (ref_a[0, 0] - ref_b[0, 0])).max() <= 2 * COMPACT
    expect(page.locator("#sentence-a")).to_have_text(CAT)  # no "‖ pair": it was not part of the input
    explorer = page.locator("#explorer-a").get_attribute("href") or ""
    assert query_of(explorer)["pair"] == [PAIR_A] and query_of(explorer)["model"] == [GPT2]  # held there too

    # The picker is the other pages': the same ids, labels and titles.
    on_compare = options(page)
    assert [o[:2] for o in on_compare] == [["minilm", "minilm"], [BERT, BERT], [GPT2, "tiny-gpt2 · causal"]]
    assert page.locator("#model-select").get_attribute("title") == on_compare[2][2]

    # A model that takes pairs: the fields are enabled and the segments sent.
    bodies.clear()
    page.locator("#model-select").select_option(BERT)
    expect(page).to_have_url(re.compile(rf"model={BERT}"))
    wait_drawn(page)
    expect(page.locator("#compare-a-pair")).to_be_enabled()
    expect(page.locator("#compare-a-pair")).to_have_attribute("placeholder", "Optional: a second sentence")
    expect(note).to_be_hidden()
    assert bodies and {(b["text"], b["text_pair"]) for b in bodies} == {(CAT, PAIR_A), (DOG, PAIR_B)}, bodies
    _, bert_a = attention(local_api, CAT, PAIR_A, BERT, [1], [2])
    assert np.abs(np.array(compare_drawn(page, "a")["z"]) - bert_a[0, 0]).max() <= COMPACT

    # Back on GPT-2, the note's button drops both segments, from the fields and the URL.
    page.locator("#model-select").select_option(GPT2)
    wait_drawn(page)
    page.get_by_role("button", name="Remove the second segments").click()
    expect(page).not_to_have_url(re.compile(r"_pair="))
    wait_drawn(page)
    expect(page.locator("#compare-a-pair")).to_have_value("")
    expect(page.locator("#compare-b-pair")).to_have_value("")
    expect(note.locator(".pair-note-text")).to_have_text("tiny-gpt2 takes one text: the second segments are not used.")
    expect(page.get_by_role("button", name="Remove the second segments")).to_be_hidden()
    assert all(status < 400 for status, _ in statuses), statuses

    page.goto(link("/", text=CAT, model=GPT2))
    expect(page.locator("#model-select option")).to_have_count(3)
    assert options(page) == on_compare


def test_compare_gpt2_in_chinese(page: Page):
    page.goto(f"/compare?a={quote(CAT)}&a_pair={quote(PAIR_A)}&b={quote(DOG)}&model={GPT2}&lang=zh")
    wait_drawn(page)
    expect(page.locator("#compare-pair-note")).to_contain_text("tiny-gpt2 只接受一段文本：第二段保留在链接里，但不会发送。")
    expect(page.get_by_role("button", name="删除第二段")).to_be_visible()
    assert english_left(page) == []


# ---- /steps and /toy: numbers only where they fit -------------------------------------------------------

# The labels written in a figure's cells: their count and texts, the drawn cell width, the widest label and how
# many labels come within 2 px of the next one on their row.
CELL_LABELS = """(key) => {
  const gd = document.querySelector(`[data-matrix="${key}"]`);
  const cell = gd._fullLayout.xaxis._length / gd.data[0].z[0].length;
  const boxes = [...gd.querySelectorAll('g.heatmap-label text')].map((text) => {
    const r = text.getBoundingClientRect();
    return { x0: r.left, x1: r.right, y: Math.round(r.top + r.height / 2), text: text.textContent };
  });
  const rows = new Map();
  for (const box of boxes) rows.set(box.y, [...(rows.get(box.y) || []), box]);
  let crowded = 0;
  for (const row of rows.values()) {
    row.sort((a, b) => a.x0 - b.x0);
    for (let i = 1; i < row.length; i += 1) if (row[i].x0 < row[i - 1].x1 + 2) crowded += 1;
  }
  return { count: boxes.length, texts: boxes.map((b) => b.text), cell,
           widest: Math.max(0, ...boxes.map((b) => b.x1 - b.x0)), crowded };
}"""

STEP_FIGURES = ["mask-before", "mask-matrix", "mask"]
QK_FIGURES = ["qk-q", "qk-k", "qk-products", "qk-sums"]


def cell_labels(page: Page, key: str) -> dict:
    return page.evaluate(CELL_LABELS, key)


def assert_readable(page: Page, keys: list[str]) -> dict[str, dict]:
    """Every figure's labels fit their cells and keep apart; returns them by figure."""
    found = {key: cell_labels(page, key) for key in keys}
    for key, labels in found.items():
        assert labels["crowded"] == 0, (key, labels)
        assert labels["widest"] < labels["cell"], (key, labels)
    return found


def open_steps(page: Page, width: int, query: int = 3) -> None:
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(link("/steps", text=CAT, model=GPT2, layer=1, head=2, query=query, step="mask"))
    expect(stage(page)).to_have_attribute("data-step", "mask")
    expect(page.locator("#qk-panel")).to_have_attribute("data-query", str(query))


def test_steps_for_gpt2_write_numbers_only_in_cells_wide_enough(page: Page, local_api):
    trace = local_api.post("/api/v1/trace", json={"text": CAT, "model": GPT2, "layer": 1, "head": 2}).json()
    n = len(trace["tokens"])
    q = np.array(trace["steps"]["split"]["q"][0], dtype=np.float64)[3]
    keys = np.array(trace["steps"]["split"]["k"][0], dtype=np.float64)
    assert keys.shape == (n, 8)  # d_head 8

    open_steps(page, 800)
    labels = assert_readable(page, STEP_FIGURES + QK_FIGURES)
    # 800 px: the mask's cells and K_h's columns are too narrow for "−∞" and "−4.36": nothing is written there.
    assert labels["mask-matrix"]["count"] == 0 and labels["mask-matrix"]["cell"] < 22
    assert labels["qk-k"]["count"] == 0 and labels["qk-q"]["count"] == 0
    assert labels["qk-sums"]["count"] == n  # the sums' column is wide
    # What is drawn is still every number: q ∘ k_j and their sums, against numpy on the trace.
    products = np.array(page.evaluate("() => document.querySelector('[data-matrix=\"qk-products\"]').data[0].z"))
    assert np.abs(products - keys * q).max() <= 1e-6
    sums = np.array(page.evaluate("() => document.querySelector('[data-matrix=\"qk-sums\"]').data[0].z"))[:, 0]
    assert np.abs(sums - keys @ q).max() <= 1e-5
    assert np.abs(sums - np.array(trace["steps"]["scores"][0][3])).max() <= 1e-5

    open_steps(page, 1400)
    labels = assert_readable(page, STEP_FIGURES + QK_FIGURES)
    # 1400 px: the mask writes 0 and −∞ in every cell, K_h and the products their numbers.
    mask = labels["mask-matrix"]["texts"]
    assert mask.count("−∞") == n * (n - 1) // 2 and mask.count("0") == n * (n + 1) // 2
    assert labels["qk-k"]["count"] == n * 8 and labels["qk-products"]["count"] == n * 8
    assert labels["qk-q"]["count"] == 8


def test_steps_in_chinese_at_800px_keep_numbers_apart(page: Page):
    page.set_viewport_size({"width": 800, "height": 1000})
    page.goto(link("/steps", text=CAT, model=GPT2, layer=0, head=1, query=5, step="mask", lang="zh"))
    expect(stage(page)).to_have_attribute("data-step", "mask")
    expect(page.locator("#qk-panel")).to_have_attribute("data-query", "5")
    assert_readable(page, STEP_FIGURES + QK_FIGURES)
    show_step(page, "softmax")
    assert_readable(page, ["softmax"])


def test_toy_at_800px_still_writes_its_numbers(page: Page):
    page.set_viewport_size({"width": 800, "height": 1000})
    page.goto("/toy?causal=1&step=mask&query=2")
    expect(stage(page)).to_have_attribute("data-step", "mask")
    expect(page.locator("#qk-panel")).to_have_attribute("data-query", "2")
    labels = assert_readable(page, STEP_FIGURES + QK_FIGURES)
    n = len(page.evaluate("() => document.querySelector('[data-matrix=\"mask\"]').data[0].z"))
    assert labels["mask-matrix"]["texts"].count("−∞") == n * (n - 1) // 2  # the worked example: 4 queries, 4 keys
    for key in STEP_FIGURES + QK_FIGURES:
        assert labels[key]["count"] > 0, key


# ---- the explorer: the key of token kinds, the metrics that apply ----------------------------------------


def is_punctuation(text: str) -> bool:
    stem = text[2:] if text.startswith("##") and len(text) > 2 else text
    return bool(stem) and all(unicodedata.category(c).startswith("P") for c in stem)


def reference_metrics(tokens: list[dict], maps: np.ndarray) -> dict[str, np.ndarray]:
    """numpy, from the API's maps (layer, head, query, key): each metric per layer and head."""
    n = maps.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(maps > 0, maps * np.log(np.where(maps > 0, maps, 1)), 0)
    distance = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    cls = [i == 0 and t["special"] for i, t in enumerate(tokens)]
    sep = [i > 0 and t["special"] for i, t in enumerate(tokens)]
    punctuation = [not t["special"] and is_punctuation(t["text"]) for t in tokens]
    return {
        "entropy": -plogp.sum(-1).mean(-1),
        "distance": (maps * distance).sum(-1).mean(-1),
        "to_cls": maps[..., cls].sum(-1).mean(-1),
        "to_sep": maps[..., sep].sum(-1).mean(-1),
        "to_self": np.diagonal(maps, axis1=-2, axis2=-1).mean(-1),
        "to_previous": np.diagonal(maps, offset=-1, axis1=-2, axis2=-1).mean(-1),
        "to_next": np.diagonal(maps, offset=1, axis1=-2, axis2=-1).mean(-1),
        "to_punctuation": maps[..., punctuation].sum(-1).mean(-1),
        "to_first": maps[..., 1:, 0].mean(-1),
    }


TABLE = """() => ({
  columns: [...document.querySelectorAll('#metrics-head th')].map((th) => th.dataset.column),
  rows: [...document.querySelectorAll('#metrics-body tr')].map((tr) => ({
    layer: Number(tr.dataset.layer), head: Number(tr.dataset.head),
    values: Object.fromEntries([...tr.querySelectorAll('td[data-value]')].map((td, i) => [i, Number(td.dataset.value)])),
  })),
})"""


def metrics_table(page: Page) -> tuple[list[str], dict[tuple[int, int], dict[str, float]]]:
    table = page.evaluate(TABLE)
    columns = table["columns"]
    metrics = [c for c in columns if c not in ("layer", "head", "labels")]
    values = {(row["layer"], row["head"]): {m: row["values"][str(i)] for i, m in enumerate(metrics)}
              for row in table["rows"]}
    return columns, values


def open_explorer(page: Page, **params: object) -> None:
    page.goto(link("/", **params))
    expect(page.locator("#heatmap .gtitle")).to_have_text(re.compile(r"^(Layer \d|第 \d 层)"))
    expect(page.locator("#metrics-body tr")).to_have_count(8)


def visible_kinds(page: Page) -> list[str]:
    return [text.strip() for text in page.locator(".key-list li:visible").all_text_contents()]


def kinds_of(tokens: list[dict]) -> list[str]:
    """The key's items for these tokens, in the key's order."""
    kinds = [("sentence A", any(not t["special"] and t["segment"] == 0 for t in tokens)),
             ("sentence B", any(t["segment"] == 1 for t in tokens)),
             ("special", any(t["special"] for t in tokens)),
             ("unknown to the model", any(t.get("unknown") for t in tokens))]
    return [name for name, occurs in kinds if occurs]


def assert_table_is_numpy(page: Page, tokens: list[dict], maps: np.ndarray, shown: list[str]) -> None:
    columns, values = metrics_table(page)
    assert columns == ["layer", "head", *shown, "previous_token", "induction", "labels"]  # R R's two (metrics table)
    reference = reference_metrics(tokens, maps)
    assert len(values) == 8
    for (layer, head), row in values.items():
        for metric in shown:
            assert row[metric] == pytest.approx(reference[metric][layer, head], abs=2e-5), (metric, layer, head)


def test_the_explorer_for_gpt2_shows_the_kinds_and_metrics_that_apply(page: Page, local_api):
    open_explorer(page, text=CAT, model=GPT2)
    tokens, maps = attention(local_api, CAT, None, GPT2)
    assert not any(t["special"] or t.get("unknown") for t in tokens) and {t["segment"] for t in tokens} == {0}
    expect(page.locator("#tokens .chip")).to_have_count(len(tokens))
    assert visible_kinds(page) == ["sentence A"]  # no sentence B, no special token

    # Left out: what is 0 for every head whatever the weights — no [CLS] or [SEP], and a causal map gives the
    # next token nothing (numpy on the API's maps says so too).
    reference = reference_metrics(tokens, maps)
    for metric in ("to_cls", "to_sep", "to_next"):
        assert np.abs(reference[metric]).max() == 0, metric
    shown = ["entropy", "distance", "to_self", "to_previous", "to_punctuation", "to_first"]
    assert_table_is_numpy(page, tokens, maps, shown)
    answer = local_api.post("/api/v1/metrics", json={"text": CAT, "model": GPT2}).json()
    _, values = metrics_table(page)
    for (layer, head), row in values.items():
        for metric in shown:
            assert row[metric] == pytest.approx(answer["metrics"][metric][layer][head], abs=1e-7)
    note = page.locator(".metrics-hidden")
    expect(note).to_be_visible()
    expect(note).to_have_text(
        "Not in the table, as they are 0 for every head of this input whatever the weights: share to [CLS] and share "
        "to [SEP] (the input has no special tokens: tiny-gpt2 adds none); share to the next token (tiny-gpt2 is "
        "causal: no token sees the one after it).")
    # The grid cannot be coloured by them either: their options are disabled, and say why.
    expect(page.locator('#colour-select option[value="to_cls"]')).to_be_disabled()
    assert page.locator('#colour-select option[value="to_next"]').get_attribute("title") == (
        "0 for every head of this input whatever the weights")
    disabled = page.locator("#colour-select option").evaluate_all(
        "(options) => options.filter((o) => o.disabled).map((o) => o.value)")
    assert sorted(disabled) == ["to_cls", "to_next", "to_sep"]
    thresholds = page.locator("#metrics-thresholds")
    expect(thresholds).to_contain_text("previous token: share to the previous token ≥ 0.500")
    expect(thresholds).not_to_contain_text("[CLS]: share to")
    expect(thresholds).not_to_contain_text("next token: share to")

    # Sorting by a shown column still works.
    page.locator('#metrics-head th[data-column="to_self"] button').click()
    expect(page.locator('#metrics-head th[data-column="to_self"]')).to_have_attribute("aria-sort", "descending")
    column = [float(v) for v in page.locator('#metrics-body td[data-value]').evaluate_all(
        "(tds) => tds.filter((td, i) => i % 8 === 2).map((td) => td.dataset.value)")]  # 6 metrics and R R's 2 a row
    assert column == sorted(column, reverse=True) and len(column) == 8

    # The same page in Chinese.
    open_explorer(page, text=CAT, model=GPT2, lang="zh")
    expect(page.locator(".metrics-hidden")).to_contain_text("表中未列出以下指标")
    expect(page.locator(".metrics-hidden")).to_contain_text("给 [CLS] 的比例和给 [SEP] 的比例")
    assert english_left(page, "#metrics-thresholds cite") == []


def test_the_explorer_for_a_bert_style_model_keeps_every_metric(page: Page, local_api):
    # A pair: both segments and the special tokens occur, every metric applies.
    open_explorer(page, text=CAT, pair=PAIR_A, model=BERT)
    tokens, maps = attention(local_api, CAT, PAIR_A, BERT)
    assert kinds_of(tokens)[:3] == ["sentence A", "sentence B", "special"]
    assert visible_kinds(page) == kinds_of(tokens)
    assert_table_is_numpy(page, tokens, maps, ["entropy", "distance", "to_cls", "to_sep", "to_self", "to_previous",
                                               "to_next", "to_punctuation", "to_first"])
    expect(page.locator(".metrics-hidden")).to_be_hidden()
    expect(page.locator("#metrics-thresholds")).to_contain_text("[CLS]: share to [CLS] ≥ 0.500")
    assert page.locator("#colour-select option").evaluate_all(
        "(options) => options.filter((o) => o.disabled).length") == 0

    # One text: no sentence B in the key; switching to GPT-2 and back changes the columns both ways.
    open_explorer(page, text=CAT, model=BERT)
    single, _ = attention(local_api, CAT, None, BERT, [0], [0])
    assert kinds_of(single)[:2] == ["sentence A", "special"] and "sentence B" not in kinds_of(single)
    assert visible_kinds(page) == kinds_of(single)
    page.locator("#model-select").select_option(GPT2)
    expect(page.locator(".metrics-hidden")).to_be_visible()
    expect(page.locator('#metrics-head th[data-column="to_cls"]')).to_have_count(0)
    assert visible_kinds(page) == ["sentence A"]
    page.locator("#model-select").select_option(BERT)
    expect(page.locator('#metrics-head th[data-column="to_cls"]')).to_have_count(1)
    expect(page.locator(".metrics-hidden")).to_be_hidden()
    assert visible_kinds(page) == kinds_of(single)


# ---- the logit lens through api.js ------------------------------------------------------------------------


def test_the_lens_asks_through_the_api_module_and_shows_control_characters(page: Page, local_api):
    text = "cat\u0007 dog"
    bodies = posted(page, "/api/v1/lens")
    page.goto(link("/", text=text, model=GPT2, lens=1))
    panel = page.locator("#lens-panel")
    expect(panel).to_have_attribute("data-position", "1")
    expect(panel).to_have_attribute("aria-busy", "false")
    assert bodies == [{"text": text, "text_pair": None, "model": GPT2, "position": 1, "top_k": 5}]
    answer = local_api.post("/api/v1/lens", json=bodies[0]).json()
    assert answer["tokens"][1]["display"] == "\u0007"
    ids = page.evaluate("() => [...document.querySelectorAll('#lens-body tr')].map((tr) => "
                        "[...tr.querySelectorAll('td')].map((td) => Number(td.dataset.id)))")
    assert ids == [[p["id"] for p in layer["predictions"]] for layer in answer["layers"]]
    # The bell (U+0007) is shown as its picture ␇ in the select and the note, never as nothing.
    expect(page.locator("#lens-select option").nth(1)).to_have_text("1 · ␇")
    expect(page.locator("#lens-note .lens-token").first).to_have_text("␇")


def test_the_explorers_intro_names_the_chosen_model_and_its_size(page: Page):
    page.goto(link("/", model=GPT2))
    expect(page.locator("#intro-heading")).to_have_text("Look inside tiny-gpt2")
    expect(page.locator("#intro")).to_contain_text("(2 layers × 4 heads)")
    page.goto(link("/", lang="zh"))
    expect(page.locator("#intro-heading")).to_have_text("看看 all-MiniLM-L6-v2 的内部")
    expect(page.locator("#intro")).to_contain_text("（6 层 × 12 头）")
