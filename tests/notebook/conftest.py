"""The notebook widget's tests: a real JupyterLab server and kernel, Debian's Chromium (as tests/e2e drives it),
nbclient for the example notebooks. Nothing here skips: if JupyterLab, the kernel or Chromium cannot start, the
tests fail."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bench.common import CHROMIUM, CHROMIUM_ARGS, free_port

ROOT = Path(__file__).resolve().parents[2]
KERNEL = "python3"  # the name the example notebooks and the tests' notebooks ask for


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def jupyter_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a Jupyter of this test session only: its own config, runtime and IPython folders, and
    a kernelspec "python3" that runs this interpreter (the one attnscope is installed in), found first."""
    home = tmp_path_factory.mktemp("jupyter")
    spec = home / "share" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "attnscope tests", "language": "python",
    }))
    # no "news" question over the notebook: JupyterLab's announcements plugin is off
    (home / "config" / "labconfig").mkdir(parents=True)
    (home / "config" / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    env = {
        **os.environ,
        "JUPYTER_PATH": str(home / "share"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYTHONPATH": str(ROOT),
    }
    return env


@dataclass(frozen=True)
class Lab:
    base: str  # http://127.0.0.1:PORT
    token: str
    root: Path  # the server's root directory: notebooks written here open at /lab/tree/NAME


@pytest.fixture(scope="module")
def jupyter_lab(jupyter_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A real JupyterLab server (this venv's `jupyter lab`) on a free port of 127.0.0.1, with a random token."""
    root = tmp_path_factory.mktemp("lab")
    port, token = free_port(), secrets.token_hex(16)
    log = open(root.parent / f"lab-{port}.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--allow-root", "--ServerApp.terminals_enabled=False", "--LabApp.extension_manager=readonly",
         "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=jupyter_env, stdout=log, stderr=subprocess.STDOUT, cwd=root,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60  # a bound on waiting for the server to start, not a timing check
        while True:
            if process.poll() is not None:
                pytest.fail(f"jupyter lab exited with {process.returncode}: {log.name}")
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2, trust_env=False).is_success:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not answer /api/status within 60 s: {log.name}")
            time.sleep(0.2)
        yield Lab(base, token, root)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
