"""The requests the README and docs/ show are answered as they say: every curl example runs against the
app, the fields of each answer shown after one are in the real answer, and docs/encoding.md's Python
reader decodes a real compact answer."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
# The local checkpoint the examples name, and the test checkpoint of the same architecture (tests/conftest.py).
LOCAL = {"gpt2": "tiny-gpt2"}


def curl_examples() -> list[tuple[str, str, str | None]]:
    """(where, the curl command, the JSON block shown right after it or None) for every curl command that
    starts a line of a sh block; commands that need a shell variable (`$job`) are left out."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        blocks = list(BLOCK.finditer(text))
        for i, block in enumerate(blocks):
            following = blocks[i + 1] if i + 1 < len(blocks) else None
            if block.group(1) != "sh":
                continue
            adjacent = following is not None and not text[block.end():following.start()].strip()
            after = following.group(2) if adjacent and following.group(1) == "json" else None
            for line in block.group(2).replace("\\\n", " ").splitlines():
                if line.startswith("curl ") and "$" not in line:
                    found.append((doc.relative_to(ROOT).as_posix(), line, after))
    return found


EXAMPLES = curl_examples()


def test_the_docs_show_the_requests_they_describe():
    where = {doc for doc, _, _ in EXAMPLES}
    assert {"README.md", "docs/api.md", "docs/models.md"} <= where
    assert sum(answer is not None for _, _, answer in EXAMPLES) >= 2


def keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | set().union(*(keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys(v) for v in value))
    return set()


@pytest.mark.parametrize("doc, command, shown", EXAMPLES, ids=[f"{d}:{c[:60]}" for d, c, _ in EXAMPLES])
def test_each_curl_example_is_answered(doc, command, shown, client, request):
    args = shlex.split(command)
    url = next(a for a in args if a.startswith("http"))
    data = args[args.index("-d") + 1] if "-d" in args else None
    assert "-H" not in args or "content-type: application/json" in args
    target = urlsplit(url)
    path = target.path + (f"?{target.query}" if target.query else "")
    use = client
    if data is not None:
        for name, test_name in LOCAL.items():
            if f'"model": "{name}"' in data:
                data = data.replace(f'"model": "{name}"', f'"model": "{test_name}"')
                use = request.getfixturevalue("local_client")
        answer = use.post(path, content=data, headers={"content-type": "application/json"})
    else:
        answer = use.get(path)
    assert answer.status_code in (200, 202), answer.text[:500]
    if shown is not None:  # every field the documented answer names is in the real one
        documented = set(re.findall(r'"([A-Za-z_]\w*)"\s*:', shown))
        assert documented and documented <= keys(answer.json()), documented - keys(answer.json())


def test_the_compact_reader_in_encoding_md_decodes_a_real_answer(client, monkeypatch):
    doc = (ROOT / "docs" / "encoding.md").read_text(encoding="utf-8")
    code = next(body for lang, body in BLOCK.findall(doc) if lang == "python")
    sent = []

    class Answer:
        def __init__(self, body: bytes) -> None:
            self.body = body

        def read(self) -> bytes:
            return self.body

    def urlopen(request: urllib.request.Request):  # the request the example builds, sent to the app
        target = urlsplit(request.full_url)
        assert isinstance(request.data, bytes)
        answer = client.post(f"{target.path}?{target.query}", content=request.data,
                             headers=dict(request.header_items()))
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/octet-stream"
        sent.append(answer.content)
        return Answer(answer.content)

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    printed = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/encoding.md", "exec"), scope)  # noqa: S102 - the documented example
    assert sent and scope["weights"].shape == (6, 12, 9, 9)
    assert "(6, 12, 9, 9)" in printed.getvalue() and "'[CLS]', 'the', 'cat'" in printed.getvalue()
    # the example's weights are the JSON answer's, within the encoding's documented error
    reference = client.post("/api/v1/attention", json={"text": "The cat sat on the mat."}).json()
    assert np.abs(scope["weights"] - np.asarray(reference["attention"])).max() <= 1 / 131070 + 1e-7


def test_the_readme_command_line_and_python_lines_run(tmp_path):
    """The README's `attnscope …` and `python -c …` lines, run as a user would in an empty directory."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [line.split("  #")[0].strip() for lang, body in BLOCK.findall(readme) if lang == "sh"
             for line in body.splitlines() if line.startswith(("attnscope attention", "python -c"))]
    assert len(lines) == 2
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    for line in lines:
        args = shlex.split(line)
        program = [sys.executable, "-m", "attnscope.cli"] if args[0] == "attnscope" else [sys.executable]
        args = [*program, *args[1:]]
        done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "maps.npz") as maps:
        assert maps["maps"].shape == (6, 12, 9, 9)
    assert done.stdout.strip() == "(6, 12, 6, 6)"  # [CLS] the cat sat . [SEP]
