"""The HTML report in a real browser: Debian's Chromium driven by Playwright,
pages opened from file:// with every other request blocked (docs/report.md).

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``) and the
``playwright`` Python package (``pip install playwright``; never ``playwright
install``: the system Chromium is used). Without them these tests skip, unless
``ATTLENS_BROWSER_TESTS=1``, where a missing piece is a failure. Screenshots
go to tests/artifacts/.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import attlens
from attlens.analysis.plan import make_plan
from attlens.analysis.waves import analyze_waves
from attlens.report.html import render_captures, render_html
from attlens.synth import write_capture
from attlens.synth.toy import Op, default_kernel
from conftest import loaded, require_shared

CHROMIUM = os.environ.get("ATTLENS_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"

EVIL_NAME = "k</script><script>window.__pwned=1</script><img src=x onerror='window.__pwned=2'><!--{{DATA}}&amp;"
EVIL_LINE = "wait_global()  # </script><script>window.__pwned=3</script><b>bold</b> & <i>"
EVIL_PATH = "/tmp/<img src=x onerror='window.__pwned=5'>.py:7"
EVIL_ISA = "v_pk_add_f32 v[10:11], v[0:1], v[2:3] ; </SCRIPT ><script>window.__pwned=4</script>"


def _missing() -> list[str]:
    why = []
    if not Path(CHROMIUM).is_file():
        why.append(f"{CHROMIUM} not found (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        why.append("the playwright Python package is not installed (pip install playwright)")
    return why


@pytest.fixture(scope="session")
def browser():
    why = _missing()
    if why:
        msg = "browser tests: " + "; ".join(why) + " — see docs/report.md"
        if os.environ.get("ATTLENS_BROWSER_TESTS") == "1":
            pytest.fail(msg + " (ATTLENS_BROWSER_TESTS=1 requires them)")
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    yield b
    b.close()
    pw.stop()


class Opened:
    def __init__(self, page, errors, requests, blocked, dialogs, seconds):
        self.page, self.errors, self.requests, self.blocked, self.dialogs, self.seconds = page, errors, requests, blocked, dialogs, seconds

    def check_clean(self):
        assert self.errors == [], f"console errors: {self.errors}"
        assert self.dialogs == [], f"dialogs opened: {self.dialogs}"
        assert self.blocked == [], f"network requests attempted: {self.blocked}"
        assert all(u.startswith("file:") for u in self.requests), self.requests


@pytest.fixture()
def open_page(browser):
    contexts = []

    def _open(path: Path, viewport=(1500, 1000), ready: str = "body[data-ready='1']") -> Opened:
        ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        contexts.append(ctx)
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

    yield _open
    for c in contexts:
        c.close()


def _int(text: str) -> int:
    return int(text.replace(",", "").strip())


@pytest.fixture(scope="module")
def softmax(tmp_path_factory):
    shared = require_shared()
    d, r = loaded(shared / SOFTMAX)
    wa = analyze_waves(r)
    out = tmp_path_factory.mktemp("softmax") / "softmax.html"
    render_html(r, make_plan(r), wa, out)
    # expected values straight from the JSON renderers, not from the page's data
    return out, r.to_dict(20), wa.to_dict(per_wave=False), wa


def test_softmax_report(open_page, softmax):
    out, a, wd, wa = softmax
    o = open_page(out)
    page = o.page
    t = a["totals"]

    # headline numbers shown == JSON analysis
    assert _int(page.text_content("#hl-total-cycles")) == t["latency"] + t["idle"]
    assert _int(page.text_content("#hl-latency")) == t["latency"]
    assert _int(page.text_content("#hl-stall")) == t["stall"]
    assert _int(page.text_content("#hl-idle")) == t["idle"]
    assert _int(page.text_content("#hl-issue")) == t["issue"]
    assert page.text_content("#hl-stall-share") == f"{100 * t['stall_share_of_latency']:.1f}%"
    assert page.text_content("#hl-hidden") == f"{100 * a['latency_hiding']['hidden_share']:.1f}%"
    assert page.text_content("#hl-occ-theoretical") == str(a["occupancy"]["theoretical_waves_per_simd"])
    assert page.text_content("#hl-occ-observed") == str(a["occupancy"]["observed_max_waves_per_simd_traced_cu"])
    assert page.text_content("#hl-occ-limiters") == ", ".join(a["occupancy"]["limiters"])
    assert page.text_content("#kernel-name") == a["capture"]["kernel"]
    rows = page.eval_on_selector_all("#stall-by-class tbody tr", "rs => rs.map(r => [r.dataset.cls, ...[...r.cells].map(c => c.textContent)])")
    assert [r[0] for r in rows] == [c["class"] for c in a["stall_by_class"]]
    for r, c in zip(rows, a["stall_by_class"]):
        assert _int(r[2]) == c["stall"] and _int(r[4]) == c["latency"] and _int(r[6]) == c["records"]
    states = page.eval_on_selector_all("#wave-states tbody tr", "rs => rs.map(r => [r.dataset.state, r.cells[1].textContent])")
    assert {s: _int(v) for s, v in states} == wd["states"]["cycles"]
    pipes = page.eval_on_selector_all("#pipes-table tbody tr", "rs => rs.map(r => [r.dataset.pipe, r.cells[2].textContent])")
    assert {p: _int(v) for p, v in pipes} == {p: v["busy_cycles"] for p, v in wd["pipes"]["kernel"].items()}
    assert page.locator(".finding").count() == len(page.evaluate("attlensReport.data.plan.findings")) >= 1

    # clicking the hottest source line highlights its instructions in the ISA view
    hot = a["hotspots"]["lines_by_stall"][0]
    idx = page.evaluate("key => [...document.querySelectorAll('.src-row.mapped')].findIndex(r => r.dataset.source === key)", hot["source"])
    assert idx >= 0
    page.locator(".src-row.mapped").nth(idx).click()
    marked = page.eval_on_selector_all("#isa-table tr.isa-row.in-line", "rs => rs.map(r => Number(r.dataset.pc))")
    assert sorted(marked) == sorted(hot["pcs"]) and len(marked) == hot["instructions"]
    assert page.locator(".src-row.sel-line").first.get_attribute("data-source") == hot["source"]
    assert page.locator(".src-expand div").count() == hot["instructions"]
    assert hot["source"] in page.text_content("#deps-panel")

    # the timeline renders (canvas drawn, not blank) and zooms
    page.locator("#timeline").scroll_into_view_if_needed()
    drawn = int(page.get_attribute("#tl-canvas", "data-drawn"))
    assert drawn > 1000
    colours = page.evaluate("""() => { const c = document.getElementById('tl-canvas'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const s = new Set(); for (let i = 0; i < d.length; i += 4 * 7) s.add(d[i] << 16 | d[i + 1] << 8 | d[i + 2]); return s.size; }""")
    assert colours >= 5
    before = page.evaluate("attlensReport.timeline.view()")
    box = page.locator("#tl-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 50)
    t0 = time.perf_counter()
    for _ in range(6):
        page.mouse.wheel(0, -300)
    after = page.evaluate("attlensReport.timeline.view()")
    zoom_s = time.perf_counter() - t0
    assert after[1] - after[0] < (before[1] - before[0]) / 2
    assert zoom_s < 5, "zooming a 2,000-wave timeline stays responsive"
    page.select_option("#tl-mode", "cls")
    assert int(page.get_attribute("#tl-canvas", "data-drawn")) > 0
    page.click("#tl-reset")
    assert page.evaluate("attlensReport.timeline.view()") == [0, page.evaluate("attlensReport.data.timeline.bins")]
    page.select_option("#tl-mode", "state")
    assert o.seconds < 20, f"opening the report took {o.seconds:.1f} s"

    ARTIFACTS.mkdir(exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "report-softmax.png"), full_page=True)
    page.locator("#timeline").screenshot(path=str(ARTIFACTS / "report-softmax-timeline.png"))
    o.check_clean()


def test_softmax_instruction_selection_and_deps(open_page, softmax):
    out, a, wd, wa = softmax
    o = open_page(out)
    page = o.page
    by_wait = wa.attribution.by_wait_pc
    top_wait = next(h for h in a["hotspots"]["instructions_by_stall"] if h["pc"] in by_wait)
    page.locator(f"#isa-table tr.isa-row[data-pc='{top_wait['pc']}']").click()
    assert page.get_attribute("#isa-table tr.sel", "data-pc") == str(top_wait["pc"])
    assert page.locator(".src-row.sel-line").first.get_attribute("data-source") == top_wait["source"]
    producers = page.eval_on_selector_all("#deps-producers tbody tr", "rs => rs.map(r => Number(r.cells[0].textContent.replace('pc ', '')))")
    want = [p for p, _ in sorted(by_wait[top_wait["pc"]].items(), key=lambda kv: -kv[1])][:20]
    assert producers == want
    marked = page.eval_on_selector_all("#isa-table tr.dep-producer", "rs => rs.map(r => Number(r.dataset.pc))")
    assert set(want) - {top_wait["pc"]} <= set(marked) | {top_wait["pc"]}
    # following a producer selects it and lists the waits that waited on it
    page.locator("#deps-producers .pcref").first.click()
    assert page.get_attribute("#isa-table tr.sel", "data-pc") == str(want[0])
    assert str(top_wait["pc"]) in page.eval_on_selector_all("#deps-waits tbody tr", "rs => rs.map(r => r.cells[0].textContent.replace('pc ', ''))")

    # sort by stall (descending), filter by text
    page.click("#isa-table th[data-key='stall']")
    first = page.eval_on_selector("#isa-table tbody", "tb => [...tb.rows].find(r => !r.hidden).dataset.pc")
    assert int(first) == a["hotspots"]["instructions_by_stall"][0]["pc"]
    page.fill("#isa-filter", "s_barrier")
    n = page.evaluate("attlensReport.data.isa.text.filter(t => t.toLowerCase().includes('s_barrier')).length")
    assert n > 0 and page.locator("#isa-table tr.isa-row:not([hidden])").count() == n
    assert page.text_content("#isa-count").startswith(f"{n} of ")
    o.check_clean()


def _crafted(tmp: Path) -> Path:
    k = default_kernel()
    k.name = EVIL_NAME
    lines = k.source_text.split("\n")
    lines[23] = EVIL_LINE
    k.source_text = "\n".join(lines)
    k.body[5] = Op(EVIL_ISA, 25, size=8, source=EVIL_PATH)
    cap = write_capture(tmp / "cap", k)
    r = attlens.analyze(attlens.load(cap))
    out = tmp / "crafted.html"
    render_html(r, make_plan(r), analyze_waves(r), out)
    return out


def test_crafted_markup_is_shown_as_text(open_page, tmp_path):
    o = open_page(_crafted(tmp_path))
    page = o.page
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.text_content("#kernel-name") == EVIL_NAME
    assert page.title() == f"attlens report — {EVIL_NAME}"
    assert page.evaluate("document.querySelectorAll('img, i').length") == 0
    assert page.evaluate("[...document.querySelectorAll('b')].filter(b => b.textContent === 'bold').length") == 0
    assert page.evaluate("document.scripts.length") == 2
    texts = page.eval_on_selector_all(".src-row .txt", "es => es.map(e => e.textContent)")
    assert EVIL_LINE in texts
    assert EVIL_ISA in page.eval_on_selector_all("#isa-table td.ins", "es => es.map(e => e.textContent)")
    assert any(EVIL_PATH.rsplit(":", 1)[0] in t for t in page.eval_on_selector_all(".src-file", "es => es.map(e => e.textContent)"))
    # interacting does not execute anything either
    page.locator(".src-row.mapped[data-source$='toy_kernel.py:24']").click()
    page.locator("#isa-table tr.isa-row").nth(10).click()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-crafted.png"))
    o.check_clean()


def test_index_links_to_reports(open_page, tmp_path):
    caps = [write_capture(tmp_path / "a"), write_capture(tmp_path / "b", dispatch_id=9)]
    out = render_captures(caps, tmp_path / "site" / "index.html")[-1]
    o = open_page(out, ready="table.index-table")
    page = o.page
    assert page.evaluate("document.scripts.length") == 0, "the index page runs no script"
    links = page.locator("a.report-link")
    assert links.count() == 2
    links.first.click()
    page.wait_for_selector("body[data-ready='1']", state="attached")
    assert page.text_content("#kernel-name") == "toy_kernel"
    o.check_clean()


_ISA_GEOMETRY = """() => {
  const pane = document.getElementById('isa-pane'), r = pane.getBoundingClientRect(), right = r.left + pane.clientWidth + 1;
  const ths = [...document.querySelectorAll('#isa-table thead th')];
  return {scroll: pane.scrollWidth, client: pane.clientWidth, hidden: ths.filter(th => th.getBoundingClientRect().right > right).map(th => th.textContent),
          columns: ths.length, ins: document.querySelector("#isa-table th[data-key='text']").getBoundingClientRect().width,
          src: document.getElementById('src-pane').getBoundingClientRect().width, stacked: attlensReport.codeLayout().stacked};
}"""


@pytest.mark.parametrize("width", [1366, 1920])
def test_isa_pane_shows_every_column(open_page, softmax, width):
    """Every ISA column is visible in its pane without horizontal scrolling,
    side by side with the source view, at common laptop and desktop widths;
    the splitter resizes the panes and the table still fits."""
    out, a, wd, wa = softmax
    o = open_page(out, viewport=(width, 1000))
    page = o.page
    page.locator("#code").scroll_into_view_if_needed()
    g = page.evaluate(_ISA_GEOMETRY)
    assert not g["stacked"] and g["columns"] == 10
    assert g["hidden"] == [] and g["scroll"] <= g["client"], g
    assert g["ins"] >= 200, "room left for the instruction text"
    # a truncated instruction keeps its full text in the title
    hot = a["hotspots"]["instructions_by_stall"][0]
    assert page.get_attribute(f"#isa-table tr.isa-row[data-pc='{hot['pc']}'] td.ins", "title") == hot["isa"]
    # drag the splitter left: the source pane narrows, the ISA pane widens
    box = page.locator("#code-splitter").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2  # below the sticky navigation bar
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 150, y, steps=5)
    page.mouse.up()
    after = page.evaluate(_ISA_GEOMETRY)
    if g["src"] > 320 + 150:
        assert after["src"] == pytest.approx(g["src"] - 150, abs=3) and after["ins"] > g["ins"] + 100
    else:
        assert after["src"] >= 318, "never narrower than the source view's minimum"
    # and far to the right: the ISA pane keeps every column
    page.locator("#code-splitter").focus()
    for _ in range(30):
        page.keyboard.press("ArrowRight")
    far = page.evaluate(_ISA_GEOMETRY)
    assert far["hidden"] == [] and far["scroll"] <= far["client"] and far["ins"] >= 195, far
    assert far["src"] >= after["src"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#code").screenshot(path=str(ARTIFACTS / f"report-code-{width}.png"))


# --------------------------------------------------------------------------- the sweep dashboard (docs/sweep.md)
# Here rather than in a module of its own: it needs this module's session
# browser (Playwright's sync API allows one per thread), and a conftest.py in
# tests/browser would shadow tests/conftest.py for `from conftest import ...`.

SWEEP_EVIL_SHAPE = "</script><script>window.__pwned=1</script>"
SWEEP_EVIL_TAG = "<img src=x onerror='window.__pwned=2'>"


def _sweep_pct(x):
    return "" if x is None else f"{100 * x:.1f}%"


def test_sweep_dashboard(open_page, tmp_path):
    from sweep_helpers import attlens, status, sweep_env, write_sweep

    env = sweep_env(tmp_path)
    jobs = [{"name": "g1", "shape": SWEEP_EVIL_SHAPE, "tags": [SWEEP_EVIL_TAG]}, {"name": "g2", "shape": "second"},
            {"name": "nokernel", "kernel": "no_such_kernel"}]
    sweep = write_sweep(tmp_path / "sweep.toml", jobs, {"argv": ["true"], "kernel": "vecAdd", "retries": 0})
    out = tmp_path / "out"
    attlens(env, "sweep", "run", sweep, "--out", out, "--gpus", "0,1", "--no-progress", code=31)
    attlens(env, "sweep", "report", out)
    manifest = {j["job"]: j for j in status(env, out)["jobs"]}

    o = open_page(out / "dashboard.html")
    page = o.page
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.scripts.length") == 2 and page.evaluate("document.querySelectorAll('img').length") == 0
    rows = page.eval_on_selector_all("#sweep-table tbody tr", """rs => rs.map(r => ({job: r.dataset.job,
        cells: Object.fromEntries([...r.cells].map(c => [c.dataset.key, {text: c.textContent, value: JSON.parse(c.dataset.value)}]))}))""")
    assert [r["job"] for r in rows] == list(manifest)
    for r in rows:
        m = manifest[r["job"]]
        c = r["cells"]
        s = m["summary"]
        assert c["state"]["value"] == m["state"] and c["state"]["text"].startswith(m["state"])
        if s is None:
            assert m["state"] == "failed" and m["error"] in c["top_finding"]["text"] and c["duration_us"]["text"] == ""
            continue
        assert c["kernel"]["text"] == s["kernel"] == "vecAddKernel_0"
        assert c["shape"]["text"] == s["shape"] and c["target"]["text"] == s["target"]
        assert c["duration_us"]["value"] == s["duration_us"] and c["duration_us"]["text"] == f"{s['duration_us']:.2f}"
        assert c["dominant_class"]["value"] == s["dominant_class"]
        assert c["dominant_class"]["text"] == f"{s['dominant_class']}{_sweep_pct(s['dominant_class_share'])} of stall"
        assert c["stall_share"]["value"] == s["stall_share"] and _sweep_pct(s["stall_share"]) in c["stall_share"]["text"]
        o_ = s["occupancy"]
        assert c["occupancy"]["value"] == o_["theoretical"] and c["occupancy"]["text"].startswith(f"{o_['theoretical']} / {o_['observed']}")
        f = s["top_finding"]
        assert c["top_finding"]["value"] == f["share"] and f["title"] in c["top_finding"]["text"] and f"[{f['rule']}]" in c["top_finding"]["text"]
        assert c["bandwidth_fraction"]["value"] == s["bandwidth_fraction"] and c["bandwidth_fraction"]["text"] == _sweep_pct(s["bandwidth_fraction"])
        assert c["health"]["text"].startswith(s["health"]["status"])
        # the stall mix bar: one segment per class, widths = the manifest's shares
        segs = page.eval_on_selector_all(f"#sweep-table tr[data-job='{r['job']}'] .mix span",
                                         "ss => ss.map(x => [x.dataset.cls, parseFloat(x.style.width)])")
        assert {k: round(v / 100, 6) for k, v in segs} == {k: round(v, 6) for k, v in s["stall_mix"].items()}
    assert manifest["g1"]["summary"]["shape"] == SWEEP_EVIL_SHAPE and SWEEP_EVIL_TAG in page.text_content("#sweep-table tr[data-job='g1']")

    # sorting: by job, then reversed; numbers with nulls last either way
    page.click("#sweep-table th[data-key='job']")
    assert page.eval_on_selector_all("#sweep-table tbody tr", "rs => rs.map(r => r.dataset.job)") == sorted(manifest)
    page.click("#sweep-table th[data-key='job']")
    assert page.eval_on_selector_all("#sweep-table tbody tr", "rs => rs.map(r => r.dataset.job)") == sorted(manifest, reverse=True)
    assert page.get_attribute("#sweep-table th[data-key='job']", "aria-sort") == "descending"
    page.click("#sweep-table th[data-key='duration_us']")
    assert page.eval_on_selector_all("#sweep-table tbody tr", "rs => rs.map(r => r.dataset.job)")[-1] == "nokernel"
    page.fill("#sweep-filter", "second")
    assert page.locator("#sweep-table tbody tr:not([hidden])").count() == 1 and page.text_content("#sweep-count") == "1 of 3 shown"
    page.fill("#sweep-filter", "")
    assert page.locator(".category").count() == 3

    # every link resolves: the reports open, the failed job's log exists
    links = page.eval_on_selector_all("#sweep-table a", "as => as.map(a => a.href)")
    assert len(links) == 3
    for href in links:
        assert href.startswith("file://") and Path(href[len("file://"):]).is_file(), href
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "sweep-dashboard.png"), full_page=True)
    page.locator("#sweep-table tr[data-job='g2'] a.report-link").click()
    page.wait_for_selector("body[data-ready='1']", state="attached")
    assert page.text_content("#kernel-name") == "vecAddKernel_0"
    o.check_clean()


# --------------------------------------------------------------------------- PC samples (docs/pcsampling.md)
# Here for the same reason as the dashboard: this module's session browser.
# The sampled report's fixture is built (tests/pcs_fixtures.py says how).


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    import pcs_fixtures as F
    from attlens.analysis.analyze import analyze

    shared = require_shared()
    d, _r = loaded(shared / SOFTMAX)
    tmp = tmp_path_factory.mktemp("pcs-html")
    planted = F.write_results_json(shared / SOFTMAX, tmp / "att_results.json")
    r = analyze(d, pc_sampling=tmp / "att_results.json")
    wa = analyze_waves(r)
    out = tmp / "softmax-pcs.html"
    render_html(r, make_plan(r, waves=wa), wa, out)
    want: dict = {}
    for s in planted:
        if s["kind"] == "joined":
            want[s["pc"]] = want.get(s["pc"], 0) + 1
    return out, want, r


def test_isa_pane_shows_the_samples(open_page, sampled):
    out, want, r = sampled
    o = open_page(out)
    o.check_clean()
    page = o.page
    heads = page.eval_on_selector_all("#isa-table thead th", "hs => hs.map(h => h.textContent)")
    assert "samples" in heads and "sampled why" in heads
    i_n, i_why = heads.index("samples"), heads.index("sampled why")
    rows = page.eval_on_selector_all("#isa-table tbody tr", f"rs => rs.map(r => [Number(r.dataset.pc), r.cells[{i_n}].textContent, r.cells[{i_why}].textContent])")
    shown = {pc: _int(n) for pc, n, _w in rows if n.strip()}
    assert shown == want
    pc = max(want, key=want.get)
    why = next(w for p, _n, w in rows if p == pc)
    row = r.pc_sampling.row([pc])
    top = next(iter(row["reasons"]))
    assert why.startswith(f"{top} {100 * row['reasons'][top] / row['stalled']:.0f}%")
    facts = page.text_content("#capture-facts")
    assert f"{sum(want.values()):,} of {r.pc_sampling.counts['in_file']:,} joined (code-object-id" in facts
    # the source pane can rank lines by samples
    page.select_option("#src-metric", "samples")
    page.select_option("#src-order", "hot")
    first = page.eval_on_selector("#src-pane .src-row.mapped", "e => e.dataset.source")
    lines = [ln for ln in r.hotspots.lines if ln.pc_samples and ln.pc_samples["samples"]]
    assert first == max(lines, key=lambda ln: ln.pc_samples["samples"]).source
