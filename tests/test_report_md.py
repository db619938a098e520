"""The Markdown report bundle: report.md (structure, numbers equal to the JSON
analysis beside it) and analysis.json."""

from __future__ import annotations

import re

import orjson
import pytest
from markdown_it import MarkdownIt

import attlens
from attlens.analysis.plan import make_plan
from attlens.analysis.waves import analyze_waves
from attlens.report.markdown import pc_ranges, render_markdown_bundle, report_to_markdown
from attlens.synth import write_capture
from attlens.synth.toy import Op, default_kernel
from conftest import loaded, require_shared

SECTIONS = [
    "# attlens report",
    "**Verdict:**",  # the story first: the verdict and the top findings, before any number
    "Top findings:",
    "## Headline",
    "## Wave states",
    "## Instruction stall by class",
    "## Occupancy",
    "## Top ",  # source lines
    "## Top ",  # instructions
    "## PC range → source",
    "## Recommendations",
    "## Pipe utilization",
    "## Capture",  # the capture's metadata after the story
    "## Reproduce",
]


def _pipeline(path):
    r = attlens.analyze(attlens.load(path))
    return r, make_plan(r), analyze_waves(r)


@pytest.fixture(scope="module")
def toy_bundle(tmp_path_factory):
    cap = write_capture(tmp_path_factory.mktemp("toy"))
    r, plan, wa = _pipeline(cap)
    out = tmp_path_factory.mktemp("md") / "out"
    md, js = render_markdown_bundle(r, plan, wa, out)
    return r, plan, wa, md.read_text(), orjson.loads(js.read_bytes()), out


def _num(s: str):
    s = s.strip()
    if s in ("n/a", "-"):
        return None
    if s.endswith("%"):
        return float(s[:-1]) / 100
    return int(s.replace(",", ""))


def _section(md: str, heading_prefix: str) -> str:
    i = md.index("\n" + heading_prefix)
    j = md.find("\n## ", i + 1)
    return md[i: j if j >= 0 else None]


def _table(text: str) -> list[list[str]]:
    """The first pipe table of ``text`` as rows of cells (header and rule dropped)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            rows.append(cells)
        elif rows:
            break
    return rows[2:]


def _unspan(s: str) -> str:
    return re.sub(r"^(`+) ?(.*?) ?\1$", r"\2", s).replace("\\|", "|")


def check_numbers(md: str, a: dict, wa, result) -> None:
    t = a["totals"]
    head = {r[0]: r[1] for r in _table(_section(md, "## Headline"))}
    assert _num(head["traced wave-cycles (latency + idle)"]) == t["latency"] + t["idle"]
    assert _num(head["latency"]) == t["latency"]
    assert _num(head["instruction stall"]) == t["stall"]
    assert _num(head["idle"]) == t["idle"]
    assert _num(head["issue (latency − stall)"]) == t["issue"]
    assert _num(head["instruction stall share of latency"]) == pytest.approx(t["stall_share_of_latency"], abs=5e-4)
    theo = a["occupancy"]["theoretical_waves_per_simd"]
    assert head["occupancy, theoretical (waves/SIMD)"].split(" ")[0] == ("n/a" if theo is None else str(theo))

    states = wa.to_dict(per_wave=False)["states"]
    for name, cyc, share in _table(_section(md, "## Wave states")):
        assert _num(cyc) == states["cycles"][name]
        assert _num(share) == pytest.approx(states["share"][name], abs=5e-4)

    rows = _table(_section(md, "## Instruction stall by class"))
    assert [_unspan(r[0]) for r in rows] == [c["class"] for c in a["stall_by_class"]]
    for r, c in zip(rows, a["stall_by_class"]):
        assert _num(r[1]) == c["stall"] and _num(r[3]) == c["latency"] and _num(r[5]) == c["records"]

    lines = _table(_section(md, "## Top " + str(min(10, len(a["hotspots"]["lines_by_stall"]))) + " source lines"))
    want = a["hotspots"]["lines_by_stall"][:10]
    assert len(lines) == len(want)
    for r, ln in zip(lines, want):
        assert _unspan(r[1]) == ln["source"] and _num(r[2]) == ln["stall"] and _num(r[4]) == ln["latency"]
        assert r[7] == f"{ln['executed']}/{ln['instructions']}"

    instrs = _table(_section(md, "## Top " + str(min(10, len(a["hotspots"]["instructions_by_stall"]))) + " instructions"))
    want = a["hotspots"]["instructions_by_stall"][:10]
    assert len(instrs) == len(want)
    for r, h in zip(instrs, want):
        assert int(r[1]) == h["pc"] and _unspan(r[2]) == h["isa"] and _num(r[4]) == h["hit"] and _num(r[6]) == h["stall"]
        assert int(r[10], 16) == h["vaddr"]  # the address beside the pc index

    # pc ranges cover every listed instruction once, with all the stall
    ranges = pc_ranges(result)
    assert sum(x["instructions"] for x in ranges) == a["instructions"]["listed"]
    assert sum(x["stall"] for x in ranges) == t["stall"]


def test_bundle_files_and_json(toy_bundle):
    r, plan, wa, md, js, out = toy_bundle
    assert sorted(p.name for p in out.iterdir()) == ["analysis.json", "report.md"], "no temporary file left behind"
    assert js == orjson.loads(orjson.dumps(r.to_dict(20), option=orjson.OPT_NON_STR_KEYS))
    assert js["schema"] == "attlens.analyze"


def test_structure(toy_bundle):
    r, plan, wa, md, js, out = toy_bundle
    pos = 0
    for h in SECTIONS:
        i = md.find(h, pos)
        assert i >= 0, f"missing or out of order: {h}"
        pos = i + 1
    assert md.startswith("# attlens report — `toy_kernel`")
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert html.count("<table>") >= 8
    # the reproduce block names the capture
    assert f"attlens report {r.dispatch.path} --format md" in md
    assert f"attlens analyze {r.dispatch.path} --json" in md


def test_numbers_equal_json(toy_bundle):
    r, plan, wa, md, js, out = toy_bundle
    check_numbers(md, js, wa, r)


def test_hotspot_context_and_recommendations(toy_bundle):
    r, plan, wa, md, js, out = toy_bundle
    top = js["hotspots"]["instructions_by_stall"][0]
    assert top["isa"] == "s_waitcnt vmcnt(0)" and top["source"].endswith("toy_kernel.py:24")  # the planted hotspot
    block = md[md.index(f"### 1. pc {top['pc']} (0x{top['vaddr']:x}) — `s_waitcnt vmcnt(0)`"):]
    fence = block[block.index("```asm"): block.index("```\n", block.index("```asm") + 3)]
    marked = [ln for ln in fence.splitlines() if ln.startswith(">>")]
    assert len(marked) == 1 and f" {top['pc']} " in marked[0] and "s_waitcnt vmcnt(0)" in marked[0]
    assert len(fence.splitlines()) > 3, "context instructions around the hot one"
    assert "Source `toy_kernel.py:24`: `wait_global()" in block
    assert re.search(r"Waited on: pc \d+ `buffer_load_dwordx4", block)
    rec = _section(md, "## Recommendations")
    assert plan.findings, "the toy kernel fires a rule"
    for i, f in enumerate(plan.findings, 1):
        assert f"### {i}. {f.severity} — " in rec and f"`{f.rule}`" in rec
    assert "Evidence:" in rec and "**Change:**" in rec


def test_crafted_strings_render_literally(tmp_path):
    k = default_kernel()
    k.name = "k`</script><script>alert(1)</script>|<img src=x onerror=alert(2)>"
    k.body[5] = Op("v_pk_add_f32 v[10:11], v[0:1], v[2:3] ; <script>alert(3)</script> | ``` x", 25, size=8,
                   source="/tmp/<b>x</b>|y.py:7")
    r, plan, wa = _pipeline(write_capture(tmp_path / "cap", k))
    md = report_to_markdown(r, plan, wa)
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in html
    # tables keep their shape despite | in the trace strings
    ranges = _section(md, "## PC range → source")
    assert all(len(row) == 6 for row in _table(ranges))
    assert any(_unspan(row[3]) == "/tmp/<b>x</b>|y.py:7" for row in _table(ranges))


def test_softmax_markdown_numbers(tmp_path):
    shared = require_shared()
    d, r = loaded(shared / "traces/softmax/big/ui_output_agent_47920_dispatch_13")
    wa = analyze_waves(r)
    md_path, js_path = render_markdown_bundle(r, make_plan(r), wa, tmp_path)
    check_numbers(md_path.read_text(), orjson.loads(js_path.read_bytes()), wa, r)
