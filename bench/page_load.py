"""Target 3: at 512 tokens the explorer shows the overview within 1.5 x the forward + 1 s, downloads
only what is on screen, and hover on the 512 x 512 map answers within 100 ms (headless Chromium).

The forward reference is HF's eager forward with attentions on the same text, measured in this run.
"""

from __future__ import annotations

import time
from urllib.parse import quote

from playwright.sync_api import sync_playwright

from bench.common import (
    CHROMIUM,
    CHROMIUM_ARGS,
    Server,
    TextMaker,
    hf_forward,
    load_hf,
    median,
    print_table,
    timed,
    verdict,
)

N, LOADS, HOVERS = 512, 3, 12

WATCH_HOVER = """() => {
  const gd = document.getElementById('heatmap');
  window.__hover = [];
  document.addEventListener('mousemove', (e) => { window.__moved = e.timeStamp; }, true);
  gd.on('plotly_hover', () => window.__hover.push(performance.now() - window.__moved));
}"""


def run() -> str:
    hf = load_hf()
    texts = TextMaker(seed=11)
    forward_ms = median([timed(lambda: hf_forward(hf, texts.text(N))) for _ in range(5)])
    loads, api_bytes, all_bytes, hovers = [], [], [], []
    with Server() as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(server.base + "/")  # the page's own files come from the browser cache afterwards
        for _ in range(LOADS):
            sizes: dict[str, int] = {}

            def count(request, sizes=sizes):
                sizes[request.url] = request.sizes()["responseBodySize"]

            page.on("requestfinished", count)
            t0 = time.perf_counter()
            page.goto(f"{server.base}/?text={quote(texts.text(N))}&layer=2&head=5")
            page.wait_for_function("() => document.querySelectorAll('#overview button.thumb canvas').length === 72",
                                   timeout=60_000)
            loads.append((time.perf_counter() - t0) * 1000)
            page.wait_for_function("() => (document.getElementById('heatmap').data || [{}])[0].z?.length === 512",
                                   timeout=60_000)
            page.remove_listener("requestfinished", count)
            api_bytes.append(sum(v for k, v in sizes.items() if "/api/" in k))
            all_bytes.append(sum(sizes.values()))
        page.evaluate(WATCH_HOVER)
        box = page.locator("#heatmap .nsewdrag").first.bounding_box()
        for i in range(HOVERS):
            before = page.evaluate("() => window.__hover.length")
            page.mouse.move(box["x"] + box["width"] * (0.1 + 0.07 * i), box["y"] + box["height"] * (0.85 - 0.06 * i))
            page.wait_for_function(f"() => window.__hover.length > {before}")
        hovers = page.evaluate("() => window.__hover")
        label = page.locator("#heatmap .hoverlayer .hovertext").count()
        browser.close()

    goal_ms = 1.5 * forward_ms + 1000
    return print_table(
        f"Explorer at {N} tokens in headless Chromium (median of {LOADS} fresh texts; hover: {len(hovers)} moves)",
        ["overview shown ms", "goal: 1.5 x forward + 1 s", "API bytes / load", "all bytes / load",
         "hover p50 / max ms", "goal", ""],
        [[f"{median(loads):.0f}", f"{goal_ms:.0f} (forward {forward_ms:.0f})", f"{median(api_bytes):,.0f}",
          f"{median(all_bytes):,.0f}", f"{median(hovers):.1f} / {max(hovers):.1f}", "overview, hover <= 100 ms",
          verdict(median(loads) <= goal_ms and max(hovers) <= 100 and label > 0)]],
    )


if __name__ == "__main__":
    run()
