"""Helpers shared by the walkthrough tests (/steps and /toy)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from model.steps import STEPS as MODEL_STEPS

STEPS = list(MODEL_STEPS)  # the one source: model/steps.py

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


def wait_until(page: Page, predicate: str, arg=None, **options) -> None:
    """page.wait_for_function, but a predicate that throws (an element or a figure's data not there yet,
    as while a navigation's new document loads) counts as not yet true instead of failing the wait."""
    guarded = f"(arg) => {{ try {{ return ({predicate})(arg); }} catch (error) {{ return false; }} }}"
    page.wait_for_function(guarded, arg=arg, **options)


def max_abs_diff(a, b) -> float:
    """Largest difference of two equally shaped matrices; hidden (None) entries must match."""
    assert len(a) == len(b) and all(len(ra) == len(rb) for ra, rb in zip(a, b, strict=True)), "shapes differ"
    worst = 0.0
    for ra, rb in zip(a, b, strict=True):
        for x, y in zip(ra, rb, strict=True):
            assert (x is None) == (y is None), f"hidden entries differ: {x} vs {y}"
            if x is not None:
                worst = max(worst, abs(x - y))
    return worst


def drawn(page: Page, key: str, field: str = "z"):
    """data[0][field] of the Plotly figure drawn for `key` (the element [data-matrix=key])."""
    return page.evaluate(
        "([key, field]) => document.querySelector(`[data-matrix=\"${key}\"]`).data[0][field]", [key, field]
    )


def caption(page: Page, key: str) -> str:
    """The caption of the figure that draws the matrix `key` (its data-matrix)."""
    return page.locator(f'figure:has([data-matrix="{key}"]) figcaption').inner_text()


def stage(page: Page):
    return page.locator("#stage")


def show_step(page: Page, step: str) -> None:
    """Click the step in the step list and wait until it is drawn and marked current."""
    page.locator(f'#step-list button[data-step="{step}"]').click()
    expect(stage(page)).to_have_attribute("data-step", step)
    expect(page.locator(f'#step-list button[data-step="{step}"]')).to_have_attribute("aria-current", "step")


# Notation and names that stay as they are in every language: math symbols and variable names of the
# notes, file formats, the tokenizer's own special tokens and the product's name.
NOTATION = {
    "attnscope", "softmax", "d_model", "d_head", "d_keys", "d_values", "n_heads", "text_pair",
    "API", "JSON", "PNG", "SVG", "CSV", "CLS", "SEP", "UNK", "PAD", "MASK", "MiniLM", "Transformer", "REST", "RoPE", "ALiBi", "Gumbel", "Gumbel-softmax", "Luong", "Bahdanau", "sin", "cos", "tanh", "elu", "max", "argmax", "sum", "rowsum",
    "Adam", "SGD", "ReLU", "PyTorch",  # the Iris page: the optimizers' and the activation's own names
    "FlashAttention", "FLOPs", "Dao", "GPU", "ctx", "KiB", "MiB", "GiB", "TiB", "PiB",  # the cost page: names, units
    "torch", "autograd",  # the /toy backward pass: the reference it is checked against (torch.autograd)
    "Hugging", "Face",  # the unknown-token note (views/unknown-note.js): the local Hugging Face cache, by its name
    "SDPA", "Python", "CPU", "CPUs",  # the cost page's measured sweep: torch's scaled_dot_product_attention, the language
    "Abnar", "Zuidema", "Kobayashi", "Clark",  # the explorer's analyses: the authors of the methods it cites
    "LayerNorm", "MLP", "GRU",  # the labs: the networks' parts by their names
    "RMSNorm", "GELU", "SiLU", "W_gate", "BERT", "Llama", "Gemma",  # the block on /steps: functions, a weight, families
    "RNN",  # /sequence: the recurrent network, by the name the notes give it (RNN、卷积与注意力)
    "ProbSparse", "Informer",  # /toy: Informer's ProbSparse attention, by the names its paper gives them
    "MSE", "ELU", "ppm", "Zhou",  # /informer: the error, the distilling layer's activation, CO₂'s unit, the author
    "REINFORCE", "Gumbel-max", "CNN", "scikit-learn", "log",  # /glimpse: the estimator, the trick, the encoder, the
    # package whose digits it reads, the logarithm in log p
    "GPT", "SHA", "UTF",  # /lm: the network's family by its name, the text's fingerprint (SHA-256), its encoding
}

# Text nodes and attributes a user can see, in visible elements outside translate="no" and outside
# Plotly's tick labels (token text); returns each one that still holds a Latin word of 3+ letters
# that is not notation or a model's name. `skip` is a CSS selector of more regions to leave out (e.g. vendor UI).
_ENGLISH_LEFT = """async ([notation, skip]) => {
  const allowed = new Set(notation);
  const { models } = await (await fetch('/api/v1/models')).json();  // model names are names, not UI text
  for (const model of models) for (const word of `${model.id} ${model.name}`.split(/[^\\w-]+/)) allowed.add(word);
  const english = (text) => (text.match(/[A-Za-z_][A-Za-z_0-9-]*/g) || [])
    .filter((word) => /[A-Za-z]{3,}/.test(word) && !allowed.has(word) && !/\\d/.test(word));
  const excluded = (element) => element.closest('[translate="no"], script, style, .xtick, .ytick, .modebar'
    + (skip ? `, ${skip}` : ''));
  const visible = (element) => {
    if (!element.getClientRects().length) return false;
    const style = getComputedStyle(element);
    return style.visibility !== 'hidden' && style.display !== 'none';
  };
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    if (!element || excluded(element) || !visible(element)) continue;
    const words = english(node.textContent);
    if (words.length) found.push(`${element.tagName.toLowerCase()}: ${node.textContent.trim()}`);
  }
  for (const element of document.querySelectorAll('[placeholder], [title], [aria-label], [aria-valuetext]')) {
    if (excluded(element) || !visible(element)) continue;
    for (const name of ['placeholder', 'title', 'aria-label', 'aria-valuetext']) {
      const value = element.getAttribute(name);
      if (value && english(value).length) found.push(`${element.tagName.toLowerCase()}[${name}]: ${value}`);
    }
  }
  let title = document.title;  // the user's text is data
  for (const input of document.querySelectorAll('input[type="text"], textarea')) {
    const typed = input.value.trim().slice(0, 60);
    if (typed) title = title.replace(typed, '');
  }
  if (english(title).length) found.push(`title: ${document.title}`);
  return found;
}"""


def english_left(page: Page, skip: str = "") -> list[str]:
    """Visible UI text of the page that is still English (see _ENGLISH_LEFT); [] when none is."""
    return page.evaluate(_ENGLISH_LEFT, [sorted(NOTATION), skip])


def switch_to_chinese(page: Page) -> None:
    """Press the header's 中文 button and wait for the page to come back in Chinese."""
    page.get_by_role("button", name="中文").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.get_by_role("button", name="中文")).to_have_attribute("aria-pressed", "true")
