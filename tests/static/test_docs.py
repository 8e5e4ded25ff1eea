"""The README and the pages under docs/ stay true to the project: every relative link and image points
at a file that exists (and at a heading that exists, for a #anchor), the settings page lists every
setting with its default, the API page lists every route, and every `make` target they name exists.
(The documented requests and examples are run against the app in tests/api/test_docs_examples.py.)"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from app.main import create_app
from app.settings import Settings, default_lm_dir

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)=\"([^\"]+)\"", re.I)


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are code, not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(path: Path) -> list[str]:
    text = prose(path.read_text(encoding="utf-8"))
    return MD_LINK.findall(text) + HTML_LINK.findall(text)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file: lower case, punctuation dropped (letters of
    any script, digits, '_' and '-' kept), spaces turned into '-', repeats numbered -1, -2, …"""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6} +(.*?) *#* *$", line)
        if not heading:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1)).replace("`", "").replace("*", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = counts.get(slug, 0)
        counts[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_the_link_check_reads_links_and_anchors_as_github_does(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## English and 中文\n\n## `attnscope serve --workers N`\n\n### Memory, measured\n\n"
                    "## Title\n\n```md\n## not a heading\n[not](a-link.md)\n```\n\n"
                    "[a](other.md#x) ![b](img.png) <img src=\"pic.png\" width=\"2\"> `[code](no.md)`\n",
                    encoding="utf-8")
    assert anchors(page) == {"title", "english-and-中文", "attnscope-serve---workers-n", "memory-measured",
                             "title-1"}
    assert sorted(links(page)) == ["img.png", "other.md#x", "pic.png"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_and_heading_that_exist(doc):
    broken = []
    for target in links(doc):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto: — not a file of this repository
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            broken.append(f"{target}: no heading #{anchor} in {path.name}")
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"


def test_every_docs_page_is_linked_from_the_readme():
    readme = set(links(ROOT / "README.md"))
    unlinked = [p.name for p in DOCS[1:] if f"docs/{p.name}" not in readme]
    assert not unlinked


# docs/settings.md's words for defaults that are not JSON: `ATTNSCOPE_MODEL_PATHS` is a list of paths
# separated by os.pathsep, the torch threads default to the machine's CPU count, and the trained models' directory
# to one in the user's data directory.
WORDS = {"empty": [], "none": None, "CPU count": os.cpu_count() or 1,
         "the user's data directory": str(default_lm_dir())}


def documented_settings() -> dict[str, object]:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(ATTNSCOPE_\w+)` \| ([^|]+) \|", text, re.M)
    found: dict[str, object] = {}
    for name, cell in rows:
        cell = cell.strip()
        if cell in WORDS:
            found[name] = WORDS[cell]
            continue
        value = cell.strip("`")
        try:
            found[name] = json.loads(value)
        except json.JSONDecodeError:
            found[name] = value
    return found


def test_the_settings_page_lists_every_setting_with_its_default():
    documented = documented_settings()
    fields = Settings.model_fields
    assert sorted(documented) == sorted(f"ATTNSCOPE_{name.upper()}" for name in fields)
    for name, field in fields.items():
        default = field.get_default(call_default_factory=True)
        if isinstance(default, Path):
            default = str(default)
        assert documented[f"ATTNSCOPE_{name.upper()}"] == default, name


def test_the_api_page_lists_every_route():
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    table = text[text.index("## Routes"):]
    table = table[: table.index("\n\n", table.index("| route"))]
    documented = set(re.findall(r"^\| `([A-Z]+ /[^`]*)` \|", table, re.M))
    served = {  # the routes the app's own OpenAPI schema lists (the pages, HTML, are docs/pages.md's)
        f"{method.upper()} {path}"
        for path, operations in create_app(Settings()).openapi()["paths"].items()
        if path.startswith("/api/") or path == "/healthz"
        for method in operations
    }
    assert documented == served


def test_every_make_target_the_docs_name_exists_and_ci_runs_make_test():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w.-]+):", makefile, re.M))
    named = set()
    for doc in DOCS:
        named |= set(re.findall(r"(?:`|^)make ([a-z][\w-]*)", doc.read_text(encoding="utf-8"), re.M))
    assert {"run", "test", "test-fast"} <= named
    assert named <= targets, named - targets
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test$", ci, re.M)
