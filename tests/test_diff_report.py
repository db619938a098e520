"""The diff as Markdown (escaped like the other Markdown renderers) and as an
HTML page in the report's look (charts, percentages, sites), no script."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from attlens.analysis.diff import diff, load_side
from attlens.report.html import diff_to_html
from attlens.report.markdown import diff_to_markdown
from attlens.synth import write_capture
from attlens.synth.toy import Op, default_kernel
from conftest import require_shared

EVIL_KERNEL = "k`</script><script>alert(1)</script>|<img src=x onerror=alert(2)>"
EVIL_PATH = "/tmp/a`b/<img src=x onerror=alert(3)>|x.py:7"


def evil_pair(tmp_path):
    k = default_kernel()
    k.name = EVIL_KERNEL
    k.body[5] = Op("v_pk_add_f32 v[10:11], v[0:1], v[2:3] ; <script>alert(4)</script>", 25, size=8, source=EVIL_PATH)
    a = write_capture(tmp_path / "a`<b>", k)
    k.body[5].stall = 300  # the after side is slower on the crafted line
    b = write_capture(tmp_path / "b", k, dispatch_id=8)
    return diff(load_side(str(a)), load_side(str(b)))


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def test_diff_markdown_escapes_trace_strings(tmp_path):
    res = evil_pair(tmp_path)
    md = diff_to_markdown(res)
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    p = Tags()
    p.feed(html)
    text = "".join(p.text)
    assert EVIL_KERNEL in text, "the kernel name is shown literally (code span longer than its backtick run)"
    assert EVIL_PATH in text and str(tmp_path / "a`<b>") in text
    # tables keep their five columns despite | in paths
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "x.py:7" in ln]
    assert rows and all(len(re.split(r"(?<!\\)\|", r.strip().strip("|"))) == 5 for r in rows)


def test_diff_html_is_escaped_and_scriptless(tmp_path):
    res = evil_pair(tmp_path)
    page = diff_to_html(res)
    p = Tags()
    p.feed(page)
    csp = next(a["content"] for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp.startswith("default-src 'none'") and "script-src" not in csp, "no script may run"
    tags = {t for t, _ in p.tags}
    assert "script" not in tags and "img" not in tags
    assert not any("onerror" in a for _, a in p.tags)
    text = "".join(p.text)
    assert EVIL_KERNEL in text and EVIL_PATH in text, "trace strings shown literally"
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page


def test_diff_html_numbers_charts_and_sites():
    """On the real before/after pair (a compiler location fix): the verdict,
    the per-line chart and the site counts equal the JSON diff."""
    shared = require_shared()
    f1 = shared / "traces/flash_attn_func/big/ui_output_agent_38430_dispatch_44"
    f2 = shared / "traces/flash_attn_func/big/ui_output_agent_55287_dispatch_44_after_loc_fix"
    res = diff(load_side(str(f1)), load_side(str(f2)))
    d = res.to_dict()
    page = diff_to_html(res)
    css = (__import__("attlens.report.html", fromlist=["_template"])._template("report.css"))
    assert css in page, "the report's stylesheet"
    v = d["verdict"]

    def by_id(i):
        return re.search(rf'id="{i}">([^<]*)<', page).group(1)

    assert by_id("lat-before") == f"{v['latency_per_wave_before']:,.0f}" and by_id("lat-after") == f"{v['latency_per_wave_after']:,.0f}"
    assert by_id("lat-change") == f"{100 * v['relative_change']:+.1f}%"
    for k in ("matched", "moved", "added", "removed"):
        assert by_id(f"sites-{k}") == f"{d['sites'][k]:,}"
    assert d["sites"]["moved"] > 1000, "the location fix moved most sites to other lines"
    assert page.count('<svg class="chart"') == 2
    # per-line chart and table: the largest change first, with its percentage
    top = d["lines"][0]
    rows = re.findall(r'<table class="data" id="lines-table">.*?</table>', page, re.S)[0]
    first = re.search(r"<tbody><tr>(.*?)</tr>", rows, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", first, re.S)
    assert top["line"] in cells[0] and cells[1] == f"{top['latency_before']:,.0f}" and cells[2] == f"{top['latency_after']:,.0f}"
    assert re.sub("<[^>]+>", "", cells[3]) == f"{top['delta']:+,.0f}"
    assert cells[4] == ("n/a" if top["relative"] is None else f"{100 * top['relative']:+.1f}%")
    moved = re.findall(r'<table class="data" id="moved-table">.*?</table>', page, re.S)[0]
    assert f"{d['sites']['moved_lines'][0]['sites']:,}" in moved
