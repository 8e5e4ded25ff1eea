"""The Dockerfile: hadolint-clean and holding what the image promises (no Docker engine runs here)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def test_hadolint_is_clean():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    out = subprocess.run([hadolint, "--failure-threshold", "info", str(ROOT / "Dockerfile")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_image_essentials():
    assert DOCKERFILE.startswith("#") and "\nFROM python:3.11-slim\n" in DOCKERFILE
    assert "--index-url https://download.pytorch.org/whl/cpu torch==2.13.0" in DOCKERFILE  # CPU-only torch
    assert "\nUSER 10001\n" in DOCKERFILE and "useradd --create-home --uid 10001" in DOCKERFILE
    assert "HEALTHCHECK" in DOCKERFILE and "/healthz" in DOCKERFILE
    assert 'CMD ["attnscope", "serve", "--host", "0.0.0.0"' in DOCKERFILE
    for folder in ("app", "attnscope", "model", "templates", "static"):
        assert f"COPY {folder} ./{folder}" in DOCKERFILE
