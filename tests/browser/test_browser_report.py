"""The HTML report in a real browser: Debian's Chromium driven by Playwright,
pages opened from file:// with every other request blocked (docs/report.md,
tests/browser/pwhelp.py). Screenshots go to tests/artifacts/. The viewer
panels (arrows, hotspot scope, single-wave timeline, per-SE occupancy) and
the two window widths are in test_browser_viewer.py.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np

import pytest

import attlens
from attlens.analysis.plan import make_plan
from attlens.analysis.waves import analyze_waves
from attlens.report.html import render_captures, render_html
from attlens.synth import write_capture
from attlens.synth.toy import Op, default_kernel
from conftest import loaded, require_shared
from pwhelp import ARTIFACTS, WIDTHS, browser, cell_int, check_fits, open_page, shot  # noqa: F401  (fixtures)

SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"

EVIL_NAME = "k</script><script>window.__pwned=1</script><img src=x onerror='window.__pwned=2'><!--{{DATA}}&amp;"
EVIL_LINE = "wait_global()  # </script><script>window.__pwned=3</script><b>bold</b> & <i>"
EVIL_PATH = "/tmp/<img src=x onerror='window.__pwned=5'>.py:7"
EVIL_ISA = "v_pk_add_f32 v[10:11], v[0:1], v[2:3] ; </SCRIPT ><script>window.__pwned=4</script>"


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
    assert cell_int(page.text_content("#hl-total-cycles")) == t["latency"] + t["idle"]
    assert cell_int(page.text_content("#hl-latency")) == t["latency"]
    assert cell_int(page.text_content("#hl-stall")) == t["stall"]
    assert cell_int(page.text_content("#hl-idle")) == t["idle"]
    assert cell_int(page.text_content("#hl-issue")) == t["issue"]
    assert page.text_content("#hl-stall-share") == f"{100 * t['stall_share_of_latency']:.1f}%"
    assert page.text_content("#hl-hidden") == f"{100 * a['latency_hiding']['hidden_share']:.1f}%"
    assert page.text_content("#hl-occ-theoretical") == str(a["occupancy"]["theoretical_waves_per_simd"])
    assert page.text_content("#hl-occ-observed") == str(a["occupancy"]["observed_max_waves_per_simd_traced_cu"])
    assert page.text_content("#hl-occ-limiters") == ", ".join(a["occupancy"]["limiters"])
    assert page.text_content("#kernel-name") == a["capture"]["kernel"]
    rows = page.eval_on_selector_all("#stall-by-class tbody tr", "rs => rs.map(r => [r.dataset.cls, ...[...r.cells].map(c => c.textContent)])")
    assert [r[0] for r in rows] == [c["class"] for c in a["stall_by_class"]]
    for r, c in zip(rows, a["stall_by_class"]):
        assert cell_int(r[2]) == c["stall"] and cell_int(r[4]) == c["latency"] and cell_int(r[6]) == c["records"]
    states = page.eval_on_selector_all("#wave-states tbody tr", "rs => rs.map(r => [r.dataset.state, r.cells[1].textContent])")
    assert {s: cell_int(v) for s, v in states} == wd["states"]["cycles"]
    pipes = page.eval_on_selector_all("#pipes-table tbody tr", "rs => rs.map(r => [r.dataset.pipe, r.cells[2].textContent])")
    assert {p: cell_int(v) for p, v in pipes} == {p: v["busy_cycles"] for p, v in wd["pipes"]["kernel"].items()}
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


def test_softmax_report_shows_each_prediction(open_page, softmax):
    """Issue 20: beside each finding's cycles at stake, its predicted gain in
    the words attlens plan uses (report/text.py predicted_label); nothing for
    a finding without a prediction."""
    from attlens.report.text import predicted_label

    out = softmax[0]
    page = open_page(out).page
    findings = page.evaluate("attlensReport.data.plan.findings")
    shown = page.eval_on_selector_all(".finding", "fs => fs.map(f => { const p = f.querySelector('.predicted'); return p ? p.textContent : null; })")
    assert len(shown) == len(findings)
    for f, text in zip(findings, shown):
        want = predicted_label(f)
        assert text == (None if want is None else "What-if: " + want), f["rule"]
    tops = page.eval_on_selector_all("#top-findings li", "ls => ls.map(l => [l.dataset.rule, l.textContent])")
    for rule, text in tops:
        want = predicted_label(next(f for f in findings if f["rule"] == rule))
        assert want is None or want in text


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
  const ths = [...document.querySelectorAll('#isa-table thead th')].filter(th => getComputedStyle(th).display !== 'none');
  const cut = [...document.querySelectorAll('#isa-table td.ins')].filter(td => td.scrollWidth > td.clientWidth + 1).map(td => td.textContent);
  return {scroll: pane.scrollWidth, client: pane.clientWidth, hidden: ths.filter(th => th.getBoundingClientRect().right > right).map(th => th.textContent),
          columns: ths.length, ins: document.querySelector("#isa-table th[data-key='text']").getBoundingClientRect().width, cut: cut,
          src: document.getElementById('src-pane').getBoundingClientRect().width, layout: attlensReport.codeLayout(),
          note: document.getElementById('isa-hidden').textContent};
}"""


@pytest.mark.parametrize("width", [1366, 1920])
def test_isa_pane_shows_every_column(open_page, softmax, width):
    """Every ISA column is visible in its pane without horizontal scrolling,
    side by side with the source view, at common laptop and desktop widths,
    and no instruction is cut (its text wraps between operands); the splitter
    resizes the panes: widening the source view makes the optional columns
    give way in their stated order, the instruction text is still whole."""
    out, a, wd, wa = softmax
    o = open_page(out, viewport=(width, 1000))
    page = o.page
    page.locator("#code").scroll_into_view_if_needed()
    g = page.evaluate(_ISA_GEOMETRY)
    assert not g["layout"]["stacked"] and g["columns"] == 11 and g["layout"]["hidden"] == [] and g["note"] == "", g
    assert g["hidden"] == [] and g["scroll"] <= g["client"] and g["cut"] == [], g
    assert g["ins"] >= 200, "room left for the instruction text"
    # a wrapped instruction keeps its whole text, the mnemonic on one line
    hot = a["hotspots"]["instructions_by_stall"][0]
    cell = page.locator(f"#isa-table tr.isa-row[data-pc='{hot['pc']}'] td.ins")
    assert cell.text_content() == hot["isa"]
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
    # and far to the right: optional columns give way (named above the table), nothing is cut
    page.locator("#code-splitter").focus()
    for _ in range(30):
        page.keyboard.press("ArrowRight")
    far = page.evaluate(_ISA_GEOMETRY)
    assert far["hidden"] == [] and far["scroll"] <= far["client"] and far["ins"] >= 195 and far["cut"] == [], far
    assert far["src"] > after["src"]
    gone = far["layout"]["hidden"]
    assert gone == ["source", "idle", "exposed", "waited_on"][: len(gone)] and gone, far
    assert far["note"].startswith("Hidden to fit: ") and far["columns"] == 11 - len(gone)
    page.locator("#code-splitter").dblclick()
    assert page.evaluate(_ISA_GEOMETRY)["layout"]["hidden"] == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#code").screenshot(path=str(ARTIFACTS / f"report-code-{width}.png"))
    o.check_clean()


# --------------------------------------------------------------------------- the sweep dashboard (docs/sweep.md)
# Here rather than in a module of its own: it needs this module's session
# browser (Playwright's sync API allows one per thread), and a conftest.py in
# tests/browser would shadow tests/conftest.py for `from conftest import ...`.

SWEEP_EVIL_SHAPE = "</script><script>window.__pwned=1</script>"
SWEEP_EVIL_TAG = "<img src=x onerror='window.__pwned=2'>"


def _sweep_pct(x):
    return "" if x is None else f"{100 * x:.1f}%"


def _plan_line(env, command: str) -> str:
    """The output of an `attlens plan ...` command line as one line of text (no terminal wrapping)."""
    import shlex

    from sweep_helpers import attlens

    argv = shlex.split(command)
    assert argv[:2] == ["attlens", "plan"]
    return re.sub(r"\s+", " ", attlens({**env, "COLUMNS": "1000"}, *argv[1:]).stdout)


_BADGES = """() => [...document.querySelectorAll('.sev, .health, .state')].map(b => { const s = getComputedStyle(b);
  return {text: b.textContent.trim(), bg: s.backgroundColor, fg: s.color, title: b.title}; })"""


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

    o = open_page(out / "dashboard.html", viewport=(1366, 900))
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
        assert c["status"]["text"].startswith(m["state"])
        if s is None:
            assert m["state"] == "failed" and m["error"] in c["top_finding"]["text"] and c["duration_us"]["text"] == ""
            continue
        # kernel, its grid in workgroups (as analyze and plan count them), its shape label and target in one column
        wgs = int(np.prod([-(-g // w) for g, w in zip(s["grid"], s["workgroup"])]))
        kernel = c["kernel"]["text"]
        assert s["kernel"] == "vecAddKernel_0" and kernel.startswith(s["kernel"]) and s["shape"] in kernel and s["target"] in kernel
        assert f"{wgs:,} workgroups × {int(np.prod(s['workgroup'])):,} threads" in kernel
        assert c["duration_us"]["value"] == s["duration_us"] and c["duration_us"]["text"].startswith(f"{s['duration_us']:,.2f} µs")
        assert c["stall_share"]["value"] == s["stall_share"] and f"{_sweep_pct(s['stall_share'])} of latency" in c["stall_share"]["text"]
        assert f"most: {s['dominant_class']}, {_sweep_pct(s['dominant_class_share'])} of stall" in c["stall_share"]["text"]
        o_ = s["occupancy"]
        assert c["occupancy"]["value"] == o_["theoretical"] and c["occupancy"]["text"].startswith(f"{o_['theoretical']} / {o_['observed']}")
        f = s["top_finding"]
        assert c["top_finding"]["value"] == f["share"] and f["title"] in c["top_finding"]["text"] and f"[{f['rule']}]" in c["top_finding"]["text"]
        assert c["bandwidth_fraction"]["value"] == s["bandwidth_fraction"] and c["bandwidth_fraction"]["text"] == s["bandwidth_text"] + "of peak"
        assert s["health"]["status"] in ("ok", "warn", "bad") and "capture" in c["status"]["text"]
        # the stall mix bar: one segment per class, widths = the manifest's shares
        segs = page.eval_on_selector_all(f"#sweep-table tr[data-job='{r['job']}'] .mix span",
                                         "ss => ss.map(x => [x.dataset.cls, parseFloat(x.style.width)])")
        assert {k: round(v / 100, 6) for k, v in segs} == {k: round(v, 6) for k, v in s["stall_mix"].items()}
    assert manifest["g1"]["summary"]["shape"] == SWEEP_EVIL_SHAPE and SWEEP_EVIL_TAG in page.text_content("#sweep-table tr[data-job='g1']")

    # the same duration and bandwidth as `attlens plan` on the job's capture with the outputs its
    # analysis read (the job's discovery run), the command the cells name
    doc = json.loads(attlens(env, "sweep", "report", out, "--json").stdout)
    cmd = {r["job"]: r["reproduce"] for r in doc["rows"]}["g2"]
    assert cmd.endswith("--rocprof-dir " + str((out / manifest["g2"]["capture"]).parents[1] / "discovery"))
    assert page.get_attribute("#sweep-table tr[data-job='g2'] td[data-key='duration_us']", "title").endswith("the same as: " + cmd)
    plan = _plan_line(env, cmd)
    cells = {r["job"]: r["cells"] for r in rows}["g2"]
    assert cells["duration_us"]["text"].startswith(re.search(r"duration ([\d,.]+ µs)", plan).group(1))
    assert cells["bandwidth_fraction"]["text"] == re.search(r"GB/s: (.+?) of the [\d,]+ GB/s HBM peak", plan).group(1) + "of peak"

    # every badge has a label and a colour of its own
    badges = page.evaluate(_BADGES)
    assert badges and all(b["text"] and b["bg"] not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)") and b["fg"] != b["bg"] and b["title"] for b in badges), badges

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
    # it fits a laptop and a desktop window: no sideways scrolling, the navigation bar spans the page
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        check_fits(page)
        assert page.evaluate("[document.getElementById('nav').getBoundingClientRect().width, document.documentElement.clientWidth]") == [width, width]
        shot(page, f"sweep-dashboard-{width}.png")
    page.locator("#sweep-table tr[data-job='g2'] a.report-link").click()
    page.wait_for_selector("body[data-ready='1']", state="attached")
    assert page.text_content("#kernel-name") == "vecAddKernel_0"
    o.check_clean()


def test_sweep_dashboard_labels_an_info_finding(open_page, tmp_path):
    """An INFO top finding (the plan's note when no rule advises a change)
    shows its severity on a coloured badge (it was white on white)."""
    from attlens.sweep.dashboard import categorize, render_dashboard_text

    summary = {"att_available": True, "kernel": "k", "shape": None, "grid": [1024, 1, 1], "workgroup": [256, 1, 1], "target": "gfx950",
               "duration_us": 1.5, "duration_source": "x.csv: mean of 3 dispatch(es)", "stall_share": 0.5, "dominant_class": "valu",
               "dominant_class_share": 1.0, "stall_mix": {"valu": 1.0}, "occupancy": {"theoretical": 8, "observed": 4, "limiters": ["waves"]},
               "top_finding": {"rule": "stall-class", "kind": "note", "severity": "INFO", "title": "valu: 100% of stall, no advice supported by the trace",
                               "confidence": 0.5, "share": None},
               "findings": [], "bandwidth_fraction": None, "bandwidth_source": None, "bandwidth_text": None,
               "health": {"status": "ok", "issues": [], "notes": []}}
    rows = [{"job": "only", "state": "done", "attempts": 1, "exit_code": 0, "error": None, "seconds": 1.0, "gpu": 0, "tags": [],
             "shape_label": None, "capture": "/x", "href": None, "log": None, "summary": summary}]
    out = tmp_path / "dash.html"
    out.write_text(render_dashboard_text(rows, categorize(rows), {"source": "captures", "dir": "/x", "counts": {"done": 1}}, "t"), encoding="utf-8")
    page = open_page(out, viewport=(1366, 800)).page
    info = page.evaluate("(() => { const b = document.querySelector('.sev-INFO'); const s = getComputedStyle(b); return [b.textContent, s.backgroundColor, s.color]; })()")
    assert info == ["INFO", "rgb(90, 107, 134)", "rgb(255, 255, 255)"]
    # a duration that is not this dispatch's says so; the grid in workgroups
    assert page.text_content("#sweep-table td[data-key='duration_us']") == "1.50 µsnot this dispatch: x.csv: mean of 3 dispatch(es)"
    assert "4 workgroups × 256 threads" in page.text_content("#sweep-table td[data-key='kernel']")
    check_fits(page)


# --------------------------------------------------------------------------- PC samples (docs/pcsampling.md)
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
    shown = {pc: cell_int(n) for pc, n, _w in rows if n.strip()}
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


def test_sampled_columns_give_way_after_the_trace_columns(open_page, sampled):
    """With PC samples the ISA table has two more optional columns: the
    reasons (wide) give way after source, idle and exposed, the sample count
    last; a hidden reason mix stays in the count's tooltip; no instruction is
    cut."""
    out, want, _r = sampled
    o = open_page(out, viewport=(1366, 1000))
    page = o.page
    page.locator("#code").scroll_into_view_if_needed()
    g = page.evaluate(_ISA_GEOMETRY)
    assert g["scroll"] <= g["client"] and g["cut"] == [] and g["hidden"] == [], g
    pc = max(want, key=want.get)
    cell = page.locator(f"#isa-table tr.isa-row[data-pc='{pc}'] td.c-pcs_samples")
    assert cell.get_attribute("title") == page.text_content(f"#isa-table tr.isa-row[data-pc='{pc}'] td.c-pcs_why") != ""
    page.locator("#code-splitter").focus()
    for _ in range(40):
        page.keyboard.press("ArrowRight")
    far = page.evaluate(_ISA_GEOMETRY)
    gone = far["layout"]["hidden"]
    order = ["source", "idle", "exposed", "pcs_why", "waited_on", "pcs_samples"]
    assert gone and gone == order[: len(gone)], far
    assert "pcs_why" in gone, "the widest optional column gives way when the source view takes most of the row"
    assert far["scroll"] <= far["client"] and far["cut"] == [] and far["ins"] >= 195, far
    o.check_clean()


def test_rocprofv2_report_shows_stall_unavailable_and_ranks_by_latency(open_page, tmp_path):
    """The rocprofv2 plugin records no stall cycles: every stall figure on the
    page is "-" or "n/a" (never 0 / 0.0%), the hotspot scope ranks by latency
    (no stall metric to pick) and says so once; no console error."""
    cap = require_shared() / "outside/rocprofv2-elementwise/vectorized_elementwise_kernel_v0_ui"
    d, r = loaded(cap)
    assert not d.stall_recorded
    out = tmp_path / "v2.html"
    render_html(r, make_plan(r), analyze_waves(r), out)
    o = open_page(out)
    o.check_clean()
    page = o.page
    assert page.inner_text("#hl-stall").strip() in ("-", "n/a") and page.inner_text("#hl-stall-share").strip() in ("-", "n/a")
    assert page.inner_text("#key-instr-stall").strip() in ("-", "n/a")
    assert "ranked by latency" in page.inner_text("#stall-unrecorded")
    cells = page.eval_on_selector_all("#stall-by-class tbody tr", "rows => rows.map(r => [r.cells[1].textContent, r.cells[3].textContent])")
    assert cells and all(s in ("-", "n/a") for s, _lat in cells)
    # the class table comes largest latency first, as the raw sums give it
    lats = [cell_int(lat) for _s, lat in cells]
    assert lats == sorted(lats, reverse=True) and lats[0] == 41_084  # global_store_dwordx4: 564 records, Σ duration 41,084
    assert page.eval_on_selector_all("#scope-metric option", "os => os.map(o => o.value)") == ["latency", "idle", "hit"]
    assert "ranked by latency" in page.inner_text("#scope-stall-unrecorded")
    top = page.eval_on_selector_all("#scope-instructions tbody tr", "rows => rows.map(r => [r.dataset.pc, r.cells[5].textContent])")
    assert top[0] == ["18", "-"]  # the longest-latency instruction first, its stall unavailable
    isa_stall = page.eval_on_selector_all("#isa-table tbody tr.isa-row td.heatcell", "cs => cs.map(c => c.textContent)")
    assert isa_stall and set(isa_stall) == {"-"}
    # the phases and the memory ops waited on: the records' stall and the wait cycles are "-", never 0
    phases = page.eval_on_selector_all("#phases-table tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert phases == [["straight_line", "11,280", "-", "117,060"]]  # Σ records and Σ duration of the wave files
    prods = page.eval_on_selector_all("#top-producers tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.cells[3].textContent, r.cells[4].textContent, r.cells[5].textContent])")
    assert prods == [["pc 2", "-", "-", "564"]]  # s_load_dwordx4, waited on by each of the 564 executions of the wait at pc 5
