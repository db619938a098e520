"""Dispatch-level facts (analysis/dispatch_facts.py, analysis/lanes.py) and the
verdict: on every shared capture recomputed from the raw CSV and JSON files,
and on synthetic captures whose answer is known (planted / clean / contradiction)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import replace

import pytest

import attlens
from attlens.analysis.plan import make_plan
from attlens.synth.toy import Op, ToyKernel, default_kernel, write_capture
from conftest import loaded, require_shared, trace_dirs, trace_id

TRACES = trace_dirs()


def _did(path) -> int:
    return int(re.search(r"dispatch_(\d+)", path.name).group(1))


def _raw_rows(path):
    rows = list(csv.DictReader(open(path.parent.parent / "rocprofv3" / "discover_kernel_trace.csv")))
    kernel = json.loads((path / "code.json").read_text())["code"][0][0].lstrip("; ").strip()
    return [r for r in rows if r["Kernel_Name"] == kernel]


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_duration_is_the_median_of_the_same_name_and_grid(path):
    """The median End - Start of the kernel's dispatches with the capture's grid (the
    one all its rows share when the capture's id names another kernel), outliers
    beyond 1.5x named, cross-checked with occupancy.json's span."""
    require_shared()
    from attlens.analysis.dispatch_facts import compute_dispatch_facts

    _, r = loaded(path)
    f = compute_dispatch_facts(r)
    rows = _raw_rows(path)
    me = next((x for x in rows if int(x["Dispatch_Id"]) == _did(path)), rows[0])
    shape = lambda x: tuple(x[f"{k}_Size_{a}"] for k in ("Grid", "Workgroup") for a in "XYZ")  # noqa: E731
    ns = sorted(int(x["End_Timestamp"]) - int(x["Start_Timestamp"]) for x in rows if shape(x) == shape(me))
    n = len(ns)
    med = round(ns[n // 2] if n % 2 else (ns[n // 2 - 1] + ns[n // 2]) / 2)
    kt = f.duration.kernel_trace
    assert (kt["dispatches"], kt["median_ns"], kt["min_ns"], kt["max_ns"]) == (n, med, ns[0], ns[-1])
    assert {o["duration_ns"] for o in kt["outliers"]} == {x for x in ns if x > 1.5 * med or x < med / 1.5}
    span = f.duration.capture_span["ns"]
    agree = abs(med - span) <= max(0.25 * max(med, span), 5000)
    assert f.duration.agreement == ("agree" if agree else "disagree")
    assert f.duration.ns == (med if agree else span) and (f.duration.warning is None) == agree


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_grid_and_xcc_coverage_against_occupancy(path):
    """Waves started on the traced SEs (occupancy.json) vs the grid's share of
    them (32 SEs, 8 XCCs on MI350X); the two small captures are another dispatch
    shape than every kernel-trace row of their kernel."""
    require_shared()
    d, r = loaded(path)
    from attlens.analysis.dispatch_facts import compute_dispatch_facts

    cov = compute_dispatch_facts(r).coverage
    doc = json.loads((path / "occupancy.json").read_text())
    ses = sorted(int(k) for k in doc if k.isdigit() and doc[k])
    started = sum(1 for k in doc if k.isdigit() for e in doc[k] if e[4] == 1)
    gw = d.resources.workgroups * (-(-d.resources.threads_per_workgroup // 64))
    expected = gw * len(ses) / 32
    assert cov.traced_ses == ses == [0, 1, 2, 3] and cov.xccs_traced == [0] and cov.xcc_count == 8
    assert cov.waves_on_traced_ses == started and cov.expected_waves_on_traced_ses == pytest.approx(expected)
    small = path.parent.name == "small"
    assert cov.grid_matches is (not small)
    if small:  # flash small: 64 of 256; pa_mqa small: 36 of 254
        assert started < expected / 3
    assert "XCC 0 of 8 (SEs 0–3 of 32)" == cov.xcc_text()


def test_small_captures_use_their_own_span_and_drop_the_grid(shared):
    path = shared / "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
    plan = make_plan(loaded(path)[1])
    assert plan.dispatch_facts.duration.source == "capture span" and plan.dispatch_facts.duration.agreement == "disagree"
    assert plan.bandwidth.available is False and "does not describe the captured dispatch" in plan.bandwidth.reason
    assert "grid-starvation" not in {f.rule for f in plan.findings}
    assert "the kernel trace's grid does not match this capture" in plan.verdict.sentence


# --------------------------------------------------------------------------- synthetic

_N = iter(range(1000, 10**6))


def op(text, **kw):
    return Op(text, next(_N), **kw)


def _plan(tmp_path, k, **kw):
    return make_plan(attlens.analyze(attlens.load(write_capture(tmp_path, k))), **kw)


def test_an_outlier_dispatch_is_named_and_the_median_used(tmp_path):
    # the capture's own dispatch id ran 5x longer (another run's outlier, as softmax's dispatch 13)
    k = replace(default_kernel(), duration_ns=445_000, other_dispatches=[88_000, 89_000, 90_000, 91_000], span_ns=89_000)
    f = _plan(tmp_path, k, only={"bandwidth-ceiling"}).dispatch_facts
    assert f.duration.ns == 90_000 and f.duration.source == "kernel trace" and f.duration.agreement == "agree"
    assert f.duration.kernel_trace["outliers"] == [{"dispatch_id": 7, "duration_ns": 445_000, "ratio_to_median": 4.94}]
    assert f.duration.kernel_trace["same_id_as_capture"]["duration_ns"] == 445_000
    assert any("outliers" in w and "dispatch 7: 445,000 ns" in w for w in f.warnings)


def test_a_disagreeing_kernel_trace_gives_way_to_the_capture_span(tmp_path):
    # clean twin: span and kernel trace agree; contradiction: they disagree by 5x, beyond noise
    same = _plan(tmp_path / "a", default_kernel(), only={"bandwidth-ceiling"}).dispatch_facts.duration
    assert same.source == "kernel trace" and same.warning is None
    k = replace(default_kernel(), duration_ns=445_000, span_ns=89_000)
    du = _plan(tmp_path / "b", k, only={"bandwidth-ceiling"}).dispatch_facts.duration
    assert du.agreement == "disagree" and du.source == "capture span" and 87_000 < du.ns < 89_000
    assert "the plan uses the capture's span" in du.warning


def test_a_grid_that_does_not_match_the_capture_is_not_used(tmp_path):
    # the toy traces 16 waves per SE; a kernel-trace grid of 20 workgroups (80 waves) cannot be this dispatch
    plan = _plan(tmp_path, replace(default_kernel(), grid=256 * 20))
    assert plan.dispatch_facts.coverage.grid_matches is False
    assert not plan.bandwidth.available and "does not describe the captured dispatch" in plan.bandwidth.reason
    assert plan.rules_silenced["grid-starvation"][0]["id"] == "grid-matches"


def test_lanes_sharing_a_store_address_count_once(tmp_path):
    """Row 7: a store whose address comes from lane >> 3 is shared by 8 lanes: its
    bytes are an eighth of the lane-by-lane count (9.4 MB → 1.18 MB in the review)."""
    store = "buffer_store_dword v1, v3, s[4:7], 0 offen"
    for shift, lanes in ((3, 8), (0, 1)):
        ops = [op(f"v_lshrrev_b32_e32 v2, {shift}, v0"), op("v_lshlrev_b32_e32 v3, 2, v2"), op(store, latency=200, size=8), op("s_endpgm")]
        k = replace(ToyKernel(prologue=ops), workgroup=256)
        bw = _plan(tmp_path / str(shift), k, only={"bandwidth-ceiling"}).bandwidth
        (pc,) = [i for i, o in enumerate(k.listing, start=1) if o.text == store]
        assert bw.lanes_sharing.get(pc, 1) == lanes
        assert bw.write_bytes == pytest.approx(4 * (64 // lanes) * bw.grid_waves)
    # a reused register: lane >> 3 on one path, the lane on the other, met at the join: not shared
    ops = [op("v_lshrrev_b32_e32 v2, 3, v0"), op("s_cbranch_scc1 1"), op("v_mov_b32_e32 v2, v0"), op("v_lshlrev_b32_e32 v3, 2, v2"),
           op(store, latency=200, size=8), op("s_endpgm")]
    bw = _plan(tmp_path / "join", replace(ToyKernel(prologue=ops), workgroup=256), only={"bandwidth-ceiling"}).bandwidth
    assert bw.lanes_sharing == {}


def test_lane_groups_follow_the_isa():
    from types import SimpleNamespace

    import numpy as np

    from attlens.analysis.lanes import lane_groups

    def code(lines):
        return SimpleNamespace(size=len(lines), isa=lines, vaddr=np.arange(len(lines)) * 4, instruction_mask=np.ones(len(lines), dtype=bool))

    base = ["v_bfe_u32 v2, v0, 4, 2", "v_lshl_or_b32 v6, v2, 2, s0", "buffer_load_dwordx4 v[8:11], v6, s[8:11], 0 offen",
            "buffer_load_dword v12, off, s[8:11], 0", "global_load_dword v13, v[20:21], off", "s_endpgm"]
    g = lane_groups(code(base), 64, (256, 1, 1))
    assert g == {2: 16, 3: 64, 4: 1}  # (lane >> 4) & 3: 16 lanes; no vector address: the wave; an unknown pair: per lane
    # a 2-D workgroup: v0 is not the lane (x repeats along y): nothing is shared
    assert lane_groups(code(base), 64, (16, 16, 1))[2] == 1
    # loaded data as an address is per lane; an s_load result is uniform
    g = lane_groups(code(["s_load_dword s4, s[0:1], 0x0", "s_waitcnt lgkmcnt(0)", "v_mov_b32_e32 v1, s4", "buffer_load_dword v2, v1, s[8:11], 0 offen",
                          "s_waitcnt vmcnt(0)", "buffer_load_dword v3, v2, s[8:11], 0 offen", "s_endpgm"]), 64, (256, 1, 1))
    assert g == {3: 64, 5: 1}


def test_bandwidth_bound_silences_issue_bound(tmp_path):
    """The softmax row, planted: a streaming kernel at 80 % of the HBM peak whose
    VALU pipe is also busy ≥ 80 %: one verdict (bandwidth-bound), no issue-bound."""
    ops = ["v_lshl_or_b32 v8, s2, 12, v0", "buffer_load_dwordx4 v[0:3], v8, s[4:7], 0 offen", "buffer_load_dwordx4 v[4:7], v8, s[8:11], 0 offen",
           *[f"v_fma_f32 v{10 + i % 8}, v20, v21, v22" for i in range(120)],
           "s_waitcnt vmcnt(0)", "v_pk_add_f32 v[0:1], v[0:1], v[4:5]", "buffer_store_dwordx4 v[0:3], v8, s[12:15], 0 offen"]
    listing = [op(t, latency=500 if "buffer" in t else 0, size=8 if "buffer" in t else 4) for t in ops] + [op("s_endpgm")]
    nbytes = 3 * 16 * 64 * 4096 * 4
    k = ToyKernel(prologue=listing, duration_ns=round(nbytes / (0.8 * 8000.0)))
    plan = _plan(tmp_path, k)
    rules = {f.rule for f in plan.findings}
    assert plan.verdict.kind == "bandwidth-bound" and "bandwidth-ceiling" in rules and "issue-bound" not in rules
    assert [c["id"] for c in plan.rules_silenced["issue-bound"]] == ["not-at-ceiling"]
    assert plan.rules_silenced["issue-bound"][0]["holds"] is False
    # clean twin: the same kernel at 8 % of the peak is issue-bound (the VALU pipe ≥ 80 % busy)
    plan = _plan(tmp_path / "slow", replace(k, duration_ns=round(nbytes / (0.08 * 8000.0)), span_ns=None))
    assert plan.verdict.kind == "issue-bound" and "bandwidth-ceiling" not in {f.rule for f in plan.findings}
    assert plan.findings[0].evidence["busy_share"] >= 0.8


def test_a_pipe_busy_below_80_percent_is_not_issue_bound(tmp_path):
    # half VALU, half waits on a slow load in the loop: VALU busy well above 50 % but below 80 %
    body = [op(f"v_fma_f32 v{i % 8}, v10, v11, v12") for i in range(12)]
    body += [op("buffer_load_dword v30, v8, s[4:7], 0 offen", latency=60, size=8), op("s_waitcnt vmcnt(0)")]
    k = ToyKernel(prologue=[op("s_mov_b32 s2, 0")], body=[*body, op("s_add_u32 s2, s2, 1"), op("s_cmp_lt_u32 s2, s3"),
                                                           op(f"s_cbranch_scc1 {65536 - (sum(o.size for o in body) + 12) // 4 - 1}")],
                  epilogue=[op("s_endpgm")])
    from attlens.analysis.rules._preconditions import ISSUE_BOUND_BUSY
    from attlens.analysis.waves import analyze_waves

    plan = _plan(tmp_path, k, only={"issue-bound"})
    busy = analyze_waves(plan.result).pipes.kernel["VALU"]["busy_share"]
    assert 0.5 <= busy < ISSUE_BOUND_BUSY == 0.8, busy  # the old rule fired here (≥ 50 %, HIGH ≥ 60 %)
    assert plan.findings == [] and "issue-bound" not in plan.rules_silenced


def test_wave_lifetimes_same_on_one_packed_key_and_on_each_column(monkeypatch):
    """The occupancy events sorted on one packed key pair starts and ends as the
    sort on each column in turn (the path for ranges that overflow 62 bits)."""
    import numpy as np

    from attlens.analysis import dispatch_facts as df

    rng = np.random.default_rng(11)
    n = 4000
    ev = np.column_stack([rng.integers(0, 4, n), rng.integers(10**9, 10**9 + 5000, n), rng.integers(0, 3, n),
                          rng.integers(0, 4, n), rng.integers(0, 8, n), rng.integers(0, 2, n), np.zeros(n, dtype=np.int64)])
    ev[1::3, 1] = ev[0::3, 1][: len(ev[1::3])]  # equal times: ends first
    packed = df._lifetimes(ev)
    monkeypatch.setattr(df, "packed_key", lambda cols: None)
    each = df._lifetimes(ev)
    assert len(packed) > 100 and np.array_equal(packed, each)
