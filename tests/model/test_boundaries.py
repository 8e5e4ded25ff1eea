"""model/ is pure torch + numpy: it never imports the web layer, and serving never imports transformers."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from model.config import EncoderConfig

MODEL_DIR = Path(__file__).resolve().parents[2] / "model"
FORBIDDEN = {"fastapi", "starlette", "pydantic", "pydantic_settings", "app", "uvicorn", "transformers"}


@pytest.mark.parametrize("path", sorted(MODEL_DIR.glob("*.py")), ids=lambda p: p.name)
def test_model_imports_nothing_from_the_web_layer(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots = {(node.module or "").split(".")[0]}
        else:
            continue
        assert not roots & FORBIDDEN, f"{path.name} imports {roots & FORBIDDEN}"


def test_loading_the_model_imports_neither_web_code_nor_transformers():
    code = (
        "import sys; from model.pretrained import PretrainedEncoder; from model.registry import MODELS; "
        "PretrainedEncoder.from_dir(MODELS['minilm'].locate()); "
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
    ],
)
def test_config_names_the_bad_numbers(kwargs, message):
    base = dict(vocab_size=10, d_model=8, n_layers=1, n_heads=2, d_ff=16, max_positions=8)
    with pytest.raises(ValueError, match=message):
        EncoderConfig(**{**base, **kwargs})
