"""Every plan rule on synthetic captures (attlens.synth.toy), three ways:

* planted: the pattern is there → the rule fires, with evidence naming the
  planted pcs and the right numbers;
* clean twin: the pattern minimally removed → silent;
* contradiction twin: the pattern's symptom is there but a precondition of
  the advice is false (loop-free, already 128-bit, already first, grid-limited,
  one-wave workgroups, ...) → silent, or a different and correct finding.

pcs number the listing (prologue + body + epilogue + extra_listed) from 1.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import orjson
import pytest

import attlens
from attlens.analysis.plan import REGISTRY, Finding, load_rules, make_plan, rule
from attlens.errors import UsageError
from attlens.synth.toy import Op, ToyKernel, default_kernel, write_capture

_LINES = itertools.count(100)


def op(text, line=None, **kw) -> Op:
    """An Op on its own fresh source line unless one is given."""
    return Op(text, next(_LINES) if line is None else line, **kw)


def vadd(i: int = 0) -> Op:
    return op(f"v_add_f32 v{20 + i % 8}, v30, v31")


LOAD = "buffer_load_dwordx4 v[0:3], v8, s[4:7], 0 offen"
MFMA16 = "v_mfma_f32_16x16x16_bf16 a[0:3], v[4:5], v[6:7], a[0:3]"


def loop_branch(body) -> Op:
    words = sum(o.size for o in body) // 4  # SOPP simm16 back to the body start
    return op(f"s_cbranch_scc1 {65536 - words - 1}")


def kernel(body, prologue=None, epilogue=None, **kw) -> ToyKernel:
    """prologue + body (closed by a backward branch to its first op) + epilogue."""
    pro = prologue if prologue is not None else [op("s_mov_b32 s2, 0")]
    epi = epilogue if epilogue is not None else [op("s_endpgm")]
    if body:
        body = [*body, op("s_add_u32 s2, s2, 1"), op("s_cmp_lt_u32 s2, s3")]
        body.append(loop_branch(body))
    return ToyKernel(prologue=pro, body=body, epilogue=epi, **kw)


def straight(ops, **kw) -> ToyKernel:
    """Loop-free: the ops, then s_endpgm."""
    return ToyKernel(prologue=[*ops, op("s_endpgm")], body=[], epilogue=[], **kw)


def pcs(k: ToyKernel, prefix: str) -> list[int]:
    return [i for i, o in enumerate(k.listing, start=1) if o.text.startswith(prefix)]


def analyze(tmp_path, k: ToyKernel, mutate=None):
    root = write_capture(tmp_path, k)
    if mutate is not None:
        mutate(root)
    return attlens.analyze(attlens.load(root))


def total_cycles(r) -> int:
    return int((r.sums.idle + r.sums.latency).sum())


# --- editing wave files (truncated or early-exit waves) ---------------------


def cut_wave(root, name: str, keep: int, tail: bool = False) -> None:
    """Keep a wave's first ``keep`` records (plus its last one with ``tail``:
    an early s_endpgm); end, counts and timeline follow."""
    path = root / name
    doc = orjson.loads(path.read_bytes())
    w = doc["wave"]
    recs = w["instructions"][:keep]
    if tail:
        last = list(w["instructions"][-1])
        last[0] = recs[-1][0] + recs[-1][3]
        recs.append(last)
    end = recs[-1][0] + recs[-1][3]
    budget, tl = end - w["begin"], []
    for state, dur in w["timeline"]:
        if budget <= 0:
            break
        tl.append([state, min(dur, budget)])
        budget -= tl[-1][1]
    left = {}
    for r in recs:
        left[r[4]] = left.get(r[4], 0) + 1
    wc = []
    for e in w["waitcnt"]:  # keep entries of wait executions still present (the analysis re-simulates waits)
        if left.get(e[0], 0) > 0:
            wc.append(e)
            left[e[0]] -= 1
    w.update(instructions=recs, timeline=tl, waitcnt=wc, end=end)
    doc.update(num_insts=len(recs), num_stitched=len(recs), duration=end - w["begin"])
    path.write_bytes(orjson.dumps(doc))
    fn = orjson.loads((root / "filenames.json").read_bytes())
    for simds in fn["wave_filenames"].values():
        for slots in simds.values():
            for insts in slots.values():
                for entry in insts.values():
                    if entry[0] == name:
                        entry[2] = end
    (root / "filenames.json").write_bytes(orjson.dumps(fn))


def wave_names(root) -> list[str]:
    return sorted(p.name for p in root.glob("se*_sm*_sl*_wv*.json"))


def cut_waves(n: int, keep=None, tail: bool = False):
    """Mutator: cut the first n wave files to ``keep`` records (None: drop s_endpgm only)."""

    def mutate(root):
        for name in wave_names(root)[:n]:
            count = orjson.loads((root / name).read_bytes())["num_insts"]
            cut_wave(root, name, count - 1 if keep is None else keep, tail)

    return mutate


def drop_kernel_trace(root):
    (root.parent / "demo_kernel_trace.csv").unlink()


# --- the cases: planted, clean twin, contradiction twin ---------------------
# Builders return a kernel or (kernel, mutate). check(finding, kernel, result)
# asserts the evidence; contra(findings_of_the_rule, kernel, plan) asserts the
# contradiction twin's outcome (default: silent).


def lud(gap: int):
    return kernel([op(LOAD, latency=720, size=8), *[vadd(i) for i in range(gap)], op("s_waitcnt vmcnt(0)"), op("v_add_f32 v9, v0, v1")])


def lud_check(f, k, r):
    (load,), (wait,) = pcs(k, "buffer_load"), pcs(k, "s_waitcnt vmcnt")
    row = f.evidence["loads"][0]
    assert row["pc"] == load and row["lever"] == "next-iteration" and row["loop"] == 0
    assert row["distance_instructions_median"] == 4 and row["trips_mean"] == 8
    assert [c["pc"] for c in f.claims] == [wait] and f.claims[0]["cycles"] > 0
    assert "Prefetch" in f.change and "next iteration" in f.change


def lud_loop_free():
    # the address is computed right before the load, into fresh registers:
    # the load already issues as soon as it can; nothing to move
    return straight([op("v_lshlrev_b32_e32 v8, 4, v0"), op(LOAD, latency=2000, size=8), vadd(), vadd(1), vadd(2),
                     op("s_waitcnt vmcnt(0)"), op("v_add_f32 v9, v0, v1")])


def interleave(grouped: bool, looped: bool = True):
    loads = [op(f"buffer_load_dwordx4 v[{4 * i}:{4 * i + 3}], v8, s[4:7], {16 * i} offen", latency=300, stall=200, size=8) for i in range(4)]
    mfmas = [op(MFMA16, issue=16, size=8) for _ in range(4)]
    body = loads + mfmas if grouped else [x for pair in zip(loads, mfmas) for x in pair]
    if not looped:
        return straight([*body, op("s_waitcnt vmcnt(0)")])
    return kernel([*body, op("s_waitcnt vmcnt(0)")])


def interleave_check(f, k, r):
    loads = pcs(k, "buffer_load")
    assert (f.evidence["loads"], f.evidence["mfmas"], f.evidence["alternations"]) == (4, 4, 7)
    assert f.evidence["loop_pcs"] == [len(k.prologue) + 1, len(k.prologue) + len(k.body)]
    assert {i["pc"] for i in f.evidence["top_loads"]} <= set(loads)
    assert f.evidence["load_issue_stall"] == 4 * 200 * 8 * 32


NARROW = "buffer_load_dword v0, v8, s[4:7], 0 offen"


def backpressure(stall: int, text: str = NARROW):
    return kernel([op(text, latency=500, stall=stall, size=8), vadd(), vadd(1), op("s_waitcnt vmcnt(0)")])


def backpressure_check(f, k, r):
    (load,) = pcs(k, "buffer_load")
    assert f.evidence["instructions"][0]["pc"] == load and f.evidence["instructions"][0]["bytes_per_lane"] == 4
    assert f.evidence["issue_stall_narrow"] == 400 * 8 * 32 and f.evidence["issue_stall_128bit"] == 0
    assert "dwordx4" in f.change


def lds_mfma(gap: int, mfma: str = MFMA16):
    return kernel([op("ds_read_b128 v[4:7], v9", latency=400, size=8), op("s_waitcnt lgkmcnt(0)"), *[vadd(i) for i in range(gap)], op(mfma, issue=8, size=8)])


def lds_mfma_check(f, k, r):
    (ds,), (wait,), (mfma,) = pcs(k, "ds_read"), pcs(k, "s_waitcnt"), pcs(k, "v_mfma")
    row = f.evidence["waits"][0]
    assert (row["wait_pc"], row["mfma_pc"], row["lds_producers"]) == (wait, mfma, [ds])
    assert row["exposed_cycles"] > 0 and [c["pc"] for c in f.claims] == [wait]


def drain(partial: bool, youngest_first: bool = False):
    loads = [op(f"buffer_load_dword v{i}, v8, s[4:7], {4 * i} offen", latency=600, size=8) for i in range(3)]
    waits = [op(f"s_waitcnt vmcnt({n})") for n in ((2, 1, 0) if partial else (0,))]
    order = (2, 1, 0) if youngest_first else (0, 1, 2)
    uses = [op(f"v_add_f32 v{10 + i}, v{i}, v{i}") for i in order]
    return kernel([*loads, *(x for pair in zip(waits, uses) for x in pair)] if partial else [*loads, *waits, *uses])


def drain_check(f, k, r):
    (wait,) = pcs(k, "s_waitcnt vmcnt(0)")
    row = f.evidence["waits"][0]
    assert (row["wait_pc"], row["producers_per_execution"]) == (wait, 3)
    assert row["avoidable_cycles"] > 0 and row["needed_next"] == [pcs(k, "buffer_load")[0]]


def crosslane(mn: str, batched: bool = False):
    if batched:
        ops = [op(f"{mn} v{10 + i}, v{i}, v{3 + i}", latency=300, size=8) for i in range(3)]
        return kernel([*ops, op("s_waitcnt lgkmcnt(0)"), vadd(), vadd(1), vadd(2)])
    body = []
    for i in range(3):
        body += [op(f"{mn} v{10 + i}, v{i}, v{3 + i}", latency=300, size=8), op("s_waitcnt lgkmcnt(0)"), vadd(i)]
    return kernel(body)


def crosslane_check(f, k, r):
    planted = pcs(k, "ds_bpermute")
    assert {i["pc"] for i in f.evidence["instructions"]} == set(planted)
    assert all(i["waited_on"] > 0 for i in f.evidence["instructions"])


def smem(latency: int):
    pro = [op("s_load_dwordx4 s[4:7], s[0:1], 0x0", latency=latency, size=8), op("s_waitcnt lgkmcnt(0)"), op("s_mov_b32 s2, 0")]
    return kernel([op(LOAD, latency=300, size=8), vadd(), op("s_waitcnt vmcnt(0)")], prologue=pro)


def smem_late():
    # the first argument batch, then one more argument load after the first wait
    pro = [op("s_load_dwordx4 s[4:7], s[0:1], 0x0", latency=200, size=8), op("s_waitcnt lgkmcnt(0)"), vadd(),
           op("s_load_dwordx2 s[8:9], s[0:1], 0x60", latency=20000, size=8), op("s_waitcnt lgkmcnt(0)"), op("s_mov_b32 s2, 0")]
    return kernel([op(LOAD, latency=300, size=8), vadd(), op("s_waitcnt vmcnt(0)")], prologue=pro)


def smem_first_only(offset: str = "0x100"):
    pro = [op(f"s_load_dwordx4 s[4:7], s[0:1], {offset}", latency=20000, size=8), op("s_waitcnt lgkmcnt(0)"), op("s_mov_b32 s2, 0")]
    return kernel([op(LOAD, latency=300, size=8), vadd(), op("s_waitcnt vmcnt(0)")], prologue=pro)


def smem_check(f, k, r):
    first, late = pcs(k, "s_load")
    assert [p["pc"] for p in f.evidence["hoistable"]] == [late]
    assert [p["pc"] for p in f.evidence["first_batch"]] == [first]
    assert {c["pc"] for c in f.claims} == {pcs(k, "s_waitcnt lgkmcnt")[1]}
    assert "Issue the s_loads at pcs [4]" in f.change


def smem_contra(found, k, plan, r):
    # already first, one wait, arguments past the 56 preloadable bytes: an
    # explained no-action that claims nothing, never "hoist"
    (f,) = found
    assert f.severity == "INFO" and f.claims == [] and f.cycles_at_stake == 0
    assert "launch latency" in f.change and "Issue the s_loads" not in f.change
    assert [c["id"] for c in plan.rules_silenced.get("smem-wait", [])] == []


def occupancy(vgprs: int, grid: int):
    return replace(default_kernel(), vgprs=vgprs, grid=grid)


def occupancy_check(f, k, r):
    ev = f.evidence
    assert "vgpr" in ev["limiters"] and ev["theoretical_waves_per_simd"] == 2
    assert ev["vgpr_inputs"]["reported_vgprs"] == 100 and ev["vgpr_inputs"]["registers_used"] == 200  # gfx950: 2 x reported
    assert ev["observed_max_waves_per_simd"] == 2 and ev["memory_wait_stall"] > 0


def barrier(skew: int, workgroup: int = 256, own: int = 8, work: int = 0):
    """An s_barrier that synchronizes the 4 waves of a workgroup (one per SIMD):
    the op before it costs ``skew`` more cycles per SIMD index, so the waves
    arrive skew apart; the barrier ends ``own`` cycles after the last arrives."""
    body = [op("v_add_f32 v20, v30, v31", skew=skew), op("s_barrier", stall=own), vadd(1), *[vadd(2 + i) for i in range(work)]]
    return replace(kernel(body), workgroup=workgroup, barrier_sync=True)


def barrier_check(f, k, r):
    (bar,) = pcs(k, "s_barrier")
    row = f.evidence["barriers"][0]
    assert row["pc"] == bar and row["loop"] == 0 and row["own_latency_per_execution"] == 8
    # waves arrive 0, 100, 200, 300 cycles after the first (+ the SIMDs' 16-cycle start offsets):
    # each waits for the last; the recoverable skew is (300 + 200 + 100 + 0) / 4 per execution
    assert 140 <= row["skew_per_execution"] <= 160 and row["mean_stall_per_execution"] == pytest.approx(row["skew_per_execution"] + 8, abs=1)
    assert row["guards_lds"] is None and [c["pc"] for c in f.claims] == [bar]
    assert f.cycles_at_stake < int(r.sums.stall[bar])  # the skew, not the whole barrier stall


def mfma_dep(dependent: bool, gap: int = 0):
    second = "a[0:15], v[0:1], v[2:3], a[0:15]" if dependent else "a[16:31], v[0:1], v[2:3], a[16:31]"
    return kernel([op("v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]", issue=16, size=8), *[vadd(i) for i in range(gap)],
                   op(f"v_mfma_f32_32x32x8_bf16 {second}", issue=16, stall=60, size=8), vadd()])


def mfma_dep_check(f, k, r):
    first, second = pcs(k, "v_mfma")
    pair = f.evidence["pairs"][0]
    assert (pair["producer_pc"], pair["dependent_pc"], pair["distance_instructions"]) == (first, second, 1)
    assert pair["passes_required"] > pair["distance_instructions"] and pair["stall"] == 60 * 8 * 32


def nops(n: int, nop: str = "s_nop 7"):
    body = [vadd()]
    for i in range(n):
        body += [op(f"v_cmp_gt_f32_e32 vcc, v{1 + i}, v30"), op(nop, stall=24, issue=8), op(f"v_cndmask_b32_e32 v{10 + i}, v31, v32, vcc")]
    return kernel(body)


def nops_check(f, k, r):
    planted = pcs(k, "s_nop")
    assert {i["pc"] for i in f.evidence["instructions"]} == set(planted[:3])
    (h,) = f.evidence["hazards"]
    assert h["hazard"] == "VALU writes SGPR/VCC → VALU reads it" and h["required_wait_states"] == [2]
    assert h["nops"] == 4 and h["excess_wait_states"] == 4 * (8 - 2)  # s_nop 7 = 8 wait states, 2 required
    assert "exceed" in f.change and f.evidence["cycles"] == 4 * 24 * 8 * 32


def nops_contra(found, k, plan, r):
    # s_nop 1 between v_cmp and v_cndmask is exactly what the ISA requires:
    # the finding says so instead of advising removal
    (f,) = found
    (h,) = f.evidence["hazards"]
    assert h["required_wait_states"] == [2] and h["excess_wait_states"] == 0 and f.evidence["excess_cycles"] == 0
    assert "none is in excess" in f.change and f.confidence < 0.5


def never_looped(listed: bool):
    loop = [vadd(i) for i in range(5)] + [op("s_cbranch_scc1 65530")]  # back 6 words: to the first vadd
    straight_ops = [op("s_mov_b32 s2, 0"), vadd(), op("s_endpgm")]
    if listed:
        return ToyKernel(prologue=straight_ops, extra_listed=loop)
    return ToyKernel(prologue=straight_ops[:2], body=loop, epilogue=straight_ops[2:], iterations=3)


def skipped_loop():
    """A guard branches over the loop: s_cmp sets SCC, s_cbranch_scc1 jumps past it."""
    body = [vadd(i) for i in range(5)]
    body.append(loop_branch(body))
    words = sum(o.size for o in body) // 4
    pro = [op("s_mov_b32 s3, 0"), op("s_cmp_eq_u32 s2, s3"), op(f"s_cbranch_scc1 {words}")]
    return ToyKernel(prologue=pro, body=body, epilogue=[op("s_endpgm")], iterations=0)


def never_looped_check(f, k, r):
    (guard, back) = pcs(k, "s_cbranch")
    assert f.evidence["branch_pc"] == back and f.evidence["loop_pcs"] == [back - 5, back]
    sk = f.evidence["skipped_by"]
    assert (sk["branch_pc"], sk["condition"], sk["set_by_pc"], sk["condition_registers"]) == (guard, "SCC", guard - 1, ["s2", "s3"])
    assert sk["target_pc"] == back + 1 and sk["waves_taking_it"] == sk["waves"] == 32
    assert f"pc {guard}" in f.change and "re-targeting the CU will not help" in f.change


def no_lines(strip: bool, keep_one: bool = False):
    k = default_kernel()
    if strip:
        for o in k.listing:
            o.line = None
        if keep_one:
            k.listing[0].line = 10
    return k


def one_line(collapse: bool, distinct: int = 40):
    return kernel([op(f"v_add_f32 v{i % 32}, v{i % 32}, v40", line=50 if (collapse and i < distinct) else None, stall=50 if i < distinct else 0)
                   for i in range(40)])


def one_line_check(f, k, r):
    assert f.evidence["line"] == "/work/toy/toy_kernel.py:50"
    assert f.evidence["executed_instructions"] == 40 and f.evidence["latency_share"] >= 2 / 3


def few(simds: int, grid: int = 256 * 4096):
    return replace(default_kernel(), shader_engines=1, simds=simds, slots=1, instances=4, grid=grid)


def few_check(f, k, r):
    assert f.evidence["traced_waves"] == 4 and f.evidence["grid_waves"] == 4096 * 4


def early_exit_check(f, k, r):
    ev = f.evidence  # the default kernel runs 5 + 10 * 8 + 5 = 90 records per wave
    assert (ev["waves_out"], ev["waves"], ev["longest_wave_instructions"], ev["threshold_instructions"]) == (8, 32, 90, 9)
    assert (ev["instructions_median_out"], ev["instructions_median_full"]) == (3, 90)


def no_lines_check(f, k, r):
    assert f.evidence == {"executed_instructions": len(k.listing)}


def truncated_check(f, k, r):
    assert f.evidence["count"] == 3 and len(f.evidence["waves"]) == 3
    for w in f.evidence["waves"]:  # each now ends on the op before s_endpgm
        assert (w["last_pc"], w["last"]) == (len(k.listing) - 1, k.listing[-2].text)


def grid_check(f, k, r):
    ev = f.evidence
    assert (ev["workgroups"], ev["cus"], ev["waves_per_workgroup"], ev["idle_cus"]) == (100, 256, 4, 156)
    assert ev["idle_cu_share"] == round(156 / 256, 4) and f.severity == "HIGH" and f.lead


# a streaming kernel: two 128-bit loads and one 128-bit store per lane, address from the workgroup id (s2)
STREAM = ["v_lshl_or_b32 v8, s2, 12, v0", "buffer_load_dwordx4 v[0:3], v8, s[4:7], 0 offen", "buffer_load_dwordx4 v[4:7], v8, s[8:11], 0 offen",
          "s_waitcnt vmcnt(0)", "v_pk_add_f32 v[0:1], v[0:1], v[4:5]", "buffer_store_dwordx4 v[0:3], v8, s[12:15], 0 offen"]
STREAM_BYTES = 3 * 16 * 64 * 4096 * 4  # per grid: 3 accesses x 16 B x 64 lanes x 16,384 waves


def streaming(fraction: float, looped: bool = False):
    ops = [op(t, latency=500 if "buffer" in t else 0, size=8 if "buffer" in t else 4) for t in STREAM]
    dur = round(STREAM_BYTES / (fraction * 8000.0))
    if looped:  # the same bytes, moved by a loop of 4 iterations over a 4x smaller grid
        return replace(kernel(ops, iterations=4), grid=256 * 1024, duration_ns=dur)
    return replace(straight(ops), duration_ns=dur)


def bandwidth_check(f, k, r):
    ev = f.evidence
    dur = round(STREAM_BYTES / (0.8 * 8000.0))
    assert ev["bytes_moved"] == STREAM_BYTES and ev["duration_ns"] == dur
    assert ev["fraction_of_peak"] == pytest.approx(STREAM_BYTES / dur / 8000.0, abs=1e-4)
    assert ev["peak_gbps"] == 8000.0 and ev["grid_waves"] == 16384 and ev["share_of_top_bytes_already_128bit"] == 1.0


def valu_heavy():
    return kernel([op(f"v_fma_f32 v{i % 8}, v10, v11, v12") for i in range(30)])


def vmem_heavy():
    return kernel([op(f"buffer_load_dwordx4 v[{4 * (i % 4)}:{4 * (i % 4) + 3}], v8, s[4:7], 0 offen", issue=32, latency=100, size=8) for i in range(12)])


def issue_check(f, k, r):
    assert f.evidence["pipe"] == "VALU" and f.evidence["busy_share"] >= 0.6 and f.severity == "HIGH"
    assert {i["pc"] for i in f.evidence["top_instructions"]} <= set(pcs(k, "v_fma") + pcs(k, "v_add"))


def lds_issue(stall: int):
    return kernel([op("ds_read_b32 v4, v9", stall=stall, latency=4, size=8), op("s_waitcnt lgkmcnt(0)"), vadd()])


def stall_class_check(f, k, r):
    (ds,) = pcs(k, "ds_read")
    assert f.evidence["class"] == "lds" and f.evidence["top_pcs"][0]["pc"] == ds
    assert f.cycles_at_stake == 0 and f.severity == "INFO" and "No action" in f.change


def all_skip_contra(found, k, plan, r):
    # every wave skips the loop: not two populations but a prologue-only capture
    assert found == []
    assert [f.rule for f in make_plan(r, only={"early-exit-waves", "prologue-only"}).findings] == ["prologue-only"]


def covered_contra(found, k, plan, r):
    # the barrier class is claimed by barrier-heavy: no note
    assert not [f for f in found if f.evidence["class"] == "barrier"] and any(f.rule == "barrier-heavy" for f in plan.findings)


def imbalance(few: bool):
    """Mutator: the waves of the traced SEs' other CUs live 300 cycles from the
    start of the dispatch, so the traced CU's waves (one per slot, ~7,000
    cycles) set the span: a few (1.6 %) when ``few``, else a quarter of the
    waves run as long as them (the span is still many median waves)."""
    def mutate(root):
        doc = orjson.loads((root / "occupancy.json").read_bytes())
        for se, events in list(doc.items()):
            if not se.isdigit():
                continue
            t0 = min(e[0] for e in events)
            traced = [e for e in events if e[1] == 1]
            n = sum(1 for e in events if e[1] != 1 and e[4] == 1)
            out = list(traced)
            for i in range(n):
                life = 7000 if (not few and i < n // 4) else 300
                start, cu, simd, slot = t0 + 4 * (i % 64), 2 + i // 32, i % 4, (i // 4) % 8
                out += [[start, cu, simd, slot, 1, 1], [start + life, cu, simd, slot, 0, 1]]
            doc[se] = sorted(out, key=lambda e: (e[0], e[4]))
        (root / "occupancy.json").write_bytes(orjson.dumps(doc))
    return mutate


def imbalance_check(f, k, r):
    ev = f.evidence
    assert ev["long_waves"] == 16 and ev["waves_on_traced_ses"] == 1024 and ev["median_lifetime_cycles"] == 300
    assert ev["span_over_median"] > 20 and ev["long_workgroups"] == 4 and f.lead and f.severity == "HIGH"
    assert f.dispatch_time["bound_ns"] < f.dispatch_time["measured_ns"]


def imbalance_contra(found, k, plan, r):
    # the span is many times the median wave, but a quarter of the waves are long: no "few workgroups" limit
    assert found == [] and plan.dispatch_facts.imbalance.ratio >= 2 and not plan.dispatch_facts.imbalance.imbalanced


def coupled(head_start: bool = True, needs_oldest: bool = False, drained_first: bool = False):
    """An old load (v[40:43]) with a head start, then the needed load (v[0:3]);
    after the vmcnt(0) wait only the needed load is read before the next wait
    (``drained_first``: the old load is waited on and used before the new one issues)."""
    old = op("buffer_load_dwordx4 v[40:43], v8, s[4:7], 0 offen offset:4096", latency=3000, size=8)
    gap = [op(f"v_exp_f32 v{20 + i}, v30", stall=100) for i in range(4)] if head_start else []
    if drained_first:
        gap += [op("s_waitcnt vmcnt(0)"), op("v_add_f32 v12, v40, v41")]
    new = op(LOAD, latency=200, size=8)
    use = op("v_add_f32 v10, v40, v41") if needs_oldest else op("v_add_f32 v10, v0, v1")
    return kernel([old, *gap, new, op("s_waitcnt vmcnt(0)"), use, op("s_waitcnt lgkmcnt(0)"), op("v_add_f32 v11, v40, v41")])


def coupled_check(f, k, r):
    old, new = pcs(k, "buffer_load")
    wait = pcs(k, "s_waitcnt vmcnt")[-1]
    row = f.evidence["waits"][0]
    assert (row["wait_pc"], row["needed_loads"], [c["pc"] for c in row["coupled_loads"]]) == (wait, [new], [old])
    assert row["head_start_cycles"] >= 256 and [c["pc"] for c in f.claims] == [wait]
    assert f"pc(s) [{old}]" in f.change and "in order" in f.change


def split_lds(mergeable: bool = True, wide: bool = False):
    if wide:
        writes = [op("ds_write_b128 v9, v[0:3]", stall=120, latency=64, size=8)]
    else:
        base2 = "v9" if mergeable else "v12"
        writes = [op("ds_write2_b32 v9, v2, v3 offset0:2 offset1:3", stall=120, latency=64, size=8),
                  op(f"ds_write2_b32 {base2}, v0, v1 offset1:1", stall=120, latency=64, size=8)]
    return kernel([vadd(), *writes, op("s_waitcnt lgkmcnt(0)"), vadd(1)])


def split_lds_check(f, k, r):
    a, b = pcs(k, "ds_write2")
    (g,) = f.evidence["groups"]
    assert g["pcs"] == [a, b] and g["base"] == "v9" and g["bytes"] == [0, 16] and g["registers"] == "v[0:3]"
    assert g["as"] == "ds_write_b128 v9, v[0:3]" and g["saves_instructions"] == 1 and g["executions"] == 8 * 32
    assert "`ds_write_b128 v9, v[0:3]`" in f.change


CASES = {  # rule id -> (planted, clean twin, contradiction twin, check, contradiction check or precondition id)
    "load-use-distance": (lambda: lud(3), lambda: lud(12), lud_loop_free, lud_check, "room"),
    "load-mfma-interleave": (lambda: interleave(False), lambda: interleave(True), lambda: interleave(False, looped=False), interleave_check, None),
    "vmem-backpressure": (lambda: backpressure(400), lambda: backpressure(0), lambda: backpressure(400, LOAD), backpressure_check, "narrow"),
    "lds-to-mfma": (lambda: lds_mfma(0), lambda: lds_mfma(2), lambda: lds_mfma(0, "v_mfma_f32_16x16x16_bf16 a[0:3], v[14:15], v[16:17], a[0:3]"), lds_mfma_check, "reads-lds-data"),
    "drain-to-zero": (lambda: drain(False), lambda: drain(True), lambda: drain(False, youngest_first=True), drain_check, "partial-suffices"),
    "crosslane-serialized": (lambda: crosslane("ds_bpermute_b32"), lambda: crosslane("ds_read_b32"), lambda: crosslane("ds_bpermute_b32", batched=True), crosslane_check, "serialized"),
    "smem-wait": (smem_late, lambda: smem(8), smem_first_only, smem_check, smem_contra),
    "barrier-heavy": (lambda: barrier(100), lambda: barrier(0, work=20), lambda: barrier(100, workgroup=64), barrier_check, "multi-wave"),
    "load-imbalance": (lambda: (replace(default_kernel(), instances=1), imbalance(True)), default_kernel,
                       lambda: (replace(default_kernel(), instances=1), imbalance(False)), imbalance_check, imbalance_contra),
    "in-order-wait": (coupled, lambda: coupled(drained_first=True), lambda: coupled(head_start=False), coupled_check, "needs-younger"),
    "lds-mergeable": (split_lds, lambda: split_lds(wide=True), lambda: split_lds(mergeable=False), split_lds_check, "contiguous"),
    "mfma-dependency": (lambda: mfma_dep(True), lambda: mfma_dep(True, gap=20), lambda: mfma_dep(False), mfma_dep_check, "reads-result"),
    "hazard-nops": (lambda: nops(4), lambda: nops(0), lambda: nops(4, "s_nop 1"), nops_check, nops_contra),
    "occupancy-limit": (lambda: occupancy(100, 256 * 100_000), lambda: occupancy(16, 256 * 100_000), lambda: occupancy(100, 256 * 256), occupancy_check, "grid-fills"),
    "prologue-only": (skipped_loop, lambda: never_looped(False), lambda: straight([vadd(), vadd(1)]), never_looped_check, None),
    "early-exit-waves": (lambda: (default_kernel(), cut_waves(8, keep=3)), lambda: (default_kernel(), cut_waves(7, keep=3)),
                         lambda: (default_kernel(), cut_waves(32, keep=3)), early_exit_check, all_skip_contra),
    "no-source-lines": (lambda: no_lines(True), lambda: no_lines(False), lambda: no_lines(True, keep_one=True), no_lines_check, None),
    "location-collapse": (lambda: one_line(True), lambda: one_line(False), lambda: one_line(True, distinct=10), one_line_check, None),
    "few-waves": (lambda: few(1), lambda: few(2), lambda: few(1, grid=256), few_check, "more-exist"),
    "truncated-trace": (lambda: (default_kernel(), cut_waves(3)), default_kernel, lambda: (default_kernel(), cut_waves(3, keep=3, tail=True)), truncated_check, None),
    "grid-starvation": (lambda: replace(default_kernel(), grid=256 * 100), default_kernel, lambda: (replace(default_kernel(), grid=256 * 100), drop_kernel_trace),
                        grid_check, "grid-known"),
    "bandwidth-ceiling": (lambda: streaming(0.8), lambda: streaming(0.08), lambda: streaming(0.8, looped=True), bandwidth_check, "streams"),
    "issue-bound": (valu_heavy, default_kernel, vmem_heavy, issue_check, "compute-busiest"),
    "stall-class": (lambda: lds_issue(300), lambda: kernel([vadd(i) for i in range(6)]), lambda: barrier(100), stall_class_check, covered_contra),
}


def run_case(tmp_path, rule_id: str, which: int, only=True):
    built = CASES[rule_id][which]()
    k, mutate = built if isinstance(built, tuple) else (built, None)
    r = analyze(tmp_path, k, mutate)
    plan = make_plan(r, only={rule_id} if only else None)
    assert plan.rule_errors == {}
    return k, r, plan, [f for f in plan.findings if f.rule == rule_id]


def assert_ledger(plan, r):
    """No pc granted more than its stall + idle; the total within the kernel's cycles."""
    budget = r.sums.stall + r.sums.idle
    per_pc: dict[int, int] = {}
    for f in plan.findings:
        assert f.cycles_at_stake == sum(c["cycles"] for c in f.claims)
        for c in f.claims:
            per_pc[c["pc"]] = per_pc.get(c["pc"], 0) + c["cycles"]
    assert all(v <= int(budget[pc]) for pc, v in per_pc.items())
    assert sum(per_pc.values()) <= total_cycles(r)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires_where_planted(tmp_path, rule_id):
    k, r, plan, found = run_case(tmp_path, rule_id, 0, only=rule_id != "stall-class")
    assert len(found) == 1, f"{rule_id} did not fire on its planted pattern: {plan.rules_silenced}"
    f = found[0]
    total = total_cycles(r)
    assert isinstance(f, Finding) and f.kind == REGISTRY[rule_id].kind
    assert 0 <= f.cycles_at_stake <= total
    assert f.share_of_cycles == pytest.approx(f.cycles_at_stake / max(total, 1))
    assert 0 < f.confidence <= 1 and f.severity in ("HIGH", "MED", "LOW", "INFO")
    assert f.change and f.falsify
    if f.kind == "performance":
        assert f.cycles_at_stake > 0 and f.claims
    else:
        assert f.cycles_at_stake == 0 and f.claims == []
    declared = {p for p, _ in REGISTRY[rule_id].preconditions}
    assert {c["id"] for c in f.preconditions} <= declared and all(c["holds"] for c in f.preconditions)
    assert_ledger(plan, r)
    CASES[rule_id][3](f, k, r)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_silent_on_clean_twin(tmp_path, rule_id):
    _, _, plan, found = run_case(tmp_path, rule_id, 1, only=rule_id != "stall-class")
    assert found == [], f"{rule_id} fired on its clean twin: {found[0].evidence}"


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_on_contradiction_twin(tmp_path, rule_id):
    """The symptom, but a precondition of the advice false: silent (the plan
    names the failed precondition) or a different, correct finding."""
    k, r, plan, found = run_case(tmp_path, rule_id, 2, only=rule_id != "stall-class")
    contra = CASES[rule_id][4]
    if callable(contra):
        contra(found, k, plan, r)
    else:
        assert found == [], f"{rule_id} fired on its contradiction twin: {found[0].evidence}"
        if contra is not None:
            assert contra in [c["id"] for c in plan.rules_silenced.get(rule_id, [])], plan.rules_silenced
    assert_ledger(plan, r)


def test_every_registered_rule_is_covered():
    assert set(CASES) == set(load_rules())


def test_every_declared_precondition_is_tested_or_documented():
    for rid, info in load_rules().items():
        for pid, text in info.preconditions:
            assert text and pid


def test_load_use_distance_never_counts_a_store(tmp_path):
    # the symptom (a wait right after a memory op) on a store: not a load, silent
    k = kernel([op("buffer_store_dwordx4 v[0:3], v8, s[4:7], 0 offen", latency=720, size=8), vadd(), vadd(1), op("s_waitcnt vmcnt(0)"), vadd(2)])
    plan = make_plan(analyze(tmp_path, k), only={"load-use-distance"})
    assert plan.findings == [] and plan.rules_silenced["load-use-distance"][0]["id"] == "loads"


def test_load_use_distance_straight_line_with_room(tmp_path):
    # loop-free, the address ready at the top but the load issued after slow independent work:
    # the lever is "earlier in the same wave", never "prefetch the next iteration"
    k = straight([op("v_lshlrev_b32_e32 v8, 4, v0"), *[op(f"v_exp_f32 v{20 + i}, v30", stall=40) for i in range(6)],
                  op(LOAD, latency=2000, size=8), vadd(), vadd(1), op("s_waitcnt vmcnt(0)"), op("v_add_f32 v9, v0, v1")])
    r = analyze(tmp_path, k)
    (f,) = make_plan(r, only={"load-use-distance"}).findings
    row = f.evidence["loads"][0]
    assert row["lever"] == "earlier-in-wave" and row["loop"] is None and row["address_ready_at_pc"] == 1
    assert "Prefetch" not in f.change and "earlier in the same wave" in f.change
    # recoverable = at most the cycles it sat ready, per execution
    assert f.cycles_at_stake <= row["sat_ready_cycles_median"] * 32


def test_smem_wait_preloadable_arguments(tmp_path):
    (f,) = make_plan(analyze(tmp_path, smem_first_only("0x0")), only={"smem-wait"}).findings
    assert "preload" in f.change and f.claims and f.severity != "INFO"


def test_ledger_shares_one_wait_between_two_rules(tmp_path):
    # a count-0 wait on two ds_reads, followed by an MFMA that reads only the
    # older one: lds-to-mfma and drain-to-zero both claim the wait's cycles
    body = [op("ds_read_b128 v[4:7], v9", latency=400, size=8), op("ds_read_b128 v[20:23], v9 offset:64", latency=400, size=8),
            op("s_waitcnt lgkmcnt(0)"), op(MFMA16, issue=8, size=8), op("v_add_f32 v24, v20, v21")]
    k = kernel(body)
    r = analyze(tmp_path, k)
    plan = make_plan(r, only={"lds-to-mfma", "drain-to-zero"})
    (wait,) = pcs(k, "s_waitcnt")
    first, second = plan.findings  # lds-to-mfma asks for more (all the wait's exposed cycles): it is granted first
    assert (first.rule, second.rule) == ("lds-to-mfma", "drain-to-zero")
    granted = sum(c["cycles"] for f in plan.findings for c in f.claims if c["pc"] == wait)
    asked = sum(c["cycles"] for f in plan.findings for c in f.requested if c["pc"] == wait)
    assert granted <= int(r.sums.stall[wait] + r.sums.idle[wait]) < asked  # they asked for more than the pc holds
    assert first.claims == first.requested
    (shared,) = second.shared
    assert shared["pc"] == wait and shared["held_by"] == ["lds-to-mfma"]
    assert shared["cycles_not_granted"] == second.requested[0]["cycles"] - second.claims[0]["cycles"]
    assert {"pc": wait, "also_claimed_by": "drain-to-zero", "cycles": shared["cycles_not_granted"]} in first.shared
    assert second.to_dict()["ledger"] == {"requested_cycles": second.requested_cycles, "granted_cycles": second.cycles_at_stake, "shared": second.shared}
    assert_ledger(plan, r)


def test_priorities_never_put_med_before_high(tmp_path):
    r = analyze(tmp_path, default_kernel())
    rank = {"HIGH": 0, "MED": 1, "LOW": 2, "INFO": 3}
    sev = [rank[f.severity] for f in make_plan(r).findings]
    assert sev == sorted(sev)


def test_a_failing_rule_is_reported_not_fatal(tmp_path):
    r = analyze(tmp_path, lud(3))
    baseline = [(f.rule, f.cycles_at_stake) for f in make_plan(r).findings]
    rid = "zz-test-broken-rule"

    @rule(rid, "broken", "performance", trigger="-", evidence="-", limits="-")
    def broken(ctx):
        raise RuntimeError("boom")

    try:
        plan = make_plan(r)
        assert plan.rule_errors == {rid: "RuntimeError: boom"}
        assert rid in plan.rules_run
        assert [(f.rule, f.cycles_at_stake) for f in plan.findings] == baseline
        assert any(f.rule == "load-use-distance" for f in plan.findings)
    finally:
        REGISTRY.pop(rid, None)
    assert rid not in load_rules()
    assert make_plan(r).rule_errors == {}


def test_unknown_rule_is_a_usage_error(tmp_path):
    r = analyze(tmp_path, lud(3))
    with pytest.raises(UsageError):
        make_plan(r, disable={"no-such-rule"})
    with pytest.raises(UsageError):
        make_plan(r, only={"no-such-rule"})


def test_demo_kernel_plants_the_top_finding(tmp_path):
    # attlens demo's planted hotspot (the global load waited on at line 24) leads the plan
    k = default_kernel()
    plan = make_plan(analyze(tmp_path, k))
    f = plan.findings[0]
    assert f.rule == "load-use-distance" and f.evidence["loads"][0]["pc"] == pcs(k, "buffer_load")[0]
    assert f.evidence["loads"][0]["lever"] == "next-iteration"


def test_pmc_bytes_replace_the_trace_estimate(tmp_path):
    # the trace alone says 8 % (and cannot judge a looping kernel); the counters of
    # the same dispatch say 80 %: the ceiling is claimed from PMC, loop or not
    from types import SimpleNamespace

    for k in (streaming(0.08), streaming(0.08, looped=True)):
        r = analyze(tmp_path / str(id(k)), k)
        dur = k.duration_ns
        pmc = SimpleNamespace(dispatch_id=7, kernel=k.name, bytes_moved=0.8 * 8000.0 * dur, read_bytes=0.5 * 8000.0 * dur,
                              write_bytes=0.3 * 8000.0 * dur, read_bytes_method="split", write_bytes_method="64B/32B", duration_ns=None)
        assert make_plan(r, only={"bandwidth-ceiling"}).findings == []
        (f,) = make_plan(r, only={"bandwidth-ceiling"}, pmc=[pmc]).findings
        assert f.evidence["source"] == "pmc" and f.evidence["fraction_of_peak"] == pytest.approx(0.8, abs=1e-4)
        assert f.confidence == 0.8


def test_grid_starvation_underfilled_one_round(tmp_path):
    # every CU gets work but the one-round grid fills only 1 of 8 waves per SIMD
    k = replace(default_kernel(), grid=256 * 256)
    (f,) = make_plan(analyze(tmp_path, k), only={"grid-starvation"}).findings
    assert f.severity == "HIGH" and f.evidence["idle_cus"] == 0 and f.evidence["wave_slot_fill"] == pytest.approx(1024 / (256 * 32), abs=1e-4)


# --------------------------------------------------------------------------- nested loops

def _never_taken_inner(body):
    """``body`` closed by a backward branch that is never taken, inside the toy's
    outer loop (8 passes per wave): the inner loop runs once per outer pass."""
    words = sum(o.size for o in body) // 4
    return [*body, op(f"s_cbranch_vccnz {65536 - words - 1}")]


def test_load_use_in_a_never_taken_inner_loop_names_the_outer_loop(tmp_path):
    inner = _never_taken_inner([op(LOAD, latency=720, size=8), *[vadd(i) for i in range(2)], op("s_waitcnt vmcnt(0)"),
                                op("v_add_f32 v9, v0, v1")])
    plan = make_plan(analyze(tmp_path, kernel(inner)), only={"load-use-distance"})
    assert plan.rule_errors == {}
    (f,) = plan.findings
    outer = next(lp for lp in plan.loops.loops if lp.iterated)
    assert {x["loop"] for x in f.loops} == {outer.id} and outer.trips_mean == 8.0
    assert f"the loop at pcs {outer.first_pc}–{outer.branch_pc} runs 8.0 times per entry" in f.change


def test_interleave_in_a_never_taken_inner_loop_is_judged_in_the_outer_loop(tmp_path):
    loads = [op(f"buffer_load_dwordx4 v[{4 * i}:{4 * i + 3}], v8, s[4:7], {16 * i} offen", latency=300, stall=200, size=8) for i in range(4)]
    body = [x for pair in zip(loads, [op(MFMA16, issue=16, size=8) for _ in range(4)]) for x in pair]
    found = []
    for i, b in enumerate((body, _never_taken_inner(body))):  # the same loads, with and without the inner branch
        plan = make_plan(analyze(tmp_path / str(i), kernel([*b, op("s_waitcnt vmcnt(0)")])), only={"load-mfma-interleave"})
        assert plan.rule_errors == {} and not plan.rules_silenced
        found.append([(f.title, f.cycles_at_stake) for f in plan.findings])
    assert found[0] and found[1] == found[0]


@pytest.mark.parametrize("text", [
    "buffer_atomic_add_f32 v0, v8, s[4:7], 0 offen",  # an atomic per element: no wider form
    "buffer_load_dwordx3 v[0:2], v8, s[4:7], 0 offen",  # 12 B per lane: 16 // 12 elements do not fit a dwordx4
    "buffer_load_dword v0, v8, s[4:7], 0 offen lds",  # LDS-DMA: the LDS layout sets the width
])
def test_backpressure_on_instructions_that_cannot_be_widened_is_silent(tmp_path, text):
    """Contradiction twins of vmem-backpressure: the same issue stall on
    instructions no dwordx4 can replace gives no "widen" advice."""
    plan = make_plan(analyze(tmp_path, backpressure(400, text)), only={"vmem-backpressure"})
    assert plan.rule_errors == {} and plan.findings == []
    (c,) = plan.rules_silenced["vmem-backpressure"]
    assert c["id"] == "narrow" and "0 issue-stall cycles on narrower instructions" in c["detail"]
    assert f"{400 * 8 * 32:,} on ones that cannot be widened" in c["detail"]


def test_hazard_nops_of_an_unrecognised_kind_are_not_called_required(tmp_path):
    """Required s_nops beside s_nops attlens cannot explain: the required ones are
    named required, the others 'not known' (before, both were 'none is in excess')."""
    k = nops(2, "s_nop 1")
    k = replace(k, body=[*k.body, op("v_mov_b32 v40, v41"), op("s_nop 3", stall=24, issue=8), op("v_mov_b32 v42, v43")])
    plan = make_plan(analyze(tmp_path, k), only={"hazard-nops"})
    (f,) = plan.findings
    rows = {h["hazard"]: h for h in f.evidence["hazards"]}
    assert rows["VALU writes SGPR/VCC → VALU reads it"]["excess_wait_states"] == 0
    assert rows["s_nop, hazard not recognised"]["nops"] == 1 and rows["s_nop, hazard not recognised"]["required_wait_states"] == []
    assert "recognised hazard kinds are the spacing the ISA requires" in f.change
    assert "1 s_nop(s)" in f.change and "whether they are required is not known" in f.change


def test_stall_class_names_a_rule_that_did_not_run(tmp_path):
    """With vmem-backpressure disabled, the vmem_load class note says so instead of
    'below its threshold' (the planted backpressure fires when it runs)."""
    r = analyze(tmp_path, backpressure(400))
    assert "vmem-backpressure" in [f.rule for f in make_plan(r).findings]
    notes = [f for f in make_plan(r, disable={"vmem-backpressure"}).findings if f.rule == "stall-class" and f.evidence["class"] == "vmem_load"]
    (note,) = notes
    assert {"rule": "vmem-backpressure", "status": "not run (--disable / --only)"} in note.evidence["rules"]


def test_smem_wait_does_not_hoist_a_load_over_uses_of_its_destination(tmp_path):
    """smem_late's later argument load, but writing s[4:5], which the vadd after
    the first wait still reads as the first batch's result: moving it up would
    clobber them, so no hoist advice (the precondition names the pc)."""
    pro = [op("s_load_dwordx4 s[4:7], s[0:1], 0x0", latency=200, size=8), op("s_waitcnt lgkmcnt(0)"), op("v_add_f32 v1, s4, v1"),
           op("s_load_dwordx2 s[4:5], s[0:1], 0x60", latency=20000, size=8), op("s_waitcnt lgkmcnt(0)"), op("s_mov_b32 s2, 0")]
    k = kernel([op(LOAD, latency=300, size=8), vadd(), op("s_waitcnt vmcnt(0)")], prologue=pro)
    late = pcs(k, "s_load")[1]
    # the kernel uses s0..s9 of 102 SGPRs: renaming s[4:5] to free ones is the advice
    (f,) = make_plan(analyze(tmp_path / "spare", k), only={"smem-wait"}).findings
    assert "Issue the s_loads" in f.change and "fresh SGPRs" in f.change and f.evidence["sgprs"]["free"] >= 2
    assert [(p["pc"], p["renamed"], p["kernarg_bytes"]) for p in f.evidence["hoistable"]] == [(late, True, [96, 8])]
    # contradiction twin: the listing names s99, so no SGPR is free: no hoist advice, the precondition names the pc
    k2 = kernel([op(LOAD, latency=300, size=8), vadd(), op("s_waitcnt vmcnt(0)")], prologue=[*pro[:-1], op("s_mov_b32 s99, 0"), pro[-1]])
    plan = make_plan(analyze(tmp_path / "full", k2), only={"smem-wait"})
    assert all("Issue the s_loads" not in f.change for f in plan.findings)
    (c,) = [c for c in plan.rules_silenced["smem-wait"] if c["id"] == "not-first"]
    assert f"pcs [{late}] write SGPRs still in use after the first wait and need 2 SGPRs to rename, 0 are free" in c["detail"]


def test_lds_to_mfma_advises_wider_reads_only_when_they_are_narrow(tmp_path):
    """The width is checked first: ds_read2_b32 (8 B per lane) may become ds_read_b128;
    reads already ds_read_b128 get no width advice (preshuffle_gemm's case)."""
    narrow = kernel([op("ds_read2_b32 v[4:5], v9 offset1:1", latency=400, size=8), op("s_waitcnt lgkmcnt(0)"), op(MFMA16, issue=8, size=8)])
    (f,) = make_plan(analyze(tmp_path / "n", narrow), only={"lds-to-mfma"}).findings
    (ds,) = pcs(narrow, "ds_read2")
    assert f.evidence["lds_read_bytes_per_lane"] == {str(ds): 8} and f"pcs [{ds}] read 8 B per lane: ds_read_b128" in f.change
    (f,) = make_plan(analyze(tmp_path / "w", lds_mfma(0)), only={"lds-to-mfma"}).findings
    assert "already 128 bit per lane" in f.change and "fewer reads" not in f.change


def test_barrier_guarding_lds_write_to_read_is_called_required(tmp_path):
    """A barrier between this phase's ds_write and ds_read orders a dependency through
    LDS: the finding says so and never advises dropping it; without LDS traffic
    around it, dropping is named."""
    guarded = replace(kernel([op("ds_write_b128 v9, v[0:3]", latency=64, size=8), op("v_add_f32 v20, v30, v31", skew=100),
                              op("s_waitcnt lgkmcnt(0)"), op("s_barrier", stall=8), op("ds_read_b128 v[4:7], v9 offset:256", latency=64, size=8),
                              op("s_waitcnt lgkmcnt(0)"), vadd(1)]), barrier_sync=True)
    (f,) = make_plan(analyze(tmp_path / "g", guarded), only={"barrier-heavy"}).findings
    (bar,), (w,), (rd,) = pcs(guarded, "s_barrier"), pcs(guarded, "ds_write"), pcs(guarded, "ds_read")
    assert f.evidence["barriers"][0]["guards_lds"] == {"writes": [w], "reads": [rd]}
    assert "it is required" in f.change and "drop" not in f.change
    (f,) = make_plan(analyze(tmp_path / "free", barrier(100)), only={"barrier-heavy"}).findings
    assert f.evidence["barriers"][0]["guards_lds"] is None and "drop them if they only protected" in f.change


def late_load(where: str):
    """A loop whose top waits (vmcnt(0)) on a load of the previous iteration:
    ``end``: issued at the end of the iteration though its address (v8, from
    the prologue) is ready at the top; ``top``: issued right after the wait
    (the clean twin); ``dependent``: its address comes from data an s_load
    brings in late in the iteration (no room: the contradiction twin)."""
    load = op("buffer_load_dwordx4 v[0:3], v8, s[4:7], 0 offen", latency=1500, size=8)
    work = [op(f"v_exp_f32 v{20 + i}, v30", stall=60) for i in range(8)]
    use = op("v_add_f32 v9, v0, v1")
    if where == "top":
        return kernel([op("s_waitcnt vmcnt(0)"), use, load, *work])
    if where == "dependent":
        dep = [op("s_load_dword s10, s[0:1], 0x40", latency=200, size=8), op("s_waitcnt lgkmcnt(0)"), op("v_add_u32_e32 v8, s10, v8")]
        return kernel([op("s_waitcnt vmcnt(0)"), use, *work, *dep, load, *[op(f"s_mov_b32 s{12 + i}, 0") for i in range(10)]])
    tail = [op(f"s_mov_b32 s{12 + i}, 0") for i in range(10)]  # > 8 instructions to the next wait: not "near use"
    return kernel([op("s_waitcnt vmcnt(0)"), use, *work, load, *tail])


def test_load_late_in_its_iteration_moves_up_to_where_its_address_and_destination_allow(tmp_path):
    """Planted: the loop-top wait waits on a load issued at the end of the previous
    iteration whose address is ready at the top: issue it at the top (the Triton
    GEMM's case). Clean twin: already at the top. Contradiction twin: its address
    needs data loaded late in the iteration: no room, silent, the reason named."""
    k = late_load("end")
    (f,) = make_plan(analyze(tmp_path / "end", k), only={"load-use-distance"}).findings
    (load,), wait, (use,) = pcs(k, "buffer_load"), pcs(k, "s_waitcnt vmcnt")[0], pcs(k, "v_add_f32 v9")
    row = f.evidence["loads"][0]
    # its destination v[0:3] is free once the previous iteration's data is read (pc `use`), its address from the top
    assert (row["pc"], row["lever"], row["wait_pc"], row["issue_after_pc"]) == (load, "earlier-in-iteration", wait, use)
    assert "its address arithmetic needs only values ready at the top" in row["why"] and f"free after pc {use}" in row["why"]
    assert row["gain_cycles_median"] >= 8 * 60 and f"right after pc {use}" in f.change and "Prefetch" not in f.change
    assert [c["pc"] for c in f.claims] == [wait] and f.cycles_at_stake <= row["gain_cycles_median"] * 7 * 32  # 8 iterations, 7 waited
    assert make_plan(analyze(tmp_path / "top", late_load("top")), only={"load-use-distance"}).findings == []
    plan = make_plan(analyze(tmp_path / "dep", late_load("dependent")), only={"load-use-distance"})
    assert plan.findings == []
    (c,) = plan.rules_silenced["load-use-distance"]
    assert c["id"] == "room" and "its address needs the data pc" in c["detail"]


# --- the listing stops inside the kernel (a decoder that listed only part of it)


def partial_listing(last: str) -> ToyKernel:
    """Straight-line ops whose listing ends with ``last`` and holds no s_endpgm."""
    return ToyKernel(prologue=[vadd(), vadd(1), op("s_mov_b64 vcc, exec"), op(last)], body=[], epilogue=[])


def test_truncated_trace_fires_when_waves_stop_short_of_a_whole_listing(tmp_path):
    """Planted: the listing ends on a VALU op, no wave reaches s_endpgm: every wave is truncated."""
    k = partial_listing("v_add_f32 v1, v2, v3")
    r = analyze(tmp_path, k)
    plan = make_plan(r, only={"truncated-trace"})
    (f,) = plan.findings
    assert f.evidence["count"] == r.dispatch.waves.count == 32 and r.quality.listing_exit is None
    assert {w["last_pc"] for w in f.evidence["waves"]} == {len(k.listing)}
    assert [c["id"] for c in f.preconditions] == ["listing-complete"]


def test_truncated_trace_silent_when_the_listing_ends_at_a_branch_out_of_it(tmp_path):
    """Contradiction twin: the listing ends on `s_cbranch_vccnz 38` (target and
    fall-through past it): the waves ran on into unlisted code. Silent, the
    plan names the precondition, a note names the branch and its address."""
    k = partial_listing("s_cbranch_vccnz 38")
    r = analyze(tmp_path, k)
    plan = make_plan(r, only={"truncated-trace"})
    assert plan.findings == []
    (why,) = plan.rules_silenced["truncated-trace"]
    assert why["id"] == "listing-complete" and "32 of 32 waves end there" in why["detail"]
    ex = r.quality.listing_exit
    last = len(k.listing)
    want_vaddr = int(r.dispatch.code.vaddr[last]) + 4 + 4 * 38
    assert (ex["pc"], ex["conditional"], ex["target_vaddr"], ex["target_pc"]) == (last, True, want_vaddr, None)
    assert any(n.startswith(f"the code.json listing ends at pc {last}") and f"0x{want_vaddr:x}" in n for n in r.notes)


def test_truncated_trace_counts_only_the_waves_cut_inside_a_partial_listing(tmp_path):
    """Both at once: three waves cut after 2 records, the rest end on the branch out: 3 truncated."""
    k = partial_listing("s_cbranch_vccnz 38")
    r = analyze(tmp_path, k, cut_waves(3, keep=2))
    plan = make_plan(r, only={"truncated-trace"})
    (f,) = plan.findings
    assert f.evidence["count"] == 3 and {w["last_pc"] for w in f.evidence["waves"]} == {2}


def test_an_unconditional_jump_back_into_the_listing_leaves_it_whole(tmp_path):
    """Clean twin of the exit: `s_branch` back 3 dwords lands on a listed pc, so the listing may be whole: the rule fires."""
    k = partial_listing("s_branch 65533")
    r = analyze(tmp_path, k)
    assert r.quality.listing_exit is None
    assert [f.rule for f in make_plan(r, only={"truncated-trace"}).findings] == ["truncated-trace"]


def imbalance_staggered(root):
    """The traced CU's long waves (one per slot, ~7,000 cycles) stay; the other
    waves start one after another across the whole span, so they span it
    without the long ones: the long waves do not set it."""
    doc = orjson.loads((root / "occupancy.json").read_bytes())
    for se, events in list(doc.items()):
        if not se.isdigit():
            continue
        t0 = min(e[0] for e in events)
        t1 = max(e[0] for e in events if e[1] == 1)
        traced = [e for e in events if e[1] == 1]
        n = sum(1 for e in events if e[1] != 1 and e[4] == 1)
        out = list(traced)
        for i in range(n):
            start, cu, simd, slot = t0 + (t1 - t0) * i // max(n - 1, 1), 2 + i // 32, i % 4, (i // 4) % 8
            out += [[start, cu, simd, slot, 1, 1], [start + 300, cu, simd, slot, 0, 1]]
        doc[se] = sorted(out, key=lambda e: (e[0], e[4]))
    (root / "occupancy.json").write_bytes(orjson.dumps(doc))


def test_load_imbalance_silent_when_the_other_waves_span_the_dispatch(tmp_path):
    """Contradiction twin of load-imbalance's span: a few long waves and a
    span many median waves long, but the other waves reach the end too."""
    r = analyze(tmp_path, replace(default_kernel(), instances=1), imbalance_staggered)
    plan = make_plan(r, only={"load-imbalance"})
    imb = plan.dispatch_facts.imbalance
    assert plan.findings == [] and imb.ratio >= 2 and 0 < imb.long_waves <= 0.1 * imb.waves
    assert imb.span_without_long_cycles > imb.span_cycles / 2 and not imb.sets_span and not imb.imbalanced
    assert [c["id"] for c in plan.rules_silenced["load-imbalance"]] == ["sets-span"]


def test_verdict_says_when_the_capture_cannot_support_one():
    """Planted: no finding, no stall cycles and no dispatch-wide figures: the
    verdict says the capture cannot support one, with each reason. Twins: with
    stall cycles recorded (gaps empty) the usual "no limit, no pattern" sentence;
    with the limits judged but no stall recorded, that sentence and the caveat."""
    from attlens.analysis.verdict import make_verdict

    gaps = ["the profiler recorded no stall cycles (rocprofv2 ATT plugin), so no stall pattern can be measured",
            "no dispatch-wide limit can be judged (grid size unknown)"]
    v = make_verdict([], None, 1000, gaps=gaps, stall_recorded=False)
    assert v.kind == "no-finding" and v.sentence == "This capture cannot support a verdict: " + "; ".join(gaps) + "."
    assert v.numbers["unsupported_because"] == gaps
    clean = make_verdict([], None, 1000)
    assert clean.kind == "no-finding" and clean.sentence.startswith("No dispatch-wide limit") and "unsupported_because" not in clean.numbers
    half = make_verdict([], None, 1000, gaps=[], stall_recorded=False)
    assert half.sentence.startswith("No dispatch-wide limit") and "no stall pattern could be measured" in half.sentence
