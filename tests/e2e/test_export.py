"""Export in real Chromium (views/export.js on the compare page): the JSON and CSV files a click
downloads hold the API's numbers and say what they are; PNG and SVG files are real images. Every
download is caught by Playwright's download event, under the page's Content-Security-Policy (the
browser_log fixture fails the test on any violation)."""

from __future__ import annotations

import csv
import io
import json
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from playwright.sync_api import Page, expect

from .test_compare import (
    CAT,
    COMPACT,
    DOG,
    PIECES_A,
    PIECES_B,
    compare_url,
    head_map,
    reference_word_matrix,
    reference_words,
    wait_drawn,
)

META_KEYS = {"model", "text", "pair", "tokens", "layer", "head", "kind", "edit", "version"}


def download(page: Page, figure: str, format: str) -> tuple[str, bytes]:
    """Click the figure's export button and return the downloaded file's suggested name and bytes."""
    with page.expect_download() as info:
        page.locator(f'button[data-figure="{figure}"][data-export="{format}"]').click()
    saved = info.value
    assert saved.failure() is None
    return saved.suggested_filename, Path(saved.path()).read_bytes()


def read_csv(data: bytes) -> tuple[dict, list[str], list[str], np.ndarray]:
    """A CSV export: its `# key: value` metadata (values in JSON), column labels, row labels, matrix."""
    text = data.decode("utf-8")
    meta_lines = [line for line in text.splitlines() if line.startswith("# ")]
    meta = {}
    for line in meta_lines:
        key, value = line[2:].split(": ", 1)
        meta[key] = json.loads(value)
    body = list(csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if not line.startswith("# ")))))
    header, rows = body[0], body[1:]
    return meta, header[1:], [row[0] for row in rows], np.array([[float(v) for v in row[1:]] for row in rows])


def test_json_and_csv_hold_the_apis_numbers_and_say_what_they_are(page: Page, api):
    tokens_a, ref_a = head_map(api, CAT, None, 2, 5)
    tokens_b, ref_b = head_map(api, DOG, None, 2, 5)
    version = api.get("/healthz").json().get("version")
    page.goto(compare_url(CAT, DOG, 2, 5))
    wait_drawn(page)

    name, data = download(page, "a", "json")
    assert name == "attnscope-compare-a-layer-2-head-5-the-cat-sat-on.json"
    exported = json.loads(data)
    meta = exported["meta"]
    assert META_KEYS <= set(meta)
    assert (meta["model"], meta["text"], meta["pair"], meta["layer"], meta["head"]) == ("minilm", CAT, None, 2, 5)
    assert (meta["kind"], meta["edit"], meta["version"]) == ("attention", None, version)
    assert [t["text"] for t in meta["tokens"]] == [t["text"] for t in tokens_a]
    assert [(t["start"], t["end"], t["special"]) for t in meta["tokens"]] == [(t["start"], t["end"], t["special"]) for t in tokens_a]
    assert exported["rows"] == exported["cols"] == [t["text"] for t in tokens_a]
    assert np.max(np.abs(np.array(exported["matrix"]) - ref_a)) <= COMPACT

    name, data = download(page, "b", "csv")
    assert name.endswith(".csv") and "-b-" in name
    meta, cols, rows, matrix = read_csv(data)
    assert (meta["text"], meta["kind"], meta["layer"], meta["head"]) == (DOG, "attention", 2, 5)
    assert cols == rows == [t["text"] for t in tokens_b]
    assert np.max(np.abs(matrix - ref_b)) <= COMPACT

    name, data = download(page, "diff", "csv")
    assert "a-minus-b" in name
    meta, cols, rows, matrix = read_csv(data)
    assert meta["kind"] == "difference" and meta["text"] == CAT and meta["b"]["text"] == DOG
    assert np.max(np.abs(matrix - (ref_a - ref_b))) <= 2 * COMPACT
    assert "cat" in rows and "dog" not in rows  # A's labels; B's tokens are in meta.b.tokens
    assert [t["text"] for t in meta["b"]["tokens"]] == [t["text"] for t in tokens_b]


def test_word_view_export_holds_the_word_matrix(page: Page, api):
    tokens, ref = head_map(api, PIECES_A, None, 3, 2)
    words = reference_words(tokens, PIECES_A, None)
    page.goto(compare_url(PIECES_A, PIECES_B, 3, 2, words="1"))
    wait_drawn(page)
    _, data = download(page, "a", "json")
    exported = json.loads(data)
    assert exported["meta"]["units"] == "words" and exported["meta"]["hide_special"] is False
    assert exported["rows"] == [w["label"] for w in words]
    assert [w["pieces"] for w in exported["meta"]["tokens"]] == [w["pieces"] for w in words]
    longest = max(len(w["pieces"]) for w in words)
    assert np.max(np.abs(np.array(exported["matrix"]) - reference_word_matrix(ref, words))) <= longest * COMPACT


def test_csv_quotes_labels_and_defuses_formulas(page: Page, api):
    text = 'He said "=1+2", then left.'
    tokens, ref = head_map(api, text, None, 0, 0)
    page.goto(compare_url(text, CAT, 0, 0))
    wait_drawn(page)
    _, data = download(page, "a", "csv")
    meta, cols, rows, matrix = read_csv(data)
    assert meta["text"] == text
    expected = [("'" + t["text"]) if re.match(r"^[=+\-@]", t["text"]) else t["text"] for t in tokens]
    assert cols == rows == expected
    assert "'=" in cols and '"' in cols and "," in cols
    assert np.max(np.abs(matrix - ref)) <= COMPACT


def test_png_and_svg_files_are_produced(page: Page):
    page.goto(compare_url(CAT, DOG, 1, 1))
    wait_drawn(page)
    box = page.locator("#plot-diff").bounding_box()

    name, data = download(page, "diff", "png")
    assert name == "attnscope-compare-a-minus-b-layer-1-head-1-the-cat-sat-on.png"
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert (width, height) == (2 * round(box["width"]), 2 * round(box["height"]))  # twice the size on screen

    name, data = download(page, "a", "svg")
    assert name.endswith(".svg")
    root = ET.fromstring(data.decode("utf-8"))  # well-formed XML
    assert root.tag.endswith("svg")
    texts = "".join(root.itertext())
    assert "A · Layer 1 · Head 1" in texts and "[CLS]" in texts
    expect(page.locator("#status")).not_to_have_class(re.compile("is-error"))
