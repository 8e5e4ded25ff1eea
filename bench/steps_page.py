"""The walkthrough page (/steps) at 32, 128 and 512 tokens in headless Chromium: navigation -> first step
drawn, and a step change -> that step drawn. Goals at 512 tokens: first step <= 1000 ms, step change <= 150 ms.

As a user's client sees it: a fresh server process, Chromium as the client with the page's own files in its
cache (one untimed load first, as after the explorer's "Step through this head" link), and a text never sent
before for every timed navigation (random words; asserted), so the server's answer cache never answers.
"Drawn" is the first task after the animation frame that follows the moment the stage says the step is on
screen (#stage's data-step); an observer the bench injects before the page's scripts records it, so the
same measure works on any version of the page. A step change is a click on the step list's next step,
timed from the click to that step drawn, through all ten steps after each navigation (nine changes), once
the query/key view of the first step is drawn too: first each click the moment the step before it is drawn
("at once"), then again from the first step with a second's look at each step before the click ("after
reading", as a reader or the page's own playback goes; the page may use that second). The trace answer's
size and its server and transfer times come from the browser's resource timing.
"""

from __future__ import annotations

import os
from urllib.parse import quote

from playwright.sync_api import sync_playwright

from bench.common import CHROMIUM, CHROMIUM_ARGS, Server, median, print_table, verdict
from bench.page_load import FreshTexts
from model.steps import STEPS

TOKENS, RUNS = (32, 128, 512), 5
READING_MS = 1000  # how long a reader looks at a step before the next one, in the second pass
FIRST_GOAL_MS, CHANGE_GOAL_MS = 1000.0, 150.0
LAYER, HEAD = 2, 5

# Runs before the page's scripts: the time (ms since navigation start) of the first task after the next
# frame once #stage says a step is drawn, per step name, for the first drawing of each step.
WATCH_STAGE = """(() => {
  window.__drawn = {};
  const watch = () => {
    const stage = document.getElementById('stage');
    if (!stage) return false;
    new MutationObserver(() => {
      const step = stage.dataset.step;
      if (step && window.__drawn[step] === undefined) {
        window.__drawn[step] = null;
        requestAnimationFrame(() => setTimeout(() => { window.__drawn[step] = performance.now(); }, 0));
      }
    }).observe(stage, {attributes: true, attributeFilter: ['data-step']});
    return true;
  };
  if (!watch()) document.addEventListener('DOMContentLoaded', watch);
})();"""

FIRST_DRAWN = "() => typeof window.__drawn.input === 'number'"
QK_DRAWN = "(q) => document.getElementById('qk-panel').dataset.query === String(q)"

# Click the step list's button of `step`; resolves with ms from the click to the step drawn.
CHANGE_STEP = """(step) => new Promise((resolve) => {
  const stage = document.getElementById('stage');
  const start = performance.now();
  const observer = new MutationObserver(() => {
    if (stage.dataset.step !== step) return;
    observer.disconnect();
    requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - start), 0));
  });
  observer.observe(stage, {attributes: true, attributeFilter: ['data-step']});
  document.querySelector(`#step-list button[data-step="${step}"]`).click();
})"""

TRACE_TIMING = """() => {
  const e = performance.getEntriesByType('resource').find((r) => r.name.includes('/api/v1/trace'));
  return e ? {bytes: e.encodedBodySize, server: e.responseStart - e.requestStart,
              transfer: e.responseEnd - e.responseStart} : null;
}"""


def navigate(page, base: str, text: str, query: int) -> dict:
    page.goto(f"{base}/steps?text={quote(text)}&layer={LAYER}&head={HEAD}&query={query}", wait_until="commit")
    page.wait_for_function(FIRST_DRAWN, timeout=120_000)
    first = page.evaluate("() => window.__drawn.input")
    page.wait_for_function(QK_DRAWN, arg=query, timeout=120_000)
    page.evaluate("() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)))")
    changes = [page.evaluate(CHANGE_STEP, step) for step in STEPS[1:]]
    page.evaluate(CHANGE_STEP, STEPS[0])
    read = []
    for step in STEPS[1:]:
        page.wait_for_timeout(READING_MS)
        read.append(page.evaluate(CHANGE_STEP, step))
    return {"first": first, "changes": changes, "read": read, "trace": page.evaluate(TRACE_TIMING)}


def run() -> str:
    texts = FreshTexts(seed=int.from_bytes(os.urandom(4), "little"))
    results: dict[int, list[dict]] = {}
    with Server() as server, sync_playwright() as p:
        server.request("POST", "/api/v1/trace", {"text": "warm up the model", "layer": 0, "head": 0})
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        context.add_init_script(WATCH_STAGE)
        page = context.new_page()
        navigate(page, server.base, texts.text(12), 3)  # the page's files into the cache, untimed
        for n in TOKENS:
            results[n] = [navigate(page, server.base, texts.text(n), n * 300 // 512) for _ in range(RUNS)]
        browser.close()

    rows = []
    for n, runs in results.items():
        first = [r["first"] for r in runs]
        changes = [ms for r in runs for ms in r["changes"]]
        read = [ms for r in runs for ms in r["read"]]
        slowest = [max(r["changes"]) for r in runs]
        trace = {k: median([r["trace"][k] for r in runs]) for k in ("bytes", "server", "transfer")}
        goal = n == max(TOKENS)
        rows.append([
            n, f"{min(first):.0f} / {median(first):.0f}", " ".join(f"{x:.0f}" for x in first),
            f"{min(changes):.0f} / {median(changes):.0f}", f"{median(slowest):.0f}",
            f"{min(read):.0f} / {median(read):.0f}",
            f"{trace['bytes'] / 1e6:.2f} MB", f"{trace['server']:.0f} / {trace['transfer']:.0f}",
            f"<= {FIRST_GOAL_MS:.0f} / <= {CHANGE_GOAL_MS:.0f}" if goal else "",
            verdict(median(first) <= FIRST_GOAL_MS and median(read) <= CHANGE_GOAL_MS) if goal else "",
        ])
    return print_table(
        f"The walkthrough (/steps, layer {LAYER} head {HEAD}) in headless Chromium, files cached, a new text every "
        f"navigation ({RUNS} each; ms; step changes: 9 per pass and navigation)",
        ["tokens", "first step min / median", "all runs", "step change at once min / median",
         "slowest at once (median)", "step change after reading min / median", "trace answer",
         "trace server / transfer ms (median)", "goal (first / change after reading)", ""],
        rows,
    )


if __name__ == "__main__":
    run()
