"""Every plan rule on synthetic captures (attlens.synth.toy): each rule fires
where its pattern is planted, with evidence naming the planted pcs, and stays
silent on a clean twin that differs minimally. pcs number the listing
(prologue + body + epilogue + extra_listed) from 1."""

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


def kernel(body, prologue=None, epilogue=None, **kw) -> ToyKernel:
    """prologue + body (closed by a backward branch to its first op) + epilogue."""
    pro = prologue if prologue is not None else [op("s_mov_b32 s2, 0")]
    epi = epilogue if epilogue is not None else [op("s_endpgm")]
    if body:
        body = [*body, op("s_add_u32 s2, s2, 1"), op("s_cmp_lt_u32 s2, s3")]
        words = sum(o.size for o in body) // 4  # SOPP simm16 back to the body start
        body.append(op(f"s_cbranch_scc1 {65536 - words - 1}"))
    return ToyKernel(prologue=pro, body=body, epilogue=epi, **kw)


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


def cut_wave(root, name: str, keep: int) -> None:
    """Keep a wave's first ``keep`` records; end, counts and timeline follow."""
    path = root / name
    doc = orjson.loads(path.read_bytes())
    w = doc["wave"]
    recs = w["instructions"][:keep]
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
    doc.update(num_insts=keep, num_stitched=keep, duration=end - w["begin"])
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


def cut_waves(n: int, keep=None):
    """Mutator: cut the first n wave files to ``keep`` records (None: drop s_endpgm only)."""

    def mutate(root):
        for name in wave_names(root)[:n]:
            count = orjson.loads((root / name).read_bytes())["num_insts"]
            cut_wave(root, name, count - 1 if keep is None else keep)

    return mutate


# --- the planted patterns and their clean twins -------------------------------
# Each case: plant() and twin() return a kernel or (kernel, mutate);
# check(finding, kernel) asserts the evidence names what was planted.


def lud(gap: int):
    return kernel([op(LOAD, latency=720, size=8), *[vadd(i) for i in range(gap)], op("s_waitcnt vmcnt(0)"), op("v_add_f32 v9, v0, v1")])


def lud_check(f, k):
    (load,), (wait,) = pcs(k, "buffer_load"), pcs(k, "s_waitcnt vmcnt")
    assert f.evidence["producers"][0]["pc"] == load
    assert f.evidence["producers"][0]["distance_instructions_median"] == 4
    pair = f.evidence["pairs"][0]
    assert (pair["producer_pc"], pair["wait_pc"]) == (load, wait) and pair["cycles"] > 0


def interleave(grouped: bool):
    loads = [op(f"buffer_load_dwordx4 v[{4 * i}:{4 * i + 3}], v8, s[4:7], {16 * i} offen", latency=300, stall=200, size=8) for i in range(4)]
    mfmas = [op(MFMA16, issue=16, size=8) for _ in range(4)]
    body = loads + mfmas if grouped else [x for pair in zip(loads, mfmas) for x in pair]
    return kernel([*body, op("s_waitcnt vmcnt(0)")])


def interleave_check(f, k):
    loads = pcs(k, "buffer_load")
    assert (f.evidence["loads"], f.evidence["mfmas"], f.evidence["alternations"]) == (4, 4, 7)
    assert f.evidence["loop_pcs"] == [len(k.prologue) + 1, len(k.prologue) + len(k.body)]
    assert {i["pc"] for i in f.evidence["top_loads"]} <= set(loads)
    assert f.evidence["load_issue_stall"] == 4 * 200 * 8 * 32


def backpressure(stall: int):
    return kernel([op(LOAD, latency=500, stall=stall, size=8), vadd(), vadd(1), op("s_waitcnt vmcnt(0)")])


def backpressure_check(f, k):
    (load,) = pcs(k, "buffer_load")
    assert f.evidence["instructions"][0]["pc"] == load
    assert f.evidence["issue_stall_cycles"] == 400 * 8 * 32


def lds_mfma(gap: int):
    return kernel([op("ds_read_b128 v[4:7], v9", latency=400, size=8), op("s_waitcnt lgkmcnt(0)"), *[vadd(i) for i in range(gap)], op(MFMA16, issue=8, size=8)])


def lds_mfma_check(f, k):
    (ds,), (wait,), (mfma,) = pcs(k, "ds_read"), pcs(k, "s_waitcnt"), pcs(k, "v_mfma")
    row = f.evidence["waits"][0]
    assert (row["wait_pc"], row["mfma_pc"], row["lds_producers"]) == (wait, mfma, [ds])
    assert row["exposed_cycles"] > 0


def drain(partial: bool):
    loads = [op(f"buffer_load_dword v{i}, v8, s[4:7], {4 * i} offen", latency=600, size=8) for i in range(3)]
    waits = [op(f"s_waitcnt vmcnt({n})") for n in ((2, 1, 0) if partial else (0,))]
    uses = [op(f"v_add_f32 v{10 + i}, v{i}, v{i}") for i in range(3)]
    return kernel([*loads, *(x for pair in zip(waits, uses) for x in pair)] if partial else [*loads, *waits, *uses])


def drain_check(f, k):
    (wait,) = pcs(k, "s_waitcnt vmcnt(0)")
    row = f.evidence["waits"][0]
    assert (row["wait_pc"], row["producers_per_execution"]) == (wait, 3)
    assert row["avoidable_cycles"] > 0


def crosslane(mn: str):
    body = []
    for i in range(3):
        body += [op(f"{mn} v{10 + i}, v{i}, v{3 + i}", latency=300, size=8), op("s_waitcnt lgkmcnt(0)"), vadd(i)]
    return kernel(body)


def crosslane_check(f, k):
    planted = pcs(k, "ds_bpermute")
    assert {i["pc"] for i in f.evidence["instructions"]} == set(planted)
    assert all(i["waited_on"] > 0 for i in f.evidence["instructions"])


def smem(latency: int):
    pro = [op("s_load_dwordx4 s[4:7], s[0:1], 0x0", latency=latency, size=8), op("s_waitcnt lgkmcnt(0)"), op("s_mov_b32 s2, 0")]
    return kernel([op(LOAD, latency=300, size=8), vadd(), op("s_waitcnt vmcnt(0)")], prologue=pro)


def smem_check(f, k):
    (sload,) = pcs(k, "s_load")
    assert [p["pc"] for p in f.evidence["producers"]] == [sload] == [1]
    assert f.evidence["in_loop_cycles"] == 0 and f.evidence["wait_smem_stall"] > 0


def barrier(stall: int):
    return kernel([vadd(), op("s_barrier", stall=stall), vadd(1)])


def barrier_check(f, k):
    (bar,) = pcs(k, "s_barrier")
    row = f.evidence["barriers"][0]
    assert row["pc"] == bar and row["mean_stall_per_execution"] == 300


def mfma_dep(dependent: bool):
    second = "a[0:15], v[0:1], v[2:3], a[0:15]" if dependent else "a[16:31], v[0:1], v[2:3], a[16:31]"
    return kernel([op("v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]", issue=16, size=8),
                   op(f"v_mfma_f32_32x32x8_bf16 {second}", issue=16, stall=60, size=8), vadd()])


def mfma_dep_check(f, k):
    first, second = pcs(k, "v_mfma")
    pair = f.evidence["pairs"][0]
    assert (pair["producer_pc"], pair["dependent_pc"], pair["distance_instructions"]) == (first, second, 1)
    assert pair["passes_required"] > pair["distance_instructions"] and pair["stall"] == 60 * 8 * 32


def nops(n: int):
    return kernel([vadd(), *[op("s_nop 7", stall=24, issue=32) for _ in range(n)], vadd(1)])


def nops_check(f, k):
    planted = pcs(k, "s_nop")
    assert {i["pc"] for i in f.evidence["instructions"]} == set(planted)
    assert f.evidence["cycles"] == len(planted) * 56 * 8 * 32


def occupancy(grid: int):
    return replace(default_kernel(), vgprs=200, grid=grid)


def occupancy_check(f, k):
    ev = f.evidence
    assert "vgpr" in ev["limiters"] and ev["theoretical_waves_per_simd"] == 2
    assert ev["observed_max_waves_per_simd"] >= 2 and ev["memory_wait_stall"] > 0


def never_looped(listed: bool):
    loop = [vadd(i) for i in range(5)] + [op("s_cbranch_scc1 65530")]  # back 6 words: to the first vadd
    straight = [op("s_mov_b32 s2, 0"), vadd(), op("s_endpgm")]
    if listed:
        return ToyKernel(prologue=straight, extra_listed=loop)
    return ToyKernel(prologue=straight[:2], body=loop, epilogue=straight[2:], iterations=3)


def never_looped_check(f, k):
    (branch,) = pcs(k, "s_cbranch")
    assert f.evidence["branch_pc"] == branch and f.evidence["loop_pcs"] == [branch - 5, branch]
    assert f.evidence["executed_instructions"] == 3 and f.evidence["listed_instructions"] == 9


def no_lines(strip: bool):
    k = default_kernel()
    if strip:
        for o in k.listing:
            o.line = None
    return k


def one_line(collapse: bool):
    return kernel([op(f"v_add_f32 v{i % 32}, v{i % 32}, v40", line=50 if collapse else None) for i in range(40)])


def one_line_check(f, k):
    assert f.evidence["line"] == "/work/toy/toy_kernel.py:50"
    assert f.evidence["executed_instructions"] == 40 and f.evidence["latency_share"] >= 2 / 3


def few(simds: int):
    return replace(default_kernel(), shader_engines=1, simds=simds, slots=1, instances=4)


def few_check(f, k):
    assert f.evidence["traced_waves"] == 4


def early_exit_check(f, k):
    ev = f.evidence  # the default kernel runs 5 + 8 * 10 + 5 = 90 records per wave
    assert (ev["short_waves"], ev["waves"], ev["longest_wave_instructions"], ev["threshold_instructions"]) == (8, 32, 90, 9)


def no_lines_check(f, k):
    assert f.evidence == {"executed_instructions": len(k.listing)}


def truncated_check(f, k):
    assert f.evidence["count"] == 3 and len(f.evidence["waves"]) == 3
    for w in f.evidence["waves"]:  # each now ends on the op before s_endpgm
        assert (w["last_pc"], w["last"]) == (len(k.listing) - 1, k.listing[-2].text)


CASES = {  # rule id -> (plant, clean twin, check)
    "load-use-distance": (lambda: lud(3), lambda: lud(12), lud_check),
    "load-mfma-interleave": (lambda: interleave(False), lambda: interleave(True), interleave_check),
    "vmem-backpressure": (lambda: backpressure(400), lambda: backpressure(0), backpressure_check),
    "lds-to-mfma": (lambda: lds_mfma(0), lambda: lds_mfma(2), lds_mfma_check),
    "drain-to-zero": (lambda: drain(False), lambda: drain(True), drain_check),
    "crosslane-serialized": (lambda: crosslane("ds_bpermute_b32"), lambda: crosslane("ds_read_b32"), crosslane_check),
    "smem-wait": (lambda: smem(20000), lambda: smem(8), smem_check),
    "barrier-heavy": (lambda: barrier(300), lambda: barrier(0), barrier_check),
    "mfma-dependency": (lambda: mfma_dep(True), lambda: mfma_dep(False), mfma_dep_check),
    "hazard-nops": (lambda: nops(4), lambda: nops(0), nops_check),
    "occupancy-limit": (lambda: occupancy(256 * 100_000), lambda: occupancy(256 * 16), occupancy_check),
    "prologue-only": (lambda: never_looped(True), lambda: never_looped(False), never_looped_check),
    "early-exit-waves": (lambda: (default_kernel(), cut_waves(8, keep=3)), lambda: (default_kernel(), cut_waves(7, keep=3)), early_exit_check),
    "no-source-lines": (lambda: no_lines(True), lambda: no_lines(False), no_lines_check),
    "location-collapse": (lambda: one_line(True), lambda: one_line(False), one_line_check),
    "few-waves": (lambda: few(1), lambda: few(2), few_check),
    "truncated-trace": (lambda: (default_kernel(), cut_waves(3)), default_kernel, truncated_check),
}


def run_case(tmp_path, rule_id: str, which: int):
    built = CASES[rule_id][which]()
    k, mutate = built if isinstance(built, tuple) else (built, None)
    r = analyze(tmp_path, k, mutate)
    plan = make_plan(r, only={rule_id})
    assert plan.errors == {} and plan.rules_run == [rule_id]
    return k, r, [f for f in plan.findings if f.rule == rule_id]


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires_where_planted(tmp_path, rule_id):
    k, r, found = run_case(tmp_path, rule_id, 0)
    assert len(found) == 1, f"{rule_id} did not fire on its planted pattern"
    f = found[0]
    total = total_cycles(r)
    assert isinstance(f, Finding) and f.kind == REGISTRY[rule_id].kind
    assert 0 <= f.cycles_at_stake <= total
    assert f.share == pytest.approx(f.cycles_at_stake / max(total, 1))
    assert 0 < f.confidence <= 1 and f.severity in ("HIGH", "MED", "LOW")
    assert f.change and f.falsify
    if f.kind == "performance":
        assert f.cycles_at_stake > 0
    else:
        assert f.cycles_at_stake == 0
    CASES[rule_id][2](f, k)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_silent_on_clean_twin(tmp_path, rule_id):
    _, _, found = run_case(tmp_path, rule_id, 1)
    assert found == [], f"{rule_id} fired on its clean twin: {found[0].evidence}"


def test_every_registered_rule_is_covered():
    assert set(CASES) == set(load_rules())


def test_a_failing_rule_is_reported_not_fatal(tmp_path):
    r = analyze(tmp_path, lud(3))
    baseline = [(f.rule, f.cycles_at_stake) for f in make_plan(r).findings]
    rid = "zz-test-broken-rule"

    @rule(rid, "broken", "performance", trigger="-", evidence="-", limits="-")
    def broken(ctx):
        raise RuntimeError("boom")

    try:
        plan = make_plan(r)
        assert plan.errors == {rid: "RuntimeError: boom"}
        assert rid in plan.rules_run
        assert [(f.rule, f.cycles_at_stake) for f in plan.findings] == baseline
        assert any(f.rule == "load-use-distance" for f in plan.findings)
    finally:
        REGISTRY.pop(rid, None)
    assert rid not in load_rules()
    assert make_plan(r).errors == {}


def test_unknown_rule_is_a_usage_error(tmp_path):
    r = analyze(tmp_path, lud(3))
    with pytest.raises(UsageError):
        make_plan(r, disable={"no-such-rule"})
    with pytest.raises(UsageError):
        make_plan(r, only={"no-such-rule"})
