"""attlens diff / check: the shared before/after pairs and planted rebuilds."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import orjson
import pytest

from attlens.analysis.diff import diff, load_side
from attlens.synth import Op, default_kernel, write_capture
from conftest import require_shared


def run(*args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stdout + p.stderr
    assert p.returncode == code, p.stderr
    return p


def conserved(res):
    a = sum(s.before.latency for s in res.sites if s.before)
    b = sum(s.after.latency for s in res.sites if s.after)
    assert a == res.before.total_latency and b == res.after.total_latency


def test_location_fix_pair_moves_cycles_off_the_collapsed_line(shared):
    base = shared / "traces/flash_attn_func/big"
    res = diff(load_side(base / "ui_output_agent_38430_dispatch_44"), load_side(base / "ui_output_agent_55287_dispatch_44_after_loc_fix"))
    conserved(res)
    st = res.site_totals
    assert st["added"] == st["removed"] == 0 and st["matched"] + st["moved"] == 1894
    lines = {l.line.rsplit("/", 1)[-1]: l for l in res.lines}
    collapsed = lines["flash_attn_func.py:257"]
    assert collapsed.latency_before > 0.8 * res.verdict["latency_per_wave_before"] and collapsed.latency_after == 0
    helper_gain = sum(l.latency_after for l in res.lines if l.latency_before == 0)
    assert helper_gain > 0.9 * res.verdict["latency_per_wave_after"]
    moved_from_257 = sum(s.after.latency for s in res.sites if s.kind == "moved" and s.moved_from.endswith(":257"))
    assert moved_from_257 > 0
    assert res.comparability == []


def test_small_vs_big_is_reported_and_normalized_per_wave(shared):
    base = shared / "traces/flash_attn_func"
    a, b = load_side(base / "big/ui_output_agent_38430_dispatch_44"), load_side(base / "small/ui_output_agent_32235_dispatch_44")
    res = diff(a, b)
    fields = {c["field"]: c for c in res.comparability}
    assert fields["traced waves"]["before"] == 32 and fields["traced waves"]["after"] == 4
    assert not any(c["blocking"] for c in res.comparability)
    assert res.verdict["latency_per_wave_before"] == pytest.approx(a.total_latency / 32)
    assert res.verdict["latency_per_wave_after"] == pytest.approx(b.total_latency / 4)
    conserved(res)


def test_incomparable_kernels_refused_unless_forced(shared):
    t = shared / "traces"
    a, b = t / "vec_add/big/ui_output_agent_14705_dispatch_25", t / "softmax/big/ui_output_agent_47920_dispatch_13"
    assert "not comparable" in run("diff", a, b, code=21).stderr
    doc = json.loads(run("diff", a, b, "--force", "--json").stdout)
    assert doc["forced"] and any(c["field"] == "kernel" for c in doc["comparability"])
    run("check", a, "--baseline", b, code=21)


# ---- planted rebuilds on the toy kernel (docs/demo.md)


def _cap(tmp, name, kernel=None, **kw):
    return write_capture(tmp / name, kernel or default_kernel(), **kw)


def test_shifted_addresses_change_nothing(tmp_path):
    a = _cap(tmp_path, "a")
    b = _cap(tmp_path, "b")
    code = orjson.loads((b / "code.json").read_bytes())
    for row in code["code"]:
        row[5] += 0x400  # a rebuild moved the kernel
    (b / "code.json").write_bytes(orjson.dumps(code))
    res = diff(load_side(a), load_side(b))
    assert res.site_totals["added"] == res.site_totals["removed"] == res.site_totals["moved"] == 0
    assert all(l.delta == 0 for l in res.lines)


def test_inserted_instruction_is_one_added_site(tmp_path):
    a = _cap(tmp_path, "a")
    k = default_kernel()
    k.body.insert(6, Op("v_mul_f32_e32 v12, v10, v11", 25))  # one new instruction on line 25
    b = _cap(tmp_path, "b", k)
    res = diff(load_side(a), load_side(b))
    added = [s for s in res.sites if s.kind == "added"]
    assert len(added) == 1 and added[0].after.mnemonic == "v_mul_f32_e32" and added[0].line.endswith(":25")
    assert res.site_totals["removed"] == 0 and res.site_totals["moved"] == 0
    conserved(res)


def _with_prefix(prefix):
    k = default_kernel()
    for op in k.listing:
        if op.line is not None:
            op.source = f"{prefix}/proj/kernels/toy_kernel.py:{op.line}"
    return k


def test_renamed_path_prefix_still_matches_lines(tmp_path):
    a = _cap(tmp_path, "a", _with_prefix("/home/alice/checkout"))
    b = _cap(tmp_path, "b", _with_prefix("/scratch/ci/build-7/src"))
    res = diff(load_side(a), load_side(b))
    assert res.site_totals["added"] == res.site_totals["removed"] == res.site_totals["moved"] == 0
    assert all(l.before_line is not None and l.delta == 0 for l in res.lines)


def _planted(stall):
    k = default_kernel()
    k.body[5].stall = stall  # v_pk_add_f32 on line 25
    return k


def test_planted_2x_regression_is_exactly_found(tmp_path):
    a = _cap(tmp_path, "a", _planted(100))
    b = _cap(tmp_path, "b", _planted(200))
    res = diff(load_side(a), load_side(b), noise_floor=0.0)
    top = res.verdict["top_regressions"][0]
    assert top["line"].endswith("toy_kernel.py:25")
    line = next(l for l in res.lines if l.line.endswith(":25"))
    assert line.stall_after == pytest.approx(2 * line.stall_before)
    assert [l.line for l in res.lines if l.delta != 0] == [line.line]  # nothing else changed
    assert res.verdict["significant"] is True


def test_json_inputs_and_check_gate(tmp_path):
    a = _cap(tmp_path, "a", _planted(100))
    b = _cap(tmp_path, "b", _planted(200))
    ja, jb = tmp_path / "a.json", tmp_path / "b.json"
    ja.write_text(run("analyze", a, "--json", "--topk", "0", "--no-exposed").stdout)
    jb.write_text(run("analyze", b, "--json", "--topk", "0", "--no-exposed").stdout)
    from_json = json.loads(run("diff", ja, jb, "--json").stdout)
    from_dirs = json.loads(run("diff", a, b, "--json").stdout)
    assert from_json["verdict"] == {**from_dirs["verdict"]}
    short = tmp_path / "short.json"
    short.write_text(run("analyze", a, "--json").stdout)
    assert "--top 0" in run("diff", short, jb, code=2).stderr
    # check: pass, fail, JUnit
    assert "ok" in run("check", a, "--baseline", a).stdout
    junit = tmp_path / "r.xml"
    p = run("check", b, "--baseline", a, "--metric", "line:toy_kernel.py:25", "--max-regression", "10", "--junit", junit, code=20)
    assert "REGRESSION" in p.stdout
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "1" and suite.find("testcase/failure") is not None
    run("check", b, "--baseline", a, "--metric", "class:hazard", "--max-regression", "10")  # that class did not move
    assert "unknown class" in run("check", b, "--baseline", a, "--metric", "class:nope", code=2).stderr
    md = run("diff", a, b, "--format", "md").stdout
    assert "## Per source line" in md and "toy_kernel.py:25" in md


# --------------------------------------------------------------------------- a gate never passes on damaged input (issue 23)

FLASH_SMALL = "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"


@pytest.fixture
def pair(tmp_path):
    """The original capture, and a copy with one wave file cut in half
    (analyze: exit 8, a warning naming the file, "code.json sums differ")."""
    import shutil

    shared = require_shared()
    orig = tmp_path / "orig" / "C"
    shutil.copytree(shared / FLASH_SMALL, orig)
    damaged = tmp_path / "damaged" / "C"
    shutil.copytree(orig, damaged)
    wave = damaged / "se3_sm1_sl0_wv0.json"
    wave.write_bytes(wave.read_bytes()[: wave.stat().st_size // 2])
    return orig, damaged


def _warned(doc, needle="se3_sm1_sl0_wv0.json"):
    return [w for w in doc["warnings"] if needle in w]


def test_check_fails_on_a_partly_read_capture(pair, tmp_path):
    """Row 3: check exits 22 (not 0), passed false, the warnings carried,
    whichever side is damaged, also from a saved analysis and in JUnit."""
    from attlens.errors import EXIT_GATE_PARTIAL
    from clirun import assert_clean, run_main

    orig, damaged = pair
    analyzed = run_main("analyze", damaged, "--json")
    assert analyzed.code == 8 and any("code.json sums differ" in w for w in analyzed.json()["warnings"])
    saved = tmp_path / "damaged.json"
    saved.write_text(run_main("analyze", damaged, "--json", "--top", "0").out)
    junit = tmp_path / "gate.xml"
    for cur, base in ((damaged, orig), (orig, damaged), (saved, orig)):
        o = run_main("check", cur, "--baseline", base, "--json", "--max-regression", "1000", "--junit", junit)
        assert_clean(o)
        doc = o.json()
        assert o.code == EXIT_GATE_PARTIAL and doc["passed"] is False and doc["partial"] is True, o.describe()
        side = "current" if cur != orig else "baseline"
        assert _warned(doc, f"{side}: se3_sm1_sl0_wv0.json") and any("code.json sums differ" in w for w in doc["warnings"])
        assert "partly read" in o.err
        failure = ET.parse(junit).getroot().find("testcase/failure")
        assert failure is not None and failure.get("type") == "partial-input"
    text = run_main("check", damaged, "--baseline", orig)
    assert text.code == EXIT_GATE_PARTIAL and "PARTIAL INPUT" in text.out and "se3_sm1_sl0_wv0.json" in text.err


def test_check_of_whole_captures_passes(pair):
    """The clean twin: the same gate on the original against itself passes, with no warning."""
    from clirun import run_main

    orig, _ = pair
    o = run_main("check", orig, "--baseline", orig, "--json")
    assert o.code == 0 and o.json()["passed"] is True and o.json()["partial"] is False and not _warned(o.json())
    assert all(w.startswith(("current: location collapse", "baseline: location collapse")) for w in o.json()["warnings"])


def test_diff_says_partial_and_carries_the_warnings(pair):
    """Row 3: diff exits 8 (as analyze), says "partial" in its verdict and in
    every format, and its JSON carries both sides' warnings."""
    from clirun import assert_clean, run_main

    orig, damaged = pair
    o = run_main("diff", orig, damaged, "--json")
    assert_clean(o)
    doc = o.json()
    assert o.code == 8 and doc["partial"] is True and doc["after"]["partial"] is True and doc["before"]["partial"] is False
    assert "partial" in doc["verdict"]["summary"] and _warned(doc, "after: se3_sm1_sl0_wv0.json")
    for fmt in ("text", "md"):
        t = run_main("diff", orig, damaged, "--format", fmt, "--no-color")
        assert t.code == 8 and "partial" in t.out and "se3_sm1_sl0_wv0.json" in t.err
    twin = run_main("diff", orig, orig, "--json")
    assert twin.code == 0 and twin.json()["partial"] is False and not _warned(twin.json())
    assert "partial" not in twin.json()["verdict"]["summary"]


@pytest.mark.parametrize("cmd", [["plan"], ["deps"], ["waves"], ["asm", "--pc", "100"], ["waits"], ["occupancy"],
                                 ["analyze", "--by", "line"]])
def test_every_one_capture_answer_carries_analyzes_warnings(pair, cmd):
    """Row 3: plan --json / deps --json dropped analyze's warnings (the
    skipped file, "code.json sums differ"); every one-capture object carries
    them, and the partial exit code; the twin on the whole capture has none."""
    from clirun import assert_clean, run_main

    orig, damaged = pair
    want = run_main("analyze", damaged, "--json").json()["warnings"]
    o = run_main(cmd[0], damaged, *cmd[1:], "--json")
    assert_clean(o)
    assert o.code == 8 and o.json()["warnings"] == want, o.describe()
    twin = run_main(cmd[0], orig, *cmd[1:], "--json")
    assert twin.code == 0 and twin.json()["warnings"] == run_main("analyze", orig, "--json").json()["warnings"]
    assert not _warned(twin.json())


def test_report_carries_the_warnings(pair, tmp_path):
    from clirun import run_main

    orig, damaged = pair
    o = run_main("report", damaged, "-o", tmp_path / "r.html", "--json")
    assert o.code == 8 and _warned(o.json()["captures"][0])
    o = run_main("report", "--diff", orig, damaged, "-o", tmp_path / "d.html", "--json")
    assert o.code == 8 and "se3_sm1_sl0_wv0.json" in (tmp_path / "d.html").read_text()
    twin = run_main("report", orig, "-o", tmp_path / "o.html", "--json")
    assert twin.code == 0 and not _warned(twin.json()["captures"][0])
