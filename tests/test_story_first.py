"""What a kernel engineer sees first (issue 22): the verdict and the top
findings lead the terminal output of analyze and plan; the capture's
metadata and the notes follow the numbers; warnings are only what the reader
should act on, expected facts of the target and the capture layout are notes,
shown once; "stall" has one meaning per surface."""

from __future__ import annotations

import io

from attlens.report.console import make_console
from conftest import loaded, require_shared

SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"
PA = "traces/pa/big/ui_output_agent_10886_dispatch_209"


def test_expected_facts_are_notes_not_warnings():
    """Every shared capture carried the same two warnings (gfx950's reported
    VGPR count, the grid read from the discovery run): both are notes now."""
    _d, r = loaded(require_shared() / SOFTMAX)
    doc = r.to_dict(1)
    assert doc["warnings"] == []
    assert len(doc["notes"]) == 2
    assert doc["notes"][0].startswith("grid and workgroup come from discover_kernel_trace.csv")
    assert doc["notes"][1].startswith("rocprofv3 reports 24 VGPRs on gfx950: the metadata is under-reported")
    # the numbers those notes qualify are unchanged: 2 x 24 = 48 VGPRs, 8 waves/SIMD
    assert doc["occupancy"]["theoretical_waves_per_simd"] == 8


def test_a_capture_without_line_info_still_warns():
    _d, r = loaded(require_shared() / "traces/pa_mqa_logits_fp4/big/ui_output_agent_55351_dispatch_426")
    doc = r.to_dict(1)
    assert any(w.startswith("no source lines") for w in doc["warnings"])
    assert not any("under-reported" in w for w in doc["warnings"]) and any("under-reported" in n for n in doc["notes"])


def test_analyze_tells_the_story_first():
    from attlens.analysis.plan import make_plan
    from attlens.report.terminal import render_analysis
    from attlens.report.text import top_findings_lines, verdict_sentence

    _d, r = loaded(require_shared() / SOFTMAX)
    plan = make_plan(r)
    buf = io.StringIO()
    render_analysis(r, make_console(file=buf, width=120), topk=5, findings=top_findings_lines(plan), verdict=verdict_sentence(plan))
    text = buf.getvalue()
    lines = text.splitlines()
    # the verdict right under the title; a long one wraps into a paragraph before the top findings
    assert lines[1].startswith("Verdict  ") and "Top findings" in lines
    head = lines[1 : lines.index("Top findings")]
    assert " ".join(" ".join(head).split()) == " ".join(f"Verdict {plan.verdict.sentence}".split())
    order = ["Verdict  ", "Top findings", "Totals  ", "Instruction stall by class", "Top 5 instructions", "Occupancy", "Capture\n", "Notes ("]
    pos = [text.index(x) for x in order]
    assert pos == sorted(pos)
    assert "Warnings" not in text  # softmax has nothing to act on
    assert text.count("under-reported") == 1  # the note is said once
    assert "agent handle 47920" in text and "47,920" not in text
    assert "instruction stall 31,799,432 (76.4% of latency)" in text


def test_waves_names_the_stall_state_apart():
    from attlens.analysis.waves import analyze_waves
    from attlens.report.terminal import render_waves

    _d, r = loaded(require_shared() / SOFTMAX)
    buf = io.StringIO()
    render_waves(analyze_waves(r), make_console(file=buf, width=200))
    text = buf.getvalue()
    assert "STALL here is not the instruction stall" in text and "51.2%" in text
