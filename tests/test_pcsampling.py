"""PC sampling: the readers on the real files of ../shared, the join to a
thread trace on fixtures placed on real addresses of a shared capture
(tests/pcs_fixtures.py says how they are built), the plan's use of the
reasons (planted, clean twin, contradiction twin), and every surface.

Expected numbers are recounted here from the raw CSV/JSON with the standard
library, never taken from attlens itself."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import pcs_fixtures as F
from attlens.analysis.analyze import analyze
from attlens.analysis.plan import make_plan
from attlens.errors import EmptyCapture, UsageError
from attlens.io.pcsampling import REASON_PREFIX, REASONS, read_pc_sampling
from clirun import assert_clean, run_main
from conftest import loaded, require_shared
from test_profile import app_args, env  # noqa: F401  (the fake rocprofv3 fixture)
from test_profile import attlens as run_attlens

SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"
SAMPLES = "rocprofv3-samples/pc-sampling"
RCV = "outside/rcv-pcsampling"


@pytest.fixture(scope="module")
def shared():
    return require_shared()


@pytest.fixture(scope="module")
def softmax(shared):
    return loaded(shared / SOFTMAX)


@pytest.fixture(scope="module")
def fixtures(shared, tmp_path_factory):
    """The results.json fixtures (built: see tests/pcs_fixtures.py)."""
    tmp = tmp_path_factory.mktemp("pcs")
    cap = shared / SOFTMAX
    rows = F.code_rows(cap)
    waits = [r for r in rows if r[0].startswith("s_waitcnt vmcnt")][:2]
    out = {"cap": cap, "tmp": tmp}
    out["same"] = (tmp / "same" / "att_results.json", F.write_results_json(cap, _mk(tmp / "same") / "att_results.json"))
    out["run2"] = (tmp / "run2" / "out_results.json", F.write_results_json(cap, _mk(tmp / "run2") / "out_results.json", second_run=True))
    changed = {waits[0][2]: "s_waitcnt vmcnt(5)", waits[1][2]: "s_waitcnt lgkmcnt(0)"}
    out["changed"] = (tmp / "changed" / "out_results.json",
                      F.write_results_json(cap, _mk(tmp / "changed") / "out_results.json", second_run=True, texts=changed))
    return out


def _mk(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def raw_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


# --------------------------------------------------------------------------- readers, real files


def test_stochastic_csv_counts_and_reasons_equal_the_raw_file(shared):
    path = shared / SAMPLES / "pc_sampling_stochastic_debug.csv"
    raw = raw_csv(path)
    t = read_pc_sampling(path)
    assert t.format == "rocprofv3-csv" and t.methods == ["stochastic"] and t.rows == len(raw) == t.samples
    issued = [r for r in raw if r["Wave_Issued_Instruction"] == "1"]
    stalled = [r for r in raw if r["Wave_Issued_Instruction"] == "0"]
    assert int((t.issued == 1).sum()) == len(issued) and int((t.issued == 0).sum()) == len(stalled)
    # the CSV fills Stall_Reason on issued rows too (OTHER_WAIT): only not-issued rows count
    assert {r["Stall_Reason"] for r in issued} == {REASON_PREFIX + "OTHER_WAIT"}
    want = Counter(r["Stall_Reason"][len(REASON_PREFIX):] for r in stalled)
    got = Counter(REASONS[k] for k in t.reason[t.issued == 0].tolist())
    assert got == want and (t.reason[t.issued == 1] == -1).all()
    assert sum(want.values()) == len(stalled)
    # instruction type only where the wave issued, by its full-name spelling
    types = Counter(r["Instruction_Type"].rsplit("_TYPE_", 1)[1] for r in issued)
    from attlens.io.pcsampling import INST_TYPES

    assert Counter(INST_TYPES[k] for k in t.inst_type[t.issued == 1].tolist()) == types
    assert t.wave_count.tolist() == [int(r["Wave_Count"]) for r in raw]
    assert t.lanes.tolist() == [bin(int(r["Exec_Mask"])).count("1") for r in raw]
    assert [t.instructions[i] for i in t.inst.tolist()] == [r["Instruction"] for r in raw]


@pytest.mark.parametrize("name", ["pc_sampling_host_trap.csv", "pc_sampling_host_trap_debug.csv"])
def test_host_trap_csv_has_no_issue_bit(shared, name):
    path = shared / SAMPLES / name
    raw = raw_csv(path)
    t = read_pc_sampling(path)
    assert t.methods == ["host_trap"] and t.samples == len(raw)
    assert (t.issued == -1).all() and (t.reason == -1).all()
    assert t.dispatch.tolist() == [int(r["Dispatch_Id"]) for r in raw]
    assert t.lanes.tolist() == [bin(int(r["Exec_Mask"])).count("1") for r in raw]
    assert Counter(t.instructions[i] for i in t.inst.tolist()) == Counter(r["Instruction"] for r in raw)


def test_rcv_directory_counts_equal_code_json(shared):
    d = shared / RCV
    doc = json.loads((d / "code.json").read_text())
    h = doc["header"]
    iss, stl, rs = h.index("PC_Issued"), h.index("PC_Stalled"), h.index("Stall_Reasons")
    rows = [r for r in doc["code"] if not r[0].startswith(";")]
    assert all(sum(r[rs]) == r[stl] for r in rows)  # the reasons of each row sum to its PC_Stalled
    t = read_pc_sampling(d)
    assert t.format == "rcv-ui-output" and not t.warnings
    assert int(t.count[t.issued == 1].sum()) == sum(r[iss] for r in rows)
    assert int(t.count[t.issued == 0].sum()) == sum(r[stl] for r in rows)
    for k in range(len(REASONS)):
        assert int(t.count[t.reason == k].sum()) == sum(r[rs][k] for r in rows)
    # per instruction too, keyed by the listing's pc index
    per_pc = {r[2]: (r[iss], r[stl]) for r in rows}
    got: dict = {}
    for pc, n, i in zip(t.inst.tolist(), t.count.tolist(), t.issued.tolist()):
        a, b = got.get(pc, (0, 0))
        got[pc] = (a + n, b) if i == 1 else (a, b + n)
    assert got == {pc: v for pc, v in per_pc.items() if v != (0, 0)}
    assert any("is_pcs_stochastic: false" in n for n in t.notes)


def test_json_fixture_reads_as_documented(fixtures):
    path, planted = fixtures["same"]
    t = read_pc_sampling(path)
    doc = json.loads(path.read_text())["rocprofiler-sdk-tool"][0]
    recs = doc["buffer_records"]["pc_sample_stochastic"]
    assert t.format == "rocprofv3-json" and t.samples == len(recs) == len(planted)
    assert t.code_object.tolist() == [r["record"]["pc"]["code_object_id"] for r in recs]
    assert t.offset.tolist() == [r["record"]["pc"]["code_object_offset"] for r in recs]
    assert t.issued.tolist() == [r["record"]["wave_issued"] for r in recs]
    want = Counter(r["record"]["snapshot"]["stall_reason"][len(REASON_PREFIX):] for r in recs if not r["record"]["wave_issued"])
    assert Counter(REASONS[k] for k in t.reason[t.issued == 0].tolist()) == want
    assert t.cu.tolist() == [r["record"]["hw_id"]["cu_or_wgp_id"] for r in recs]
    co7 = next(c for c in t.code_objects if c["id"] == 7)
    assert co7["load_base"] - co7["load_delta"] == F.SHIFT  # non-zero on purpose
    assert t.att_filenames == [f"out_47920_shader_engine_{se}_13.att" for se in range(4)]


def test_json_enums_as_integers_and_unknown_fields(tmp_path, fixtures):
    doc = json.loads(fixtures["same"][0].read_text())
    recs = doc["rocprofiler-sdk-tool"][0]["buffer_records"]["pc_sample_stochastic"]
    recs[0]["record"]["snapshot"]["stall_reason"] = 5  # the enum's integer form: BARRIER_WAIT
    recs[0]["record"]["wave_issued"] = 0
    recs[1]["record"]["snapshot"]["stall_reason"] = "SOMETHING_NEW"
    recs[1]["record"]["wave_issued"] = 0
    del recs[2]["record"]["pc"]
    p = tmp_path / "x_results.json"
    p.write_text(json.dumps(doc))
    t = read_pc_sampling(p)
    assert REASONS[t.reason[0]] == "BARRIER_WAIT" and t.reason[1] == -1 and t.code_object[2] == -1
    assert any("unknown field" in w for w in t.warnings)


def test_json_without_samples_is_refused(shared):
    with pytest.raises(EmptyCapture, match="no PC sample"):
        read_pc_sampling(shared / "traces/softmax/rocprofv3/big_results.json")


# --------------------------------------------------------------------------- the join


def planted_by_pc(planted, kind="joined"):
    out: dict = {}
    for s in planted:
        if s["kind"] == kind:
            out[s["pc"]] = out.get(s["pc"], 0) + 1
    return out


def test_same_run_join_uses_the_load_delta_and_the_traced_cus(softmax, fixtures):
    d, _r = softmax
    path, planted = fixtures["same"]
    r = analyze(d, exposed=False, pc_sampling=path)
    j = r.pc_sampling
    assert j.mode == "code-object-id" and j.same_run is True and j.confidence == 1.0 and j.scope == "traced"
    assert j.load == [{"code_object_id": 7, "load_base": F.LOAD_BASE, "load_delta": F.LOAD_BASE - F.SHIFT, "vaddr_minus_offset": F.SHIFT}]
    want = planted_by_pc(planted)
    got = {pc: int(n) for pc, n in enumerate(j.samples.tolist()) if n}
    assert got == want
    kinds = Counter(s["kind"] for s in planted)
    assert {k: v for k, v in j.counts["excluded"].items() if v} == {k: v for k, v in kinds.items() if k != "joined"}
    assert j.counts["in_file"] == len(planted) and j.joined == kinds["joined"]
    # reasons per pc, recounted from the planted samples
    for pc in want:
        rs = Counter(s["reason"] for s in planted if s["kind"] == "joined" and s["pc"] == pc and not s["issued"])
        assert j.reason_counts([pc]) == dict(rs.most_common())
    # taking the offset for the ELF address (load delta assumed 0) would put the
    # samples 0x1000 bytes off: none of the planted offsets is a joined pc's Vaddr
    vaddr = d.code.vaddr
    assert all(int(vaddr[pc]) - F.SHIFT not in {int(vaddr[p]) for p in want} for pc in want)
    # the rows carry it
    h = {x.pc: x for x in r.hotspots.instructions}
    first = next(iter(want))
    assert h[first].pc_samples["samples"] == want[first]
    assert h[first].to_dict()["pc_samples"] == j.row([first])


def test_scope_kernel_keeps_other_dispatches_and_cus(softmax, fixtures):
    d, _r = softmax
    path, planted = fixtures["same"]
    j = analyze(d, exposed=False, pc_sampling=path, pc_sampling_scope="kernel").pc_sampling
    kept = Counter(s["kind"] for s in planted)
    assert j.scope == "kernel" and j.joined == kept["joined"] + kept["outside_traced_cus"] + kept["other_dispatches"]
    assert j.counts["excluded"]["outside_traced_cus"] == j.counts["excluded"]["other_dispatches"] == 0


def test_second_run_is_joined_by_symbol_and_checked_by_text(softmax, fixtures):
    d, _r = softmax
    path, planted = fixtures["run2"]
    j = analyze(d, exposed=False, pc_sampling=path).pc_sampling
    # ids of another process: object 7 is another library there, the kernel is object 3
    assert j.mode == "symbol-offset" and j.same_run is not True and j.scope == "kernel"
    assert j.text_check["checked"] == j.text_check["agree"] == j.joined > 0 and j.confidence == 1.0
    want: dict = {}
    for s in planted:
        if s.get("co", 3) == 3 and s["kind"] != "outside_kernel" and s["pc"] is not None:
            want[s["pc"]] = want.get(s["pc"], 0) + 1
    assert {pc: int(n) for pc, n in enumerate(j.samples.tolist()) if n} == want
    assert j.counts["excluded"]["other_code_objects"] == sum(1 for s in planted if s.get("co") in (5, 7))


def test_second_run_with_other_code_is_refused_not_misattributed(softmax, fixtures):
    d, _r = softmax
    path, _planted = fixtures["changed"]
    r = analyze(d, exposed=False, pc_sampling=path)
    j = r.pc_sampling
    assert j.mode == "none" and j.joined == 0 and "differs between the runs" in j.reason
    assert all(h.pc_samples is None for h in r.hotspots.instructions)
    assert r.to_dict(3)["pc_sampling"]["join"]["mode"] == "none"


def test_a_csv_or_viewer_listing_of_another_run_is_refused(softmax, shared):
    d, _r = softmax
    j = analyze(d, exposed=False, pc_sampling=shared / SAMPLES / "pc_sampling_stochastic_debug.csv").pc_sampling
    assert j.mode == "none" and "CSV of another" in j.reason
    j = analyze(d, exposed=False, pc_sampling=shared / RCV).pc_sampling
    assert j.mode == "none" and "no kernel symbol named 'softmax_kernel_0'" in j.reason


def test_no_samples_beside_a_capture_changes_nothing(softmax):
    d, r = softmax
    assert r.pc_sampling is None and r.to_dict(2)["pc_sampling"] is None
    assert all("pc_samples" not in x.to_dict() for x in r.hotspots.instructions)


# --------------------------------------------------------------------------- the plan


@pytest.fixture(scope="module")
def barrier_plan(softmax, fixtures):
    """The plan without samples and barrier-heavy's claimed pcs."""
    d, r = softmax
    plan = make_plan(r)
    f = next(f for f in plan.findings if f.rule == "barrier-heavy")
    return plan, sorted(c["pc"] for c in f.requested)


def _plan_with(softmax, fixtures, name, samples):
    d, _r = softmax
    path = _mk(fixtures["tmp"] / name) / "att_results.json"
    F.write_results_json(fixtures["cap"], path, samples=samples)
    r = analyze(d, pc_sampling=path)
    return make_plan(r)


def test_plan_planted_reasons_support_the_finding(softmax, fixtures, barrier_plan):
    base, pcs = barrier_plan
    plan = _plan_with(softmax, fixtures, "barrier-ok", F.at_pcs(fixtures["cap"], pcs, 6, "BARRIER_WAIT"))
    f = next(f for f in plan.findings if f.rule == "barrier-heavy")
    b = next(f for f in base.findings if f.rule == "barrier-heavy")
    ev = f.evidence["pc_sampling"]
    assert ev["verdict"] == "supports" and ev["reasons"] == {"BARRIER_WAIT": 6 * len(pcs)} and ev["expected_share"] == 1.0
    assert f.confidence == b.confidence and ev["confidence_factor"] == 1.0


def test_plan_contradicting_reasons_lower_confidence_and_say_so(softmax, fixtures, barrier_plan):
    base, pcs = barrier_plan
    plan = _plan_with(softmax, fixtures, "barrier-bad", F.at_pcs(fixtures["cap"], pcs, 6, "ARBITER_NOT_WIN"))
    f = next(f for f in plan.findings if f.rule == "barrier-heavy")
    b = next(f for f in base.findings if f.rule == "barrier-heavy")
    ev = f.evidence["pc_sampling"]
    assert ev["verdict"] == "contradicts" and ev["expected_share"] == 0.0
    assert f.confidence == round(b.confidence * 0.6, 2) and "mostly ARBITER_NOT_WIN" in f.rationale
    assert "ARBITER_NOT_WIN (100% of 24)" in ev["note"]


def test_plan_without_samples_is_byte_identical(softmax, fixtures):
    d, r = softmax
    from attlens.jsondoc import dumps

    plain = dumps(make_plan(r).to_dict())
    assert dumps(make_plan(analyze(d, pc_sampling=False)).to_dict()) == plain
    # a refused join cites nothing either
    refused = analyze(d, pc_sampling=fixtures["changed"][0])
    assert dumps(make_plan(refused).to_dict()) == plain


def test_evidence_verdicts_from_counts():
    from attlens.analysis.pcsampling import PcSamplingJoin
    from attlens.analysis.pcsampling_evidence import sample_evidence, wilson

    def join(reasons):
        n = 4
        rs = np.zeros((n, len(REASONS)), dtype=np.int64)
        for k, v in reasons.items():
            rs[1, REASONS.index(k)] = v
        st = rs.sum(axis=1)
        return PcSamplingJoin({"path": "x", "format": "rocprofv3-json", "methods": ["stochastic"]}, "code-object-id", "traced", True, 1.0,
                              "", {}, st.copy(), np.zeros(n, dtype=np.int64), st, rs, True)

    lo, hi = wilson(9, 10)
    assert 0.59 < lo < 0.6 and 0.98 < hi < 0.99
    ev, f = sample_evidence("mfma-dependency", "performance", [1], join({"ALU_DEPENDENCY": 9, "WAITCNT": 1}))
    assert ev["verdict"] == "supports" and f == 1.0
    ev, f = sample_evidence("mfma-dependency", "performance", [1], join({"ALU_DEPENDENCY": 4, "WAITCNT": 4}))
    assert ev["verdict"] == "too few samples" and f == 1.0
    ev, f = sample_evidence("mfma-dependency", "performance", [1], join({"ALU_DEPENDENCY": 30, "WAITCNT": 30}))
    assert ev["verdict"] == "mixed" and f == 1.0
    ev, f = sample_evidence("mfma-dependency", "performance", [1], join({"ALU_DEPENDENCY": 2, "WAITCNT": 28}))
    assert ev["verdict"] == "contradicts" and f == 0.6
    ev, f = sample_evidence("hazard-nops", "performance", [1], join({"WAITCNT": 28}))
    assert ev["verdict"] == "cited" and f == 1.0
    assert sample_evidence("no-source-lines", "capture", [1], join({"WAITCNT": 28})) == (None, 1.0)


# --------------------------------------------------------------------------- surfaces


def test_analyze_on_the_rcv_folder_gives_the_reasons_not_exit_6(shared):
    o = run_main("analyze", shared / RCV, "--json", "--top", "3")
    assert_clean(o)
    assert o.code == 0, o.describe()
    doc = o.json()
    from attlens import schemas

    schemas.validate(doc)
    assert doc["schema"] == "attlens.pc_sampling" and doc["cycles"] is None
    rows = [r for r in json.loads((shared / RCV / "code.json").read_text())["code"] if not r[0].startswith(";")]
    assert doc["totals"]["samples"] == sum(r[10] + r[11] for r in rows)
    assert doc["totals"]["stalled"] == sum(r[11] for r in rows)
    top = max(rows, key=lambda r: (r[10] + r[11], -r[2]))
    assert doc["instructions"][0]["pc"] == top[2] and doc["instructions"][0]["latency"] is None
    assert doc["instructions"][0]["pc_samples"]["reasons"] == {REASONS[k]: v for k, v in enumerate(top[12]) if v}
    o = run_main("analyze", shared / RCV, "--no-color")
    assert o.code == 0 and "unavailable" in o.out and "BARRIER_WAIT 100%" in o.out


@pytest.mark.parametrize("name", ["pc_sampling_stochastic_debug.csv", "pc_sampling_host_trap.csv"])
def test_pcsampling_command_on_the_csvs(shared, name):
    from attlens import schemas

    o = run_main("pcsampling", shared / SAMPLES / name, "--json", "--top", "0")
    assert_clean(o)
    doc = o.json()
    schemas.validate(doc)
    raw = raw_csv(shared / SAMPLES / name)
    assert doc["totals"]["samples"] == len(raw) and doc["grouping"] == "instruction-text"
    want = Counter((r["Instruction"], r["Instruction_Comment"]) for r in raw)
    assert {(x["isa"], x["source"] or ""): x["pc_samples"]["samples"] for x in doc["instructions"]} == dict(want)
    o = run_main("pcsampling", shared / SAMPLES / name, "--kernel", "x")
    assert o.code == 2 and "names no kernel" in o.err


def test_cli_surfaces_with_samples(softmax, fixtures, tmp_path):
    from attlens import schemas

    cap, path = fixtures["cap"], fixtures["same"][0]
    planted = planted_by_pc(fixtures["same"][1])
    pc = max(planted, key=planted.get)
    o = run_main("asm", cap, "--pc", str(pc), "--around", "1", "--pc-sampling", path, "--json")
    assert_clean(o)
    doc = o.json()
    schemas.validate(doc)
    row = next(x for x in doc["rows"] if x["pc"] == pc)
    assert row["pc_samples"]["samples"] == planted[pc] and doc["pc_sampling"]["mode"] == "code-object-id"
    o = run_main("analyze", cap, "--pc-sampling", path, "--by", "line", "--json", "--top", "1")
    schemas.validate(o.json())
    o = run_main("analyze", cap, "--pc-sampling", path, "--no-pc-sampling")
    assert o.code == 2 and "together" in o.err
    o = run_main("analyze", cap, "--pc-sampling", path, "--no-color", "--mode", "asm", "--top", "3", "--no-plan")
    joined = [x for x in fixtures["same"][1] if x["kind"] == "joined"]
    stalled = sum(1 for x in joined if not x["issued"])
    assert o.code == 0 and "joined by code-object-id" in o.out
    assert f"why waves stalled (of {stalled} stalled samples, {len(joined) - stalled} issued)" in o.out


def test_to_pandas_and_html_carry_the_samples(softmax, fixtures):
    pytest.importorskip("pandas")
    d, _r = softmax
    path, planted = fixtures["same"]
    r = analyze(d, pc_sampling=path)
    df = r.to_pandas("instructions")
    want = planted_by_pc(planted)
    got = {int(p): int(n) for p, n in zip(df["pc"], df["pc_samples.samples"]) if n}
    assert got == want
    waits = sum(1 for s in planted if s["kind"] == "joined" and s["reason"] == "WAITCNT")
    assert int(df["pc_samples.reason.WAITCNT"].sum()) == waits
    from attlens.analysis.waves import analyze_waves
    from attlens.report.html import build_report_data

    waves = analyze_waves(r)
    data = build_report_data(r, make_plan(r, waves=waves), waves)
    isa = data["isa"]
    n = dict(zip(isa["pc"], isa["pc_samples"]["samples"]))
    assert {p: v for p, v in n.items() if v} == want
    assert sum(ln["pc_samples"]["samples"] for ln in data["source"]["lines"]) == sum(want.values())
    assert data["analysis"]["pc_sampling"]["samples"]["joined"] == sum(want.values())


def test_markdown_report_lists_the_samples(softmax, fixtures, tmp_path):
    cap, path = fixtures["cap"], fixtures["same"][0]
    planted = planted_by_pc(fixtures["same"][1])
    o = run_main("report", cap, "--format", "md", "-o", tmp_path / "md", "--pc-sampling", path, "--no-cache")
    assert_clean(o)
    md = (tmp_path / "md" / "report.md").read_text()
    joined = [x for x in fixtures["same"][1] if x["kind"] == "joined"]
    stalled = sum(1 for x in joined if not x["issued"])
    section = md[md.index("## PC sampling"):md.index("## Wave states")]
    assert "joined by code-object-id" in section and f"{len(joined)} of " in section
    assert f"why waves stalled (of {stalled} stalled samples, {len(joined) - stalled} issued)" in section
    top = md[md.index("## Top 10 instructions"):md.index("### 1.")]
    head, _, *rows = [ln for ln in top.splitlines() if ln.startswith("|")]
    cols = [c.strip() for c in head.strip("|").split("|")]
    assert cols[-2:] == ["samples", "sampled stall reasons"]
    for ln in rows:  # every listed instruction: the samples planted on its pc
        cells = [c.strip() for c in ln.strip("|").split("|")]
        pc, n = int(cells[1]), cells[-2]
        assert n == f"{planted.get(pc, 0):,}" or (n == "-" and pc not in planted), pc
    # every listed source line: the samples planted on its pcs (code.json's source column)
    per_line: dict = {}
    for r in F.code_rows(cap):
        per_line[r[3]] = per_line.get(r[3], 0) + planted.get(r[2], 0)
    top = md[md.index("## Top 8 source lines"):md.index("## Top 10 instructions")]  # softmax has 8 lines with cycles
    head, _, *rows = [ln for ln in top.splitlines() if ln.startswith("|")]
    assert [c.strip() for c in head.strip("|").split("|")][-2:] == ["samples", "sampled stall reasons"]
    got = {c[1].strip("` "): c[-2] for c in ([x.strip() for x in ln.strip("|").split("|")] for ln in rows)}
    assert got == {src: f"{per_line[src]:,}" for src in got} and any(per_line[src] for src in got)
    plain = run_main("report", cap, "--format", "md", "-o", tmp_path / "plain", "--no-pc-sampling", "--no-cache")
    assert "## PC sampling" not in (tmp_path / "plain" / "report.md").read_text() and plain.code == 0


def test_sample_tables_are_kept_in_the_cache(fixtures, tmp_path, monkeypatch):
    from attlens.cache.pcsamples import cached_samples

    calls = []

    def reader(p):
        calls.append(p)
        return read_pc_sampling(p)

    path = fixtures["same"][0]
    a = cached_samples(path, reader, cache=tmp_path / "c")
    b = cached_samples(path, reader, cache=tmp_path / "c")
    assert len(calls) == 1 and a.samples == b.samples and a.code_objects == b.code_objects
    for k in a.columns:
        assert np.array_equal(a.columns[k], b.columns[k])
    empty = require_shared() / "traces/softmax/rocprofv3/big_results.json"
    for _ in range(2):
        with pytest.raises(EmptyCapture):
            cached_samples(empty, reader, cache=tmp_path / "c")
    assert len(calls) == 2  # the refusal is remembered too


def test_api_arguments_are_checked():
    import attlens

    with pytest.raises(UsageError):
        attlens.analyze(require_shared() / SOFTMAX, pc_sampling=3)
    with pytest.raises(UsageError):
        attlens.analyze(require_shared() / SOFTMAX, pc_sampling_scope="all")


# --------------------------------------------------------------------------- capture


def test_job_file_pc_sampling_keys_are_checked():
    from attlens.capture.jobfile import add_pc_sampling, att_job

    job = add_pc_sampling(att_job("k", [3], "/tmp/x"), "stochastic", 65536)
    assert job["pc_sampling_unit"] == "cycles" and job["kernel_trace"] is True
    with pytest.raises(UsageError, match="power of two"):
        add_pc_sampling(att_job("k", [3], "/tmp/x"), "stochastic", 65537)
    assert add_pc_sampling(att_job("k", [3], "/tmp/x"), "host_trap", 100)["pc_sampling_unit"] == "time"


def test_choose_pc_sampling_falls_back():
    from attlens.capture.profile import choose_pc_sampling

    assert choose_pc_sampling("gfx950", "1.1.0", 1 << 16)["method"] == "stochastic"
    assert choose_pc_sampling("gfx940", "1.0.0", 1 << 16)["method"] == "stochastic"
    h = choose_pc_sampling("gfx90a", "1.1.0", 1 << 16)
    assert h["method"] == "host_trap" and h["unit"] == "time" and "skid" in h["reason"] and h["interval"] == 100
    h = choose_pc_sampling("gfx90a", "1.1.0", 1 << 16, host_trap_us=2500)
    assert h["interval"] == 2500 and "every 2,500 µs" in h["reason"]
    assert choose_pc_sampling("gfx1151", "1.1.0", 1 << 16)["method"] is None
    assert choose_pc_sampling(None, "1.1.0", 1 << 16)["method"] is None
    old = choose_pc_sampling("gfx942", "0.6.0", 1 << 16)
    assert old["method"] is None and "rocprofiler-sdk 1.0" in old["reason"]


def test_sweep_job_passes_the_options():
    from attlens.sweep.spec import Job

    args = Job("j", ["true"], ".", profile={"pc_sampling": True, "pc_sampling_interval": 65536, "pc_sampling_host_trap_us": 250}).profile_args()
    assert "--pc-sampling" in args and args[args.index("--pc-sampling-interval") + 1] == "65536"
    assert args[args.index("--pc-sampling-host-trap-us") + 1] == "250"
    assert "--pc-sampling" not in Job("j", ["true"], ".", profile={"pc_sampling": False}).profile_args()


def test_profile_interval_must_be_a_power_of_two():
    o = run_main("profile", "--pc-sampling", "--pc-sampling-interval", "1000", "--", "true")
    assert o.code == 2 and "power of two" in o.err
    for bad in ("0", "1000001", "1.5"):
        o = run_main("profile", "--pc-sampling", "--pc-sampling-host-trap-us", bad, "--", "true")
        assert o.code == 2 and "--pc-sampling-host-trap-us" in o.err, bad


def test_host_trap_default_is_the_profiles():
    from attlens.capture.profile import HOST_TRAP_INTERVAL_US, ProfileOptions
    from attlens.cli import build_parser

    args = build_parser().parse_args(["profile"])  # main() takes the program after "--" off argv first
    assert args.pc_sampling_host_trap_us == HOST_TRAP_INTERVAL_US == ProfileOptions.pc_sampling_host_trap_us


def test_profile_pc_sampling_with_the_fake_rocprofv3(env):  # noqa: F811
    import yaml

    out = env["tmp"] / "prof"
    doc = json.loads(run_attlens(env, "profile", "--pc-sampling", "--pc-sampling-interval", "65536", "--no-noise-check", "--out", out,
                                 "--json", *app_args(env)).stdout)
    from attlens import schemas

    schemas.validate(doc)
    pcs = doc["pc_sampling"]
    assert pcs["method"] == "stochastic" and pcs["unit"] == "cycles" and pcs["interval"] == 65536
    job = yaml.safe_load(Path(doc["job_file"]).read_text())["jobs"][0]
    assert job["pc_sampling_beta_enabled"] is True and job["pc_sampling_method"] == "stochastic" and job["pc_sampling_interval"] == 65536
    names = sorted(Path(p).name for p in pcs["outputs"])
    assert names == ["att_pc_sampling_stochastic.csv", "att_results.json"]
    # recount what the analysis joined from the written results.json: the traced dispatch, CU 1 of SE 0-3, known code objects
    best = Path(doc["best_capture"])
    dispatch = int(best.name.rsplit("_", 1)[1])
    tool = json.loads((out / "att" / "att_results.json").read_text())["rocprofiler-sdk-tool"][0]
    known = {c["code_object_id"] for c in tool["code_objects"]}
    recs = [e["record"] for e in tool["buffer_records"]["pc_sample_stochastic"]]
    want = [r for r in recs if r["dispatch_id"] == dispatch and r["hw_id"]["cu_or_wgp_id"] == 1 and r["pc"]["code_object_id"] in known]
    ja = doc["analysis"]["pc_sampling"]
    assert ja["join"]["mode"] == "code-object-id" and ja["join"]["same_run"] is True
    assert ja["samples"]["joined"] == len(want) > 0 and ja["samples"]["in_file"] == len(recs)
    assert ja["stalled"] == sum(1 for r in want if r["wave_issued"] == 0)
    assert "PC samples" in next(s["detail"] for s in doc["steps"] if s["step"] == "analysis")


@pytest.mark.parametrize("target,method", [("gfx90a", "host_trap"), ("gfx908", None)])
def test_profile_pc_sampling_falls_back(env, target, method):  # noqa: F811
    env["write"](target=target)
    out = env["tmp"] / f"prof-{target}"
    doc = json.loads(run_attlens(env, "profile", "--pc-sampling", "--pc-sampling-host-trap-us", "250", "--no-noise-check", "--out", out,
                                 "--json", *app_args(env)).stdout)
    pcs = doc["pc_sampling"]
    assert pcs["method"] == method
    step = next(s for s in doc["steps"] if s["step"] == "pc sampling")
    import yaml

    job = yaml.safe_load(Path(doc["job_file"]).read_text())["jobs"][0]
    if method is None:
        assert step["status"] == "skipped" and "no PC sampling" in step["detail"] and "pc_sampling_method" not in job
        assert doc["analysis"]["pc_sampling"] is None
    else:
        assert pcs["unit"] == "time" and job["pc_sampling_unit"] == "time" and pcs["interval"] == job["pc_sampling_interval"] == 250
        ja = doc["analysis"]["pc_sampling"]
        assert ja["join"]["mode"] == "code-object-id" and ja["issued"] is None and ja["stalled"] is None and ja["samples"]["joined"] > 0


# --------------------------------------------------------------------------- hostile input


def test_bad_sample_files_get_one_line_and_a_documented_code(tmp_path, shared):
    cases = {
        "a_results.json": ('{"rocprofiler-sdk-tool": 5}', 7),
        "b_results.json": ('{"rocprofiler-sdk-tool": [{"buffer_records": {"pc_sample_stochastic": [1, "x", null]}}]}', 8),
        "c_results.json": ("{not json", 7),
        "d_pc_sampling_stochastic.csv": ('"Sample_Timestamp","Exec_Mask"\n1,2\n', 7),
        "e_pc_sampling_host_trap.csv": ("", 6),
        "f_pc_sampling_stochastic.csv": ('"Sample_Timestamp","Exec_Mask","Dispatch_Id","Instruction","Instruction_Comment","Correlation_Id",'
                                         '"Wave_Issued_Instruction","Instruction_Type","Stall_Reason","Wave_Count"\n'
                                         '-1,x,2,"s_nop 0","",1,7,"BOGUS","ALSO_BOGUS",99999999\n', 8),
        "notes.txt": ("hello", 2),
    }
    for name, (text, code) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        o = run_main("pcsampling", p, "--json")
        assert_clean(o)
        assert o.code == code, o.describe()
    d = tmp_path / "viewer"
    d.mkdir()
    (d / "filenames.json").write_text('{"pc_sampling": true, "wave_filenames": null}')
    (d / "code.json").write_text(json.dumps({"header": ["ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency", "Stall",
                                                       "Idle", "PC_Issued", "PC_Stalled", "Stall_Reasons"],
                                            "code": [["s_nop 0", 0, 0, "", 1, 0, 0, 0, 0, 0, 2, 5, [0, 0, 0, 3, 0, 0, 0, 0, 0, 0]]]}))
    o = run_main("analyze", d, "--json")
    assert_clean(o)
    doc = o.json()
    assert o.code == 8 and doc["totals"]["stalled"] == 5 and doc["totals"]["reasons"] == {"WAITCNT": 3}
    assert any("do not sum to PC_Stalled" in w for w in doc["warnings"])


@pytest.mark.parametrize("prefetch", [True, False])
def test_sample_files_beside_a_capture_are_read_once_per_command(shared, monkeypatch, prefetch):
    """The loader reads the PC-sample candidates while the wave files are
    parsed (load(samples=True)); the analysis' lookup then reuses them: each
    file is parsed once either way, and the result is the same."""
    import attlens.io.pcsampling as io_pcs
    from attlens.model import pcsampling
    from attlens.model.loader import load

    monkeypatch.setattr(pcsampling, "_RECENT", {})
    monkeypatch.setenv("ATTLENS_NO_CACHE", "1")  # no stored table: every read parses
    calls = []
    real = io_pcs.read_pc_sampling
    monkeypatch.setattr(io_pcs, "read_pc_sampling", lambda p: calls.append(str(p)) or real(p))
    cap = shared / SOFTMAX
    candidates = pcsampling.candidate_files(cap)
    assert candidates, "softmax has a results.json beside it (without samples)"
    d = load(cap, cache=False, samples=prefetch)
    assert sorted(calls) == (sorted(candidates) if prefetch else [])
    r = analyze(d, exposed=False)
    assert sorted(calls) == sorted(candidates)
    assert r.pc_sampling is None
