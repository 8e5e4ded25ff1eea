"""The learning path's routes: /learn and /learn/1 … /learn/12 are the same page (the script reads the chapter
from the path); any other chapter is the same page answered 404 (the script shows the contents under a note
that says so), never a JSON refusal. The page's content is tested in tests/e2e/test_learn.py."""

import re
from pathlib import Path

import pytest

from app.routes.pages import LEARN_CHAPTERS

ROOT = Path(__file__).resolve().parents[2]


def test_the_route_knows_as_many_chapters_as_the_page():
    chapters = (ROOT / "static/js/learn/chapters.js").read_text(encoding="utf-8")
    listed = chapters[chapters.index("const CHAPTER_LIST = ["):chapters.index("export const CHAPTERS")]
    assert len(re.findall(r"^    key: 'learn\.", listed, flags=re.M)) == LEARN_CHAPTERS == 17
    progress = (ROOT / "static/js/learn/progress.js").read_text(encoding="utf-8")
    assert f"export const CHAPTERS = {LEARN_CHAPTERS};" in progress


@pytest.mark.parametrize("path", ["/learn", "/learn/1", "/learn/5", "/learn/9", "/learn/12", "/learn/14", "/learn/15",
                                  "/learn/16", "/learn/17"])
def test_the_path_and_each_chapter_are_the_learn_page(client, path):
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/js/learn-page.js"></script>' in response.text
    assert 'id="chapter-view"' in response.text


@pytest.mark.parametrize("chapter", ["0", "18", "10000", "x", "-1", "01", "1.5", "%E4%B8%AD"])
def test_other_chapters_are_the_page_answered_404(client, chapter):
    response = client.get(f"/learn/{chapter}")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/js/learn-page.js"></script>' in response.text
    assert 'id="learn-missing"' in response.text and 'id="learn-overview"' in response.text
    assert '"detail"' not in response.text and '"errors"' not in response.text


def test_the_schema_says_which_chapters_there_are(client):
    operation = client.get("/openapi.json").json()["paths"]["/learn/{chapter}"]["get"]
    (parameter,) = operation["parameters"]
    assert (parameter["schema"]["type"], parameter["schema"]["minimum"], parameter["schema"]["maximum"]) == (
        "integer", 1, LEARN_CHAPTERS)
    assert {"200", "404"} <= set(operation["responses"])
    assert "text/html" in operation["responses"]["404"]["content"]


@pytest.mark.parametrize(("path", "chapter"), [("/seq2seq", "1"), ("/toy", "3"), ("/positions", "7"), ("/", "8"),
                                                ("/steps", "8"), ("/compare", "8"), ("/iris", "9"),
                                                ("/induction", "10"), ("/cost", "11"), ("/flash", "12"),
                                                ("/glimpse", "16"), ("/lm", "17")])
def test_every_page_links_to_its_chapter_and_the_nav_to_the_path(client, path, chapter):
    html = client.get(path).text
    assert f'<a id="learn-about" href="/learn/{chapter}" data-chapter="{chapter}" data-i18n="learn.about">' in html
    assert '<a href="/learn"  data-i18n="nav.learn"></a>' in html
