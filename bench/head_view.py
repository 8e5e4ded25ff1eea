"""The head view (static/js/views/head-view.js) at 512 tokens x 12 heads in headless Chromium: how long a
hover over a token takes to show only its lines, how long a scroll to another part of the columns takes to
draw, and how long drawing a layer takes.

The view is mounted by the bench itself on a page of a real server (the explorer without a text), with one
layer of a fresh random-word text fetched from /api/v1/attention by the page's own api.js: the measure is
the view's, the same on any version of the explorer around it. A hover is a real mouse move (CDP input)
onto a query token; its latency runs from the pointer event's timestamp to the first task after the next
animation frame (the frame that shows the lines has been produced by then). A scroll is timed the same way
from the scroll event. The view is set to draw every line of weight >= 0.01 (its "lines per token" menu),
not the strongest few per token it opens with: the worst case.
"""

from __future__ import annotations

import os

from playwright.sync_api import sync_playwright

from bench.common import CHROMIUM, CHROMIUM_ARGS, Server, TextMaker, median, print_table, verdict

TOKENS, LAYER, HOVERS, SCROLLS, RENDERS = 512, 3, 40, 12, 3
GOAL_MS = 50.0  # hover: within three frames at 60 Hz

MOUNT = """async ({text, layer}) => {
  const { createHeadView } = await import('/static/js/views/head-view.js');
  const { getAttentionCompact } = await import('/static/js/api.js');
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = '/static/css/head-view.css';
  const loaded = new Promise((resolve) => link.addEventListener('load', resolve));
  document.head.append(link);
  await loaded;
  const container = document.createElement('div');
  container.id = 'bench-head-view';
  container.className = 'panel';
  document.querySelector('main').prepend(container);
  const { header, maps } = await getAttentionCompact({ text, layers: [layer] });
  const view = createHeadView(container, {});
  // every line of weight >= 0.01, not the strongest few per token the view opens with: the worst case
  const limit = container.querySelector('.head-view-limit');
  limit.value = 'all';
  limit.dispatchEvent(new Event('change'));
  window.__benchView = { view, input: { tokens: header.tokens, maps: maps[0], heads: header.heads } };
  const start = performance.now();
  view.render(window.__benchView.input);
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  return { ms: performance.now() - start, tokens: header.tokens.length, heads: header.heads.length,
           lines: Number(container.dataset.lines) };
}"""

RENDER_AGAIN = """async () => {
  const start = performance.now();
  window.__benchView.view.render(window.__benchView.input);
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  return performance.now() - start;
}"""

# Each pointerover / scroll: ms from the event to the first task after the next frame.
WATCH = """() => {
  const container = document.getElementById('bench-head-view');
  window.__latency = { hover: [], scroll: [] };
  const after = (kind, stamp) => requestAnimationFrame(() => setTimeout(() => {
    window.__latency[kind].push(performance.now() - stamp);
  }, 0));
  container.addEventListener('pointerover', (event) => {
    if (event.target.closest('.head-view-token')) after('hover', event.timeStamp);
  });
  container.querySelector('.head-view-scroll').addEventListener('scroll', (event) => after('scroll', event.timeStamp));
}"""

SCROLL_TO = """(top) => {
  const scroller = document.querySelector('#bench-head-view .head-view-scroll');
  const from = scroller.scrollTop;
  scroller.scrollTop = top;
  return scroller.scrollTop !== from;
}"""


def run() -> str:
    text = TextMaker(seed=int.from_bytes(os.urandom(4), "little")).text(TOKENS)
    with Server() as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(f"{server.base}/")
        page.wait_for_function("() => !document.documentElement.classList.contains('i18n-pending')")
        first = page.evaluate(MOUNT, {"text": text, "layer": LAYER})
        renders = [first["ms"]] + [page.evaluate(RENDER_AGAIN) for _ in range(RENDERS - 1)]
        page.evaluate(WATCH)
        scroller = page.locator("#bench-head-view .head-view-scroll")
        box = scroller.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] - 40)  # off the columns
        rows_in_view = int(box["height"] // 18)
        moves = 0
        for s in range(SCROLLS):
            before = page.evaluate("() => window.__latency.scroll.length")
            moved = page.evaluate(SCROLL_TO, ((s + 1) * (TOKENS - rows_in_view) * 18) // SCROLLS)
            if moved:
                page.wait_for_function(f"() => window.__latency.scroll.length > {before}")
            for _ in range(HOVERS // SCROLLS + 1):
                if moves >= HOVERS:
                    break
                # a different token in view each time, at the left column's right edge
                tokens = page.locator("#bench-head-view .head-view-queries .head-view-token")
                top = page.evaluate("() => document.querySelector('#bench-head-view .head-view-scroll').scrollTop")
                index = min(TOKENS - 1, int(top // 18) + 2 + (moves * 7) % max(1, rows_in_view - 4))
                target = tokens.nth(index).bounding_box()
                before = page.evaluate("() => window.__latency.hover.length")
                page.mouse.move(target["x"] + target["width"] - 6, target["y"] + target["height"] / 2)
                page.wait_for_function(f"() => window.__latency.hover.length > {before}")
                shown = page.evaluate("() => document.getElementById('bench-head-view').dataset.token")
                assert shown == str(index), f"hovered token {index}, the view shows {shown!r}"
                moves += 1
        latency = page.evaluate("() => window.__latency")
        browser.close()

    hovers, scrolls = latency["hover"], latency["scroll"]
    return print_table(
        f"Head view in headless Chromium: {first['tokens']} tokens x {first['heads']} heads of layer {LAYER} "
        f"({first['lines']:,} lines of weight >= 0.01; ms from the input event to the frame after it)",
        ["hover p50 / max", "scroll p50 / max", "draw a layer (render) min / median", "hovers", "goal", ""],
        [[f"{median(hovers):.1f} / {max(hovers):.1f}", f"{median(scrolls):.1f} / {max(scrolls):.1f}",
          f"{min(renders):.0f} / {median(renders):.0f}", len(hovers), f"hover <= {GOAL_MS:.0f} ms",
          verdict(max(hovers) <= GOAL_MS)]],
    )


def main() -> str:
    return run()


if __name__ == "__main__":
    run()
