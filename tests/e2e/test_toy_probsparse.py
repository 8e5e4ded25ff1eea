"""ProbSparse on /toy in real Chromium, one page load: the factor control is enabled by the variant, changes
the request and lives in the URL; the softmax step draws the answer's weights and its caption names the
active queries and the lazy rows' 1/S read from that answer (fetched here with the body the page sent)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Page, expect

from .helpers import stage
from .test_toy import toy
from .test_toy_mechanisms import is_toy_post, open_at, wait_for_matrix


def test_probsparse_factor_request_drawing_caption_and_url(page: Page, api):
    open_at(page, "", "softmax")
    expect(page.locator("#toy-factor")).to_be_disabled()
    page.select_option("#toy-variant", "probsparse")
    expect(page.locator("#toy-factor")).to_be_enabled()
    # the worked example has L = 4 queries: at the default c = 5, u = min(5·⌈ln 4⌉, 4) = 4, full attention
    expect(page.locator("#stage-title")).to_contain_text("full attention")
    with page.expect_request(lambda r: is_toy_post(r, variant="probsparse", factor=1)) as sent:
        page.locator("#toy-factor").fill("1")
    answer = toy(api, json.loads(sent.value.post_data))
    wait_for_matrix(page, "softmax", answer["steps"]["softmax"][0])
    active = answer["probsparse"]["active"][0]
    lazy = [i for i in range(4) if i not in active]
    assert len(active) == 2 and all(answer["steps"]["softmax"][0][i] == [0.25] * 4 for i in lazy)
    body = page.locator("#stage-body")
    expect(body).to_contain_text(f"are active: {', '.join(f'q{i}' for i in active)}.")
    expect(body).to_contain_text(f"The other {len(lazy)} rows are lazy: every weight is 1/S = 0.2500")
    expect(stage(page)).to_have_attribute("aria-busy", "false")
    params = parse_qs(urlsplit(page.url).query)
    assert params["variant"] == ["probsparse"] and params["factor"] == ["1"]
    # the active rows are outlined in pink on the weights (the query's own row in orange), and the caption says so
    marked = page.evaluate("""() => document.querySelector('[data-matrix="softmax"]').layout.shapes
        .filter((s) => s.line && s.line.color === '#e64980').map((s) => s.y0 + 0.5)""")
    assert sorted(marked) == active
    expect(stage(page)).to_contain_text("softmax on the active rows (outlined in pink)")
