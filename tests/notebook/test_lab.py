"""The widget in a real JupyterLab 4: a notebook opened in Chromium runs `attnscope.show`, the widget draws
(pixels on its canvases), a click on a head reaches the kernel's `layer` and `head` traits, and a trait set in
Python moves the view."""

from __future__ import annotations

import re

import nbformat
from playwright.sync_api import Page, expect

from .conftest import KERNEL, Lab

CELLS = [
    "import attnscope\nw = attnscope.show('The cat sat on the mat.', model='minilm')\nw",
    "print('selected', w.layer, w.head)",
    "w.layer, w.head = 4, 2",
]

# The colours drawn on the grid's first canvas: how many of its pixels are not transparent, and how many
# distinct colours they have.
PIXELS = """(canvas) => {
  const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
  const colours = new Set();
  let opaque = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 0) { opaque += 1; colours.add(`${data[i]},${data[i + 1]},${data[i + 2]}`); }
  }
  return { opaque, colours: colours.size, size: canvas.width * canvas.height };
}"""


def write_notebook(lab: Lab, name: str) -> None:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    notebook.metadata["kernelspec"] = {"name": KERNEL, "display_name": "attnscope tests", "language": "python"}
    nbformat.write(notebook, lab.root / name)


def run_cell(page: Page, index: int) -> None:
    """Run cell `index` with Shift+Enter in its editor, until its prompt shows it queued or run ([*] or [n]).

    JupyterLab may still be connecting the kernel it started for the notebook when the page first says the
    kernel is idle; a run asked for then is dropped (the prompt stays [ ]). So a cell that has not started
    within a while is asked again, at most three times."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    prompt = cell.locator(".jp-InputPrompt")
    for attempt in range(3):
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(prompt).to_have_text(re.compile(r"\[(\*|\d+)\]"), timeout=8_000)
            return
        except AssertionError:
            if attempt == 2:
                raise


def test_the_widget_draws_in_jupyterlab_and_its_traits_go_both_ways(jupyter_lab: Lab, page: Page):
    write_notebook(jupyter_lab, "widget.ipynb")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{jupyter_lab.base}/lab/tree/widget.ipynb?token={jupyter_lab.token}")
    # the kernel is started and idle before the first cell runs
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible(timeout=60_000)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1, timeout=60_000)

    run_cell(page, 0)
    widget = page.locator(".attnscope-widget[data-ready='true']")
    expect(widget).to_be_visible(timeout=60_000)
    assert widget.locator("button.thumb").count() == 6 * 12
    drawn = widget.locator("button.thumb canvas").first.evaluate(PIXELS)
    assert drawn["opaque"] == drawn["size"] == 9 * 9 and drawn["colours"] > 5, drawn
    big = widget.locator(".attnscope-widget-map canvas").evaluate(PIXELS)
    assert big["opaque"] == 81 and big["colours"] > 5, big

    widget.locator("button.thumb[data-layer='3'][data-head='7']").click()
    expect(widget).to_have_attribute("data-head", "7")
    expect(widget.locator(".head-view")).to_have_attribute("data-heads", "7")  # the head view of layer 3, head 7
    run_cell(page, 1)
    expect(page.locator(".jp-OutputArea-output", has_text="selected 3 7")).to_be_visible(timeout=30_000)

    run_cell(page, 2)  # Python -> the view
    expect(widget).to_have_attribute("data-layer", "4", timeout=30_000)
    expect(widget).to_have_attribute("data-head", "2")
    expect(widget.locator("button.thumb[data-layer='4'][data-head='2']")).to_have_attribute("aria-pressed", "true")
    expect(widget.locator(".head-view")).to_have_attribute("data-heads", "2")
    # the steps follow the kernel's new head: traced again there
    expect(widget.locator(".attnscope-widget-steps h3")).to_contain_text("4")
    assert errors == []
