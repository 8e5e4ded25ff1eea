"""FlashAttention tile by tile (/flash) in real Chromium: every tile of the worked example walked and its numbers
checked against POST /api/v1/flash fetched here, the output against softmax attention worked out here with numpy,
the backward's running sums and gradients against sums and torch.autograd written here, the captions' claims
recomputed from the m values, the URL state, the links to and from /toy, 中文, 390 px and the toy's largest size."""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
import torch
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese, wait_until

# The worked example of the course notes, written out (not fetched): head 0 works with columns 0-1.
QUERIES = [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0]]
VALUES = [[10, 11, 20, 21], [12, 13, 22, 23], [14, 15, 24, 25], [16, 17, 26, 27]]
Q0 = np.array(QUERIES, dtype=np.float64)[:, :2]
V0 = np.array(VALUES, dtype=np.float64)[:, :2]
CAUSAL = np.triu(np.ones((4, 4), dtype=bool), k=1)  # hidden: key j > query i
SETUP = "bc=3&causal=1"  # Br = 2 (the default), Bc = 3, causal: tiles (0,0), (0,1) skipped, (1,0), (1,1)


def flash(api, **body) -> dict:
    response = api.post("/api/v1/flash", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def softmax_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    s = q @ k.T / math.sqrt(q.shape[1])
    s = np.where(hidden, -np.inf, s)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ v


def table(page: Page, key: str) -> list[list[float | None]]:
    """The numbers of the table drawn for `key` (data-matrix), exactly as written in data-value."""
    return page.evaluate(
        """(key) => [...document.querySelectorAll(`table[data-matrix="${key}"] tbody tr`)].map((tr) =>
             [...tr.querySelectorAll('td')].map((td) => (td.dataset.value === 'null' ? null : Number(td.dataset.value))))""",
        key,
    )


def check_one_format_per_table(page: Page) -> None:
    """Every table drawn writes its numbers one way (all whole, or all with four decimals: never "14" beside
    "14.0000" in a row or a column), and each written number is its data-value to the digits it shows."""
    tables = page.evaluate(
        """() => [...document.querySelectorAll('table[data-matrix]')].map((table) => [table.dataset.matrix,
             [...table.querySelectorAll('td')].filter((td) => td.dataset.value !== 'null')
               .map((td) => [td.textContent, Number(td.dataset.value)])])"""
    )
    for key, cells in tables:
        decimals = {len(text.split(".")[1]) if "." in text else 0 for text, _ in cells}
        assert decimals in (set(), {0}, {4}), f"{key}: {[text for text, _ in cells]}"  # (a skipped tile: all −∞)
        for text, value in cells:
            assert abs(float(text.replace("−", "-")) - value) <= (5e-5 if decimals == {4} else 0), (key, text, value)


def row_state(page: Page) -> list[dict[str, float | None]]:
    return page.evaluate(
        """() => [...document.querySelectorAll('table[data-matrix="rows"] tbody tr')].map((tr) => Object.fromEntries(
             [...tr.querySelectorAll('td')].map((td) => [td.dataset.col, td.dataset.value === 'null' ? null : Number(td.dataset.value)])
             .concat([['kind', tr.dataset.kind], ['rescaled', [...tr.querySelectorAll('td.is-rescaled')].map((td) => td.dataset.col)]])))"""
    )


def captions(page: Page) -> list[dict]:
    return page.evaluate(
        """() => [...document.querySelectorAll('#tile-say li')].map((li) => ({key: li.dataset.say, text: li.textContent,
             rows: li.dataset.rows ? li.dataset.rows.split(',').map(Number) : [],
             keys: li.dataset.keys ? li.dataset.keys.split(',').map(Number) : [],
             factors: li.dataset.factors ? li.dataset.factors.split(',').map(Number) : []}))"""
    )


def at_step(page: Page, step: str) -> None:
    expect(page.locator("#flash-walk")).to_have_attribute("data-step", step)
    expect(page.locator(f'#tile-grid button[data-step="{step}"]')).to_have_attribute("aria-current", "step")
    expect(page.locator("#flash-walk")).to_have_attribute("aria-busy", "false")


def query_of(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


def named(text: str, letter: str) -> set[int]:
    """The indices a sentence names: q3, and every index of a range q5–q9."""
    found: set[int] = set()
    for start, end in re.findall(rf"\b{letter}(\d+)(?:–{letter}(\d+))?", text):
        found |= set(range(int(start), int(end or start) + 1))
    return found


def check_caption_claims(items: list[dict], tile: dict, previous: dict | None, last_col: int) -> None:
    """Every sentence shown for a forward tile, recomputed from the answer's m values."""
    r0 = tile["rows"][0]

    def m_old(row: int) -> float | None:
        return previous["m"][row - r0] if previous else None

    def m_new(row: int) -> float | None:
        return tile["m"][row - r0]

    for item in items:
        key, rows = item["key"], item["rows"]
        if key == "flash.say.grew":
            for row, factor in zip(rows, item["factors"], strict=True):
                assert m_old(row) is not None and m_new(row) > m_old(row)
                assert factor == pytest.approx(math.exp(m_old(row) - m_new(row)), abs=1e-15) and factor < 1
                assert f"{factor:.4f}" in item["text"]
        elif key == "flash.say.same":
            assert all(m_old(row) is not None and m_old(row) == m_new(row) for row in rows)
        elif key == "flash.say.first":
            assert all(m_old(row) is None and m_new(row) is not None for row in rows)
        elif key == "flash.say.hidden":
            assert all(m_new(row) is None for row in rows)
        elif key == "flash.say.skipped":
            assert tile["skipped"] and all(s is None for row in tile["scores"] for s in row)
        elif key == "flash.say.done":
            assert tile["col_block"] == last_col and rows == list(range(*tile["rows"]))
        else:
            pytest.fail(f"unknown caption {key}")
        assert rows and set(rows) <= named(item["text"], "q")


def test_every_forward_tile_of_the_worked_example_as_the_api_computes_it(page: Page, api):
    answer = flash(api, block_rows=2, block_cols=3, causal=True)
    tiles = answer["tiles"]
    assert [(t["row_block"], t["col_block"], t["skipped"]) for t in tiles] == [
        (0, 0, False), (0, 1, True), (1, 0, False), (1, 1, False)]
    page.goto(f"/flash?{SETUP}")
    at_step(page, "f0")
    expect(page.locator("#tile-position")).to_have_text("forward tile 1 of 4")
    expect(page.locator("#tile-grid button.tile")).to_have_count(4)
    expect(page.locator("#tile-grid button.tile.is-skipped")).to_have_count(1)
    expect(page.locator('#tile-grid button[data-step="f1"]')).to_have_class("tile is-skipped")

    for i, tile in enumerate(tiles):
        at_step(page, f"f{i}")
        previous = tiles[i - 1] if i > 0 and tiles[i - 1]["row_block"] == tile["row_block"] else None
        n = tile["rows"][1] - tile["rows"][0]
        assert table(page, "scores") == tile["scores"]
        assert table(page, "o") == tile["o"]
        for r, shown in enumerate(row_state(page)):
            m_old = previous["m"][r] if previous else None
            l_old = previous["l"][r] if previous else 0
            assert (shown["mOld"], shown["mNew"], shown["lOld"], shown["lNew"]) == (m_old, tile["m"][r], l_old, tile["l"][r])
            visible = [s for s in tile["scores"][r] if s is not None]
            assert shown["max"] == (max(visible) if visible else None)
            if tile["skipped"] or tile["m"][r] is None:
                assert shown["factor"] == 1
            else:  # exp(m_old − m_new), 0 from −∞, worked out here
                expected = 0.0 if m_old is None else math.exp(m_old - tile["m"][r])
                assert shown["factor"] == pytest.approx(expected, abs=1e-15)
            grew = m_old is not None and tile["m"][r] is not None and tile["m"][r] > m_old
            assert shown["rescaled"] == (["factor"] if grew else [])
        check_caption_claims(captions(page), tile, previous, last_col=1)
        check_one_format_per_table(page)
        if tile["col_block"] == 1:  # the block's output, beside standard attention's
            r0, r1 = tile["rows"]
            assert table(page, "block-output") == answer["output"][r0:r1]
            assert table(page, "block-reference") == answer["reference"][r0:r1]
            assert np.allclose(np.array(tile["o"]) / np.array(tile["l"])[:, None], answer["output"][r0:r1], atol=1e-12)
        else:
            expect(page.locator('[data-matrix="block-output"]')).to_have_count(0)
        # fast memory: this tile's real sizes against the 4 × 4 matrix
        cols = tile["cols"][1] - tile["cols"][0]
        memory = page.locator("#memory-compare")
        expect(memory).to_have_attribute("data-tile", str(n * cols))
        expect(memory).to_have_attribute("data-full", "16")
        expect(page.locator('#memory-list li[data-part="s"]')).to_have_attribute("data-count", str(n * cols))
        expect(page.locator('#memory-list li[data-part="q"]')).to_have_attribute("data-count", str(n * 2))
        expect(page.locator('#memory-list li[data-part="v"]')).to_have_attribute("data-count", str(cols * 2))
        expect(memory).to_contain_text(f"{n * cols} numbers ({n} × {cols})")
        expect(memory).to_contain_text("16 numbers")
        if i < len(tiles) - 1:  # the Next button and the → key both step
            if i % 2 == 0:
                page.locator("#tile-next").click()
            else:
                page.locator("body").press("ArrowRight")
    expect(page.locator("#tile-next")).to_be_disabled()
    expect(page.locator("#tile-last")).to_be_disabled()

    # what the tiles' captions said on the worked example, in words
    page.locator("#tile-first").click()
    at_step(page, "f0")
    expect(page.locator("#tile-say")).to_contain_text("q0 and q1 meet their first visible key here")
    page.locator("body").press("End")
    at_step(page, "f3")
    factor = math.exp(tiles[2]["m"][1] - tiles[3]["m"][1])
    expect(page.locator("#tile-say")).to_contain_text(f"The row maximum of q3 grew: its ℓ and O were first multiplied by exp(m_old − m_new) = {factor:.4f}")
    expect(page.locator("#tile-say")).to_contain_text("The row maximum stayed the same in q2")
    page.locator('#tile-grid button[data-step="f1"]').click()
    at_step(page, "f1")
    expect(page.locator("#tile-say li").first).to_contain_text("FlashAttention skips it")
    assert query_of(page) == {"causal": "1", "bc": "3", "tile": "1"}

    # the answer: O / ℓ beside standard attention, both drawn, the largest difference shown
    reference = softmax_attention(Q0, Q0, V0, CAUSAL)  # worked out here
    drawn_output = np.array(table(page, "output"))
    assert np.abs(drawn_output - reference).max() <= 1e-12
    assert table(page, "output") == answer["output"]
    assert table(page, "reference") == answer["reference"]
    check = page.locator("#result-check")
    expect(check).to_have_attribute("data-value", repr(answer["max_abs_diff"]))
    assert float(check.get_attribute("data-value")) <= 1e-12
    expect(check).to_contain_text(f"{answer['max_abs_diff']:.1e}".replace("-", "−"))
    expect(check).to_contain_text("the same up to float64 rounding")
    assert [row[0] for row in table(page, "ml")] == answer["m"]
    expect(page.locator("#flash-grads")).to_be_hidden()


def test_the_backward_walks_its_tiles_to_autograds_gradients(page: Page, api):
    answer = flash(api, block_rows=2, block_cols=3, causal=True, backward=True)
    back = answer["backward"]
    page.goto(f"/flash?{SETUP}&tile=2")
    at_step(page, "f2")
    page.locator("#flash-backward").check()
    at_step(page, "b0")  # turning the backward on starts it
    assert query_of(page) == {"causal": "1", "backward": "1", "bc": "3", "tile": "4"}
    expect(page.locator("#tile-position")).to_have_text("backward tile 1 of 4")
    expect(page.locator("#flash-grads")).to_be_visible()

    q, k, dout = np.array(answer["q"]), np.array(answer["k"]), np.array(back["upstream"])
    scale = answer["scale"]
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros((4, 2))
    for i, tile in enumerate(back["tiles"]):
        at_step(page, f"b{i}")
        (r0, r1), (c0, c1) = tile["rows"], tile["cols"]
        assert table(page, "p") == tile["p"]
        assert table(page, "ds") == tile["ds"]
        d_rows = (dout * np.array(answer["output"])).sum(axis=1)[r0:r1]  # D = rowsum(dO ⊙ O), here
        assert np.allclose([row[0] for row in table(page, "D")], d_rows, atol=1e-12, rtol=0)
        if not tile["skipped"]:  # the sums as written in the route's description, summed here
            p, ds = np.array(tile["p"]), np.array(tile["ds"])
            dv[c0:c1] += p.T @ dout[r0:r1]
            dq[r0:r1] += scale * ds @ k[c0:c1]
            dk[c0:c1] += scale * ds.T @ q[r0:r1]
        assert np.abs(np.array(table(page, "dq-run")) - dq[r0:r1]).max() <= 1e-12
        assert np.abs(np.array(table(page, "dk-run")) - dk[c0:c1]).max() <= 1e-12
        assert np.abs(np.array(table(page, "dv-run")) - dv[c0:c1]).max() <= 1e-12
        items = captions(page)
        assert items[0]["key"] == ("flash.back.say.skipped" if tile["skipped"] else "flash.back.say.tile")
        for item in items[1:]:  # "final" claims: nothing later adds to these rows / keys
            later = back["tiles"][i + 1:]
            if item["key"] == "flash.back.say.dqDone":
                assert not any(t["rows"] == tile["rows"] and not t["skipped"] for t in later)
                assert np.abs(np.array(back["dq"])[r0:r1] - dq[r0:r1]).max() <= 1e-12
            else:
                assert item["key"] == "flash.back.say.dkvDone"
                assert not any(t["cols"] == tile["cols"] and not t["skipped"] for t in later)
                assert np.abs(np.array(back["dk"])[c0:c1] - dk[c0:c1]).max() <= 1e-12
        expect(page.locator("#memory-compare")).to_have_attribute("data-full", "32")
        if i < len(back["tiles"]) - 1:
            page.locator("#tile-next").click()

    # the gradients beside autograd's, and autograd's own here
    qt, kt, vt = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (answer["q"], answer["k"], answer["v"]))
    s = (qt @ kt.T * scale).masked_fill(torch.tensor(CAUSAL), float("-inf"))
    (torch.softmax(s, dim=1) @ vt).backward(torch.tensor(dout))
    for name, grad in (("dq", qt.grad), ("dk", kt.grad), ("dv", vt.grad)):
        assert table(page, name) == back[name]
        assert table(page, f"{name}-ref") == back["reference"][name]
        assert np.abs(np.array(table(page, name)) - grad.numpy()).max() <= 1e-12
    check = page.locator("#grads-check")
    expect(check).to_have_attribute("data-value", repr(back["max_abs_diff"]))
    assert float(check.get_attribute("data-value")) <= 1e-12

    page.locator("#flash-backward").uncheck()  # off: back to the forward's last tile
    at_step(page, "f3")
    expect(page.locator("#flash-grads")).to_be_hidden()
    assert "backward" not in query_of(page)


def test_the_setup_lives_in_the_url_and_comes_back_after_a_reload(page: Page, api):
    page.goto(f"/flash?{SETUP}")
    at_step(page, "f0")
    page.select_option("#flash-head", "1")
    expect(page.locator("#flash-walk")).to_have_attribute("data-drawn", "/flash?causal=1&head=1&bc=3")
    page.locator("#flash-br").fill("1")
    expect(page.locator("#flash-walk")).to_have_attribute("data-drawn", "/flash?causal=1&head=1&br=1&bc=3")
    page.locator("#flash-backward").check()
    at_step(page, "b0")
    page.locator('#tile-grid button[data-step="b5"]').click()
    at_step(page, "b5")
    want = {"causal": "1", "head": "1", "br": "1", "bc": "3", "backward": "1", "tile": "13"}
    assert query_of(page) == want

    page.reload()
    at_step(page, "b5")
    assert query_of(page) == want
    expect(page.locator("#flash-br")).to_have_value("1")
    expect(page.locator("#flash-bc")).to_have_value("3")
    expect(page.locator("#flash-head")).to_have_value("1")
    expect(page.locator("#flash-causal")).to_be_checked()
    expect(page.locator("#flash-backward")).to_be_checked()
    answer = flash(api, block_rows=1, block_cols=3, causal=True, head=1, backward=True)
    assert table(page, "p") == answer["backward"]["tiles"][5]["p"]

    page.go_back()  # Back walks the history of setups
    expect(page.locator("#flash-backward")).not_to_be_checked()
    expect(page.locator("#flash-br")).to_have_value("1")


def test_toy_and_flash_link_to_each_other_with_the_same_setup(page: Page, api):
    page.goto("/toy?q=1,0,2,1;0,1,1,2;1,1,0,1&causal=1&head=1&variant=dot")
    expect(page.locator("#toy-flash-link")).to_have_attribute("href", "/flash?q=1,0,2,1;0,1,1,2;1,1,0,1&causal=1&head=1")
    page.locator("#toy-flash-link").click()
    at_step(page, "f0")
    expect(page.locator("#flash-causal")).to_be_checked()
    expect(page.locator("#flash-head")).to_have_value("1")
    # keys and values left out of a /toy link are the worked example's (not the queries, as the API's default)
    answer = flash(api, queries=[[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1]], keys=QUERIES, values=VALUES, causal=True, head=1)
    assert table(page, "output") == answer["output"]
    assert len(answer["output"]) == 3
    expect(page.locator("#flash-toy-link")).to_have_attribute("href", "/toy?q=1,0,2,1;0,1,1,2;1,1,0,1&causal=1&head=1")


# Each table box: [key, table wider than its box, the hint above it shown, the cut edge faded].
SCROLL_BOXES = """() => [...document.querySelectorAll('.flash-scroll-frame')].filter((f) => f.getClientRects().length).map((f) => {
  const box = f.firstElementChild, hint = f.previousElementSibling;
  return [box.querySelector('table').dataset.matrix, box.scrollWidth > box.clientWidth, !hint.hidden && hint.getClientRects().length > 0,
          getComputedStyle(f, '::after').content !== 'none'];
})"""


def test_chinese_shows_no_english_and_390_px_does_not_overflow(page: Page, api):
    page.goto(f"/flash?{SETUP}&backward=1&tile=3")
    at_step(page, "f3")
    switch_to_chinese(page)
    at_step(page, "f3")
    # the rows whose maximum grew in tile 3, worked out from the answer's m: one row is "它的", several "它们的"
    tiles = flash(api, block_rows=2, block_cols=3, causal=True)["tiles"]
    grew = [r for r, (old, new) in enumerate(zip(tiles[2]["m"], tiles[3]["m"], strict=True)) if new > old]
    sentence = page.locator('#tile-say li[data-say="flash.say.grew"]')
    expect(sentence).to_contain_text("的行最大值变大了")
    expect(sentence).to_contain_text("它的 ℓ 和 O" if len(grew) == 1 else "它们的 ℓ 和 O")
    assert ("它们的" in sentence.inner_text()) == (len(grew) > 1)
    assert english_left(page) == []
    page.locator("#tile-next").click()
    at_step(page, "b0")
    assert english_left(page) == []
    page.locator("#tile-prev").click()  # back to the forward's last tile: its row table has seven columns
    at_step(page, "f3")
    for width in (390, 800):
        page.set_viewport_size({"width": width, "height": 844})
        page.wait_for_function("() => document.documentElement.scrollWidth <= innerWidth")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        # a table wider than its box says so above it and fades where it is cut; one that fits says nothing
        wait_until(page, f"() => ({SCROLL_BOXES})().every(([, wider, hint, fade]) => wider === hint && wider === fade)")
        boxes = page.evaluate(SCROLL_BOXES)
        assert "rows" in [key for key, *_ in boxes]
        if width == 800:
            assert not any(wider for _, wider, _, _ in boxes)


def test_the_toys_largest_size_tile_by_tile_at_390_px(page: Page, api):
    """64 queries and keys (the toy's limit) in blocks of 1: 4,096 tiles, the grid scrolls inside its box."""
    rows = [[(i * 7 + j * 3) % 5 - 2 for j in range(4)] for i in range(64)]
    q = ";".join(",".join(str(x) for x in row) for row in rows)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/flash?q={q}&k={q}&v={q}&causal=1&br=1&bc=1")
    at_step(page, "f0")
    expect(page.locator("#tile-grid button.tile")).to_have_count(64 * 64)
    expect(page.locator("#tile-grid button.tile.is-skipped")).to_have_count(64 * 63 // 2)
    page.locator("#tile-last").click()
    at_step(page, "f4095")
    answer = flash(api, queries=rows, keys=rows, values=rows, causal=True, block_rows=1, block_cols=1)
    assert table(page, "scores") == answer["tiles"][-1]["scores"]
    assert float(page.locator("#result-check").get_attribute("data-value")) <= 1e-12
    expect(page.locator("#memory-compare")).to_have_attribute("data-full", str(64 * 64))
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    scroller = page.evaluate("() => { const s = document.querySelector('.flash-grid-scroll'); return [s.scrollWidth, s.clientWidth, s.scrollLeft]; }")
    assert scroller[0] > scroller[1] and scroller[2] > 0  # the grid scrolls, the lit tile in view


@pytest.mark.expect_http_errors(422)
def test_a_setup_the_server_refuses_is_named_and_nothing_else_is_drawn(page: Page, api):
    error = api.post("/api/v1/flash", json={"n_heads": 3}).json()["errors"][0]
    assert error["loc"] == ["body", "n_heads"]  # what the page words its message from
    page.goto("/flash?heads=3&br=99")
    expect(page.locator("#flash-error")).to_have_text("Heads: must divide d_model (4); use 1, 2, or 4")
    expect(page.locator("#flash-url-note")).to_contain_text("could not be read: Query block")
    expect(page.locator("#flash-walk")).to_be_hidden()
    expect(page.locator("#flash-result")).to_be_hidden()
    expect(page.locator("#flash-toy-link")).to_have_attribute("href", "/toy?heads=3")  # to fix it there
