"""`attlens whatif`, `attlens.whatif` and the rendering of every finding's
`predicted` (issue 20, the surfaces): on the real softmax capture, the JSON
against its schema and against facts recomputed from the capture (the edits
named by the options, the changed pcs' instructions, the calibration's own
arithmetic, the plan's prediction of the same finding), the text story
against the JSON, and bad input as one line with exit 2. The replay's
accuracy is i20a's (tests/test_replay*.py)."""

from __future__ import annotations

import json
import re

import pytest

import attlens
from attlens import schemas
from attlens.cli import main
from attlens.errors import UsageError
from attlens.report.text import fmt_ns, gain_text, interval_text, predicted_label, predicted_text
from conftest import loaded, require_shared
from test_schemas import cli  # noqa: F401  (the in-process CLI with captures analyzed once)

SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"


@pytest.fixture(scope="module")
def soft():
    path = require_shared() / SOFTMAX
    d, r = loaded(path)
    return path, d, r


@pytest.fixture(scope="module")
def soft_plan(soft):
    return attlens.plan(soft[2])


def wait_pc(r) -> int:
    """The wait site with the most wait (attlens waits' first row)."""
    return attlens.waits(r).to_dict(1)["sites"][0]["pc"]


def not_a_wait_pc(d) -> int:
    return next(p for p in range(d.code.size) if d.code.instruction_mask[p] and not d.code.isa[p].startswith("s_waitcnt"))


def run(args, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    got = capsys.readouterr()
    return rc, got.out, got.err


# --------------------------------------------------------------------------- JSON


def check_arithmetic(doc: dict, d) -> None:
    """What every attlens.whatif object must hold, recomputed from itself and the capture."""
    cal, g = doc["calibration"], doc["gain"]
    assert doc["capture"] == str(d.path) and doc["kernel"] == d.kernel_name
    assert cal["span_residual"] == pytest.approx((cal["span_replayed_cycles"] - cal["span_traced_cycles"]) / cal["span_traced_cycles"], abs=5e-5)  # rounded to 4 places
    assert cal["within"] == (abs(cal["span_residual"]) <= cal["tolerance"])
    assert 0 <= cal["wave_residual"]["median"] <= cal["wave_residual"]["p95"] <= cal["wave_residual"]["max"]
    assert doc["before"]["replayed_span_cycles"] == cal["span_replayed_cycles"]
    assert g["low"] <= g["share"] <= g["high"]
    b, a = doc["before"]["dispatch_ns"], doc["after"]["dispatch_ns"]
    if b is not None and a is not None:
        assert g["share"] == pytest.approx(1 - a / b, abs=1e-3)
    for x in doc["changed"]["pcs"]:
        assert x["instruction"] == d.code.isa[x["pc"]] and x["stall_before"] != x["stall_after"]
    if doc["bound"]["binding"]:
        assert doc["bound"]["kind"] is not None and a == pytest.approx(doc["bound"]["dispatch_ns"], rel=1e-6)
    elif doc["bound"]["kind"] is not None and a is not None and doc["bound"]["dispatch_ns"] is not None:
        assert a >= doc["bound"]["dispatch_ns"] - 0.1  # a ceiling that did not hold the gain is not reached


def test_no_edit_is_the_calibration_replay(cli, soft):  # noqa: F811
    path, d, _r = soft
    doc = cli("whatif", path, "--json")
    assert doc["schema"] == "attlens.whatif" and doc["edits"] == [] and doc["unexpressible"] == []
    check_arithmetic(doc, d)
    assert doc["calibration"]["span_traced_cycles"] == int(d.waves.end.max() - d.waves.begin.min())
    assert doc["after"]["replayed_span_cycles"] == doc["before"]["replayed_span_cycles"]
    assert doc["gain"]["share"] == 0 and doc["changed"] == {"waves": 0, "pcs": []}


def test_hide_wait_by_index_or_address(cli, soft):  # noqa: F811
    path, d, r = soft
    pc = wait_pc(r)
    doc = cli("whatif", path, "--hide-wait", pc, "--json")
    assert cli("whatif", path, "--hide-wait", hex(int(d.code.vaddr[pc])), "--json") == doc
    assert [(e["kind"], e["pc"], e["source"]) for e in doc["edits"]] == [("hide-wait", pc, "cli")]
    check_arithmetic(doc, d)
    assert 0 <= doc["changed"]["waves"] <= d.waves.count and pc in {x["pc"] for x in doc["changed"]["pcs"]}
    hidden = next(x for x in doc["changed"]["pcs"] if x["pc"] == pc)
    assert hidden["stall_after"] < hidden["stall_before"]


def test_apply_replays_the_findings_together(cli, soft, soft_plan):  # noqa: F811
    path, d, _r = soft
    rules = [f.rule for f in soft_plan.findings]
    assert rules, "softmax's plan has findings"
    doc = cli("whatif", path, "--apply", ",".join(rules), "--json")
    check_arithmetic(doc, d)
    applied = {e["source"].split(":", 1)[1] for e in doc["edits"] if e["source"].startswith("rule:")}
    said = {u["rule"] for u in doc["unexpressible"]}
    assert applied | said == set(rules)  # every finding named is replayed or said not expressible
    # one finding at a time: the plan's prediction of that finding is the replay of its change, and both are
    # capped by the share of traced wave-cycles the finding claims (the plan and whatif never disagree)
    for f in soft_plan.findings:
        p = f.predicted
        if p is None:
            continue
        one = cli("whatif", path, "--apply", f.rule, "--json")
        if p["expressible"]:
            cap = round(f.share_of_cycles, 4) if f.kind == "performance" else float("inf")
            g = one["gain"]
            assert [p["gain"], p["low"], p["high"]] == pytest.approx([g[k] for k in ("share", "low", "high")], abs=1e-4), f.rule
            assert g["high"] <= cap + 1e-9, f.rule
            assert p["edits"] == one["edits"] and p["dispatch_ns_before"] == one["before"]["dispatch_ns"]
        else:
            assert [u["rule"] for u in one["unexpressible"]] == [f.rule] and one["edits"] == []


def test_options_combine_in_one_replay(cli, soft):  # noqa: F811
    path, d, r = soft
    pc = wait_pc(r)
    doc = cli("whatif", path, "--hide-wait", pc, "--waves-per-simd", 2, "--json")
    assert [e["kind"] for e in doc["edits"]] == ["hide-wait", "waves-per-simd"]
    assert doc["edits"][1]["waves_per_simd"] == 2
    check_arithmetic(doc, d)


# --------------------------------------------------------------------------- text


def test_text_tells_the_story_of_the_json(cli, soft, capsys, monkeypatch):  # noqa: F811
    path, d, r = soft
    pc = wait_pc(r)
    doc = cli("whatif", path, "--hide-wait", pc, "--json")
    monkeypatch.setenv("COLUMNS", "200")
    rc, out, _ = run(["whatif", path, "--hide-wait", pc, "--no-color", "--top", "0"], capsys)
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("attlens whatif — " + d.kernel_name)
    pred = next(x for x in lines if x.startswith("Predicted"))
    b, a, g = doc["before"]["dispatch_ns"], doc["after"]["dispatch_ns"], doc["gain"]
    if b is not None and a is not None:
        assert f"dispatch {fmt_ns(round(b))} → {fmt_ns(round(a))}" in pred
    assert gain_text(g["share"]) in pred and interval_text(g["low"], g["high"]) in pred
    assert f"{doc['before']['replayed_span_cycles']:,} → {doc['after']['replayed_span_cycles']:,} cycles" in pred
    cal = next(x for x in lines if x.startswith("Calibration"))
    assert f"residual {doc['calibration']['span_residual']:+.1%}" in cal
    assert next(x for x in lines if x.startswith("Edits")).endswith(f"hide the wait at pc {pc}")
    # the changed pcs' table: every row, the whole instruction, pc and address
    for x in doc["changed"]["pcs"]:
        row = next(ln for ln in lines if re.match(rf"\s*{x['pc']}\s+{hex(int(d.code.vaddr[x['pc']]))}\s", ln))
        assert x["instruction"] in row and f"{x['stall_before']:,}" in row and f"{x['stall_after'] - x['stall_before']:+,}" in row


def test_changed_says_when_only_the_starts_moved(soft, capsys, monkeypatch):
    """Fewer waves per SIMD on vec_add: every wave keeps its duration and starts
    later; the Changed line says so instead of a bare "0 wave(s)"."""
    vec = require_shared() / "traces/vec_add/big/ui_output_agent_14705_dispatch_25"
    doc = main_json(["whatif", vec, "--waves-per-simd", "1", "--json"], capsys)
    assert doc["changed"]["waves"] == 0 and doc["after"]["replayed_span_cycles"] > doc["before"]["replayed_span_cycles"]
    out = _flat_output(capsys, monkeypatch, "whatif", vec, "--waves-per-simd", "1")
    assert "0 wave(s) with a different duration" in out and "the span changed through when waves start" in out
    path = soft[0]  # softmax with one wave per SIMD: its waves' own durations change too, the sentence is not there
    doc = main_json(["whatif", path, "--waves-per-simd", "1", "--json"], capsys)
    out = _flat_output(capsys, monkeypatch, "whatif", path, "--waves-per-simd", "1")
    assert doc["changed"]["waves"] > 0 and f"{doc['changed']['waves']:,} wave(s) with a different duration" in out
    assert "when waves start" not in out


def main_json(args, capsys) -> dict:
    rc, out, _ = run(args, capsys)
    assert rc == 0
    return json.loads(out)


def test_text_never_cuts_an_instruction(soft, capsys, monkeypatch):
    path, d, r = soft
    monkeypatch.setenv("COLUMNS", "60")
    rc, out, _ = run(["whatif", path, "--hide-wait", wait_pc(r), "--no-color"], capsys)
    assert rc == 0 and max(len(x) for x in out.splitlines()) <= 60
    words = set(out.split())
    doc = attlens.whatif(r, hide_wait=wait_pc(r)).to_dict()
    for x in doc["changed"]["pcs"][:20]:
        assert set(x["instruction"].split()) <= words  # wrapped between operands, never inside one


def test_unexpressible_findings_are_said_plainly(soft, soft_plan, capsys, monkeypatch):
    path, _d, r = soft
    monkeypatch.setenv("COLUMNS", "200")
    rules = [f.rule for f in soft_plan.findings]
    doc = attlens.whatif(r, apply=rules, plan=soft_plan).to_dict()
    rc, out, _ = run(["whatif", path, "--apply", ",".join(rules), "--no-color"], capsys)
    assert rc == 0
    for u in doc["unexpressible"]:
        assert f"Not predicted {u['rule']}: {u['reason']}" in re.sub(r"\s+", " ", out)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("case", ["unknown_rule", "pc_out_of_range", "address_not_an_instruction", "not_a_wait", "move_one_pc", "move_three",
                                  "move_bad_pc", "waves_zero", "waves_huge", "waves_past_the_targets_slots", "apply_names_no_rule"])
def test_bad_input_is_one_line_and_exit_2(soft, capsys, case):
    path, d, _r = soft
    args = {
        "unknown_rule": ["--apply", "no-such-rule"],
        "pc_out_of_range": ["--hide-wait", str(d.code.size + 5)],
        "address_not_an_instruction": ["--hide-wait", "0x1"],
        "not_a_wait": ["--hide-wait", str(not_a_wait_pc(d))],
        "move_one_pc": ["--move", "5"],
        "move_three": ["--move", "5:6:7"],
        "move_bad_pc": ["--move", "5:zz"],
        "waves_zero": ["--waves-per-simd", "0"],
        "waves_huge": ["--waves-per-simd", "65"],
        # gfx950 has 8 wave slots per SIMD (the architecture table): a ninth cannot be replayed as if it existed
        "waves_past_the_targets_slots": ["--waves-per-simd", str(d.arch.facts["max_waves_per_simd"] + 1)],
        "apply_names_no_rule": ["--apply", ","],
    }[case]
    rc, out, err = run(["whatif", path, *args], capsys)
    assert rc == 2 and out == "" and "Traceback" not in err
    errors = [x for x in err.splitlines() if "error" in x]
    assert len(errors) == 1, err
    rc, out, _ = run(["whatif", path, *args, "--json"], capsys)
    doc = json.loads(out)
    schemas.validate(doc)
    assert rc == 2 and doc["error"]["kind"] == "UsageError" and doc["error"]["exit_code"] == 2


def test_a_capture_without_stall_cycles_is_not_replayed(capsys):
    """rocprofv2 records carry no stall cycles, which the replay re-derives: one line, exit 2, not a guess."""
    cap = next((require_shared() / "outside/rocprofv2-elementwise").rglob("filenames.json")).parent
    rc, out, err = run(["whatif", cap], capsys)
    assert rc == 2 and out == "" and len([x for x in err.splitlines() if "error" in x]) == 1
    assert "cannot replay this capture" in err and "no stall cycles" in err


def test_not_a_wait_names_the_instruction(soft, capsys):
    path, d, _r = soft
    pc = not_a_wait_pc(d)
    rc, _out, err = run(["whatif", path, "--hide-wait", pc], capsys)
    assert rc == 2 and str(pc) in err and err.startswith("attlens: error:")


# --------------------------------------------------------------------------- the Python API


def test_api_equals_cli(cli, soft, soft_plan):  # noqa: F811
    path, d, r = soft
    pc = wait_pc(r)
    rules = [f.rule for f in soft_plan.findings][:2]
    want = cli("whatif", path, "--hide-wait", pc, "--apply", ",".join(rules), "--json")
    assert attlens.whatif(r, apply=rules, hide_wait=pc).to_dict() == want
    assert attlens.whatif(r, apply=",".join(rules), hide_wait=[hex(int(d.code.vaddr[pc]))], plan=soft_plan).to_dict() == want
    assert attlens.whatif(path, hide_wait=str(pc)).to_dict()["edits"] == cli("whatif", path, "--hide-wait", pc, "--json")["edits"]


def test_api_move_forms_agree(soft):
    _path, d, r = soft
    loads = [p for p in range(d.code.size) if d.code.instruction_mask[p] and d.code.isa[p].startswith(("global_load", "buffer_load"))]
    if not loads:
        pytest.skip("softmax has no vector load")
    a = loads[-1]
    b = a - 1
    while not d.code.instruction_mask[b]:
        b -= 1
    try:
        want = attlens.whatif(r, move=(a, b)).to_dict()
    except UsageError as exc:  # the engine refused this move (e.g. past the load's operands): every form must refuse it
        for form in (f"{a}:{b}", [(a, b)], [f"{a}:{b}"]):
            with pytest.raises(UsageError, match=re.escape(exc.message)):
                attlens.whatif(r, move=form)
        return
    assert [(e["kind"], e["pc"], e["before_pc"]) for e in want["edits"]] == [("move", a, b)]
    for form in (f"{a}:{b}", [(a, b)], [f"{a}:{b}"], (str(a), hex(int(d.code.vaddr[b])))):
        assert attlens.whatif(r, move=form).to_dict() == want


@pytest.mark.parametrize("kw", [{"apply": 5}, {"apply": ["ok", 3]}, {"hide_wait": 1.5}, {"hide_wait": True}, {"move": "5"}, {"move": [(1, 2, 3)]},
                                {"waves_per_simd": 0}, {"waves_per_simd": 65}, {"waves_per_simd": "2"}, {"apply": "no-such-rule"},
                                {"apply": ","}, {"apply": [" "]}])
def test_api_bad_arguments_are_usage_errors(soft, kw):
    with pytest.raises(UsageError):
        attlens.whatif(soft[2], **kw)


# --------------------------------------------------------------------------- predicted beside cycles at stake


def test_predicted_words():
    p = {"expressible": True, "edits": [], "dispatch_ns_before": 12_346.0, "dispatch_ns_after": 11_208.0, "gain": 0.0921, "low": 0.061,
         "high": 0.12, "bound": None}
    assert predicted_text(p) == "predicted 9.2% faster (6.1% to 12.0%), 12.35 µs → 11.21 µs"
    assert predicted_text({**p, "bound": "bandwidth", "dispatch_ns_before": None}) == "predicted 9.2% faster (6.1% to 12.0%), held by the bytes at peak HBM bandwidth"
    assert predicted_text({**p, "bound": "stake", "dispatch_ns_before": None}) == "predicted 9.2% faster (6.1% to 12.0%), held by the finding's cycles at stake"
    # a capture the no-change replay misses by more than its tolerance says so beside the gain
    off = {**p, "dispatch_ns_before": None, "calibration": {"span_residual": 0.073, "within": False}}
    assert predicted_text(off) == "predicted 9.2% faster (6.1% to 12.0%); the replay is off by +7.3% of the span on this capture"
    assert predicted_text({**off, "calibration": {"span_residual": 0.021, "within": True}}) == "predicted 9.2% faster (6.1% to 12.0%)"
    assert predicted_text({**p, "gain": -0.01, "low": -0.03, "high": 0.004}) .startswith("predicted 1.0% slower (−3.0% to 0.4%)")
    assert predicted_text({"expressible": False, "reason": "a barrier's skew is not modelled"}) == "not predicted: a barrier's skew is not modelled"
    assert predicted_text(None) is None  # no prediction: nothing, never "0%"
    assert predicted_label({"predicted": None}) is None


def _findings_with_predictions(plan) -> list:
    fs = [f for f in plan.findings if predicted_label(f)]
    assert fs, "no finding of this plan carries a prediction: the test would check nothing"
    return fs


def _flat_output(capsys, monkeypatch, *argv) -> str:
    """A command's text at 400 columns, white space folded (a phrase never split by wrapping)."""
    monkeypatch.setenv("COLUMNS", "400")
    rc, out, _ = run([*argv, "--no-color"], capsys)
    assert rc == 0
    return re.sub(r"\s+", " ", out)


def test_plan_text_shows_each_prediction(soft, soft_plan, capsys, monkeypatch):
    path, _d, _r = soft
    flat = _flat_output(capsys, monkeypatch, "plan", path)
    doc = soft_plan.to_dict()
    for f in doc["findings"]:
        label = predicted_label(f)
        if label is None:
            assert f["predicted"] is None or "predicted" not in f
            continue
        assert flat.count(label) >= 2, (f["rule"], label)  # its priority line and its finding
    _findings_with_predictions(soft_plan)


def test_analyze_top_findings_show_predictions(soft, soft_plan, capsys, monkeypatch):
    path, _d, _r = soft
    flat = _flat_output(capsys, monkeypatch, "analyze", path)
    for f in soft_plan.findings[:3]:
        if predicted_label(f):
            assert predicted_label(f) in flat
    rc, out, _ = run(["analyze", path, "--summary", "--json"], capsys)
    doc = json.loads(out)
    schemas.validate(doc)
    for got, f in zip(doc["findings"], soft_plan.findings):
        p = f.predicted
        if p is None:
            assert got["predicted"] is None
        elif p["expressible"]:
            assert got["predicted"] == {k: p[k] for k in ("expressible", "gain", "low", "high", "dispatch_ns_before", "dispatch_ns_after", "bound", "calibration")}
        else:
            assert got["predicted"] == {"expressible": False, "reason": p["reason"]}


def test_markdown_plan_and_report_show_predictions(soft, soft_plan):
    from attlens.report.markdown import _text, plan_to_markdown, report_to_markdown

    md = plan_to_markdown(soft_plan)
    waves = attlens.waves(soft[2])
    rep = report_to_markdown(soft[2], soft_plan, waves)
    for f in _findings_with_predictions(soft_plan):
        assert f"| {_text(predicted_label(f))} |" in md  # the priorities' predicted column
        assert _text(predicted_label(f)) in rep


def test_sweep_summary_and_findings_md_show_predictions(soft, soft_plan):
    from attlens.report.markdown import _text
    from attlens.sweep.dashboard import findings_markdown
    from attlens.sweep.summary import summarize

    s = summarize(soft[2], soft_plan)
    schemas.validate(s)
    for got, f in zip(s["findings"], soft_plan.findings):
        assert got["predicted_text"] == predicted_label(f)  # null when there is no prediction, never "0%"
    top = s["top_finding"]
    md = findings_markdown([{"job": "softmax", "state": "done", "summary": s}], [], {"dir": "d", "source": "captures", "counts": {}})
    row = next(x for x in md.splitlines() if x.startswith("| softmax"))
    assert row.rstrip(" |").endswith(_text(top["predicted_text"] or "—"))


def test_html_report_data_carries_the_predictions(soft, soft_plan, tmp_path):
    """The page's data holds each finding's predicted object (report.js words
    it; tests/browser checks the words on the page)."""
    from attlens.report.html import build_report_data

    data = build_report_data(soft[2], soft_plan, attlens.waves(soft[2]))
    findings = data["plan"]["findings"]
    for got, f in zip(findings, soft_plan.to_dict()["findings"]):
        assert got.get("predicted") == f.get("predicted")


def test_report_index_shows_the_top_findings_prediction(soft, soft_plan):
    import html as _html

    from attlens.report.html import index_entry, render_index_text

    entry = index_entry(soft[2], soft_plan, "softmax.html")
    want = predicted_label(soft_plan.findings[0])
    assert entry["top_finding"]["predicted_text"] == want
    page = render_index_text([entry])
    assert want is None or f'<div class="predicted">{_html.escape(want)}</div>' in page


def test_diff_holds_the_before_prediction_against_the_change(capsys, monkeypatch):
    """The Triton pair: each finding of orig's plan that hack0 resolved or kept carries orig's predicted gain
    (in the plan's words) beside the measured change; the text says it."""
    shared = require_shared()
    before, after = (next((shared / "outside/triton-afp4wfp4-gemm" / s).rglob("filenames.json")).parent for s in ("orig", "hack0"))
    d = attlens.diff(before, after)
    doc = d.to_dict()
    schemas.validate(doc)
    want = {f.rule: predicted_label(f) for f in attlens.plan(attlens.analyze(before)).findings}
    items = doc["plans"]["resolved"] + doc["plans"]["persisting"]
    assert items and all(x["predicted_before"] == want[x["rule"]] for x in items)
    assert any(x["predicted_before"] and x["predicted_before"].startswith("predicted ") for x in items)
    monkeypatch.setenv("COLUMNS", "400")
    rc, out, _ = run(["diff", before, after, "--no-color"], capsys)
    flat = re.sub(r"\s+", " ", out)
    for x in items:
        if x["predicted_before"] and (x in doc["plans"]["resolved"] or x["share_before"] or x["share_after"]):
            assert f"before: {x['predicted_before']}" in flat, x["rule"]
