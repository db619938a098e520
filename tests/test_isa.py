"""Facts read off the disassembly text: mnemonics, register use, waitcnt
fields, and the target implied by the instructions alone."""

from __future__ import annotations

import pytest

from attlens.model.context import isa_target_evidence
from attlens.model.isa import mnemonic, scan_registers, waitcnt_fields

# --------------------------------------------------------------------------
# mnemonic()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v_add_f32 v0, v1, v2", "v_add_f32"),
        ("V_ADD_F32 v0, v1, v2", "v_add_f32"),
        ("S_WAITCNT vmcnt(0)", "s_waitcnt"),
        ("s_endpgm", "s_endpgm"),
        ("global_load_dwordx4 v[0:3], v[4:5], off", "global_load_dwordx4"),
        ("; _Z6kernelPf", ""),  # label row
        (";", ""),
        ("", ""),
    ],
)
def test_mnemonic(text, expected):
    assert mnemonic(text) == expected


# --------------------------------------------------------------------------
# scan_registers()


def _use(*lines):
    u = scan_registers(list(lines))
    return (u.vgprs, u.agprs, u.sgprs)


def test_vgpr_range_counts_whole():
    # v[8:15] uses v8..v15, so 16 VGPRs (highest index 15 + 1), not 9 (from the low end)
    assert _use("v_mfma_f32_32x32x8_f16 v[8:15], v[0:1], v[2:3], v[8:15]")[0] == 16


def test_vgpr_range_high_end_from_load():
    # v[12:15] → 16; v[8:9] is lower
    assert _use("global_load_dwordx4 v[12:15], v[8:9], off") == (16, 0, 0)


def test_sgpr_range():
    # s[8:15] → 16 SGPRs; s[0:1] lower
    assert _use("s_load_dwordx8 s[8:15], s[0:1], 0x0") == (0, 0, 16)


def test_buffer_resource_sgpr_range():
    # v0..v3 dest + v4 offset → 5 VGPRs; s[4:7] rsrc + s2 soffset → 8 SGPRs
    assert _use("buffer_load_dwordx4 v[0:3], v4, s[4:7], s2 offen") == (5, 0, 8)


def test_agpr_range():
    # a[0:3] → 4 AGPRs; v[0:1], v[2:3] → 4 VGPRs
    assert _use("v_mfma_f32_16x16x16_bf16 a[0:3], v[0:1], v[2:3], a[0:3]") == (4, 4, 0)


def test_acc_single():
    # acc7 → AGPR 7 → 8 AGPRs; v0 → 1 VGPR
    assert _use("v_accvgpr_read_b32 v0, acc7") == (1, 8, 0)


def test_agpr_single():
    # a5 → 6 AGPRs, v1 → 2 VGPRs
    assert _use("v_accvgpr_write_b32 a5, v1") == (2, 6, 0)


def test_max_over_lines_and_labels_skipped():
    lines = [
        "; _Z6kernelPf",
        "s_load_dwordx2 s[0:1], s[4:5], 0x0",  # s → 6
        "v_mov_b32 v3, s2",  # v → 4
        "v_mfma_f32_16x16x16_bf16 a[4:7], v[0:1], v[2:3], a[4:7]",  # a → 8
        "v_accvgpr_read_b32 v9, acc2",  # v → 10, a stays 8
        "s_endpgm",
        "",
    ]
    assert _use(*lines) == (10, 8, 6)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # cache-policy bits sc0/sc1/nt are not SGPR 0/1 nor anything else
        ("global_load_dword v0, v[0:1], off sc0 sc1", (2, 0, 0)),
        ("global_store_dword v[2:3], v4, off sc0 sc1 nt", (5, 0, 0)),
        ("buffer_store_dword v1, v2, s[8:11], 0 offen nt", (3, 0, 12)),
        # vmcnt(0) / lgkmcnt(0) are not v-registers
        ("s_waitcnt vmcnt(0) lgkmcnt(0)", (0, 0, 0)),
        ("s_waitcnt vmcnt(0)", (0, 0, 0)),
        # 0xa0 is a literal, not AGPR 0
        ("s_mov_b32 s0, 0xa0", (0, 0, 1)),
        ("v_mov_b32 v1, 0xa0", (2, 0, 0)),
        ("ds_read_b128 v[0:3], v4 offset:0xa0", (5, 0, 0)),
        # vcc / exec are not counted as VGPR/SGPR
        ("v_cndmask_b32_e32 v0, v1, v2, vcc", (3, 0, 0)),
        ("s_and_saveexec_b64 s[2:3], vcc", (0, 0, 4)),
    ],
)
def test_non_register_tokens_ignored(text, expected):
    assert _use(text) == expected


def test_empty_listing():
    assert _use() == (0, 0, 0)


# --------------------------------------------------------------------------
# waitcnt_fields()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s_waitcnt vmcnt(0) lgkmcnt(3)", {"vmcnt": 0, "lgkmcnt": 3}),
        ("s_waitcnt lgkmcnt(0)", {"lgkmcnt": 0}),
        ("s_waitcnt vmcnt(0x3f)", {"vmcnt": 63}),
        ("s_waitcnt vmcnt(5) expcnt(7) lgkmcnt(15)", {"vmcnt": 5, "expcnt": 7, "lgkmcnt": 15}),
        ("s_waitcnt_vscnt null, 0x0", {"vscnt": 0}),
        ("s_waitcnt_vscnt null, 0x3", {"vscnt": 3}),
        ("s_wait_loadcnt 0x2", {"loadcnt": 2}),
        ("s_wait_storecnt 0x0", {"storecnt": 0}),
        ("s_wait_dscnt 0x1", {"dscnt": 1}),
        ("s_wait_kmcnt 0x0", {"kmcnt": 0}),
        ("s_wait_idle", {"*": 0}),
        ("s_wait_alu 0xfffe", {}),
        ("s_waitcnt_depctr 0xffe3", {}),
        ("v_add_f32 v0, v1, v2", {}),
        ("s_nop 0", {}),
    ],
)
def test_waitcnt_fields(text, expected):
    assert waitcnt_fields(text) == expected


# --------------------------------------------------------------------------
# isa_target_evidence()


def test_evidence_gfx950_only_instruction():
    target, evidence, reason = isa_target_evidence(["s_load_dwordx2 s[0:1], s[4:5], 0x0", "v_cvt_scalef32_pk_f32_fp8 v0, v1, v2", "s_endpgm"])
    assert target == "gfx950"
    assert "v_cvt_scalef32_pk_f32_fp8" in evidence
    assert "gfx950" in reason


def test_evidence_gfx942_xf32_mfma():
    target, evidence, reason = isa_target_evidence(["v_mfma_f32_16x16x8_xf32 a[0:3], v[0:1], v[2:3], a[0:3]", "s_endpgm"])
    assert target == "gfx942"
    assert "v_mfma_f32_16x16x8_xf32" in evidence
    assert reason


def test_evidence_sc_bits_only_means_gfx940_family():
    target, evidence, reason = isa_target_evidence(["global_load_dword v0, v[0:1], off sc0 sc1", "s_endpgm"])
    assert target is None
    assert evidence  # the cache bits are cited
    assert "gfx940" in reason


def test_evidence_glc_bits_point_at_gfx90a():
    target, _evidence, reason = isa_target_evidence(["global_load_dword v0, v[0:1], off glc slc"])
    assert target is None
    assert "gfx90a" in reason


def test_evidence_plain_valu_is_unknown():
    target, evidence, reason = isa_target_evidence(["v_add_f32 v0, v1, v2"])
    assert target is None
    assert evidence == []
    assert reason


def test_evidence_conflicting_is_unknown():
    # gfx950-only and gfx942-only instructions together: no single target
    target, _evidence, _reason = isa_target_evidence(
        ["v_cvt_scalef32_pk_f32_fp8 v0, v1, v2", "v_mfma_f32_16x16x8_xf32 a[0:3], v[0:1], v[2:3], a[0:3]"]
    )
    assert target is None


def test_evidence_ignores_label_rows():
    # a label naming a gfx950-only instruction is not an instruction
    target, _e, _r = isa_target_evidence(["; v_cvt_scalef32_pk_f32_fp8", "v_add_f32 v0, v1, v2"])
    assert target is None


def test_gfx12_packed_waits():
    # loadcnt/storecnt in bits 13:8, dscnt in bits 5:0
    assert waitcnt_fields("s_wait_loadcnt_dscnt 0x203") == {"loadcnt": 2, "dscnt": 3}
    assert waitcnt_fields("s_wait_storecnt_dscnt 0x0") == {"storecnt": 0, "dscnt": 0}


def test_indented_label_row_is_not_an_instruction():
    assert mnemonic("  ; label") == ""
