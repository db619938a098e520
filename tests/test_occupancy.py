"""Theoretical occupancy and observed residency on hand-built dispatches.

Every expected number is computed by hand in the comments from the ARCH_TABLE
rows (docs/architecture.md), never by calling the code under test:

    gfx942: wave 64, 4 SIMDs/CU, 8 waves/SIMD, 512 VGPRs/SIMD-lane (granule 8,
            unified AGPR: arch VGPRs rounded to 4 then + AGPRs), 64 KiB LDS/CU
            (granule 512 B), 800 SGPRs/SIMD (granule 16), 304 CUs
    gfx950: same, but 160 KiB LDS/CU and 256 CUs
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attlens.analysis.occupancy import compute_occupancy, observed_residency
from attlens.model.archdata import ARCH_TABLE
from attlens.model.dispatch import ArchInfo, Resources


def _arch(target: str | None) -> ArchInfo:
    if target is None:
        return ArchInfo(
            target=None,
            row_key=None,
            facts=None,
            waitcnt_model="gfx9",
            source="unknown",
            reason="no agent_info.csv and no target-unique instruction",
        )
    return ArchInfo(
        target=target,
        row_key=target,
        facts=dict(ARCH_TABLE[target]),
        waitcnt_model="gfx9",
        source="agent_info",
        reason="test",
    )


def _waves(rows=()):
    """rows: (se, cu, simd, begin, end)"""
    rows = list(rows)
    cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
    se, cu, simd, begin, end = (np.asarray(c, dtype=np.int64) for c in cols)
    return SimpleNamespace(se=se, cu=cu, simd=simd, begin=begin, end=end)


def _dispatch(target, *, waves=(), **res):
    return SimpleNamespace(arch=_arch(target), resources=Resources(**res), waves=_waves(waves), occupancy=None)


def _limit(out, name):
    got = [l for l in out.limits if l.name == name]
    assert got, f"no {name} limit in {[l.name for l in out.limits]}"
    return got[0]


# --------------------------------------------------------------------------
# a) VGPR-bound


def test_vgpr_bound_gfx942():
    d = _dispatch("gfx942", arch_vgprs=128, agprs=0, sgprs=64, lds_bytes=0, workgroup=(256, 1, 1))
    out = compute_occupancy(d)
    assert out.available
    assert out.wave_size == 64
    # 128 VGPRs, no AGPRs: total 128, already a multiple of granule 8 → alloc 128
    assert out.vgpr_alloc == 128
    # 512 // 128 = 4 waves per SIMD
    assert _limit(out, "vgpr").waves_per_simd == 4
    # SGPRs: 64 → alloc 64 (granule 16); 800 // 64 = 12 → capped at 8
    assert out.sgpr_alloc == 64
    assert _limit(out, "sgpr").waves_per_simd == 8
    # no LDS: does not limit
    assert _limit(out, "lds").waves_per_simd is None
    # 256 threads / 64 = 4 waves per workgroup; 4 waves/SIMD × 4 SIMDs = 16 waves = 4 whole workgroups → no rounding loss
    assert out.waves_per_workgroup == 4
    assert out.theoretical_waves_per_simd == 4
    assert out.limiters == ["vgpr"]
    # one more wave: 5 waves need alloc ≤ floor(512/5) = 102 → granule 8 → 96; free 128 - 96 = 32
    assert out.to_next_wave == {
        "waves_per_simd": 5,
        "free": {"vgpr": {"free_registers": 32, "allocated": 128, "allowed_for_next_wave": 96}},
    }


def test_vgpr_granule_rounding():
    # 100 VGPRs → ceil to 8 = 104 → 512 // 104 = 4 (4*104 = 416, 5*104 = 520 > 512)
    d = _dispatch("gfx942", arch_vgprs=100, agprs=0, sgprs=32, lds_bytes=0, workgroup=(64, 1, 1))
    out = compute_occupancy(d)
    assert out.vgpr_alloc == 104
    assert out.theoretical_waves_per_simd == 4
    assert out.limiters == ["vgpr"]
    # 5 waves: 512 // 5 = 102 → 96; free 104 - 96 = 8
    assert out.to_next_wave["free"]["vgpr"]["free_registers"] == 8


# --------------------------------------------------------------------------
# b) unified VGPR+AGPR pool


def test_unified_agpr_rounding_gfx950():
    # 126 arch VGPRs rounded to 4 → 128, + 64 AGPRs = 192; granule 8 → 192; 512 // 192 = 2
    d = _dispatch("gfx950", arch_vgprs=126, agprs=64, sgprs=32, lds_bytes=0, workgroup=(64, 1, 1))
    out = compute_occupancy(d)
    assert out.vgpr_alloc == 192
    assert _limit(out, "vgpr").waves_per_simd == 2
    # 1 wave per workgroup: 2 waves/SIMD × 4 = 8 waves = 8 whole workgroups → no rounding
    assert out.theoretical_waves_per_simd == 2
    assert out.limiters == ["vgpr"]
    # 3 waves: 512 // 3 = 170 → granule 8 → 168; free 192 - 168 = 24
    assert out.to_next_wave["free"]["vgpr"] == {"free_registers": 24, "allocated": 192, "allowed_for_next_wave": 168}


def test_unified_agpr_rounding_matters():
    # 61 arch VGPRs → rounded to 4 → 64, + 67 AGPRs = 131 → granule 8 → 136; 512 // 136 = 3
    # (without the round-to-4 step: 61 + 67 = 128 → 4 waves; this case tells the two apart)
    d = _dispatch("gfx942", arch_vgprs=61, agprs=67, sgprs=32, lds_bytes=0, workgroup=(64, 1, 1))
    out = compute_occupancy(d)
    assert out.vgpr_alloc == 136
    assert out.theoretical_waves_per_simd == 3
    assert out.limiters == ["vgpr"]


def test_no_agprs_no_round_to_4():
    # 126 arch VGPRs, no AGPRs: 126 → granule 8 → 128; 512 // 128 = 4
    d = _dispatch("gfx950", arch_vgprs=126, agprs=0, sgprs=32, lds_bytes=0, workgroup=(64, 1, 1))
    out = compute_occupancy(d)
    assert out.vgpr_alloc == 128
    assert out.theoretical_waves_per_simd == 4


# --------------------------------------------------------------------------
# c) LDS-bound


def test_lds_bound_gfx942():
    d = _dispatch("gfx942", arch_vgprs=32, agprs=0, sgprs=32, lds_bytes=40000, workgroup=(256, 1, 1))
    out = compute_occupancy(d)
    # 40000 B → ceil to 512: 40000 / 512 = 78.125 → 79 × 512 = 40448
    assert out.lds_alloc == 40448
    # 65536 // 40448 = 1 workgroup per CU; 256 threads = 4 waves → 4 waves per CU / 4 SIMDs = 1 wave per SIMD
    assert out.waves_per_workgroup == 4
    assert _limit(out, "lds").waves_per_simd == 1
    # VGPRs: 32 → 512 // 32 = 16 → capped 8; SGPRs 32 → 800 // 32 = 25 → 8
    assert _limit(out, "vgpr").waves_per_simd == 8
    assert _limit(out, "sgpr").waves_per_simd == 8
    assert out.theoretical_waves_per_simd == 1
    assert out.limiters == ["lds"]
    # 2 waves/SIMD = 8 waves per CU = 2 workgroups → each ≤ 65536 // 2 = 32768 (multiple of 512);
    # free 40448 - 32768 = 7680 bytes
    assert out.to_next_wave == {
        "waves_per_simd": 2,
        "free": {"lds": {"free_bytes": 7680, "allocated": 40448, "allowed_for_next_wave": 32768}},
    }


def test_lds_bound_gfx950():
    d = _dispatch("gfx950", arch_vgprs=32, agprs=0, sgprs=32, lds_bytes=40000, workgroup=(256, 1, 1))
    out = compute_occupancy(d)
    assert out.lds_alloc == 40448
    # 160 KiB = 163840; 163840 // 40448 = 4 (4 × 40448 = 161792; 5 × 40448 = 202240 > 163840)
    # 4 workgroups × 4 waves = 16 waves per CU / 4 SIMDs = 4 waves per SIMD
    assert _limit(out, "lds").waves_per_simd == 4
    assert out.theoretical_waves_per_simd == 4
    assert out.limiters == ["lds"]
    # 5 waves/SIMD = 20 waves per CU = 5 workgroups → 163840 // 5 = 32768 → free 7680
    assert out.to_next_wave["waves_per_simd"] == 5
    assert out.to_next_wave["free"]["lds"] == {"free_bytes": 7680, "allocated": 40448, "allowed_for_next_wave": 32768}


def test_lds_without_workgroup_size_does_not_limit():
    d = _dispatch("gfx942", arch_vgprs=32, agprs=0, sgprs=32, lds_bytes=40000, workgroup=None)
    out = compute_occupancy(d)
    assert _limit(out, "lds").waves_per_simd is None
    assert out.theoretical_waves_per_simd == 8


# --------------------------------------------------------------------------
# d) SGPR-bound (gfx9 has 800 SGPRs per SIMD)


@pytest.mark.parametrize(
    ("sgprs", "alloc"),
    [
        (112, 112),  # 112 is a multiple of 16
        (100, 112),  # 100 → ceil to 16 = 112 (unrounded, 800 // 100 = 8 would not limit)
    ],
)
def test_sgpr_bound_gfx942(sgprs, alloc):
    # VGPRs 64 → 512 // 64 = 8 (not limiting); SGPRs: 800 // 112 = 7
    d = _dispatch("gfx942", arch_vgprs=64, agprs=0, sgprs=sgprs, lds_bytes=0, workgroup=(64, 1, 1))
    out = compute_occupancy(d)
    assert out.sgpr_alloc == alloc
    assert _limit(out, "vgpr").waves_per_simd == 8
    assert _limit(out, "sgpr").waves_per_simd == 7
    # 1-wave workgroups: 7 × 4 = 28 whole workgroups per CU → no rounding
    assert out.theoretical_waves_per_simd == 7
    assert out.limiters == ["sgpr"]
    # 8 waves: 800 // 8 = 100 → granule 16 → 96; free 112 - 96 = 16
    assert out.to_next_wave == {
        "waves_per_simd": 8,
        "free": {"sgpr": {"free_registers": 16, "allocated": 112, "allowed_for_next_wave": 96}},
    }


# --------------------------------------------------------------------------
# e) hardware maximum


def test_hardware_max():
    # 32 VGPRs → 16 → cap 8; 16 SGPRs → 800 // 16 = 50 → cap 8; no LDS → 8 = hardware limit
    d = _dispatch("gfx942", arch_vgprs=32, agprs=0, sgprs=16, lds_bytes=0, workgroup=(256, 1, 1))
    out = compute_occupancy(d)
    assert out.theoretical_waves_per_simd == 8
    assert out.limiters == ["waves"]
    assert out.to_next_wave is None


# --------------------------------------------------------------------------
# f) grid-limited


def test_grid_limited_small_grid():
    # 32 VGPRs, 16 SGPRs, no LDS → 8 waves/SIMD; 4 waves per workgroup → (8 × 4) // 4 = 8 workgroups per CU
    # capacity 256 CUs × 8 = 2048 workgroups; grid 25600 / 256 = 100 workgroups < 2048 → grid-limited
    d = _dispatch("gfx950", arch_vgprs=32, agprs=0, sgprs=16, lds_bytes=0, workgroup=(256, 1, 1), grid=(256 * 100, 1, 1))
    out = compute_occupancy(d)
    assert out.workgroups == 100
    assert out.resident_workgroup_capacity == 2048
    assert out.grid_limited is True
    assert any("grid-limited" in e for e in out.explanation)


def test_not_grid_limited_large_grid():
    # 25,600,000 / 256 = 100000 workgroups ≥ 2048 → not grid-limited
    d = _dispatch("gfx950", arch_vgprs=32, agprs=0, sgprs=16, lds_bytes=0, workgroup=(256, 1, 1), grid=(256 * 100000, 1, 1))
    out = compute_occupancy(d)
    assert out.workgroups == 100000
    assert out.resident_workgroup_capacity == 2048
    assert out.grid_limited is False
    assert not any("grid-limited" in e for e in out.explanation)


def test_grid_limit_uses_theoretical_occupancy():
    # LDS-bound gfx942 (case c): 1 workgroup per CU → capacity 304 × 1 = 304
    # grid 300 workgroups < 304 → grid-limited; 400 ≥ 304 → not
    small = _dispatch("gfx942", arch_vgprs=32, agprs=0, sgprs=32, lds_bytes=40000, workgroup=(256, 1, 1), grid=(256 * 300, 1, 1))
    big = _dispatch("gfx942", arch_vgprs=32, agprs=0, sgprs=32, lds_bytes=40000, workgroup=(256, 1, 1), grid=(256 * 400, 1, 1))
    o1, o2 = compute_occupancy(small), compute_occupancy(big)
    assert o1.resident_workgroup_capacity == 304 and o1.grid_limited is True
    assert o2.resident_workgroup_capacity == 304 and o2.grid_limited is False


# --------------------------------------------------------------------------
# g) unknown target / unknown resources


def test_unknown_target():
    d = _dispatch(None, arch_vgprs=32, agprs=0, sgprs=16, lds_bytes=0, workgroup=(256, 1, 1))
    out = compute_occupancy(d)
    assert out.available is False
    assert out.reason
    assert out.theoretical_waves_per_simd is None


def test_unknown_vgprs():
    d = _dispatch("gfx942", arch_vgprs=None, sgprs=16, lds_bytes=0, workgroup=(256, 1, 1))
    out = compute_occupancy(d)
    assert out.available is False
    assert out.reason


# --------------------------------------------------------------------------
# h) observed residency from traced waves


def test_observed_overlap():
    waves = [
        # se, cu, simd, begin, end
        (0, 1, 0, 0, 100),
        (0, 1, 0, 10, 110),
        (0, 1, 0, 20, 120),  # 3 resident on (0, 1, 0) during [20, 100)
        (0, 1, 1, 0, 50),  # 1 on simd 1
        (0, 2, 0, 30, 90),  # other CU, same SIMD index: must not add to (0, 1, 0)
    ]
    d = _dispatch("gfx942", waves=waves, arch_vgprs=32, agprs=0, sgprs=16, lds_bytes=0, workgroup=(64, 1, 1))
    out = compute_occupancy(d)
    assert out.observed_max_waves_per_simd_traced_cu == 3
    # peaks per SIMD: (0,1,0) 3, (0,1,1) 1, (0,2,0) 1 → mean 5 / 3
    assert out.observed_mean_peak_waves_per_simd_traced_cu == pytest.approx(5 / 3)
    assert out.observed_max_waves_per_simd_all_cus is None  # no occupancy.json
    # theory 8, traced at most 3
    assert out.theoretical_waves_per_simd == 8
    assert any("never held more than 3" in e for e in out.explanation)


def test_observed_back_to_back_waves_do_not_overlap():
    # second wave starts in the cycle the first ends: the slot is reused, peak 1
    d = _dispatch("gfx942", waves=[(0, 0, 0, 0, 100), (0, 0, 0, 100, 200)], arch_vgprs=32, sgprs=16, lds_bytes=0)
    assert observed_residency(d)[0] == 1
    assert compute_occupancy(d).observed_max_waves_per_simd_traced_cu == 1


def test_observed_touching_plus_overlap():
    # [0,100) and [100,200) touch, [50,150) overlaps both: peak 2 (3 only if the touch counted)
    waves = [(0, 0, 0, 0, 100), (0, 0, 0, 100, 200), (0, 0, 0, 50, 150)]
    d = _dispatch("gfx942", waves=waves, arch_vgprs=32, sgprs=16, lds_bytes=0)
    assert compute_occupancy(d).observed_max_waves_per_simd_traced_cu == 2


def test_observed_without_waves():
    d = _dispatch("gfx942", waves=(), arch_vgprs=32, sgprs=16, lds_bytes=0)
    out = compute_occupancy(d)
    assert out.observed_max_waves_per_simd_traced_cu is None
    assert out.observed_mean_peak_waves_per_simd_traced_cu is None


def test_observed_above_theory_is_explained():
    # VGPR-bound to 4 (case a) but 5 waves seen at once on one SIMD → overstated resources
    waves = [(0, 0, 0, i, 1000) for i in range(5)]
    d = _dispatch("gfx942", waves=waves, arch_vgprs=128, agprs=0, sgprs=64, lds_bytes=0, workgroup=(256, 1, 1))
    out = compute_occupancy(d)
    assert out.theoretical_waves_per_simd == 4
    assert out.observed_max_waves_per_simd_traced_cu == 5
    assert any("above the theoretical 4" in e for e in out.explanation)


def test_observed_even_when_target_unknown():
    waves = [(0, 0, 0, 0, 10), (0, 0, 0, 5, 15)]
    d = _dispatch(None, waves=waves, arch_vgprs=32, sgprs=16, lds_bytes=0)
    out = compute_occupancy(d)
    assert out.available is False
    assert out.observed_max_waves_per_simd_traced_cu == 2


def test_workgroup_rounding_names_the_resource_and_gives_advice():
    # gfx942, 96 VGPRs → 512 // 96 = 5 waves/SIMD by VGPRs. A 1024-thread
    # workgroup is 16 waves = 4 per SIMD, so only one fits per CU: 4 waves/SIMD.
    # The next reachable level is 2 workgroups = 8 waves/SIMD, which needs
    # VGPR allocation <= 512 // 8 = 64: free 96 - 64 = 32 registers.
    out = compute_occupancy(_dispatch("gfx942", arch_vgprs=96, agprs=0, sgprs=16, lds_bytes=0, workgroup=(1024, 1, 1)))
    assert out.theoretical_waves_per_simd == 4
    assert out.limiters == ["vgpr", "workgroup"]
    assert out.to_next_wave == {
        "waves_per_simd": 8,
        "free": {"vgpr": {"free_registers": 32, "allocated": 96, "allowed_for_next_wave": 64}},
    }


def test_workgroup_too_big_for_another_gives_no_impossible_advice():
    # 12-wave workgroups (768 threads) = 3 per SIMD; hardware 8 → 2 workgroups
    # (6 waves/SIMD); a third would need 9 > 8: no advice, an explanation.
    out = compute_occupancy(_dispatch("gfx942", arch_vgprs=32, agprs=0, sgprs=16, lds_bytes=0, workgroup=(768, 1, 1)))
    assert out.theoretical_waves_per_simd == 6
    assert out.limiters == ["waves", "workgroup"]
    assert out.to_next_wave is None
    assert any("above the hardware limit" in e for e in out.explanation)


scope_rows = st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 2), st.integers(0, 3), st.integers(0, 40), st.integers(1, 30)),
                      max_size=40)


@given(scope_rows, st.lists(st.tuples(st.integers(0, 2), st.integers(0, 40), st.integers(0, 2), st.integers(0, 3),
                                      st.integers(0, 1)), max_size=40))
@settings(max_examples=200, deadline=None)
def test_observed_residency_is_the_count_at_every_instant(rows, events):
    """Peaks per (SE, CU, SIMD) of the traced waves, and over occupancy.json's
    start/end events, against counting what is resident at each cycle
    (a wave [begin, end) holds its slot up to, not at, its end; an event
    stream's end at a time comes before a start at that time)."""
    waves = [(se, cu, simd, b, b + ln) for se, cu, simd, b, ln in rows]
    peaks = []
    for key in sorted({w[:3] for w in waves}):
        mine = [w for w in waves if w[:3] == key]
        peaks.append(max(sum(1 for w in mine if w[3] <= t < w[4]) for t in range(0, 80)))
    ev = np.array([(se, t, cu, simd, 0, start, 0) for se, t, cu, simd, start in events], dtype=np.int64).reshape(-1, 7)
    want_all = None
    if len(events):
        want_all = 0
        for key in {(e[0], e[2], e[3]) for e in events}:
            level = 0
            for e in sorted((e for e in events if (e[0], e[2], e[3]) == key), key=lambda e: (e[1], e[4])):
                level += 1 if e[4] == 1 else -1
                want_all = max(want_all, level)
    d = _dispatch("gfx942", waves=waves)
    d.occupancy = SimpleNamespace(events=ev)
    got = observed_residency(d)
    assert got == ((max(peaks), sum(peaks) / len(peaks)) if peaks else (None, None)) + (want_all,)


@given(st.lists(st.tuples(st.integers(-1, 3), st.integers(-1, 3), st.integers(0, 3)), max_size=40))
@settings(max_examples=200, deadline=None)
def test_tuple_groups_numbers_rows_as_unique_does(rows):
    """analysis.groups.tuple_groups (the waves' (SE, CU, SIMD) groups of the
    observed residency and the per-SIMD wave states) against np.unique over
    the stacked columns: the same ids, and each group's first row holds its tuple."""
    from attlens.analysis.groups import tuple_groups

    cols = [np.array([r[i] for r in rows], dtype=np.int32) for i in range(3)]
    ids, first = tuple_groups(*cols)
    keys, inv = np.unique(np.stack(cols, axis=1).reshape(-1, 3), axis=0, return_inverse=True)
    assert ids.tolist() == inv.reshape(-1).tolist()
    assert [tuple(int(c[f]) for c in cols) for f in first.tolist()] == [tuple(k) for k in keys.tolist()]
