"""Real-browser tests: a real uvicorn server and Debian's Chromium, driven by
Playwright. Nothing here skips: if the server or Chromium cannot start, the
tests fail."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from bench.common import CHROMIUM, CHROMIUM_ARGS, Server

# expect() waits until its condition holds; on a busy 2-core machine a cold page (plotly.js loads after
# the grid) can need more than Playwright's default 5 s. A bound on waiting, not a timing assertion: 30 s,
# Playwright's own bound for navigation, because `make test` runs a second worker beside the browser tests
# (each test took about 1.7 times as long there as alone, measured over the whole suite).
expect.set_options(timeout=30_000)

# Collects CSP violations in the page (window.__cspViolations) and reports each one to
# the test at once, so violations in a document that has since navigated away count too.
CSP_LISTENER = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (event) => {
  const violation = `${event.violatedDirective} blocked ${event.blockedURI || '(inline)'}`
    + ` at ${event.sourceFile || '?'}:${event.lineNumber || 0}`;
  window.__cspViolations.push(violation);
  if (typeof window.__reportCspViolation === 'function') window.__reportCspViolation(violation);
});
"""

# Chromium's console message for a fetch answered with an HTTP error status.
FAILED_RESOURCE = re.compile(r"^Failed to load resource: the server responded with a status of (\d{3})\b")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "expect_http_errors(*statuses): the test expects the page's requests to be answered with "
        "these HTTP statuses; Chromium's 'Failed to load resource' console error is allowed for them only",
    )


@pytest.fixture(scope="session")
def live_server():
    """A real attnscope server (`attnscope serve`) on a free port of 127.0.0.1; yields its base URL."""
    server = Server()
    try:
        server.start()
    except RuntimeError as exc:  # fail, never skip
        pytest.fail(str(exc))
    try:
        yield server.base
    finally:
        server.stop()


@dataclass(frozen=True)
class LocalModels:
    """A server of the packaged model and two local checkpoints made by the tests (tests/checkpoints.py)."""

    base: str
    bert: Path  # a BERT-style checkpoint directory, served as model id "tiny-bert"
    gpt2: Path  # a GPT-2-style (causal) checkpoint directory, served as "tiny-gpt2"
    bert_id: str = "tiny-bert"
    gpt2_id: str = "tiny-gpt2"


@pytest.fixture(scope="session")
def local_models_server(checkpoint_dirs: dict[str, Path]):
    """A real attnscope server with ATTNSCOPE_MODEL_PATHS naming a BERT-style and a GPT-2-style checkpoint
    saved by the tests (random weights, 64 positions); yields a LocalModels."""
    bert, gpt2 = checkpoint_dirs["bert"], checkpoint_dirs["gpt2"]
    server = Server(ATTNSCOPE_MODEL_PATHS=os.pathsep.join([str(bert), str(gpt2)]))
    try:
        server.start()
    except RuntimeError as exc:  # fail, never skip
        pytest.fail(str(exc))
    try:
        yield LocalModels(base=server.base, bert=bert, gpt2=gpt2)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def base_url(live_server: str) -> str:
    """The default server's address (relative URLs open against it too: shared_context's base_url)."""
    return live_server


@pytest.fixture(scope="session")
def api(live_server: str):
    """An HTTP client for the same server, independent of the browser: the tests' reference."""
    with httpx.Client(base_url=live_server, trust_env=False, timeout=60) as client:
        yield client


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


VIEWPORT = {"width": 1440, "height": 1000}


@pytest.fixture(scope="session")
def open_context(playwright, browser_type_launch_args: dict, tmp_path_factory: pytest.TempPathFactory):
    """Opens a Chromium whose relative URLs go to `base_url`, with a profile of its own on disk; the caller
    closes it. On disk, not in memory as a browser.new_context() is, because only a profile on disk keeps
    V8's code cache: from a page's third load on, plotly.js (4.8 MB) starts from compiled code, and a new page of
    /learn loads in 0.3 s instead of 1.3 s (measured here, with each test opening one or more new pages)."""

    def open_(base_url: str):
        profile = tmp_path_factory.mktemp("chromium-profile")
        return playwright.chromium.launch_persistent_context(
            str(profile), **browser_type_launch_args, base_url=base_url, viewport=VIEWPORT)

    return open_


def forget_storage(context) -> None:
    """Clears what a page can keep in the browser besides its HTTP cache (the language choice lives in
    localStorage), so each test starts as a first visit. The cache stays: plotly.js is fetched and compiled
    once per context instead of once per test."""
    context.clear_cookies()
    for open_page in context.pages:
        if open_page.url.startswith("http"):
            open_page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")


@pytest.fixture(scope="session")
def shared_context(open_context, live_server: str):
    """One browser for every test of the default server: tests get a fresh page in it."""
    context = open_context(live_server)
    yield context
    context.close()


@pytest.fixture
def context(shared_context):
    return shared_context


@pytest.fixture
def page(context):
    """A new page for each test in the shared context; its storage is cleared and the page closed after."""
    page = context.new_page()
    yield page
    forget_storage(context)
    for open_page in context.pages:
        open_page.close()


@dataclass
class BrowserLog:
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def api_posts(self, path: str = "/api/v1/attention") -> int:
        return sum(1 for url in self.requests if url.split("?")[0].endswith(path))


@pytest.fixture(autouse=True)
def browser_log(page, live_server: str, request: pytest.FixtureRequest):
    """Records what the page does and, after the test, fails on any console error, page
    error, CSP violation, dialog, or request that did not go to the test server."""
    log = BrowserLog()
    page.on("console", lambda message: log.console_errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: log.page_errors.append(str(error)))
    page.on("request", lambda req: log.requests.append(req.url))

    def on_dialog(dialog) -> None:
        log.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.expose_binding("__reportCspViolation", lambda _source, violation: log.csp_violations.append(violation))
    page.add_init_script(script=CSP_LISTENER)

    yield log

    marker = request.node.get_closest_marker("expect_http_errors")
    allowed = {str(status) for status in marker.args} if marker else set()

    def unexpected(message: str) -> bool:
        match = FAILED_RESOURCE.match(message)
        return not (match and match.group(1) in allowed)

    assert [m for m in log.console_errors if unexpected(m)] == [], "console errors"
    assert log.page_errors == [], "uncaught errors in the page"
    assert log.csp_violations == [], "Content-Security-Policy violations"
    assert log.dialogs == [], "the page opened a dialog"
    offsite = [url for url in log.requests if not (url.startswith(f"{live_server}/") or url.startswith(("data:", "blob:")))]
    assert offsite == [], "requests that did not go to the test server"
    assert log.requests, "the page made no request at all (the request log is broken)"
