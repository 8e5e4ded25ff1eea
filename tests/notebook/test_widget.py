"""attnscope.show without a browser: what it accepts and refuses, what the widget sends (against transformers as
the reference), its traits, its modules and what the wheel ships of them."""

from __future__ import annotations

import fnmatch
import re
import tomllib

import numpy as np
import pytest
import torch
import traitlets
import transformers

import attnscope
from attnscope import notebook
from attnscope.widget import AttentionWidget
from model.checkpoints.registry import minilm_dir

from .conftest import ROOT

TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def reference():
    """transformers' BertModel on the packaged MiniLM files and its tokenizer: the maps to match."""
    net = transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager").eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(minilm_dir()))
    inputs = tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        attentions = net(**inputs, output_attentions=True).attentions
    return attentions, tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])


@pytest.fixture(scope="module")
def minilm() -> attnscope.Model:
    return attnscope.load("minilm")


def sent(widget: AttentionWidget) -> np.ndarray:
    """The maps as the browser gets them: uint16 / 65535."""
    return np.frombuffer(widget._maps, "<u2").reshape(widget._shape) / 65535


def test_transformers_output_attentions_are_sent_as_they_are(reference):
    attentions, tokens = reference
    w = attnscope.show(attentions, tokens)
    expected = torch.stack([a[0] for a in attentions]).numpy()
    assert w._shape == [6, 12, len(tokens), len(tokens)]
    np.testing.assert_allclose(w.maps, expected, atol=1e-7)
    np.testing.assert_allclose(sent(w), expected, atol=0.5 / 65535 + 1e-7)
    assert [t["text"] for t in w.tokens] == tokens and w.layers == list(range(6)) and w.heads == list(range(12))
    # a stacked tensor and a numpy array of one layer draw the same
    np.testing.assert_array_equal(attnscope.show(torch.stack([a[0] for a in attentions]), tokens).maps, expected)
    np.testing.assert_array_equal(attnscope.show(expected[2], tokens).maps, expected[2:3])


def test_a_text_and_a_model_draw_its_maps_and_the_steps_of_the_selected_head(reference, minilm):
    attentions, tokens = reference
    w = attnscope.show(TEXT, model=minilm, layer=3, head=7)
    np.testing.assert_allclose(w.maps, torch.stack([a[0] for a in attentions]).numpy(), atol=2e-5)
    assert [t["text"] for t in w.tokens] == tokens
    assert w._steps["names"] == ["scores", "scale", "mask", "softmax"]
    assert (w._steps["layer"], w._steps["head"]) == (3, 7)
    n = len(tokens)
    steps = np.frombuffer(w._step_data, "<f4").reshape(4, n, n)
    np.testing.assert_allclose(steps[3], attentions[3][0, 7].numpy(), atol=2e-5)
    np.testing.assert_allclose(steps[1], steps[0] / np.sqrt(384 / 12), rtol=1e-5, atol=1e-6)
    w.head = 2  # traced again for the new head
    steps = np.frombuffer(w._step_data, "<f4").reshape(4, n, n)
    np.testing.assert_allclose(steps[3], attentions[3][0, 2].numpy(), atol=2e-5)


def test_an_attention_result_keeps_its_layers_and_heads(minilm):
    a = minilm.attention(TEXT, layers=[4, 5], heads=[0, 3, 7])
    w = attnscope.show(a, head=3)
    assert (w.layers, w.heads, w.layer, w.head) == ([4, 5], [0, 3, 7], 4, 3)
    np.testing.assert_array_equal(w.map, a.map(4, 3))
    assert w._steps == {}  # no model given: no steps
    with pytest.raises(traitlets.TraitError, match=r"head 1 is not in these maps: pick one of \[0, 3, 7\]"):
        w.head = 1
    with pytest.raises(traitlets.TraitError, match="layer 0"):
        w.layer = 0
    w.token = 3
    with pytest.raises(traitlets.TraitError, match="token 99"):
        w.token = 99
    w.token = None


@pytest.mark.parametrize(("maps", "tokens", "message"), [
    (np.full((2, 2, 4, 4), 0.25), ["a"] * 3, r"4 x 4 but 3 tokens"),
    (np.full((2, 2, 4, 5), 0.2), ["a"] * 4, r"shaped \(layers, heads, N, N\)"),
    (np.full((2, 3, 2, 4, 4), 0.25), ["a"] * 4, r"one input"),  # a batch of 3 per layer
    (np.full((1, 1, 2, 2), 3.0), ["a", "b"], r"\[0, 1\].*not the scores"),
    (np.full((1, 1, 2, 2), np.nan), ["a", "b"], r"finite"),
    ({"maps": 1}, None, r"show\(\) takes"),
    ("a text", None, r"needs a model"),
])
def test_other_inputs_are_refused_with_what_to_change(maps, tokens, message):
    with pytest.raises(ValueError, match=message):
        attnscope.show(maps, tokens)


def test_tokens_stay_text():
    w = attnscope.show(np.full((1, 1, 2, 2), 0.5), ["<b>x</b>", {"text": "[CLS]", "special": True}])
    assert w.tokens[0]["display"] == "<b>x</b>" and w.tokens[1]["special"] is True


def test_the_modules_are_linked_in_order_and_the_words_follow_lang():
    modules = notebook.modules("zh")
    paths = [path for path, _, _ in modules]
    assert paths[-1] == notebook.ENTRY and len(set(paths)) == len(paths)
    for place, (path, source, imports) in enumerate(modules):
        found = re.findall(r"""(?:from|import)\s*['"](\.{1,2}/[^'"]+)['"]""", source)
        assert {specifier for specifier, _ in imports} == set(found), path
        assert all(paths.index(target) < place for _, target in imports), path  # imported before it is linked
    i18n = dict((path, source) for path, source, _ in modules)["i18n/index.js"]
    assert 'known("zh") ? "zh"' in i18n and "\nstart();" not in i18n  # the notebook page is left alone
    with pytest.raises(ValueError, match="lang must be one of"):
        notebook.modules("fr")


def test_the_wheel_ships_every_script_and_style_the_widget_reads():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "static" in project["tool"]["setuptools"]["packages"]
    patterns = project["tool"]["setuptools"]["package-data"]["static"]
    needed = [f"js/{path}" for path, _, _ in notebook.modules()]
    needed += [str(path.relative_to(ROOT / "static")) for path in notebook.CSS_FILES]
    needed += ["js/widget/index.js", "js/widget/standalone.js"]
    # setuptools' package-data globs: "*" does not cross a "/"
    unshipped = [path for path in needed if not any(
        fnmatch.fnmatch(path, pattern) and path.count("/") == pattern.count("/") for pattern in patterns)]
    assert unshipped == []
    assert "anywidget>=0.9" in project["project"]["optional-dependencies"]["notebook"]
