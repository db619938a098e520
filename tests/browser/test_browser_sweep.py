"""The sweep dashboard in a real browser (Debian's Chromium via Playwright,
file:// only, every other request blocked): no console error, the table's
numbers are the manifest's, sorting and filtering work, every link resolves,
and text from the sweep file is shown as text."""

from __future__ import annotations

from pathlib import Path

from sweep_helpers import attlens, status, sweep_env, write_sweep
from test_browser_report import ARTIFACTS, browser, open_page  # noqa: F401  (fixtures)

EVIL_SHAPE = "</script><script>window.__pwned=1</script>"
EVIL_TAG = "<img src=x onerror='window.__pwned=2'>"


def _fmt_pct(x):
    return "" if x is None else f"{100 * x:.1f}%"


def test_sweep_dashboard(open_page, tmp_path):  # noqa: F811
    env = sweep_env(tmp_path)
    jobs = [{"name": "g1", "shape": EVIL_SHAPE, "tags": [EVIL_TAG]}, {"name": "g2", "shape": "second"},
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
        assert c["dominant_class"]["text"] == f"{s['dominant_class']}{_fmt_pct(s['dominant_class_share'])} of stall"
        assert c["stall_share"]["value"] == s["stall_share"] and _fmt_pct(s["stall_share"]) in c["stall_share"]["text"]
        o_ = s["occupancy"]
        assert c["occupancy"]["value"] == o_["theoretical"] and c["occupancy"]["text"].startswith(f"{o_['theoretical']} / {o_['observed']}")
        f = s["top_finding"]
        assert c["top_finding"]["value"] == f["share"] and f["title"] in c["top_finding"]["text"] and f"[{f['rule']}]" in c["top_finding"]["text"]
        assert c["bandwidth_fraction"]["value"] is None and c["bandwidth_fraction"]["text"] == ""  # unknown: blank, never 0
        assert c["health"]["text"].startswith(s["health"]["status"])
        # the stall mix bar: one segment per class, widths = the manifest's shares
        segs = page.eval_on_selector_all(f"#sweep-table tr[data-job='{r['job']}'] .mix span",
                                         "ss => ss.map(x => [x.dataset.cls, parseFloat(x.style.width)])")
        assert {k: round(v / 100, 6) for k, v in segs} == {k: round(v, 6) for k, v in s["stall_mix"].items()}
    assert manifest["g1"]["summary"]["shape"] == EVIL_SHAPE and EVIL_TAG in page.text_content("#sweep-table tr[data-job='g1']")

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
