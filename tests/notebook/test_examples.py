"""The example notebooks (examples/*.ipynb) run from top to bottom in a real kernel (nbclient), without a network.
The decoder of induction-hooks.ipynb (GPT-2 small from the reader's cache) is the tests' small GPT-2 checkpoint here,
named by the variable the notebook reads."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from .conftest import KERNEL, ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.ipynb"))


def test_the_examples_are_there():
    assert {path.name for path in EXAMPLES} >= {"quickstart.ipynb", "from-transformers.ipynb", "induction-hooks.ipynb"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_an_example_notebook_runs_headless(path: Path, jupyter_env: dict[str, str], monkeypatch, tmp_path: Path,
                                           checkpoint_dirs: dict[str, Path]):
    monkeypatch.setenv("ATTNSCOPE_EXAMPLE_DECODER", str(checkpoint_dirs["gpt2"]))
    for name in ("JUPYTER_PATH", "JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "PYTHONPATH"):
        monkeypatch.setenv(name, jupyter_env[name])
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, kernel_name=KERNEL, timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    widgets = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widgets, "the notebook shows no widget"
