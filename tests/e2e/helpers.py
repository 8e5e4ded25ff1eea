"""Helpers shared by the walkthrough tests (/steps and /toy)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

STEPS = ["input", "project", "split", "scores", "scale", "mask", "softmax", "weighted_sum", "concat", "output"]

# Records every value the stage's data-step takes (window.__seen), starting with the current one.
RECORD_STEPS = """() => {
  const stage = document.getElementById('stage');
  if (window.__stepObserver) window.__stepObserver.disconnect();
  window.__seen = [stage.dataset.step];
  window.__stepObserver = new MutationObserver((records) => {
    for (const record of records) {
      const now = stage.dataset.step;
      if (record.oldValue !== now) window.__seen.push(now);
    }
  });
  window.__stepObserver.observe(stage, {attributes: true, attributeFilter: ['data-step'], attributeOldValue: true});
}"""


def max_abs_diff(a, b) -> float:
    """Largest difference of two equally shaped matrices; hidden (None) entries must match."""
    assert len(a) == len(b) and all(len(ra) == len(rb) for ra, rb in zip(a, b)), "shapes differ"
    worst = 0.0
    for ra, rb in zip(a, b):
        for x, y in zip(ra, rb):
            assert (x is None) == (y is None), f"hidden entries differ: {x} vs {y}"
            if x is not None:
                worst = max(worst, abs(x - y))
    return worst


def drawn(page: Page, key: str, field: str = "z"):
    """data[0][field] of the Plotly figure drawn for `key` (the element [data-matrix=key])."""
    return page.evaluate(
        "([key, field]) => document.querySelector(`[data-matrix=\"${key}\"]`).data[0][field]", [key, field]
    )


def stage(page: Page):
    return page.locator("#stage")


def show_step(page: Page, step: str) -> None:
    """Click the step in the step list and wait until it is drawn and marked current."""
    page.locator(f'#step-list button[data-step="{step}"]').click()
    expect(stage(page)).to_have_attribute("data-step", step)
    expect(page.locator(f'#step-list button[data-step="{step}"]')).to_have_attribute("aria-current", "step")
