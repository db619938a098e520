"""Shared by the browser test modules: one Chromium for the whole session
(Playwright's sync API allows one instance per thread, so the modules share
it rather than each starting its own), pages opened from file:// with every
other request blocked, and the checks every page must pass.

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``) and the
``playwright`` Python package (``pip install playwright``; never ``playwright
install``: the system Chromium is used). Without them the tests skip, unless
``ATTLENS_BROWSER_TESTS=1``, where a missing piece is a failure."""

from __future__ import annotations

import atexit
import os
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("ATTLENS_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
WIDTHS = (1366, 1920)  # a common laptop and a common desktop window

_SESSION: dict = {}


def _missing() -> list[str]:
    why = []
    if not Path(CHROMIUM).is_file():
        why.append(f"{CHROMIUM} not found (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        why.append("the playwright Python package is not installed (pip install playwright)")
    return why


def _close() -> None:
    if "browser" in _SESSION:
        _SESSION.pop("browser").close()
        _SESSION.pop("pw").stop()


def session_browser():
    """The session's Chromium (started on first use, closed at exit); skips
    (or fails under ATTLENS_BROWSER_TESTS=1) when it or Playwright is missing."""
    why = _missing()
    if why:
        msg = "browser tests: " + "; ".join(why) + " — see docs/report.md"
        if os.environ.get("ATTLENS_BROWSER_TESTS") == "1":
            pytest.fail(msg + " (ATTLENS_BROWSER_TESTS=1 requires them)")
        pytest.skip(msg)
    if "browser" not in _SESSION:
        from playwright.sync_api import sync_playwright

        pw = sync_playwright().start()
        _SESSION["pw"] = pw
        _SESSION["browser"] = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        atexit.register(_close)
    return _SESSION["browser"]


class Opened:
    def __init__(self, page, errors, requests, blocked, dialogs, seconds):
        self.page, self.errors, self.requests, self.blocked, self.dialogs, self.seconds = page, errors, requests, blocked, dialogs, seconds

    def check_clean(self):
        assert self.errors == [], f"console errors: {self.errors}"
        assert self.dialogs == [], f"dialogs opened: {self.dialogs}"
        assert self.blocked == [], f"network requests attempted: {self.blocked}"
        assert all(u.startswith("file:") for u in self.requests), self.requests


class Pages:
    """Opens pages in fresh contexts; closes them all at the end of the test."""

    def __init__(self, browser):
        self.browser, self.contexts = browser, []

    def open(self, path: Path, viewport=(1500, 1000), ready: str = "body[data-ready='1']") -> Opened:
        ctx = self.browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.contexts.append(ctx)
        blocked: list[str] = []

        def route(r):
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort()

        ctx.route("**/*", route)
        page = ctx.new_page()
        errors, requests, dialogs = [], [], []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.on("request", lambda rq: requests.append(rq.url))

        def on_dialog(dlg):
            dialogs.append(dlg.message)
            dlg.dismiss()

        page.on("dialog", on_dialog)
        t = time.perf_counter()
        page.goto(path.resolve().as_uri())
        page.wait_for_selector(ready, state="attached", timeout=30_000)
        return Opened(page, errors, requests, blocked, dialogs, time.perf_counter() - t)

    def close(self):
        for c in self.contexts:
            c.close()


# Elements whose box reaches past the window's right edge, outside any
# element that clips or scrolls its content (a pane with overflow: auto may
# hold wide content; the page itself may not).
OVERFLOW_JS = """() => {
  const W = document.documentElement.clientWidth, out = [];
  const clipped = e => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
    const o = getComputedStyle(p); if (o.overflowX !== 'visible' || o.display === 'none') return true; } return false; };
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.right <= W + 1 || clipped(e)) continue;
    out.push((e.id ? '#' + e.id : e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : '')) + ' right ' + Math.round(r.right));
  }
  return {scroll: document.documentElement.scrollWidth, client: W, offenders: out.slice(0, 10)};
}"""


def check_fits(page) -> None:
    """No horizontal overflow: the page does not scroll sideways and no element
    outside a scrolling or clipping container reaches past the window."""
    g = page.evaluate(OVERFLOW_JS)
    assert g["scroll"] <= g["client"] and g["offenders"] == [], g


def shot(target, name: str) -> Path:
    """Screenshot of a page or locator into tests/artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    p = ARTIFACTS / name
    target.screenshot(path=str(p))
    return p


# The two fixtures every browser test module imports (``from pwhelp import browser, open_page``).
@pytest.fixture(scope="session")
def browser():
    return session_browser()


@pytest.fixture()
def open_page(browser):
    pages = Pages(browser)
    yield pages.open
    pages.close()


def cell_int(text: str) -> int:
    """A number as a page shows it (``12,345``)."""
    return int(text.replace(",", "").strip())
