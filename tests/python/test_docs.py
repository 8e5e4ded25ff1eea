"""docs/python.md: its examples run as they are (the decoder's on the tiny GPT-2 checkpoint in place of
~/models/gpt2), and it names every public method of attnscope.Model and every field of every answer."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
from pathlib import Path

import pytest

import attnscope

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Every method"):text.index("## The answers")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("which", [0, 1], ids=["minilm", "decoder"])
def test_the_examples_run(which, checkpoint_dirs, tmp_path, monkeypatch):
    code = blocks()[which]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code.replace('"~/models/gpt2"', repr(str(checkpoint_dirs["gpt2"]))), {})  # noqa: S102
    assert out.getvalue().count("\n") >= 5
    assert (tmp_path / ("answers.npz" if which == 0 else "lens.parquet")).is_file()


def test_every_method_and_field_is_documented():
    text = DOC.read_text(encoding="utf-8")
    methods = [name for name in dir(attnscope.Model) if not name.startswith("_") and callable(
        getattr(attnscope.Model, name))]
    assert {"metrics", "detect", "mean", "rollout", "contributions", "edit_effect", "lens", "patch",
            "attribute"} <= set(methods)
    for name in methods:
        assert f"`{name}(" in text or f".{name}(" in text, name
    for result in (attnscope.Attention, attnscope.HeadMetrics, attnscope.Detectors, attnscope.Aggregate,
                   attnscope.Contributions, attnscope.EditEffect, attnscope.Lens, attnscope.LogitAttribution,
                   attnscope.Patching, attnscope.Attribution):
        for field in dataclasses.fields(result):
            assert f"`{field.name}`" in text or f"`{field.name}(" in text, (result.__name__, field.name)
