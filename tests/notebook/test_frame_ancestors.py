"""ATTNSCOPE_FRAME_ANCESTORS: who may show the pages in a frame (an IFrame in a notebook). Nobody by default;
a configured list goes into the CSP's frame-ancestors; anything else is refused at start-up, in one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.main import create_app
from app.settings import Settings

from .conftest import ROOT


def frame_ancestors(settings: Settings) -> str:
    answer = TestClient(create_app(settings), base_url="http://127.0.0.1").get("/learn")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    directives = dict(part.strip().split(" ", 1) for part in answer.headers["content-security-policy"].split(";"))
    assert directives["script-src"] == "'self'" and directives["default-src"] == "'self'"  # the rest is unchanged
    return directives["frame-ancestors"]


def test_nobody_frames_the_pages_by_default_and_the_configured_origins_may():
    assert frame_ancestors(Settings()) == "'none'"
    assert frame_ancestors(Settings(frame_ancestors="'self' http://localhost:8888")) == "'self' http://localhost:8888"


@pytest.mark.parametrize("bad", ["'self'; script-src *", "*", "'none' 'self'", "javascript:alert(1)",
                                 "https://lab.example.org/path", "'unsafe-inline'", ""])
def test_anything_but_none_self_and_origins_is_refused(bad: str):
    with pytest.raises(ValidationError, match="ATTNSCOPE_FRAME_ANCESTORS"):
        Settings(frame_ancestors=bad)


def test_the_server_refuses_to_start_with_a_bad_list_and_says_why_in_one_line():
    env = {**os.environ, "ATTNSCOPE_FRAME_ANCESTORS": "'self'; script-src *"}
    done = subprocess.run([sys.executable, "-m", "attnscope.cli", "serve", "--port", "1"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if "ATTNSCOPE_FRAME_ANCESTORS" in line]
    assert len(lines) == 1 and "is not 'none', 'self' or an http(s) origin" in lines[0], done.stderr[-2000:]
