"""attlens report from the command line."""

import json
import subprocess
import sys

from attlens.synth import default_kernel, write_capture
from conftest import require_shared


def run(*args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stdout + p.stderr
    assert p.returncode == code, p.stderr
    return p


def test_report_html_md_index_and_diff(tmp_path):
    a = write_capture(tmp_path / "a")
    k = default_kernel()
    k.body[5].stall = 100
    b = write_capture(tmp_path / "b", k, dispatch_id=8)
    out = tmp_path / "out"
    run("report", a, "-o", out / "a.html")
    html = (out / "a.html").read_text()
    assert html.startswith("<!doctype html") or html.lower().startswith("<!doctype html")
    assert "http://" not in html.split("</head>")[0] and "https://" not in html.split("</head>")[0]  # nothing fetched
    run("report", a, "--format", "md", "-o", out / "md")
    doc = json.loads((out / "md" / "analysis.json").read_text())
    assert doc["schema"] == "attlens.analyze"
    assert f"{doc['totals']['stall']:,}" in (out / "md" / "report.md").read_text()
    p = run("report", a, b, "-o", out / "index.html")
    assert p.stderr.count("wrote") == 3
    run("report", "--diff", a, b, "-o", out / "diff.html")
    d = (out / "diff.html").read_text()
    assert "toy_kernel.py:25" in d and "<script" not in d
    assert "give one or more" in run("report", "-o", out / "x.html", code=2).stderr


def test_diff_html_escapes_trace_strings(tmp_path):
    k = default_kernel()
    k.name = "evil</script><img src=x onerror=alert(1)>"
    a = write_capture(tmp_path / "a", k)
    b = write_capture(tmp_path / "b", k, dispatch_id=8)
    run("report", "--diff", a, b, "-o", tmp_path / "d.html")
    d = (tmp_path / "d.html").read_text()
    assert "<img src=x" not in d and "&lt;img src=x" in d


def test_report_real_capture_size(tmp_path):
    shared = require_shared()
    out = tmp_path / "vec.html"
    run("report", shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25", "-o", out)
    assert 10_000 < out.stat().st_size < 10_000_000


def test_report_diff_takes_force_and_refuses_what_it_would_ignore(tmp_path):
    """report --diff of two kernels: refused (exit 21) as diff is, written with
    --force (the hint says so); capture paths, --pmc or --format md beside
    --diff are a usage error, not silently dropped."""
    a = write_capture(tmp_path / "a")
    k = default_kernel()
    k.name = "other_kernel"
    b = write_capture(tmp_path / "b", k, dispatch_id=8)
    assert "--force" in run("report", "--diff", a, b, "-o", tmp_path / "d.html", code=21).stderr
    run("report", "--diff", a, b, "-o", tmp_path / "d.html", "--force")
    assert "other_kernel" in (tmp_path / "d.html").read_text()
    for extra in (["--format", "md"], ["--pmc", tmp_path / "x.csv"], [a]):
        assert "--diff" in run("report", "--diff", a, b, "-o", tmp_path / "e.html", *extra, code=2).stderr
    assert not (tmp_path / "e.html").exists()


def test_junit_of_a_kernel_name_with_control_characters_is_xml(tmp_path):
    import xml.etree.ElementTree as ET

    k = default_kernel()
    k.name = "evil\x1b]0;PWNED\x07kernel"
    a = write_capture(tmp_path / "a", k)
    run("check", a, "--baseline", a, "--junit", tmp_path / "r.xml")
    case = ET.parse(tmp_path / "r.xml").getroot().find("testcase")
    assert case.get("name").startswith("evil\\x1b]0;PWNED\\x07kernel")


def test_plan_markdown_file_shows_trace_strings_literally(tmp_path):
    """plan --format md -o FILE: a kernel name with a backtick, a pipe, markup and
    a terminal escape stays one code span, with the control characters visible."""
    k = default_kernel()
    k.name = "evil`|<b>x</b>\x1b]0;PWNED\x07"
    a = write_capture(tmp_path / "a", k)
    run("plan", a, "--format", "md", "-o", tmp_path / "p.md")
    md = (tmp_path / "p.md").read_text()
    assert "\x1b" not in md and "\x07" not in md
    assert md.splitlines()[0] == "# Optimization plan — `` evil`|<b>x</b>\\x1b]0;PWNED\\x07 ``"  # CommonMark: padded double-backtick span


def test_report_exits_8_when_some_input_was_skipped(tmp_path):
    """As analyze does: a capture missing a listed wave file, or an index entry
    that does not load, gives exit 8 and says which in --json."""
    a = write_capture(tmp_path / "a")
    b = write_capture(tmp_path / "b", dispatch_id=8)
    doc = json.loads(run("report", a, "-o", tmp_path / "ok.html", "--json").stdout)
    assert doc["captures"][0]["partial"] is False
    next(a.glob("se*_sm*_sl*_wv*.json")).unlink()
    for fmt in (["-o", tmp_path / "a.html"], ["--format", "md", "-o", tmp_path / "md"]):
        doc = json.loads(run("report", a, *fmt, "--json", code=8).stdout)
        assert doc["captures"][0]["partial"] is True
    (b / "filenames.json").write_text("{")
    doc = json.loads(run("report", a.parent, b.parent, "-o", tmp_path / "index.html", "--json", code=8).stdout)
    assert sorted((str(c["partial"]), c["error"] is None) for c in doc["captures"]) == [("None", False), ("True", True)]
    assert "--pmc" in run("report", a, "--format", "md", "-o", tmp_path / "md2", "--pmc", tmp_path / "x.csv", code=2).stderr
