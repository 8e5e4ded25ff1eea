"""Every user-visible string lives in static/js/i18n/en.js and zh.js: templates name strings with
data-i18n attributes, scripts look them up with t(). These tests read the templates and the scripts
themselves and fail on English UI text written anywhere else. (That both dictionaries hold the same
keys, and that no English is left on a page shown in Chinese, is checked in the browser: tests/e2e.)"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted((ROOT / "templates").glob("*.html"))
SCRIPTS = sorted(p for p in (ROOT / "static" / "js").rglob("*.js") if p.parent.name != "i18n" or p.name in {"index.js", "steps.js"})
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
TEXT_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt", "aria-valuetext", "aria-description"}
LETTER = re.compile(r"[^\W\d_]")  # a letter of any script
PROSE = re.compile(r"(?<![\w-])[A-Za-z]{2,} +[A-Za-z]{2,}(?![\w-])")  # two words in a row


class _TemplateText(HTMLParser):
    """Collects text and text attributes outside elements marked translate="no" (data, not UI)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, inside translate="no")
        self.found: list[str] = []

    def _data_only(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        data_only = self._data_only() or values.get("translate") == "no"
        for name, value in attrs:
            if name in TEXT_ATTRIBUTES and value and LETTER.search(value) and not data_only:
                self.found.append(f"<{tag} {name}={value!r}>")
        if tag not in VOID:
            self.stack.append((tag, data_only))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        inside = self.stack[-1][0] if self.stack else ""
        if inside in {"script", "style"}:
            return
        # translate="no" marks data and notation (W_q, d_keys); words of prose belong in the dictionaries
        # even there (an example sentence, a button name of another program).
        if LETTER.search(data) if not self._data_only() else PROSE.search(data):
            self.found.append(f"<{inside}> {data.strip()!r}")


def template_text(source: str) -> list[str]:
    source = re.sub(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", "", source, flags=re.S)  # Jinja, not markup
    parser = _TemplateText()
    parser.feed(source)
    parser.close()
    return parser.found


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_templates_hold_no_ui_text(path: Path):
    assert template_text(path.read_text()) == []


# ---- scripts ----------------------------------------------------------------------------

# Literals that look like words but are code: key names, header names, error class names.
CODE_WORDS = {
    "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Enter", "Escape", "Accept", "Content-Type",
    "AbortError", "ApiError",
}
PRAGMA = "ui-text: not UI"  # a line whose literals are keys of another library, marked with this comment
TITLE_WORD = re.compile(r"\b[A-Z][a-z]{2,}\b")
TWO_WORDS = PROSE  # hyphen-bounded, so class lists ("grid-op grid-op-small") are not prose
REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^") | {""}  # a "/" after these starts a regular expression


def string_literals(source: str) -> list[str]:
    """The string and template literals of a script, skipping comments and regular expressions."""
    found, i, n = [], 0, len(source)
    previous = ""  # the last significant character, to tell a regex from a division
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i)
            i = n if i < 0 else i
        elif source.startswith("/*", i):
            i = source.index("*/", i + 2) + 2
        elif c == "/" and previous in REGEX_BEFORE:
            j, in_class = i + 1, False
            while source[j] != "/" or in_class:
                if source[j] == "\\":
                    j += 1
                elif source[j] == "[":
                    in_class = True
                elif source[j] == "]":
                    in_class = False
                j += 1
            i, previous = j + 1, "x"
        elif c in "'\"`":
            j = i + 1
            while source[j] != c:
                j += 2 if source[j] == "\\" else 1
            found.append(source[i : j + 1])
            i, previous = j + 1, "x"
        else:
            if not c.isspace():
                previous = c
            i += 1
    return found


def english_literals(source: str) -> list[str]:
    code = "\n".join(line for line in source.splitlines() if PRAGMA not in line)
    found = []
    for literal in string_literals(code):
        body = re.sub(r"\$\{[^}]*\}", " ", literal[1:-1])  # template placeholders are code
        for name in CODE_WORDS:
            body = body.replace(name, " ")
        if TITLE_WORD.search(body) or TWO_WORDS.search(body):
            found.append(literal)
    return found


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT / "static" / "js")))
def test_scripts_hold_no_ui_text(path: Path):
    assert english_literals(path.read_text()) == []


def test_the_scanners_find_what_they_look_for():
    assert template_text('<p>Hello</p><span translate="no">W_q</span><b data-i18n="x"></b>') == ["<p> 'Hello'"]
    assert template_text('<a translate="no">The cat sat.</a>') == ["<a> 'The cat sat.'"]
    assert template_text('<input placeholder="Type here"><a title="{{ x }}">') == ["<input placeholder='Type here'>"]
    assert english_literals("el.textContent = `Layer ${layer}`; x.title = 'each row'; y = 'chip-special';") == [
        "`Layer ${layer}`", "'each row'",
    ]
    assert english_literals("import { t } from './i18n/index.js'; const k = 'ArrowLeft'; // A comment here") == []
