"""Every Markdown form: the report of one capture, the plan
(``attlens plan --format md``), the diff (``attlens diff --format md``) and
the rules reference (docs/rules.md: ``python3 -m attlens.report.markdown rules``).

The report (``attlens report DIR --format md -o OUT/``) is ``report.md`` in
the shape kernel teams already write by hand, and the JSON analysis
(``attlens.analyze`` v1) beside it as ``analysis.json``.

Sections: capture, headline, wave states, stall by class, occupancy, top
source lines, top instructions with disassembly context, pc range → source,
recommendations (the plan's findings with their evidence), pipe utilization,
warnings, and the commands to reproduce. Every number is the one in
``analysis.json`` (or, for wave states and pipes, ``attlens waves --json``).

Trace strings (kernel names, paths, ISA, source) are written in code spans or
fenced blocks, whose fences are longer than any backtick run in the text;
plain-text strings have ``<``, ``>``, ``&`` and ``|`` escaped so a Markdown
renderer shows them literally; control characters are shown as ``\x1b``-style
escapes (:mod:`attlens.report.controls`).
"""

from __future__ import annotations

import re
from pathlib import Path

from attlens import __version__
from attlens.report.controls import safe_text
from attlens.report.html import reproduce_commands, write_atomic
from attlens.report.text import (evidence_lines, finding_detail, header_lines, n as _n, pc_sampling_summary, pct as _pct, predicted_label, reason_mix,
                                 short_source, stake_and_prediction, stake_label, verdict_sentence)

TOP_LINES = 10
TOP_INSTRUCTIONS = 10
CONTEXT = 4  # listed instructions before/after a hot one
MAX_RANGES = 400  # rows of the pc range → source table
JSON_TOPK = 20
MAX_SOURCE_LINE_CHARS = 400  # one source line quoted per hot instruction, cut at this length


def _text(s) -> str:
    """Plain text: shown literally by a Markdown renderer."""
    s = safe_text(str(s).replace("\r", " ").replace("\n", " "))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = re.sub(r"([\\`*_\[\]|#])", r"\\\1", s)
    return s


def _code(s, table: bool = False) -> str:
    """An inline code span holding ``s`` literally (in a table, ``|`` is escaped
    as GFM requires even inside code spans)."""
    s = safe_text(str(s).replace("\r", " ").replace("\n", " "))
    if s == "":
        return "``"
    run = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (run + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or run else ""
    out = f"{fence}{pad}{s}{pad}{fence}"
    return out.replace("|", "\\|") if table else out


def _fence(lines: list[str], lang: str = "") -> list[str]:
    lines = [safe_text(x) for x in lines]
    body = "\n".join(lines)
    run = max((len(m) for m in re.findall(r"`{3,}", body)), default=0)
    f = "`" * max(3, run + 1)
    return [f + lang, *lines, f]


def _sn(x) -> str:
    """A stall figure; "-" when unavailable (the records carry no stall cycles), never 0."""
    return "-" if x is None else _n(x)


def _sp(x) -> str:
    return "-" if x is None else _pct(x)


def _hex(x) -> str:
    """An address; "-" when the layout records none (rocprofv2)."""
    return "-" if x is None else f"0x{x:x}"


def _table(header: list[str], rows: list[list[str]], align: str) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def pc_ranges(result) -> list[dict]:
    """Runs of consecutive listed instructions (pc order) with the same own
    source location: ``[{first_pc, last_pc, first_vaddr, last_vaddr,
    instructions, source, stall, latency, hit}]``."""
    import numpy as np

    d = result.dispatch
    s = result.sums
    pcs = np.flatnonzero(d.code.instruction_mask).tolist()
    out: list[dict] = []
    for pc in pcs:
        own = d.static.own_source[pc]
        src = str(own) if own else None
        cur = out[-1] if out else None
        if cur is not None and cur["source"] == src:
            cur["last_pc"] = pc
            cur["last_vaddr"] = d.code.address(pc)[1]
            cur["instructions"] += 1
        else:
            cur = {"first_pc": pc, "last_pc": pc, "first_vaddr": d.code.address(pc)[1], "last_vaddr": d.code.address(pc)[1],
                   "instructions": 1, "source": src, "stall": 0, "latency": 0, "hit": 0}
            out.append(cur)
        cur["stall"] += int(s.stall[pc])
        cur["latency"] += int(s.latency[pc])
        cur["hit"] += int(s.hit[pc])
    return out


_SAMPLE_COLS = ["samples", "sampled stall reasons"]


def _sample_cells(row: dict, sampled: bool) -> list[str]:
    """A ranking row's PC samples (``pc_samples``; "-" for a row no sample landed on)."""
    if not sampled:
        return []
    ps = row.get("pc_samples")
    return ["-", ""] if ps is None else [_n(ps["samples"]), _text(reason_mix(ps))]


def report_to_markdown(result, plan, waves, analysis: dict | None = None) -> str:
    """The Markdown report as a string. ``analysis``: the ``attlens.analyze``
    object written beside it (``result.to_dict(20)``; computed when not given)."""
    a = analysis if analysis is not None else result.to_dict(JSON_TOPK)
    d = result.dispatch
    c, t, tot, o, q = a["capture"], a["target"], a["totals"], a["occupancy"], a["quality"]
    rec = c["stall_recorded"]  # False (rocprofv2): stall figures unavailable ("-"), rankings by latency
    L: list[str] = []
    L += [f"# attlens report — {_code(c['kernel'] or '(unnamed kernel)')}", ""]
    # the story first: the verdict, the top findings, what to act on
    L += [f"**Verdict:** {_text(verdict_sentence(plan))}", ""]
    if plan.findings:
        L += ["Top findings:", ""]
        L += [f"{i}. **{f.severity}** {_text(f.title)} ({_code(f.rule)}) — {_text(stake_and_prediction(f))}" for i, f in enumerate(plan.findings[:3], 1)]
        L += ["", "The evidence, the change to try and what would prove it wrong: [Recommendations](#recommendations).", ""]
    if a["warnings"]:
        L += ["**Warnings** (act on these):", ""] + [f"- {_text(w)}" for w in a["warnings"]] + [""]
    tgt = t["name"] or "unknown"
    if t["family"]:
        tgt += f" ({t['family']}" + (f", {t['product']}" if t["product"] else "") + ")"
    capture_block = [
        "## Capture",
        "",
        f"- **Capture:** {_code(c['path'])}",
        f"- **Dispatch:** {c['dispatch_id'] if c['dispatch_id'] is not None else 'n/a'} (agent handle {c['agent_handle'] if c['agent_handle'] is not None else 'n/a'})",
        f"- **Target:** {_text(tgt)} — from {_text(t['source'])}: {_text(t['reason'] or '')}",
        f"- **Traced:** {_n(c['waves'])} waves on CU {','.join(map(str, c['cus']))} of SE {','.join(map(str, c['shader_engines']))}, "
        f"SIMD {','.join(map(str, c['simds']))}; {_n(c['records'])} instruction records"
        + (f"; shader clock {c['shader_clock_mhz']:,.0f} MHz" if c["shader_clock_mhz"] else ""),
        "- **Source lines:** "
        + (f"{_pct(q['mapped_latency_share'])} of cycles on instructions with a source line" if q["has_source_lines"] else "none (built without line info)"),
        f"- **attlens:** {__version__}",
        "",
    ]
    if a.get("notes"):
        capture_block += ["Notes (expected facts of this target and capture layout; nothing to act on):", ""]
        capture_block += [f"- {_text(x)}" for x in a["notes"]] + [""]

    # headline
    cycles = tot["latency"] + tot["idle"]
    L += ["## Headline", ""]
    rows = [
        ["traced wave-cycles (latency + idle)", _n(cycles)],
        ["latency", _n(tot["latency"])],
        ["instruction stall", _n(tot["stall"]) if rec else "- (not recorded by this profiler)"],
        ["instruction stall share of latency", _pct(tot["stall_share_of_latency"]) if rec else "-"],
        ["idle", _n(tot["idle"])],
        ["issue (latency − stall)", _n(tot["issue"]) if rec else "-"],
    ]
    if a.get("latency_hiding"):
        rows.append(["hidden by other waves' work", _pct(a["latency_hiding"]["hidden_share"])])
    theo = o["theoretical_waves_per_simd"]
    rows.append(["occupancy, theoretical (waves/SIMD)", "n/a" if theo is None else f"{theo} ({', '.join(o['limiters']) or '-'})"])
    rows.append(["occupancy, observed peak on the traced CU", _n(o["observed_max_waves_per_simd_traced_cu"])])
    L += _table(["metric", "value"], rows, "lr") + [""]
    L += ["*Stall* in this report is instruction stall: the cycles an instruction waited before it issued (the wave files' "
          "stall column, summed in code.json). The wave state STALL below is another measure: the share of each wave's "
          "lifetime the decoder reports in state STALL (docs/analysis.md, \"Two kinds of stall\").", ""]

    # PC samples joined to the trace: why instructions stalled (docs/pcsampling.md)
    ps = a.get("pc_sampling")
    sampled = ps is not None and ps["join"]["mode"] != "none"
    if ps is not None:
        L += ["## PC sampling", ""] + [f"- {'**' if kind == 'warn' else ''}{_text(text)}{'**' if kind == 'warn' else ''}"
                                         for text, kind in pc_sampling_summary(ps)] + [""]

    # wave states
    st = waves.states
    L += ["## Wave states", "", "All traced waves, weighted by lifetime (from each wave's timeline; the decoder's states, "
          "not the instruction stall of the tables below).", ""]
    L += _table(["state", "cycles", "share"], [[s, _n(st.cycles[s]), _pct(st.share[s])] for s in ("EXEC", "WAIT", "STALL", "IDLE")], "lrr") + [""]

    # per class
    L += ["## Instruction stall by class", ""]
    L += _table(
        ["class", "stall", "stall share", "latency", "latency share", "records", "meaning"],
        [[_code(r["class"], True), _sn(r["stall"]), _sp(r["stall_share"]), _n(r["latency"]), _pct(r["latency_share"]), _n(r["records"]), _text(r["description"])]
         for r in a["stall_by_class"]],
        "lrrrrrl",
    ) + [""]
    by = "stall" if rec else "latency"
    if not rec:
        from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING

        L += [_text(STALL_UNRECORDED_RANKING[0].upper() + STALL_UNRECORDED_RANKING[1:]) + ".", ""]

    # occupancy
    L += ["## Occupancy", ""]
    if not o["available"] and o["reason"]:
        L += [f"Theoretical occupancy unavailable: {_text(o['reason'])}", ""]
    if o["limits"]:
        L += _table(["resource", "waves/SIMD", "detail"], [[l["name"], "-" if l["waves_per_simd"] is None else str(l["waves_per_simd"]), _text(l["detail"])] for l in o["limits"]], "lrl") + [""]
    L += [f"Observed peak waves per SIMD: {_n(o['observed_max_waves_per_simd_traced_cu'])} on the traced CU"
          + (f" (mean peak {o['observed_mean_peak_waves_per_simd_traced_cu']:.2f})" if o["observed_mean_peak_waves_per_simd_traced_cu"] is not None else "")
          + f", {_n(o['observed_max_waves_per_simd_all_cus'])} over all CUs of the traced SEs.", ""]
    for x in o["explanation"] or []:
        L += [f"- {_text(x)}"]
    if o["explanation"]:
        L += [""]

    # top lines
    lines = a["hotspots"][f"lines_by_{by}"][:TOP_LINES]
    L += [f"## Top {len(lines)} source lines by {by}", ""]
    L += _table(
        ["#", "source", "stall", "stall share", "latency", "idle", "dominant class", "instructions (executed/listed)", *_SAMPLE_COLS[:2 * sampled]],
        [[str(i), _code(ln["source"], True), _sn(ln["stall"]), _sp(ln["stall_share"]), _n(ln["latency"]), _n(ln["idle"]), _code(ln["dominant_class"], True),
          f"{ln['executed']}/{ln['instructions']}", *_sample_cells(ln, sampled)]
         for i, ln in enumerate(lines, 1)],
        "rlrrrrlr" + "rl" * sampled,
    ) + [""]

    # top instructions with disassembly context
    instrs = a["hotspots"][f"instructions_by_{by}"][:TOP_INSTRUCTIONS]
    L += [f"## Top {len(instrs)} instructions by {by}", ""]
    L += _table(
        ["#", "pc", "instruction", "class", "hit", "latency", "stall", "stall share", "idle", "source", "vaddr", *_SAMPLE_COLS[:2 * sampled]],
        [[str(i), str(h["pc"]), _code(h["isa"], True), _code(h["class"], True), _n(h["hit"]), _n(h["latency"]), _sn(h["stall"]), _sp(h["stall_share"]), _n(h["idle"]),
          _code(short_source(h["source"]), True), _hex(h["vaddr"]), *_sample_cells(h, sampled)]
         for i, h in enumerate(instrs, 1)],
        "rrllrrrrrlr" + "rl" * sampled,
    ) + [""]
    mask = d.code.instruction_mask.tolist()  # a property: computed once, not per pc
    listed = [p for p in range(d.code.size) if mask[p]]
    pos = {p: i for i, p in enumerate(listed)}
    for i, h in enumerate(instrs, 1):
        k = pos.get(h["pc"])
        if k is None:
            continue
        L += [f"### {i}. pc {h['pc']} ({_hex(h['vaddr'])}) — {_code(h['isa'])}", ""]
        waits = _waited_on(waves, h["pc"])
        body = []
        for p in listed[max(0, k - CONTEXT): k + CONTEXT + 1]:
            mark = ">>" if p == h["pc"] else "  "
            src = d.static.own_source[p]
            fig = f"stall {int(result.sums.stall[p]):>12,}" if rec else f"latency {int(result.sums.latency[p]):>10,}"
            body.append(f"{mark} {p:>6}  {fig}  {d.code.isa[p]:<56}  ; {short_source(str(src)) if src else '-'}")
        L += _fence(body, "asm") + [""]
        own = d.static.own_source[h["pc"]]
        text, why = d.source_file(own.file) if own is not None and own.line else (None, None)
        if text is not None and 1 <= own.line <= len(text):
            L += [f"Source {_code(short_source(str(own)))}: {_code(text[own.line - 1][:MAX_SOURCE_LINE_CHARS].strip())}", ""]
        elif why is not None and d.snapshots.get(own.file) is not None:
            L += [f"Source {_code(short_source(str(own)))}: not shown ({_text(why)})", ""]
        if h["inline_chain"]:
            L += [f"Inlined at: {_code(' -> '.join(h['inline_chain']))}", ""]
        if waits:
            L += ["Waited on: " + ", ".join(f"pc {p} {_code(d.code.isa[p])} ({f'{cyc:,} cycles' if rec else 'cycles unavailable'})" for p, cyc in waits[:4])
                  + ("; …" if len(waits) > 4 else ""), ""]

    # pc range -> source
    ranges = pc_ranges(result)
    L += ["## PC range → source", "", f"{len(ranges):,} runs of consecutive instructions with the same source location (pc order)"
          + (f"; the first {MAX_RANGES} are listed." if len(ranges) > MAX_RANGES else "."), ""]
    L += _table(
        ["pcs", "vaddr", "instructions", "source", "stall", "latency"],
        [[f"{r['first_pc']}–{r['last_pc']}" if r["last_pc"] != r["first_pc"] else str(r["first_pc"]),
          "-" if r["first_vaddr"] is None else
          f"0x{r['first_vaddr']:x}–0x{r['last_vaddr']:x}" if r["last_pc"] != r["first_pc"] else f"0x{r['first_vaddr']:x}",
          str(r["instructions"]), _code(r["source"] or "(no source)", True), _sn(r["stall"] if rec else None), _n(r["latency"])] for r in ranges[:MAX_RANGES]],
        "llrlrr",
    ) + [""]

    # recommendations
    L += ["## Recommendations", "", "The plan's findings by severity; within one severity the verdict's finding, grid starvation and load imbalance, capture quality and whole-dispatch limits first, then by cycles at stake × confidence (docs/rules.md).", ""]
    if not plan.findings:
        L += ["No rule fired: no pattern above its threshold.", ""]
    for i, f in enumerate(plan.findings, 1):
        stake = _text(stake_and_prediction(f))
        L += [f"### {i}. {f.severity} — {_text(f.title)}", "", f"Rule {_code(f.rule)} · {stake} · confidence {f.confidence:.2f}", "", "Evidence:", ""]
        L += _fence(evidence_lines(f.evidence)) + [""]
        L += [f"**Change:** {_text(f.change)}", "", f"**Would prove it wrong:** {_text(f.falsify)}", ""]
    for rid, err in plan.rule_errors.items():
        L += [f"- rule {_code(rid)} failed: {_text(err)}"]

    # pipes
    L += ["## Pipe utilization", "", "Share of the traced window each pipe was busy, over all traced SIMDs.", ""]
    L += _table(["pipe", "issue cycles", "busy cycles", "busy share"],
                [[p, _n(v["issue_cycles"]), _n(v["busy_cycles"]), _pct(v["busy_share"])] for p, v in waves.pipes.kernel.items()], "lrrr") + [""]

    # coverage flags of the traced waves (the warnings are at the top)
    if waves.phases.flags:
        L += ["## Coverage of the traced waves", ""] + [f"- {_text(w)}" for w in waves.phases.flags] + [""]

    # the capture's metadata and the notes, after the story
    L += capture_block

    # reproduce
    L += ["## Reproduce", ""]
    L += _fence(reproduce_commands(c["path"]), "sh") + [""]
    L += ["`analysis.json` beside this file is `attlens analyze --json --top 20` of the same capture.", ""]
    return "\n".join(L)


def _waited_on(waves, pc: int) -> list[tuple[int, int]]:
    prods = waves.attribution.by_wait_pc.get(pc)
    if not prods:
        return []
    return sorted(((int(p), int(c)) for p, c in prods.items()), key=lambda x: -x[1])


def render_markdown_bundle(result, plan, waves, out_dir) -> tuple[Path, Path]:
    """Write ``report.md`` and ``analysis.json`` (``attlens.analyze`` v1, top
    20 per ranking) into ``out_dir`` (created), each atomically. Returns
    their paths."""
    from attlens.jsondoc import dumps

    out = Path(out_dir)
    from attlens.fsutil import make_dirs

    make_dirs(out)  # a folder that cannot be made is exit 9, as the files in it
    analysis = result.to_dict(JSON_TOPK)
    md, js = out / "report.md", out / "analysis.json"
    write_atomic(js, dumps(analysis) + "\n")
    write_atomic(md, report_to_markdown(result, plan, waves, analysis))
    return md, js



# --------------------------------------------------------------------------- plan

def plan_to_markdown(plan) -> str:
    """``attlens plan --format md``: the plan (with the analysis it was made from) as Markdown."""
    from attlens.analysis.plan import stall_summary

    result = plan.result
    d = result.dispatch
    b = result.breakdown
    lines = [f"# Optimization plan — {_code(d.kernel_name)}", "", f"**Verdict:** {_text(verdict_sentence(plan))}", "",
             "## Priorities", "", "| # | severity | finding | rule | at stake | predicted | why |", "|---:|---|---|---|---|---|---|"]
    for i, f in enumerate(plan.findings, 1):
        lines.append(f"| {i} | {f.severity} | {_text(f.title)} | {_code(f.rule, True)} | {_text(stake_label(f))} | {_text(predicted_label(f) or '—')} | {_text(f.rationale)} |")
    if not plan.findings:
        lines.append("| | | no rule fired | | | | |")
    lines += ["", f"Capture: {_code(d.path)} · target {_text(d.arch.target or 'unknown')} · {d.waves.count:,} waves · attlens {__version__}", "",
              *_fence(header_lines(plan)), "",
              "## Instruction stall by class", "", "| class | stall cycles | share |", "|---|---:|---:|"]
    if d.stall_recorded:
        for c, s, sh in stall_summary(result):
            lines.append(f"| {c} | {s:,} | {sh:.1%} |")
    else:
        lines.append("| - | - | - |")
    stall = f"{b.total_stall:,}" if d.stall_recorded else "unavailable (the records carry no stall cycles: rocprofv2)"
    lines += ["", f"Total latency {b.total_latency:,} cycles, stall {stall}, idle {b.total_idle:,}.", "", "## Findings", ""]
    if not plan.findings:
        lines.append("No rule fired.")
    for i, f in enumerate(plan.findings, 1):
        lines += [f"### {i}. {f.severity} — {_text(f.title)}", "", f"Rule `{f.rule}` · {_text(stake_and_prediction(f))} · confidence {f.confidence:.2f}", "", "Evidence:", ""]
        lines += _fence(finding_detail(f))
        lines += ["", f"**Change:** {_text(f.change)}", "", f"**Would prove it wrong:** {_text(f.falsify)}", ""]
    lines += [f"Cycle ledger: {plan.cycles_at_stake:,} of {plan.total_cycles:,} traced wave-cycles at stake (every traced wave's idle + latency, "
              "not the dispatch's time); no pc is claimed twice."]
    if plan.rules_silenced:
        lines += ["", "Silenced rules (a precondition of their advice does not hold):", ""]
        for rid, fails in plan.rules_silenced.items():
            lines.append(f"- `{rid}`: {_text(fails[0]['text'])} — {_text(fails[0]['detail'])}")
    lines += ["", f"Reproduce: {_code(f'attlens plan {d.path}')}", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- diff


def diff_to_markdown(res, top: int = 15) -> str:
    """The diff as Markdown. Trace strings (kernel names, paths, source
    lines, class names) go through the escapes of the Markdown report
    (:mod:`attlens.report.markdown`): code spans longer than any backtick run
    inside, plain text with ``< > &`` and Markdown punctuation escaped, ``|``
    escaped in tables."""
    v = res.verdict

    def label(x) -> str:
        return "-" if not x else _code(x, True)

    out = [f"# Diff — {_code(res.before.kernel)}", "",
           f"Before: {_code(res.before.label)} · After: {_code(res.after.label)} · {_text(res.normalization)}", "",
           f"**Verdict:** {_text(v['summary'])} ({v['latency_per_wave_before']:,.0f} → {v['latency_per_wave_after']:,.0f} latency cycles per wave)", ""]
    if res.comparability:
        out += ["Differences:", ""] + [f"- {_text(c['field'])}: {_code(str(c['before']))} → {_code(str(c['after']))}" for c in res.comparability] + [""]
    if res.stall_compared:
        out += ["## Per class (stall per wave)", ""]
        out += _table(["class", "before", "after", "delta", "relative"],
                      [[label(c["class"]), f"{c['stall_before']:,.0f}", f"{c['stall_after']:,.0f}", f"{c['stall_delta']:+,.0f}",
                        "-" if c["stall_relative"] is None else f"{c['stall_relative']:+.1%}"] for c in res.classes[:top]], "lrrrr")
    else:  # a side records no stall (rocprofv2): no stall delta, the classes' latency instead, said in one line
        from attlens.analysis.diff import stall_unrecorded_note

        out += ["## Per class (latency per wave)", "", _text(stall_unrecorded_note(res.before, res.after)) + ".", ""]
        out += _table(["class", "before", "after", "delta", "relative"],
                      [[label(c["class"]), f"{c['latency_before']:,.0f}", f"{c['latency_after']:,.0f}", f"{c['latency_delta']:+,.0f}",
                        "-" if not c["latency_before"] else f"{c['latency_delta'] / c['latency_before']:+.1%}"] for c in res.classes[:top]], "lrrrr")
    out += ["", "## Per source line (latency per wave)", ""]
    out += _table(["line", "before", "after", "delta", "dominant class"],
                  [[label(l.line), f"{l.latency_before:,.0f}", f"{l.latency_after:,.0f}", f"{l.delta:+,.0f}",
                    f"{label(l.dominant_before)} → {label(l.dominant_after)}"] for l in res.lines[:top]], "lrrrl")
    st = res.site_totals
    out += ["", f"Instruction sites: {st['matched']:,} matched on their line, {st['moved']:,} matched after their line changed, "
                f"{st['added']:,} added, {st['removed']:,} removed.", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------- rules (docs/rules.md)


_RULES_PREAMBLE = """# Plan rules (`attlens plan`, `attlens rules`)

<!-- Generated by `python3 -m attlens.report.markdown rules > docs/rules.md` from the
rule registry; tests/test_rules_doc.py keeps this file equal to the generator. -->

The plan is built by independent rules, one per pattern, in
`src/attlens/analysis/rules/` (`dispatch.py`, `capture.py`, `memory.py`,
`inorder.py`, `lds.py`, `occupancy.py`, `schedule.py`, `coverage.py`). Each
rule is a function registered with `@rule(...)` of the registry
(`analysis/registry.py`, which rules import instead of the plan); it reads the
analysis results (hotspots, wait attribution, loops, the dispatch facts,
bandwidth, phases, occupancy, hidden latency) and returns findings.
`--disable a,b` skips rules, `--only a,b` runs only those; a rule that raises
is reported under `rule_errors` and never hides the others.

## One verdict per dispatch

The plan leads with one sentence (`verdict`, the first line of every surface:
terminal, Markdown, HTML, JSON, the MCP `summary`), taken from its
whole-dispatch findings in this order: at the HBM ceiling (`bandwidth-ceiling`:
only fewer bytes help), a few long workgroups setting the span
(`load-imbalance`), a grid that leaves CUs idle or the slots underfilled
(`grid-starvation`), a compute pipe busy ≥ 80 % (`issue-bound`); else no
dispatch-wide limit holds and the largest recoverable stall is named. The
dispatch facts it stands on (analysis/dispatch_facts.py, docs/analysis.md)
are measured and cross-checked: the median duration of the run's dispatches
of the same name and grid, checked against the capture's own span; the grid
checked against the capture's waves; the waves that do the work.

Every rule declares **directions**: what its advice assumes about the
dispatch (bandwidth-bound, issue-bound, hide-memory-latency, more-waves, ...).
Some pairs are opposite (bandwidth-bound vs issue-bound, vs latency advice, vs
advice that adds bytes; issue-bound vs memory advice; load imbalance or a
starved grid vs more waves); the rules of such pairs check the other's facts
as preconditions (`not-at-ceiling`, `not-issue-bound`, `not-imbalanced`,
`grid-matches`), so no two findings of a plan point opposite ways (a test
enumerates the pairs on every shared capture).

## Preconditions

Every rule declares the facts its advice assumes and checks them on the
capture; when one does not hold the rule is silent (or gives a different,
correct finding, as `smem-wait` and `hazard-nops` do), and the plan lists it
under `rules_silenced` with the reason. A finding lists the preconditions it
checked (`preconditions`, each with the measured detail).

## One semantics, one cycle ledger

The ledger counts **traced wave-cycles**: every traced wave's idle + latency,
summed over the waves (not the dispatch's time; `totals.cycles_unit`).

- Performance rules **trigger on stall**: the stall cycles of their pattern,
  the same numbers as the stall summary — except the wait rules whose
  **Semantics** line says they trigger on exposed cycles (`load-use-distance`,
  `lds-to-mfma`, `drain-to-zero`, `in-order-wait`, `mfma-dependency`,
  `occupancy-limit`): a wait other waves already hide gives no finding.
- They **claim exposed cycles**: at each pc they name, the part of its stall +
  idle that other waves' work did not hide (hidden-latency model), listed as
  `claims: [{pc, cycles}]`.
- The **ledger** grants claims in priority order (requested cycles ×
  confidence); a pc is never granted more than its stall + idle, so no cycles
  are counted twice and the total at stake never exceeds the traced
  wave-cycles. A finding that asked for cycles another already holds gets the
  rest and its `ledger.shared` names the holder (`held_by`); the holder's
  names the other (`also_claimed_by`). A finding left with nothing is dropped
  and listed under `yielded`.
- `cycles_at_stake` is the granted total; severity of performance findings:
  HIGH when ≥ 10 % of all traced wave-cycles (idle + latency) are at stake,
  MED ≥ 3 %, LOW below.
- Whole-dispatch findings (`dispatch`: grid starvation, load imbalance,
  bandwidth ceiling, issue-bound) claim no pcs; their severity is set by the
  rule and each carries the dispatch time it bounds (`dispatch_time`:
  measured, bound, meaning). Capture findings: HIGH when confidence ≥ 0.8,
  else MED. Notes (`stall-class`) are INFO and claim nothing.

## Loops

Loops come from the trace (analysis/loops.py): a backward branch of the
listing, taken when the next record of the wave is its target; a loop's trip
count is its passes per entry (entries + taken back edges, per entry; rotated
loops entered in the middle count). Every finding lists its pcs' loop and
trip count (`loops`); advice about iterations (prefetch the next iteration,
double-buffer, drain waits) fires only in a loop that iterated.

## Order

Severity first (HIGH, MED, LOW, INFO); within one severity: the finding the
verdict comes from, grid starvation and load imbalance, capture findings,
whole-dispatch limits, performance findings by priority (cycles at stake ×
confidence), notes. When `prologue-only` fires, every performance and
dispatch finding measured from the traced waves has its confidence halved,
HIGH is capped at MED and its evidence gets a `caveat`.

## Coverage

After the ledger, a stall class holding ≥ 10 % of the kernel's stall that no
finding claims (its claimed pcs carry < 25 % of the class) or explains gets a
`stall-class` note: where those cycles are, the rules that address part of it,
and the precondition that kept each other rule addressing the class silent.

## Rules
"""


def rules_to_markdown(rules) -> str:
    """docs/rules.md: the plan's rules reference, generated from the rule registry."""
    out = [_RULES_PREAMBLE]
    for r in rules.values():
        out.append(f"### `{r.id}` — {r.title} ({r.kind})\n")
        out.append(f"- **Trigger:** {r.trigger}")
        if r.semantics:
            out.append(f"- **Semantics:** {r.semantics}")
        if r.preconditions:
            out.append("- **Preconditions:**")
            out += [f"  - `{pid}`: {text}" for pid, text in r.preconditions]
        out.append(f"- **Evidence:** {r.evidence}")
        out.append(f"- **Limits:** {r.limits}")
        if r.directions:
            out.append(f"- **Directions:** {', '.join(f'`{x}`' for x in r.directions)}")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["rules"]:
        sys.exit("usage: python3 -m attlens.report.markdown rules > docs/rules.md")
    from attlens.analysis.plan import load_rules

    sys.stdout.write(rules_to_markdown(load_rules()))

