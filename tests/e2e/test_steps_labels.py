"""The split step of /steps in real Chromium at a desktop's and a phone's width: no label drawn on the stage (tick
labels, the "↓ columns" lines, the captions) overlaps another, measured from the labels' bounding boxes."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

# 182 MiniLM tokens: Q, K and V are 182 × 384, three strips of 384 numbered columns side by side at 1400 px
TEXT = " ".join(["The cat sat on the mat while the dog looked at attention models again."] * 12)

# Every pair of labels on the stage whose boxes overlap by more than half a pixel both ways. Tick labels are
# compared within their figure and axis (Plotly places them), the operator lines and captions with each other.
OVERLAPS = """() => {
  const box = (el) => el.getBoundingClientRect();
  const visible = (b) => b.width > 0 && b.height > 0;
  const groups = [];
  for (const gd of document.querySelectorAll('#stage-grid .plot')) {
    for (const axis of ['xtick', 'ytick']) {
      groups.push([...gd.querySelectorAll(`.${axis} text`)].map((el) => [`${gd.id} ${axis} "${el.textContent}"`, box(el)]));
    }
  }
  groups.push([...document.querySelectorAll('#stage-grid .grid-op, #stage-grid figcaption')]
    .map((el) => [`${el.className || el.tagName} "${el.textContent.slice(0, 40)}"`, box(el)]));
  const found = [];
  let counted = 0;
  for (const group of groups) {
    const shown = group.filter(([, b]) => visible(b));
    counted += shown.length;
    for (let i = 0; i < shown.length; i++) {
      for (let j = i + 1; j < shown.length; j++) {
        const [[na, a], [nb, b]] = [shown[i], shown[j]];
        const across = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const along = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (across > 0.5 && along > 0.5) found.push(`${na} and ${nb}`);
      }
    }
  }
  return { found, counted };
}"""


@pytest.mark.parametrize("width", [1400, 390])
def test_the_split_steps_labels_never_overlap(page: Page, width: int):
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(f"/steps?text={quote(TEXT)}&layer=0&head=0&query=5&step=split")
    expect(page.locator("#stage")).to_have_attribute("data-step", "split")
    expect(page.locator("#stage")).to_have_attribute("aria-busy", "false")
    for key in ("split-q-full", "split-k-full", "split-v-full", "split-q", "split-k", "split-v"):
        expect(page.locator(f"#plot-{key} .xtick text").first).to_be_attached()
    result = page.evaluate(OVERLAPS)
    assert result["counted"] > 60, result  # the labels were there to measure
    assert result["found"] == [], result["found"][:10]
