"""/sequence in real Chromium: an RNN, a convolution stack and self-attention side by side. In English and
中文 at 1400 and 390 px: no horizontal overflow, the three dependency paths drawn for the chosen i and j,
the measured sweep plotted from the committed file, the reach plotted from the API's answer; and a change of
j in the form redraws the paths and keeps the state in the URL."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left

SWEEP_FILE = Path(__file__).resolve().parents[2] / "static" / "data" / "sequence-sweep.json"
STATE = "n=48&i=40&j=10&k=3&dilated=0&layers=3&d=8"  # i − j = 30: 30 GRU steps, ⌈30 / 2⌉ = 15 layers


def traces(page: Page, plot_id: str):
    return page.evaluate(f"() => document.getElementById('{plot_id}').data.map((d) => ({{name: d.name, x: d.x, y: d.y}}))")


def path_of(page: Page, plot_id: str):
    return next(t for t in traces(page, plot_id) if t["name"] == "path")


def wait_all_drawn(page: Page) -> None:
    expect(page.locator("#seq-sweep")).to_have_attribute("data-drawn", "true")
    expect(page.locator("#seq-reach")).to_have_attribute("data-drawn", "true")
    expect(page.locator("#plot-path-attention")).to_have_attribute("data-drawn", "true")


def fits(page: Page, width: int) -> None:
    """At `width` px the page does not scroll sideways and every figure lies inside it."""
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_function(f"() => document.documentElement.scrollWidth <= {width}")
    for plot_id in ("plot-path-rnn", "plot-path-conv", "plot-sweep-forward", "plot-reach", "plot-field"):
        box = page.locator(f"#{plot_id}").bounding_box()
        assert box["x"] + box["width"] <= width and box["width"] > min(width, 1100) * 0.25


# One page load per language, first at one width and then at the other (the figures follow the window).
@pytest.mark.parametrize(("lang", "widths"), [("en", (1400, 390)), ("zh", (390, 1400))])
def test_the_page_draws_the_paths_the_sweep_and_the_reach(page: Page, api, lang: str, widths: tuple[int, int]):
    page.set_viewport_size({"width": widths[0], "height": 900})
    page.goto(f"/sequence?{STATE}&lang={lang}")
    wait_all_drawn(page)
    fits(page, widths[0])
    # the three paths for i = 40, j = 10
    assert path_of(page, "plot-path-rnn")["x"] == list(range(10, 41))
    conv = path_of(page, "plot-path-conv")
    assert conv["y"] == list(range(16)) and conv["x"][0] == 10 and conv["x"][-1] == 40
    assert all(0 <= b - a <= 2 for a, b in zip(conv["x"], conv["x"][1:], strict=False))  # kernel 3: ≤ 2 back a layer
    arc = path_of(page, "plot-path-attention")
    assert (arc["x"][0], arc["x"][-1]) == (10, 40)
    # the sweep: every measured forward time of the file, one curve per layer
    sweep = json.loads(SWEEP_FILE.read_text(encoding="utf-8"))
    drawn = traces(page, "plot-sweep-forward")
    for index, kind in enumerate(("rnn", "conv", "attention")):
        ran = sorted((r["n"], r["seconds"]) for r in sweep["results"]
                     if r["kind"] == kind and r["phase"] == "forward" and "seconds" in r)
        assert drawn[index]["x"] == [n for n, _ in ran] and drawn[index]["y"] == [s for _, s in ran]
        assert sweep["formulas"][kind]["time"] in drawn[index]["name"]
    # the reach: the API's numbers, zeros left off the log axis
    answer = api.post("/api/v1/sequence/reach", json={"length": 48, "d": 8, "kernel": 3, "dilated": False,
                                                      "layers": 3}).json()
    reach = traces(page, "plot-reach")
    for index, kind in enumerate(("rnn", "conv", "attention")):
        kept = [(j, g) for j, g in enumerate(answer[kind]) if g > 0]
        assert reach[index]["x"] == [j for j, _ in kept]
        assert all(math.isclose(a, g) for a, (_, g) in zip(reach[index]["y"], kept, strict=True))
    assert traces(page, "plot-field")[0]["y"] == [3, 5, 7]
    if lang == "en":
        expect(page.locator("#paths-counts")).to_contain_text("GRU: 30 sequential steps from j to i")
        expect(page.locator("#paths-counts")).to_contain_text("15 layers before the later position sees the earlier")
        expect(page.locator("#reach-caption")).to_contain_text("exactly 0 at the 41 positions beyond its receptive "
                                                               "field of 7")
    else:
        expect(page.locator("#paths-counts")).to_contain_text("GRU：从 j 到 i 需要 30 个顺序步骤")
        expect(page.locator("#reach-caption")).to_contain_text("感受野 7 之外的 41 个位置上恰好为 0")
        assert english_left(page) == []
    fits(page, widths[1])


def test_a_new_j_redraws_the_paths_and_goes_into_the_url(page: Page):
    page.goto(f"/sequence?{STATE}")
    wait_all_drawn(page)
    page.locator("#seq-j").fill("36")
    page.locator("#seq-j").dispatch_event("change")
    expect(page).to_have_url("/sequence?n=48&i=40&j=36&layers=3&d=8&dilated=0")  # k = 3, the default, left out
    page.wait_for_function("() => document.getElementById('plot-path-rnn').data[1].x.length === 5")
    assert path_of(page, "plot-path-conv")["y"] == [0, 1, 2]  # ⌈4 / 2⌉ = 2 layers
    expect(page.locator("#path-attention-caption")).to_have_text("Self-attention: position 40 reads position 36 "
                                                                  "directly, in one step.")
    # a position beyond N is refused in the form, naming the field and its range
    page.locator("#seq-i").fill("48")
    page.locator("#seq-i").dispatch_event("change")
    expect(page.locator("#seq-error")).to_have_text("Position i: send a whole number from 0 to 47.")
    expect(page).to_have_url("/sequence?n=48&i=40&j=36&layers=3&d=8&dilated=0")  # k = 3, the default, left out
