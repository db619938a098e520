"""The HTML report's first screen and viewer panels in Chromium, at 1,366 and
1,920 px: verdict first, findings in words, memory -> wait arrows in the ISA
gutter, the hotspots of a brushed clock range, occupancy per SE and the
single-wave instruction timeline (docs/report.md). Every expected value is
recomputed here from the capture's own records and waitcnt arrays, never read
from the page's data. Screenshots go to tests/artifacts/ (docs/img/ holds
optimised copies)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from attlens.analysis.plan import make_plan
from attlens.analysis.waves import analyze_waves
from attlens.report.html import render_html
from conftest import loaded, require_shared
from pwhelp import WIDTHS, browser, cell_int, check_fits, open_page, shot  # noqa: F401  (fixtures)

SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"
GUTTER = 120  # px left of the plot in the report's canvases (report_hotspots.js, report_timeline.js)


@pytest.fixture(scope="module")
def sm(tmp_path_factory):
    """softmax (2,056 waves), reported as `attlens report` does, and the
    facts the tests recompute from the capture."""
    d, r = loaded(require_shared() / SOFTMAX)
    wa = analyze_waves(r)
    plan = make_plan(r, waves=wa)
    out = tmp_path_factory.mktemp("softmax") / "softmax.html"
    render_html(r, plan, wa, out)
    w = d.waves
    offs = wa.clock.se_offsets_cycles or {}
    shift = np.array([offs.get(int(se), 0) for se in w.se.tolist()], dtype=np.int64)
    # memory -> wait pairs straight from the wave files' own waitcnt arrays
    stored: dict[int, set[int]] = {}
    for i in range(w.count):
        for wait_pc, mems in w.stored_waitcnt(i):
            stored.setdefault(int(wait_pc), set()).update(int(m[0]) for m in mems)
    return SimpleNamespace(out=out, d=d, r=r, wa=wa, plan=plan.to_dict(), a=r.to_dict(20), waves=wa.to_dict(per_wave=False),
                           shift=shift, t0=int((w.begin + shift).min()), t1=int((w.end + shift).max()), stored=stored)


def _expected_verdict(plan: dict) -> str:
    """The plan's verdict sentence; before issue 19's verdict, the Markdown
    report's top-finding line."""
    v = plan.get("verdict")
    if v and v.get("sentence"):
        return v["sentence"]
    f = plan["findings"][0]
    return (f"Top finding: {f['severity']} {f['title']} ({f['rule']})"
            + (f", {100 * f['share_of_cycles']:.1f}% of cycles at stake." if f["kind"] == "performance" else "."))


# --------------------------------------------------------------------------- first screen


@pytest.mark.parametrize("width", WIDTHS)
def test_first_screen_leads_with_the_verdict(open_page, sm, width):
    o = open_page(sm.out, viewport=(width, 800))
    page = o.page
    check_fits(page)
    assert page.text_content("#kernel-name") == sm.a["capture"]["kernel"]
    assert page.text_content("#verdict-sentence") == _expected_verdict(sm.plan)
    # the top findings (no capture finding) follow, all on the first screen
    tops = [f for f in sm.plan["findings"] if f["kind"] != "capture"][:3]
    items = page.eval_on_selector_all("#top-findings li", "ls => ls.map(l => [l.dataset.rule, l.querySelector('a').textContent, l.getBoundingClientRect().bottom])")
    assert [(r, t) for r, t, _ in items] == [(f["rule"], f["title"]) for f in tops]
    assert max(b for _, _, b in items) < 800
    # key numbers; the two meanings of stall named apart
    t = sm.a["totals"]
    assert page.text_content("#key-total-cycles") == f"{t['latency'] + t['idle']:,}"
    assert page.text_content("#key-instr-stall") == f"{100 * t['stall'] / t['latency']:.1f}%"
    assert page.text_content("#key-wave-stall") == f"{100 * sm.waves['states']['share']['STALL']:.1f}%"
    labels = page.eval_on_selector_all("#key-numbers .l", "ls => ls.map(l => l.textContent)")
    assert any(lbl.startswith("instruction stall") for lbl in labels) and any(lbl.startswith("STALL wave state") for lbl in labels)
    assert "Two different measures are called stall" in page.text_content("#stall-terms")
    assert page.text_content("#key-duration") == f"{sm.plan['dispatch']['duration_ns'] / 1000:,.2f} µs"
    # expected facts of the target and layout are notes, shown once; none is a warning
    text_of = lambda n: n if isinstance(n, str) else n.get("text") or n.get("message") or n.get("note")  # noqa: E731
    notes = list(dict.fromkeys(text_of(n) for n in list(sm.a.get("notes") or []) + list(sm.plan["dispatch"]["notes"])))
    shown = page.eval_on_selector_all("#notes li", "ls => ls.map(l => l.textContent)")
    assert notes and all(n in shown for n in notes) and len(shown) == len(set(shown))
    warned = page.eval_on_selector_all("#warnings li", "ls => ls.map(l => l.textContent)")
    assert not set(warned) & set(notes)
    # the capture's metadata is folded below
    assert page.get_attribute("#capture-details", "open") is None
    assert sm.a["capture"]["path"] in page.text_content("#capture-facts")
    assert not page.locator("#capture-facts").is_visible()
    shot(page, f"report-first-{width}.png")
    o.check_clean()


def test_findings_are_words_not_json_keys(open_page, sm):
    page = open_page(sm.out, viewport=(1366, 900)).page
    labels = page.eval_on_selector_all(".finding .evidence dt, .finding .evidence th", "es => es.map(e => e.textContent)")
    assert labels and not [x for x in labels if "_" in x], labels
    text = page.text_content("#findings")
    assert "null" not in text and "busy_share" not in text and "[]" not in text
    f = next((f for f in sm.plan["findings"] if "busy_share" in f["evidence"]), None)
    if f is not None:  # softmax: issue-bound, "busy share 65.3%", not "busy_share 0.653"
        dd = page.evaluate("""rule => { const dts = [...document.querySelectorAll(`.finding[data-rule='${rule}'] .evidence dt`)];
            const dt = dts.find(d => d.textContent === 'busy share'); return dt.nextElementSibling.textContent; }""", f["rule"])
        assert dd == f"{100 * f['evidence']['busy_share']:.1f}%"
    assert page.locator(".finding").count() == len(sm.plan["findings"])


# --------------------------------------------------------------------------- memory -> wait arrows

_ARROWS = """() => [...document.querySelectorAll('#isa-arrows path[data-wait]')].map(p => {
  const m = p.getAttribute('d').match(/^M([\\d.]+),([\\d.-]+) C.* ([\\d.]+),([\\d.-]+)$/);
  return {wait: Number(p.dataset.wait), producer: Number(p.dataset.producer), y0: Number(m[2]), y1: Number(m[4])};
})"""
_ROW_MIDDLES = """() => { const t = document.getElementById('isa-table').getBoundingClientRect(), out = {};
  for (const r of document.querySelectorAll('#isa-table tr.isa-row')) { const b = r.getBoundingClientRect(); out[r.dataset.pc] = b.top - t.top + b.height / 2; }
  return out; }"""
_WAITS_IN_VIEW = """waits => { const pane = document.getElementById('isa-pane').getBoundingClientRect(), bottom = pane.top + document.getElementById('isa-pane').clientHeight;
  return waits.filter(w => { const r = document.querySelector(`#isa-table tr.isa-row[data-pc='${w}']`);
    if (!r || r.hidden) return false; const b = r.getBoundingClientRect(); return b.bottom > pane.top && b.top < bottom; }); }"""


@pytest.mark.parametrize("width", WIDTHS)
def test_dependency_arrows_in_the_isa_gutter(open_page, sm, width):
    o = open_page(sm.out, viewport=(width, 900))
    page = o.page
    stored = sm.stored
    # the wait with the most stall: one arrow from each memory op its executions waited on
    wait = next(h["pc"] for h in sm.a["hotspots"]["instructions_by_stall"] if h["pc"] in stored)
    page.locator("#code").scroll_into_view_if_needed()
    page.locator(f"#isa-table tr.isa-row[data-pc='{wait}']").click()
    arrows = page.evaluate(_ARROWS)
    assert {(a["wait"], a["producer"]) for a in arrows} == {(wait, p) for p in stored[wait]}
    mids = page.evaluate(_ROW_MIDDLES)
    for a in arrows:  # each runs from its memory op's row to the wait's row
        assert a["y0"] == pytest.approx(mids[str(a["producer"])], abs=1) and a["y1"] == pytest.approx(mids[str(wait)], abs=1)
    # a memory op: arrows to every wait that waited on it
    prod = min(stored[wait])
    page.evaluate("pc => attlensReport.selectPc(pc, true)", prod)
    got = {(a["wait"], a["producer"]) for a in page.evaluate(_ARROWS)}
    assert got == {(w, prod) for w, ps in stored.items() if prod in ps}
    # every wait in view: all its arrows, plus the selection's
    page.evaluate("""pc => { const pane = document.getElementById('isa-pane'), r = document.querySelector(`#isa-table tr.isa-row[data-pc='${pc}']`);
        pane.scrollTop += r.getBoundingClientRect().top - pane.getBoundingClientRect().top - pane.clientHeight / 2; }""", wait)
    page.check("#arrows-all")
    in_view = page.evaluate(_WAITS_IN_VIEW, sorted(stored))
    got = {(a["wait"], a["producer"]) for a in page.evaluate(_ARROWS)}
    assert in_view and got == {(w, p) for w in in_view for p in stored[w]} | {(w, prod) for w, ps in stored.items() if prod in ps}
    # filtering hides a row's arrows with it
    page.fill("#isa-filter", "s_waitcnt")
    assert page.evaluate(_ARROWS) == []
    page.fill("#isa-filter", "")
    page.uncheck("#arrows-all")
    # for the docs: a wait whose memory ops fit the pane with it
    near = min((w for w, ps in stored.items() if len(ps) >= 3), key=lambda w: w - min(stored[w]))
    page.evaluate("pc => attlensReport.selectPc(pc, true)", near)
    page.evaluate("""pc => { const pane = document.getElementById('isa-pane'), r = document.querySelector(`#isa-table tr.isa-row[data-pc='${pc}']`);
        pane.scrollTop += r.getBoundingClientRect().top - pane.getBoundingClientRect().top - pane.clientHeight * 0.75; }""", near)
    assert {a["producer"] for a in page.evaluate(_ARROWS)} == stored[near]
    check_fits(page)
    shot(page.locator("#code-split"), f"report-arrows-{width}.png")
    o.check_clean()


# --------------------------------------------------------------------------- hotspots of a clock range


def _window(sm, b0: int, b1: int, bin_cycles: int) -> dict:
    """Sums over the records whose first issue attempt (aligned clock) falls in bins [b0, b1)."""
    recs = sm.d.records
    t = recs.time.astype(np.int64) + sm.shift[recs.wave]
    n_bins = -(-(sm.t1 - sm.t0) // bin_cycles)
    b = np.minimum((t - sm.t0) // bin_cycles, n_bins - 1)
    m = (b >= b0) & (b < b1)
    stall_pc = np.bincount(recs.pc[m], weights=recs.stall[m], minlength=sm.d.code.size).astype(np.int64)
    return {"hit": int(m.sum()), "latency": int(recs.duration[m].sum()), "stall": int(recs.stall[m].sum()), "idle": int(recs.idle[m].sum()),
            "stall_pc": stall_pc}


def test_brushing_a_clock_range_rescopes_the_hotspots(open_page, sm):
    o = open_page(sm.out, viewport=(1366, 900))
    page = o.page
    sc = page.evaluate("({bins: attlensReport.scope.bins, bc: attlensReport.scope.binCycles})")
    assert sc["bins"] * sc["bc"] >= sm.t1 - sm.t0 > (sc["bins"] - 1) * sc["bc"]
    # whole dispatch: the headline totals
    t = sm.a["totals"]
    assert [cell_int(page.text_content(f"#sc-{k}")) for k in ("records", "latency", "stall", "idle")] == [sm.d.records.count, t["latency"], t["stall"], t["idle"]]
    page.evaluate("document.getElementById('scope-canvas').scrollIntoView({block: 'center'})")
    box = page.locator("#scope-canvas").bounding_box()
    x_of = lambda b: box["x"] + GUTTER + (b + 0.5) * (box["width"] - GUTTER) / sc["bins"]  # noqa: E731
    y = box["y"] + box["height"] / 2
    page.mouse.move(x_of(20), y)
    page.mouse.down()
    page.mouse.move(x_of(44), y, steps=6)
    page.mouse.up()
    assert page.evaluate("attlensReport.scope.range()") == [20, 45]
    want = _window(sm, 20, 45, sc["bc"])
    assert [cell_int(page.text_content(f"#sc-{k}")) for k in ("records", "latency", "stall", "idle")] == [want[k] for k in ("hit", "latency", "stall", "idle")]
    assert want["hit"] < sm.d.records.count / 2, "a proper sub-range"
    rows = page.eval_on_selector_all("#scope-instructions tbody tr", "rs => rs.map(r => [Number(r.dataset.pc), r.cells[5].textContent])")
    order = sorted(np.flatnonzero(want["stall_pc"]).tolist(), key=lambda p: (-want["stall_pc"][p], p))
    assert [p for p, _ in rows] == order[:20] and [cell_int(v) for _, v in rows] == [int(want["stall_pc"][p]) for p in order[:20]]
    # the latency histogram over the code adds up to the range's latency
    bars = page.eval_on_selector_all("#latency-hist .hbin", "bs => bs.map(b => Number(b.dataset.total))")
    assert len(bars) == 32 and sum(bars) == want["latency"]
    page.select_option("#hist-metric", "stall")
    assert sum(page.eval_on_selector_all("#latency-hist .hbin", "bs => bs.map(b => Number(b.dataset.total))")) == want["stall"]
    # a bar lists its instructions in the ISA view
    page.locator("#latency-hist .hbin").nth(0).click()
    pc0, pc1 = (int(page.get_attribute("#latency-hist .hbin >> nth=0", a)) for a in ("data-pc0", "data-pc1"))
    assert page.input_value("#isa-filter") == f"pc:{pc0}-{pc1}"
    assert page.locator("#isa-table tr.isa-row:not([hidden])").count() == np.count_nonzero(sm.d.code.instruction_mask[pc0:pc1 + 1])
    # the wave timeline's view: zoom it, then scope to it
    page.evaluate("attlensReport.timeline.zoom(1000, 2500)")
    page.click("#scope-timeline")
    f = page.evaluate("attlensReport.data.timeline.bin_cycles") / sc["bc"]
    b0, b1 = int(np.floor(1000 * f)), int(np.ceil(2500 * f))
    assert page.evaluate("attlensReport.scope.range()") == [b0, b1]
    assert cell_int(page.text_content("#sc-stall")) == _window(sm, b0, b1, sc["bc"])["stall"]
    shot(page.locator("#hotspots"), "report-hotspots-1366.png")
    o.check_clean()


# --------------------------------------------------------------------------- occupancy per SE


def test_occupancy_per_shader_engine(open_page, sm):
    o = open_page(sm.out, viewport=(1366, 900))
    page = o.page
    w, tl = sm.d.waves, sm.d.timeline
    bc = page.evaluate("attlensReport.data.timeline.bin_cycles")
    n_bins = -(-(sm.t1 - sm.t0) // bc)
    # per SE: waves resident per bin (their state timelines cover begin .. begin + Σ state cycles)
    life = np.bincount(tl.wave, weights=tl.duration, minlength=w.count).astype(np.int64)
    begin = w.begin.astype(np.int64) + sm.shift - sm.t0
    peaks = []
    for se in sorted(set(w.se.tolist())):
        m = w.se == se
        diff = np.zeros(n_bins * bc + 1, dtype=np.int64)
        np.add.at(diff, begin[m], 1)
        np.add.at(diff, np.minimum(begin[m] + life[m], n_bins * bc), -1)
        per_cycle = np.cumsum(diff)[:-1]
        simds = len({(c, s) for c, s in zip(w.cu[m].tolist(), w.simd[m].tolist())})
        peaks.append(per_cycle.reshape(n_bins, bc).sum(axis=1).max() / bc / simds)
    got = [float(x) for x in page.get_attribute("#occ-se-canvas", "data-peaks").split(",")]
    assert got == pytest.approx(peaks, abs=0.011)
    assert max(got) <= sm.a["occupancy"]["theoretical_waves_per_simd"]
    o.check_clean()


# --------------------------------------------------------------------------- one wave


@pytest.mark.parametrize("width", WIDTHS)
def test_single_wave_instruction_timeline(open_page, sm, width):
    o = open_page(sm.out, viewport=(width, 900))
    page = o.page
    w, recs = sm.d.waves, sm.d.records
    longest = page.eval_on_selector("#wave-pick", "s => [...s.options].find(o => o.text.endsWith('longest')).value")
    assert int(longest) == int(np.argmax(w.end - w.begin))
    page.select_option("#wave-pick", longest)
    page.wait_for_selector(f"#wave-canvas[data-wave='{longest}']", state="attached")  # (wait_for_function evaluates a string: the CSP forbids it)
    i = int(longest)
    a, b = int(w.rec_start[i]), int(w.rec_stop[i])
    got = page.evaluate("attlensReport.wave.records()")
    assert got["pc"] == recs.pc[a:b].tolist()
    assert got["time"] == (recs.time[a:b].astype(np.int64) - int(w.begin[i])).tolist()
    assert got["duration"] == recs.duration[a:b].tolist() and got["stall"] == recs.stall[a:b].tolist()
    # instruction stall is drawn: red edges on the canvas
    assert int(page.get_attribute("#wave-canvas", "data-stalled")) > 0
    red = page.evaluate("""() => { const c = document.getElementById('wave-canvas'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let k = 0; k < d.length; k += 4) if (d[k] === 0xd6 && d[k + 1] === 0x45 && d[k + 2] === 0x45) n++; return n; }""")
    assert red > 100
    # clicking a wave in the wave timeline picks it (or the nearest embedded one on its lane)
    detail = page.evaluate("attlensReport.data.wave_detail.waves")
    other = detail[len(detail) // 3]
    page.locator("#timeline").scroll_into_view_if_needed()
    pt = page.evaluate(f"attlensReport.timeline.pointOf({other})")
    page.evaluate(f"window.scrollBy(0, {pt['y']} - window.innerHeight / 2)")
    pt = page.evaluate(f"attlensReport.timeline.pointOf({other})")
    page.mouse.click(pt["x"], pt["y"])
    page.wait_for_selector(f"#wave-canvas[data-wave='{other}']", state="attached")  # (wait_for_function evaluates a string: the CSP forbids it)
    # clicking an execution selects its instruction in the ISA view
    got = page.evaluate("attlensReport.wave.records()")
    k = int(np.argmax(got["duration"]))
    life = int(w.end[other] - w.begin[other])
    page.locator("#wave").scroll_into_view_if_needed()
    box = page.locator("#wave-canvas").bounding_box()
    x = box["x"] + GUTTER + (got["time"][k] + got["duration"][k] / 2) / life * (box["width"] - GUTTER)
    page.mouse.click(x, box["y"] + 11)
    assert page.get_attribute("#isa-table tr.sel", "data-pc") == str(got["pc"][k])
    check_fits(page)
    shot(page.locator("#wave"), f"report-wave-{width}.png")
    o.check_clean()


# --------------------------------------------------------------------------- every panel, both widths


@pytest.mark.parametrize("width", WIDTHS)
def test_every_panel_present_and_the_page_fits(open_page, sm, width):
    o = open_page(sm.out, viewport=(width, 900))
    page = o.page
    for sec in ("summary", "findings", "headline", "code", "hotspots", "timeline", "wave", "pipes", "pmc", "reproduce"):
        page.locator(f"#{sec}").scroll_into_view_if_needed()
        assert page.locator(f"#{sec} .warn").count() == 0, page.text_content(f"#{sec} .warn")
        check_fits(page)
    assert page.locator("#isa-arrows").count() == 1 and page.locator("#latency-hist svg").count() == 1
    assert int(page.get_attribute("#tl-canvas", "data-drawn")) > 1000
    assert len(page.get_attribute("#occ-se-canvas", "data-peaks").split(",")) == len(set(sm.d.waves.se.tolist()))
    assert int(page.get_attribute("#wave-canvas", "data-drawn")) > 0
    src = page.evaluate("[...document.querySelectorAll('.src-row .txt')].filter(e => e.scrollWidth > e.clientWidth + 1).length")
    assert src == 0, "no source line is cut"
    nav = page.evaluate("[document.getElementById('nav').getBoundingClientRect().width, document.documentElement.clientWidth]")
    assert nav[0] == nav[1]
    assert re.fullmatch(r"[\d,]+", page.text_content("#hl-stall"))
    o.check_clean()
