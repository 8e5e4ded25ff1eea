"""The families named in the docs (docs/cli.md, docs/pages.md, docs/models.md, the README) and in the CLI's
messages are the loader's (model/checkpoints/files.py SUPPORTED, named in model/checkpoints/registry.py): a list
that starts naming them names every one, and the refusal of `generate` names every decoder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnscope import cli
from model.checkpoints import SUPPORTED
from model.checkpoints.registry import DECODERS, FAMILY_NAMES, family_names

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["docs/cli.md", "docs/pages.md", "docs/models.md", "README.md"]


def prose(path: str) -> str:
    """The file's text with its line breaks and runs of spaces made one space."""
    return re.sub(r"\s+", " ", (ROOT / path).read_text(encoding="utf-8"))


def lists(text: str, first: str) -> list[str]:
    """Every stretch of `text` from `first` to the end of its sentence (". " or a closing parenthesis at depth 0)."""
    found = []
    for match in re.finditer(re.escape(first), text):
        depth, end = 0, match.start()
        while end < len(text):
            char = text[end]
            depth += char == "("
            if char == ")":
                if depth == 0:
                    break
                depth -= 1
            if text.startswith(". ", end) and depth == 0:
                break
            end += 1
        found.append(text[match.start():end])
    return found


def test_the_names_are_the_loaders_families():
    assert tuple(FAMILY_NAMES) == SUPPORTED
    assert set(DECODERS) < set(SUPPORTED)
    assert family_names() == "BERT, RoBERTa, DistilBERT, ELECTRA, GPT-2, Llama, Mistral, Qwen2, Qwen3 and Gemma 2"


@pytest.mark.parametrize("path", DOCS)
def test_every_list_of_families_in_the_docs_names_every_family(path):
    text = prose(path)
    whole = lists(text, "BERT, RoBERTa")
    assert whole, f"{path} names no list of the supported families"
    for stretch in whole:
        missing = [name for name in FAMILY_NAMES.values() if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])",
                                                                            stretch)]
        assert missing == [], f"{path}: “{stretch[:160]}” leaves out {missing}"
    for stretch in lists(text, "GPT-2, Llama"):  # the decoders (generation)
        missing = [FAMILY_NAMES[kind] for kind in DECODERS if FAMILY_NAMES[kind] not in stretch]
        assert missing == [], f"{path}: “{stretch[:160]}” leaves out {missing}"


def test_generate_refuses_an_encoder_naming_every_decoder(checkpoint_dirs, capsys):
    code = cli.main(["generate", "Attention is", "--model", str(checkpoint_dirs["bert"])])
    err = capsys.readouterr().err
    assert code != 0
    assert f"give a decoder: a {family_names(DECODERS, 'or')} checkpoint" in err, err
    assert "Gemma 2" in err


def test_serve_help_names_every_family(capsys):
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert ", ".join(SUPPORTED) in out
