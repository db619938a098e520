"""The loader and core analyses on every real capture in ../shared/traces.

Reference values are recomputed here from the raw files with plain ``json``
and loops (independent of attlens' NumPy code), following the writer's rules
in ../shared/docs/att-format.md §2.2.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict

import numpy as np
import pytest

from attlens.analysis.taxonomy import CLASSES
from conftest import loaded, require_shared, trace_dirs, trace_id

TRACES = trace_dirs()
EXPECTED = {  # from ../shared/traces/README.md: kernel -> (wave files, code.json rows)
    "blockscale_preshuffle_gemm/big/ui_output_agent_14065_dispatch_120": (4, 391),
    "flash_attn_func/big/ui_output_agent_38430_dispatch_44": (32, 2070),
    "flash_attn_func/big/ui_output_agent_55287_dispatch_44_after_loc_fix": (32, 2070),
    "flash_attn_func/small/ui_output_agent_32235_dispatch_44": (4, 2070),
    "flash_attn_func/small/ui_output_agent_58550_dispatch_44_after_loc_fix": (8, 2070),
    "hgemm_splitk/big/ui_output_agent_4716_dispatch_319": (8, 522),
    "layernorm/big/ui_output_agent_22257_dispatch_23": (16, 457),
    "moe_blockscale/big/ui_output_agent_39345_dispatch_668": (4, 886),
    "moe_gemm/big/ui_output_agent_56573_dispatch_87": (24, 997),
    "pa/big/ui_output_agent_10886_dispatch_209": (56, 937),
    "pa_mqa_logits_fp4/big/ui_output_agent_55351_dispatch_426": (32, 727),
    "pa_mqa_logits_fp4/small/ui_output_agent_32435_dispatch_197": (4, 727),
    "preshuffle_gemm/big/ui_output_agent_58177_dispatch_135": (68, 864),
    "rmsnorm/big/ui_output_agent_19276_dispatch_18": (64, 338),
    "softmax/big/ui_output_agent_47920_dispatch_13": (2056, 732),
    "vec_add/big/ui_output_agent_14705_dispatch_25": (632, 23),
}


def _rel(p):
    return "/".join(p.parts[-3:])


def test_every_documented_capture_is_present(shared):
    found = {_rel(p) for p in trace_dirs()}
    assert found == set(EXPECTED), "the shared traces changed: update EXPECTED from traces/README.md"


def _reference_sums(path):
    """Per-pc hit/latency/stall/idle from the wave files with the writer's rule."""
    index = json.loads((path / "filenames.json").read_text())
    hit, lat, stall, idle = (defaultdict(int) for _ in range(4))
    n_waves = 0
    stored_edges = {}
    for se in index["wave_filenames"].values():
        for simd in se.values():
            for slot in simd.values():
                for name, _b, _e in slot.values():
                    w = json.loads((path / name).read_text())["wave"]
                    n_waves += 1
                    cursor = w["begin"]
                    for time, _cat, st, dur, pc in w["instructions"]:
                        hit[pc] += 1
                        lat[pc] += dur
                        stall[pc] += st
                        idle[pc] += max(time - cursor, 0)
                        cursor = max(cursor, time + dur)
                    stored_edges[name] = w["waitcnt"]
    return n_waves, hit, lat, stall, idle, stored_edges


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_loader_sums_equal_wave_files_and_code_json(path):
    require_shared()
    d, r = loaded(path)
    n_waves, hit, lat, stall, idle, _ = _reference_sums(path)
    rows = json.loads((path / "code.json").read_text())["code"]
    exp_waves, exp_rows = EXPECTED[_rel(path)]
    assert d.waves.count == n_waves == exp_waves
    assert len(rows) == exp_rows
    assert r.hotspots.listed == sum(1 for row in rows if not row[0].startswith(";"))
    for row in rows:
        pc = row[2]
        mine = (int(r.sums.hit[pc]), int(r.sums.latency[pc]), int(r.sums.stall[pc]), int(r.sums.idle[pc]))
        assert mine == (hit[pc], lat[pc], stall[pc], idle[pc]), f"pc {pc}"
        assert mine == tuple(row[6:10]), f"pc {pc} differs from code.json"
    assert r.quality.code_json.consistent
    assert d.records.count == sum(hit.values())
    assert not d.partial and not d.warnings


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_target_is_gfx950_from_metadata(path):
    require_shared()
    d, _ = loaded(path)
    assert d.arch.target == "gfx950"
    assert d.arch.source in ("results.json", "agent_info")
    assert d.arch.facts["lds_bytes_per_cu"] == 160 * 1024
    assert d.arch.facts["cu_count"] == 256


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_class_totals_add_up(path):
    require_shared()
    d, r = loaded(path)
    b = r.breakdown
    assert b.total_stall == int(d.records.stall.sum())
    assert b.total_latency == int(d.records.duration.sum())
    assert sum(b.by_class_stall.values()) == b.total_stall
    assert sum(b.by_class_latency.values()) == b.total_latency
    assert set(b.by_class_stall) == set(CLASSES)
    # per instruction: the class split of each wait adds up to its stall
    for h in r.hotspots.instructions:
        assert sum(h.class_stall.values()) == h.stall
    # per line: lines partition the executed instructions
    assert sum(ln.stall for ln in r.hotspots.lines) == b.total_stall
    assert sum(ln.hit for ln in r.hotspots.lines) == d.records.count


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_recomputed_wait_dependencies_equal_stored(path):
    require_shared()
    d, r = loaded(path)
    *_, stored = _reference_sums(path)
    pc = d.records.pc
    for w, name in enumerate(d.waves.filenames):
        mine = [[int(pc[a]), [[int(pc[p]), 0] for p in prods]] for a, prods in r.deps.entries_of_wave(w)]
        assert mine == stored[name], name


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_wait_split_conserves_cycles(path):
    """Each resolved wait's stall is charged in full to its producers."""
    require_shared()
    d, r = loaded(path)
    deps = r.deps
    resolved_waits = np.unique(deps.entry_wait)
    assert int(r.sums.producer_wait.sum()) == int(d.records.stall[resolved_waits].sum())
    unresolved_stall = r.breakdown.by_class_stall["wait_unresolved"]
    wait_pcs = [pc for pc, c in enumerate(d.static.cls) if c == "wait"]
    all_wait_stall = int(r.sums.stall[wait_pcs].sum())
    split = sum(r.breakdown.by_class_stall[c] for c in ("wait_global", "wait_lds", "wait_smem"))
    assert split + unresolved_stall == all_wait_stall


def test_softmax_reference_numbers(shared):
    """Numbers published in att-format.md §5 for softmax."""
    path = shared / "traces/softmax/big/ui_output_agent_47920_dispatch_13"
    d, r = loaded(path)
    b = r.breakdown
    assert (d.waves.count, d.records.count) == (2056, 1_381_118)
    assert (b.total_latency, b.total_stall, b.total_idle) == (41_645_144, 31_799_432, 1_188_660)
    assert r.deps.count == 88_408
    top = r.hotspots.instructions[r.hotspots.by_latency[0]]
    assert top.mnemonic == "buffer_load_ushort"
    assert (top.hit, top.latency, top.stall) == (2056, 8_481_192, 8_472_828)
    assert top.class_ == "vmem_load"
    assert r.quality.facts.shader_clock_mhz == pytest.approx(2036, abs=1)


def test_isa_evidence_without_metadata(shared, tmp_path):
    """With the rocprofv3 files out of reach, the target comes from the ISA."""
    src = shared / "traces/pa_mqa_logits_fp4/small/ui_output_agent_32435_dispatch_197"
    dst = tmp_path / "iso" / "x" / src.name
    shutil.copytree(src, dst)
    import attlens

    d = attlens.load(dst)
    assert d.arch.target == "gfx950"
    assert d.arch.source == "isa"
    assert any(e.startswith(("v_mfma_scale_f32", "v_maximum3_f32", "v_cvt_pk_bf16_f32")) for e in d.arch.evidence)


def test_grid_limited_capture_gets_no_more_waves_advice(shared):
    """layernorm: 256 workgroups on 256 CUs; the traced CU held 1 wave per SIMD."""
    d, r = loaded(shared / "traces/layernorm/big/ui_output_agent_22257_dispatch_23")
    o = r.occupancy
    assert d.resources.workgroups == 65536 // 256
    assert o.grid_limited is True
    assert o.observed_max_waves_per_simd_traced_cu == 1
    assert any("grid-limited" in e for e in o.explanation)


def test_gfx950_vgpr_underreport_uses_isa_scan(shared):
    d, r = loaded(shared / "traces/flash_attn_func/big/ui_output_agent_38430_dispatch_44")
    res = d.resources
    assert res.metadata_vgprs == 124  # what rocprofv3 wrote
    assert res.isa_vgprs == 242  # v241 is the highest VGPR in the listing
    assert res.arch_vgprs == 242
    assert r.occupancy.vgpr_alloc == 248  # granule 8
    assert r.occupancy.theoretical_waves_per_simd == 2
    assert r.occupancy.to_next_wave["free"]["vgpr"]["free_registers"] == 248 - 168
    assert any("under-reported" in n for n in res.notes)


def test_location_collapse_only_before_the_fix(shared):
    base = shared / "traces/flash_attn_func"
    before = loaded(base / "big/ui_output_agent_38430_dispatch_44")[1]
    after = loaded(base / "big/ui_output_agent_55287_dispatch_44_after_loc_fix")[1]
    assert before.quality.location_collapse is not None
    assert before.quality.location_collapse["line"].endswith("flash_attn_func.py:257")
    assert before.quality.location_collapse["latency_share"] > 0.8
    assert after.quality.location_collapse is None


def test_missing_source_lines_are_reported(shared):
    _, r = loaded(shared / "traces/pa_mqa_logits_fp4/big/ui_output_agent_55351_dispatch_426")
    assert not r.quality.has_source_lines
    assert any("without line info" in w for w in r.warnings)


def test_snapshot_files_absent_is_not_an_error(shared):
    d, _ = loaded(shared / "traces/softmax/big/ui_output_agent_47920_dispatch_13")
    assert d.snapshots and all(v is None for v in d.snapshots.values())
    assert not d.warnings


def test_parent_folder_lists_captures(shared):
    from attlens.errors import SeveralCaptures
    from attlens.model.loader import resolve_capture_dirs

    with pytest.raises(SeveralCaptures) as exc:
        resolve_capture_dirs(shared / "traces/flash_attn_func")
    assert len(exc.value.candidates) == 4
    waves = sorted(c.waves for c in exc.value.candidates)
    assert waves == [4, 8, 32, 32]
    assert all(c.instructions == 2069 for c in exc.value.candidates)


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_stored_waitcnt_arrays_are_kept(path):
    """The loader keeps each wave file's own waitcnt array (parsed lazily)."""
    require_shared()
    d, _ = loaded(path)
    *_, stored = _reference_sums(path)
    for w, name in enumerate(d.waves.filenames):
        assert d.waves.stored_waitcnt(w) == stored[name]
