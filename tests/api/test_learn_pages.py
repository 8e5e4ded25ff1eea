"""The learning path's routes: /learn and /learn/1 … /learn/9 are the same page (the script reads the chapter
from the path); any other chapter is refused with a 422 naming the rule. The page's content is tested in
tests/e2e/test_learn.py."""

import pytest


@pytest.mark.parametrize("path", ["/learn", "/learn/1", "/learn/5", "/learn/9"])
def test_the_path_and_each_chapter_are_the_learn_page(client, path):
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/js/learn-page.js"></script>' in response.text
    assert 'id="chapter-view"' in response.text


@pytest.mark.parametrize("chapter", ["0", "10", "x", "-1"])
def test_other_chapters_are_refused(client, chapter):
    response = client.get(f"/learn/{chapter}")
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["path", "chapter"]


@pytest.mark.parametrize(("path", "chapter"), [("/", "7"), ("/steps", "7"), ("/compare", "7"), ("/toy", "2"),
                                                ("/positions", "6"), ("/iris", "8"), ("/cost", "9"), ("/flash", "9")])
def test_every_page_links_to_its_chapter_and_the_nav_to_the_path(client, path, chapter):
    html = client.get(path).text
    assert f'<a id="learn-about" href="/learn/{chapter}" data-chapter="{chapter}" data-i18n="learn.about">' in html
    assert '<a href="/learn"  data-i18n="nav.learn"></a>' in html
