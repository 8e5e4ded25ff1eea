"""model/ is pure torch + numpy: it never imports the web layer, and serving never imports transformers. The
routes are the thin end of the web layer: they never import torch, numpy or a JSON encoder."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from model.nets.config import NetConfig

MODEL_DIR = Path(__file__).resolve().parents[2] / "model"
ROUTES_DIR = MODEL_DIR.parent / "app" / "routes"
FORBIDDEN = {"fastapi", "starlette", "pydantic", "pydantic_settings", "app", "uvicorn", "transformers"}
MODEL_WORK = {"torch", "numpy", "orjson", "json"}  # tensor maths and JSON encoding: model/ and app/serialize.py


def web_imports(root: Path, forbidden: set[str] = FORBIDDEN) -> dict[str, set[str]]:
    """{file under `root` (every subfolder too): the forbidden packages it imports}. A relative import that
    climbs out of `root` counts as importing the package it lands in (`from ..app import x`)."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        depth = len(path.relative_to(root).parts) - 1  # folders between root and the file
        roots: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots.add((node.module or "").split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.level > depth + 1:  # above root's parent
                roots.add((node.module or "").split(".")[0])
        if roots & forbidden:
            found[str(path.relative_to(root))] = roots & forbidden
    return found


def test_model_and_every_folder_under_it_import_nothing_from_the_web_layer():
    checked = {str(p.relative_to(MODEL_DIR)) for p in MODEL_DIR.rglob("*.py")}
    assert any("/" in name for name in checked), "no file in a subfolder of model/ was checked"
    assert web_imports(MODEL_DIR) == {}


def test_no_route_does_tensor_maths_or_encodes_json():
    assert len(list(ROUTES_DIR.glob("*.py"))) >= 6
    assert web_imports(ROUTES_DIR, MODEL_WORK) == {}


def test_the_check_finds_a_web_import_in_a_new_subfolder(tmp_path):
    """The control: files that break the rule, one and two folders down, are each found."""
    (tmp_path / "fine.py").write_text("import torch\nfrom .steps import STEPS\n")
    (tmp_path / "nets").mkdir()
    (tmp_path / "nets" / "layer.py").write_text("import numpy\nfrom fastapi import Request\n")
    (tmp_path / "nets" / "deep").mkdir()
    # four dots from nets/deep/ climb out of the root
    (tmp_path / "nets" / "deep" / "x.py").write_text("from ....app.settings import Settings\nfrom .. import y\n")
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "y.py").write_text("import pydantic.fields, os\n")
    assert web_imports(tmp_path) == {"nets/layer.py": {"fastapi"}, "nets/deep/x.py": {"app"}, "lab/y.py": {"pydantic"}}


def test_loading_the_model_imports_neither_web_code_nor_transformers():
    code = (
        "import sys; from model.checkpoints import load; load('minilm'); "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=MODEL_DIR.parent)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"d_model": 10, "n_heads": 3}, "d_model 10 is not divisible by n_heads 3"),
        ({"n_layers": 0}, "n_layers must be a positive integer, got 0"),
        ({"layer_norm_eps": 0.0}, "layer_norm_eps must be positive"),
        ({"type_vocab_size": -1}, "type_vocab_size must be an integer of at least 0, got -1"),
        ({"norm_place": "middle"}, "norm_place must be 'post' or 'pre', got 'middle'"),
        ({"activation": "swish"}, "activation 'swish' is not supported; use one of gelu_new"),
        ({"tied_head": True}, "a tied LM head reads the final LayerNorm of a pre-norm network"),
    ],
)
def test_config_names_the_bad_numbers(kwargs, message):
    base = dict(vocab_size=10, d_model=8, n_layers=1, n_heads=2, d_ff=16, max_positions=8)
    with pytest.raises(ValueError, match=message):
        NetConfig(**{**base, **kwargs})
