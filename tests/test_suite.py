"""The suite itself: a missing test dependency fails it instead of skipping the tests that need it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import REQUIRED

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_of_the_test_extra_is_required():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    names = {re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower() for requirement in extra}
    assert names == set(REQUIRED)


def test_no_test_skips_on_a_missing_import():
    skipping = "pytest." + "importorskip"  # spelled in two parts, so this file does not find itself
    found = [str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("*.py") if skipping in path.read_text()]
    assert found == []


def collect_with_plugin(tmp_path: Path, plugin: str) -> subprocess.CompletedProcess:
    """pytest collecting a file that imports transformers, with `plugin` (Python source) loaded by -p first: before
    the suite's conftest, as an install would leave the modules."""
    (tmp_path / "install_state.py").write_text(plugin)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "install_state", "-p", "no:cacheprovider", "--collect-only", "-q",
         "tests/model/test_hf_reference.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


def test_a_missing_dependency_fails_the_suite(tmp_path):
    """transformers blocked (as a broken install leaves it): pytest refuses to start, naming it, where a skip
    would have passed."""
    run = collect_with_plugin(tmp_path, "import sys\nsys.modules['transformers'] = None\n")
    assert run.returncode != 0
    assert "the test suite needs transformers (module transformers)" in run.stderr + run.stdout


def test_a_file_that_needs_a_missing_dependency_errors_and_is_not_skipped(tmp_path):
    """Past the session's check (a module found but failing to import, as a half-installed package does), the
    file's own plain import makes its collection an error, never a skip."""
    run = collect_with_plugin(tmp_path, (
        "import importlib.abc, importlib.util, sys\n"
        "class Broken(importlib.abc.MetaPathFinder, importlib.abc.Loader):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'transformers':\n"
        "            return importlib.util.spec_from_loader(name, self)\n"
        "    def create_module(self, spec):\n"
        "        raise ImportError('transformers is broken')\n"
        "    def exec_module(self, module):\n"
        "        pass\n"
        "sys.meta_path.insert(0, Broken())\n"
    ))
    assert run.returncode != 0
    assert "transformers is broken" in run.stdout + run.stderr
    assert "skipped" not in run.stdout
