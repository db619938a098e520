"""The self-contained HTML report and the multi-capture index (no browser:
tests/browser/ drives Chromium on the same pages)."""

from __future__ import annotations

import base64
import hashlib
import html as _html
import re

import numpy as np
import orjson
import pytest

import attlens
from attlens.analysis.plan import make_plan
from attlens.analysis.waves import analyze_waves
from attlens.report.html import (
    _coverage,
    build_report_data,
    index_entry,
    json_for_script,
    render_captures,
    render_html,
    render_html_text,
    render_index,
)
from attlens.synth import write_capture
from attlens.synth.toy import Op, default_kernel
from attlens.report.viewerdata import WAVE_DETAIL_LIMIT, detail_waves, pack, pack_columns, unpack, unpack_wave
from conftest import loaded, require_shared

EVIL_NAME = "k</script><script>window.__pwned=1</script><img src=x onerror='window.__pwned=2'><!--{{DATA}}\u2028&amp;"
EVIL_LINE = "wait_global()  # </script><script>window.__pwned=3</script><b>bold</b> & <i>"
EVIL_PATH = "/tmp/<img src=x onerror='window.__pwned=5'>.py:7"
EVIL_ISA = "v_pk_add_f32 v[10:11], v[0:1], v[2:3] ; </SCRIPT ><script>window.__pwned=4</script>"


def crafted_kernel():
    """The demo kernel with markup and script tags in its name, a source
    line, a source path and an instruction's text."""
    k = default_kernel()
    k.name = EVIL_NAME
    lines = k.source_text.split("\n")
    lines[23] = EVIL_LINE  # toy_kernel.py:24, the planted hotspot
    k.source_text = "\n".join(lines)
    k.body[5] = Op(EVIL_ISA, 25, size=8, source=EVIL_PATH)
    return k


def _pipeline(path):
    r = attlens.analyze(attlens.load(path))
    return r, make_plan(r), analyze_waves(r)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return _pipeline(write_capture(tmp_path_factory.mktemp("toy")))


@pytest.fixture(scope="module")
def evil(tmp_path_factory):
    return _pipeline(write_capture(tmp_path_factory.mktemp("evil"), crafted_kernel()))


def embedded_data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="attlens-data">(.*?)</script>', page, re.S)
    assert m, "no data block"
    return orjson.loads(m.group(1))


def test_render_writes_atomically_and_returns_size(toy, tmp_path):
    out = tmp_path / "sub" / "report.html"
    n = render_html(*toy, out)
    assert out.is_file() and n == out.stat().st_size
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.html"], "no temporary file left behind"
    n2 = render_html(*toy, out)  # overwrite in place
    assert n2 == n


def test_embedded_data_equals_json_analysis(toy):
    r, plan, wa = toy
    data = embedded_data(render_html_text(r, plan, wa))
    assert data["analysis"] == orjson.loads(orjson.dumps(r.to_dict(20), option=orjson.OPT_NON_STR_KEYS))
    h, t = data["headline"], data["analysis"]["totals"]
    assert h["latency"] == t["latency"] and h["stall"] == t["stall"] and h["idle"] == t["idle"]
    assert h["total_cycles"] == t["latency"] + t["idle"] == data["plan"]["totals"]["cycles"]
    isa = data["isa"]
    assert len(isa["pc"]) == r.hotspots.listed
    assert sum(isa["stall"]) == t["stall"] and sum(isa["latency"]) == t["latency"] and sum(isa["idle"]) == t["idle"]
    # every listed pc is on exactly one source line
    pcs = [p for ln in data["source"]["lines"] for p in ln["pcs"]]
    assert sorted(pcs) == sorted(isa["pc"])
    # the planted hotspot: the wait on toy_kernel.py:24 is the hottest line
    hot = max(data["source"]["lines"], key=lambda ln: ln["stall"])
    assert hot["key"].endswith("toy_kernel.py:24")
    # memory -> wait: the planted wait waited on the global load
    wait_pc = next(p for p, txt in zip(isa["pc"], isa["text"]) if txt == "s_waitcnt vmcnt(0)")
    prods = data["deps"]["waits"][str(wait_pc)]
    assert any(isa["text"][isa["pc"].index(p)].startswith("buffer_load_dwordx4") for p, _ in prods)


def test_timeline_downsampling_is_consistent(toy):
    r, plan, wa = toy
    tl = build_report_data(r, plan, wa)["timeline"]
    d = r.dispatch
    w = d.waves
    assert len(tl["lanes"]) == len(set(zip(w.se.tolist(), w.cu.tolist(), w.simd.tolist(), w.slot.tolist())))
    assert sorted(unpack(tl["waves"]["index"]).tolist()) == list(range(w.count))
    for layer in (tl["state"], tl["cls"]):
        off, start, val = layer["off"], unpack(layer["start"]), unpack(layer["val"])
        assert len(off) == len(tl["lanes"]) + 1 and off[-1] == len(val) == len(start)
        for a, b in zip(off, off[1:]):
            starts = np.cumsum(start[a:b])
            assert starts[0] == 0 and np.all(np.diff(starts) > 0) and starts[-1] < tl["bins"]
    # mean resident waves x window = sum of wave lifetimes
    shift = np.array([(wa.clock.se_offsets_cycles or {}).get(int(se), 0) for se in w.se.tolist()])
    life = int((w.end - w.begin).sum())
    occ = tl["occupancy"]
    resident = unpack(occ["resident"]) / occ["scale"] * tl["bin_cycles"]
    assert resident.sum() == pytest.approx(life, rel=0.01)
    # per SE: the wave states of each SE's waves cover their lifetimes (IDLE, EXEC, WAIT, STALL)
    per_se = occ["per_se"]
    assert per_se["se"] == sorted(set(w.se.tolist()))
    n_bins = tl["bins"]
    for k, se in enumerate(per_se["se"]):
        covered = sum(unpack(per_se["states"][s])[k * n_bins:(k + 1) * n_bins].sum() for s in ("IDLE", "EXEC", "WAIT", "STALL"))
        want = int(wa.states.per_wave[w.se == se][:, 1:].sum())
        assert covered / occ["scale"] * tl["bin_cycles"] == pytest.approx(want, rel=0.01)
        assert per_se["simds"][k] == len({(c, m) for s_, c, m in zip(w.se.tolist(), w.cu.tolist(), w.simd.tolist()) if s_ == se})
    assert tl["t1"] - tl["t0"] == int((w.end + shift).max() - (w.begin + shift).min())
    assert set(tl["state_names"][1:]) == {"IDLE", "EXEC", "WAIT", "STALL"}


@pytest.mark.parametrize("n", [300, 12])  # overlapping intervals (a difference array), few (their full bins listed)
@pytest.mark.parametrize("outside", [0, 30])  # all in the window, or cycles before and after it (clipped bins)
def test_coverage_matches_brute_force(n, outside):
    rng = np.random.default_rng(1)
    lanes, bins, cats, width, t0 = 3, 17, 4, 7, 100
    start = rng.integers(t0 - outside, t0 + bins * width - 1, n)
    end = np.minimum(start + rng.integers(0, 60, n), t0 + bins * width + outside)
    lane = rng.integers(0, lanes, n)
    cat = rng.integers(0, cats, n)
    got = _coverage(lane, start, end, cat, lanes, bins, cats, t0, width)
    want = np.zeros((lanes, bins, cats))
    for ln, s, e, c in zip(lane, start, end, cat):
        for t in range(s, e):
            want[ln, min(max((t - t0) // width, 0), bins - 1), c] += 1
    assert (start < t0).any() == (end > t0 + bins * width).any() == (outside > 0)
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("dtype, most", [(np.float64, 10**6), (np.float64, 2**52), (np.int64, 10**6)])
def test_dominant_is_the_first_largest_category_of_the_coverage(dtype, most):
    """html._dominant on _coverage's layout: per (lane, bin) the category
    covering most cycles, the first of equals, -1 where nothing ran; one
    maximum over fraction-tagged cycles (float64 grid, cycles x categories
    below 2**53) or a pass per category (int64 grid, or a bound too large)."""
    from attlens.report.html import _dominant

    rng = np.random.default_rng(2)
    n, lanes, bins, cats, width, t0 = 120, 4, 23, 5, 3, 10
    start = rng.integers(t0, t0 + bins * width - 1, n)
    end = np.minimum(start + rng.integers(1, 4, n), t0 + bins * width)  # short: many ties and empty bins
    lane = rng.integers(0, lanes, n)
    cat = rng.integers(0, cats, n)
    cov = _coverage(lane, start, end, cat, lanes, bins, cats, t0, width, dtype)
    plain = np.asarray(cov).copy()  # a plain (lane, bin, category) array (_dominant overwrites cov)
    got = _dominant(cov, most)
    want = np.where(plain.sum(axis=2) > 0, plain.argmax(axis=2), -1)
    assert (got == want).all() and (got == -1).any() and (got >= 0).any()
    ties = (np.sort(plain, axis=2)[:, :, -1] == np.sort(plain, axis=2)[:, :, -2]) & (plain.max(axis=2) > 0)
    assert ties.any(), "the case covers equal categories"


@pytest.mark.parametrize("cats", [1, 8, 9])  # the tie fractions: 1, 8 and 16ths
def test_dominant_by_max_with_large_cycles_and_many_categories(cats):
    """The fraction-tagged maximum stays exact up to its bound (cycles x the
    power of two above the categories below 2**53), ties to the first."""
    from attlens.report.html import _dominant

    rng = np.random.default_rng(cats)
    tie = 1 << (cats - 1).bit_length()
    most = 2**53 // tie - 1
    plain = rng.integers(0, 3, size=(6, 50, cats)) * (most // 2)  # large values, many ties, some empty cells
    cov = plain.astype(np.float64).transpose(2, 0, 1).copy().transpose(1, 2, 0)  # _coverage's category-major layout
    got = _dominant(cov, most)
    want = np.where(plain.max(axis=2) > 0, plain.argmax(axis=2), -1)
    assert (got == want).all()


def test_lanes_are_the_sorted_distinct_slots_of_the_waves():
    """html._lanes and _simds_per_se against the plain set, sort and lookups."""
    from types import SimpleNamespace

    from attlens.report.html import _lanes, _simds_per_se

    rng = np.random.default_rng(4)
    n = 400
    w = SimpleNamespace(se=rng.integers(0, 3, n).astype(np.int32), cu=rng.integers(-1, 4, n).astype(np.int16),
                        simd=rng.integers(0, 4, n).astype(np.uint8), slot=rng.integers(0, 16, n).astype(np.int32))
    rows = list(zip(w.se.tolist(), w.cu.tolist(), w.simd.tolist(), w.slot.tolist()))
    keys = sorted(set(rows))
    lane_keys, lane = _lanes(w)
    assert [tuple(k) for k in lane_keys.tolist()] == keys
    assert lane.tolist() == [keys.index(r) for r in rows]
    se_ids, se_of_lane = np.unique(lane_keys[:, 0], return_inverse=True)
    want = [len({(k[1], k[2]) for k in keys if k[0] == se}) for se in se_ids.tolist()]
    assert _simds_per_se(lane_keys, se_of_lane, len(se_ids)) == want


def test_crafted_markup_stays_text(evil):
    r, plan, wa = evil
    assert r.dispatch.kernel_name == EVIL_NAME
    page = render_html_text(r, plan, wa)
    # exactly the page's own two script elements; no trace text closes or opens one
    assert len(re.findall(r"<script", page, re.I)) == 2
    assert len(re.findall(r"</script", page, re.I)) == 2
    block = re.search(r'<script type="application/json" id="attlens-data">(.*?)</script>', page, re.S).group(1)
    outside = page.replace(block, "")
    title = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
    assert "__pwned" not in outside.replace(title, ""), "trace text only in the title and the data block"
    assert "<img src=x" not in page and "<b>bold</b>" not in page and "<!--" not in page
    assert not re.search(r"[<>&\u2028\u2029]", block)
    # the title is HTML-escaped, and the data block gives back the exact strings
    assert _html.unescape(title) == f"attlens report — {EVIL_NAME}"
    data = embedded_data(page)
    assert data["analysis"]["capture"]["kernel"] == EVIL_NAME
    assert EVIL_ISA in data["isa"]["text"]
    assert any(ln["key"] == EVIL_PATH for ln in data["source"]["lines"])
    text = next(f["text"] for f in data["source"]["files"] if f["file"].endswith("toy_kernel.py"))
    assert text[23] == EVIL_LINE


def test_json_for_script_escapes():
    s = json_for_script({"a": "</script><!--&\u2028\u2029", "b": [1, 2]})
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s
    assert orjson.loads(s) == {"a": "</script><!--&\u2028\u2029", "b": [1, 2]}


def test_page_is_self_contained_and_pins_its_script(toy):
    page = render_html_text(*toy)
    # no external resource of any kind
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:|//)""", page, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?(?:https?:|//)", page, re.I)
    assert "<link" not in page.lower()
    # the CSP allows the inline script by its hash and nothing else
    csp = _html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1))
    assert "default-src 'none'" in csp and "unsafe-eval" not in csp
    script = page.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp


def test_pmc_block(toy):
    from attlens.analysis.pmc import analyze_pmc

    r, plan, wa = toy
    counters = {"TCC_HIT_sum": 750.0, "TCC_MISS_sum": 250.0, "TCC_REQ_sum": 1000.0, "TCC_EA0_RDREQ_sum": 200.0,
                "TCC_EA0_RDREQ_32B_sum": 0.0, "TCC_EA0_RDREQ_64B_sum": 0.0, "TCC_EA0_RDREQ_128B_sum": 200.0,
                "TCC_EA0_WRREQ_sum": 10.0, "TCC_EA0_WRREQ_64B_sum": 10.0, "GRBM_GUI_ACTIVE": 1000.0}
    pmc = analyze_pmc(counters, "gfx950", dispatch_id=r.dispatch.resources.dispatch_id)
    data = embedded_data(render_html_text(r, plan, wa, pmc=pmc))
    assert data["pmc"]["l2"]["hit_rate"] == pytest.approx(0.75)
    assert data["pmc"]["dispatch_id"] == r.dispatch.resources.dispatch_id
    assert embedded_data(render_html_text(r, plan, wa))["pmc"] is None


def test_index_page(tmp_path, toy, evil):
    entries = [index_entry(toy[0], toy[1], "a/toy report.html"), index_entry(evil[0], evil[1], "javascript:alert(1)"),
               {"path": "/x/<b>broken</b>", "error": "no filenames.json <script>"}]
    out = tmp_path / "index.html"
    n = render_index(entries, out)
    page = out.read_text()
    assert n == out.stat().st_size
    assert "<script" not in page.lower() and "<b>broken" not in page and "<img" not in page
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs == ["a/toy%20report.html", "javascript%3Aalert%281%29"]
    assert _html.escape(EVIL_NAME) in page
    assert f'{toy[0].breakdown.total_latency + toy[0].breakdown.total_idle:,}' in page
    assert toy[1].findings[0].title in page


def test_render_captures_one_and_several(tmp_path):
    a = write_capture(tmp_path / "a")
    b = write_capture(tmp_path / "b", dispatch_id=9)
    one = render_captures([a], tmp_path / "one.html")
    assert one == [tmp_path / "one.html"] and one[0].stat().st_size > 0
    out = render_captures([a, b, tmp_path / "missing"], tmp_path / "site" / "index.html")
    assert out[-1] == tmp_path / "site" / "index.html"
    names = sorted(p.name for p in out[:-1])
    assert names == ["toy_kernel-d7.html", "toy_kernel-d9.html"]
    page = out[-1].read_text()
    assert all(f'href="{n}"' in page for n in names) and "missing" in page


def test_softmax_report_size(tmp_path):
    """The 2,056-wave capture: well under the 10 MB budget."""
    shared = require_shared()
    path = shared / "traces/softmax/big/ui_output_agent_47920_dispatch_13"
    d, r = loaded(path)
    n = render_html(r, make_plan(r), analyze_waves(r), tmp_path / "softmax.html")
    assert n < 10 * 2**20
    data = embedded_data((tmp_path / "softmax.html").read_text())
    assert data["timeline"]["waves"]["index"]["n"] == 2056
    assert data["timeline"]["bins"] <= 6000
    assert len(data["wave_detail"]["waves"]) == WAVE_DETAIL_LIMIT
    assert n < 2 * 2**20, "the viewer panels keep the softmax report near its former 1.15 MB"


def test_report_plan_takes_the_attached_counters_bytes(tmp_path):
    """report --pmc: counters that match the capture (kernel, target,
    dispatch) replace the trace's byte estimate in the plan's bandwidth rule;
    forced over a mismatch, they are shown but the plan keeps the trace's."""
    import dataclasses

    from attlens.analysis.pmc import PmcCounters
    from attlens.errors import Incomparable
    from attlens.report.html import render_captures

    shared = require_shared()
    cap = shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25"
    vcopy = attlens.pmc(shared / "rocprofv3-samples/rocprof-compute-vcopy/MI350/pmc_perf.csv")
    duration_ns, peak = 18420, 8000.0  # median of the 24 vecAddKernel_0 dispatches of discover_kernel_trace.csv; MI350X HBM3E
    moved = 0.9 * peak * duration_ns
    own = dataclasses.replace(vcopy.results[0], kernel="vecAddKernel_0", dispatch_id=25, target="gfx950",
                              bytes_moved=moved, read_bytes=moved * 2 / 3, write_bytes=moved / 3, duration_ns=None)

    def ceiling(counters, force=False):
        out = tmp_path / f"r{len(list(tmp_path.iterdir()))}.html"
        render_captures([cap], out, pmc=counters, force=force)
        data = embedded_data(out.read_text())
        (f,) = [f for f in data["plan"]["findings"] if f["rule"] == "bandwidth-ceiling"]
        return data, f["evidence"]

    data, ev = ceiling(PmcCounters([own], "own.csv", "gfx950"))
    assert data["pmc"]["attached"]["checks"] and ev["source"] == "pmc"
    assert ev["bytes_moved"] == moved and ev["duration_ns"] == duration_ns and ev["fraction_of_peak"] == pytest.approx(0.9, abs=1e-4)
    # the clean twin: no counters, the trace's own estimate (40,000 waves x 3,096 B)
    _, ev = ceiling(None)
    assert ev["source"] == "trace" and ev["bytes_moved"] == 40000 * 3096
    # contradiction twin: another kernel's counters, attached by force, do not feed the plan
    with pytest.raises(Incomparable):
        ceiling(vcopy)
    data, ev = ceiling(vcopy, force=True)
    assert data["pmc"]["attached"]["forced"] and ev["source"] == "trace"


def test_report_plan_predictions_replayed_in_a_child_that_started_early(tmp_path, monkeypatch):
    """render_captures: a forked child builds the replay engine while this
    process analyzes the waves and runs the rules, then replays the findings
    it is sent; the page's plan is the plan made in one process (predictions
    included), and so is the page made without the fork."""
    import os

    from attlens.report import html as h
    from conftest import require_fork

    require_fork()
    cap = require_shared() / "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
    seen = tmp_path / "pids"
    real = h._replay_ahead

    def spy(r):
        with open(seen, "a") as f:
            f.write(f"{os.getpid()}\n")
        return real(r)

    monkeypatch.setattr(h, "_replay_ahead", spy)
    render_captures([cap], tmp_path / "forked.html")
    assert seen.read_text().split() != [str(os.getpid())] and len(seen.read_text().split()) == 1, "the engine was built in the child"
    page = (tmp_path / "forked.html").read_text()
    r = attlens.analyze(attlens.load(cap))
    want = orjson.loads(orjson.dumps(make_plan(r).to_dict(), option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY))
    got = embedded_data(page)["plan"]
    assert got == want
    assert any((f.get("predicted") or {}).get("expressible") for f in got["findings"]), "a finding the replay predicts"
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", "1")
    render_captures([cap], tmp_path / "one.html")
    assert (tmp_path / "one.html").read_text() == page


def test_report_without_a_replay_has_the_child_make_the_timeline_and_panels(tmp_path, monkeypatch):
    """No replay (too many records, or no stalls recorded): the child has no
    replay to run, so it makes the timeline and both viewer panels while this
    process analyzes the waves and runs the rules; the page is the page made
    in one process, and the wave states reach the digest once (one data file)."""
    import os

    import attlens.analysis.plan as plan_mod
    from attlens.report import html as h
    from conftest import require_fork

    require_fork()
    monkeypatch.setenv("ATTLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(plan_mod, "replays_with_plan", lambda result: False)
    cap = require_shared() / "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
    seen = tmp_path / "pids"
    real = h._timeline

    def spy(result, waves):
        with open(seen, "a") as f:
            f.write(f"{os.getpid()}\n")
        return real(result, waves)

    monkeypatch.setattr(h, "_timeline", spy)
    render_captures([cap], tmp_path / "forked.html")
    assert seen.read_text().split() != [str(os.getpid())] and len(seen.read_text().split()) == 1, "the timeline was made in the child"
    assert len(list((tmp_path / "cache").rglob("derived-wavestates-v2*.bin"))) == 1
    page = (tmp_path / "forked.html").read_text()
    assert embedded_data(page)["timeline"] and embedded_data(page)["scope"] and embedded_data(page)["wave_detail"]
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", "1")
    monkeypatch.setenv("ATTLENS_CACHE_DIR", str(tmp_path / "cache1"))
    render_captures([cap], tmp_path / "one.html")
    assert (tmp_path / "one.html").read_text() == page


def test_packed_arrays_round_trip():
    for values in ([], [0, 1, -1, 127, -128], [300, -300], [70_000, -5], [2**40, -(2**40)]):
        p = pack(values)
        assert unpack(p).tolist() == list(values)
    assert [pack([1])["t"], pack([300])["t"], pack([70_000])["t"], pack([2**40])["t"]] == ["i8", "i16", "i32", "f64"]
    cols = [[1, 2], [], [40_000, 1], [-3]]
    assert [c.tolist() for c in unpack(pack_columns(cols))] == cols


def test_scope_cells_are_the_records_per_pc_and_clock_bin(toy):
    """The hotspot scope: hit, latency, stall and idle per (pc, bin) equal a
    direct count over the records, and the whole range sums to the totals."""
    r, plan, wa = toy
    data = build_report_data(r, plan, wa)
    sc, tl = data["scope"], data["timeline"]
    d = r.dispatch
    recs = d.records
    step, hit, lat, stall, idle = unpack(sc["cells"])
    cell = np.cumsum(step)
    nb = sc["bins"]
    assert sc["t0"] == tl["t0"] and sc["bin_cycles"] % tl["bin_cycles"] == 0 and nb * sc["bin_cycles"] >= tl["t1"] - tl["t0"]
    offs = wa.clock.se_offsets_cycles or {}
    t = recs.time.astype(np.int64) + np.array([offs.get(int(s), 0) for s in d.waves.se.tolist()])[recs.wave]
    want = {}
    for pc, b, du, st, idl in zip(recs.pc.tolist(), ((t - sc["t0"]) // sc["bin_cycles"]).tolist(), recs.duration.tolist(), recs.stall.tolist(), recs.idle.tolist()):
        x = want.setdefault(pc * nb + min(b, nb - 1), [0, 0, 0, 0])
        x[0] += 1; x[1] += du; x[2] += st; x[3] += idl
    assert sorted(want) == cell.tolist()
    assert [want[c] for c in cell.tolist()] == [list(v) for v in zip(hit.tolist(), lat.tolist(), stall.tolist(), idle.tolist())]
    t_ = r.breakdown
    assert (int(hit.sum()), int(lat.sum()), int(stall.sum()), int(idle.sum())) == (recs.count, t_.total_latency, t_.total_stall, t_.total_idle)


def test_wave_detail_holds_each_picked_wave_records(toy):
    r, plan, wa = toy
    data = build_report_data(r, plan, wa)
    wd = data["wave_detail"]
    d = r.dispatch
    w, recs, tl = d.waves, d.records, d.timeline
    assert wd["waves"] == list(range(w.count))  # the toy has fewer waves than the limit
    for i, blob in zip(wd["waves"], wd["blob"]):
        got = unpack_wave(blob)
        a, b = int(w.rec_start[i]), int(w.rec_stop[i])
        assert got["pc"].tolist() == recs.pc[a:b].tolist()
        assert (got["time"] + int(w.begin[i])).tolist() == recs.time[a:b].tolist()
        assert got["duration"].tolist() == recs.duration[a:b].tolist() and got["stall"].tolist() == recs.stall[a:b].tolist()
        s, e = int(w.tl_start[i]), int(w.tl_stop[i])
        assert got["state"].tolist() == tl.state[s:e].tolist() and got["state_cycles"].tolist() == tl.duration[s:e].tolist()


def test_detail_waves_spread_over_the_dispatch():
    begin = np.arange(1000) * 10
    end = begin + 100
    end[500] += 10_000  # the longest
    end[20] -= 90  # the shortest
    picks = detail_waves(begin, end, limit=50)
    assert len(picks) <= 50 and 500 in picks and 20 in picks and 0 in picks and 999 in picks
    gaps = np.diff([p for p in picks if p not in (500, 20)])
    assert gaps.max() <= 2 * 1000 / 48
    assert detail_waves(begin[:30], end[:30], limit=50) == list(range(30))
