"""Static stall taxonomy: one parametrized test per mnemonic family.

The expected class of every mnemonic is written by hand from the ISA family it
belongs to (docs/taxonomy.md), never read back from the code under test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attlens.analysis import taxonomy
from attlens.analysis.taxonomy import CLASSES, WAIT, WAIT_CLASSES, classify_mnemonic, producer_wait_class

REPO = Path(__file__).resolve().parents[1]

# family -> (expected class, mnemonics)
FAMILIES: dict[str, tuple[str, list[str]]] = {
    "vmem_load": (
        "vmem_load",
        [
            "buffer_load_dword",
            "buffer_load_dwordx4",
            "global_load_dwordx4",
            "global_load_lds_dwordx4",
            "flat_load_dword",
            "scratch_load_dword",
            "tbuffer_load_format_x",
        ],
    ),
    "vmem_store": (
        "vmem_store",
        ["buffer_store_dword", "global_store_dwordx2", "flat_store_dword", "scratch_store_dword"],
    ),
    "vmem_atomic": ("vmem_atomic", ["buffer_atomic_add", "global_atomic_add_f32", "flat_atomic_cmpswap"]),
    "wait": (
        WAIT,
        [
            "s_waitcnt",
            "s_waitcnt_vscnt",
            "s_waitcnt_vmcnt",
            "s_waitcnt_lgkmcnt",
            "s_wait_loadcnt",
            "s_wait_storecnt",
            "s_wait_dscnt",
            "s_wait_kmcnt",
            "s_wait_idle",
        ],
    ),
    "hazard_dependency_waits": ("hazard", ["s_waitcnt_depctr", "s_wait_alu"]),
    "barrier": ("barrier", ["s_barrier", "s_barrier_signal", "s_barrier_wait"]),
    "lds": ("lds", ["ds_read_b128", "ds_write_b64", "ds_load_b128", "ds_store_b32", "ds_add_u32", "ds_read_b64_tr_b16"]),
    "lds_crosslane": ("lds_crosslane", ["ds_swizzle_b32", "ds_bpermute_b32", "ds_permute_b32"]),
    "mfma": (
        "mfma",
        [
            "v_mfma_f32_16x16x16_bf16",
            "v_mfma_scale_f32_16x16x128_f8f6f4",
            "v_mfma_f32_32x32x64_f8f6f4",
            "v_smfmac_f32_16x16x32_f16",
            "v_wmma_f32_16x16x16_f16",
            "v_swmmac_f32_16x16x32_f16",
        ],
    ),
    "valu": (
        "valu",
        [
            "v_fma_f32",
            "v_fmac_f32_e32",
            "v_div_fmas_f32",
            "v_pk_fma_f32",
            "v_add_f32_e32",
            "v_mov_b32_dpp",
            "v_accvgpr_read_b32",
        ],
    ),
    "salu": ("salu", ["s_mov_b32", "s_add_u32", "s_cmp_lt_u32", "s_getpc_b64"]),
    # The substring trap: s_buffer_load* contains "buffer_load" but is scalar memory.
    "smem": (
        "smem",
        ["s_load_dwordx2", "s_buffer_load_dword", "s_buffer_load_dwordx4", "s_store_dword", "s_dcache_wb", "s_memtime"],
    ),
    "branch": ("branch", ["s_branch", "s_cbranch_scc1", "s_cbranch_execz", "s_setpc_b64", "s_swappc_b64"]),
    "hazard_bubbles": ("hazard", ["s_nop", "s_sleep", "s_setprio"]),
    "kernel_end": ("kernel_end", ["s_endpgm"]),
    "message": ("message", ["s_sendmsg", "s_ttracedata"]),
}

ALL_CASES = [(fam, exp, m) for fam, (exp, ms) in FAMILIES.items() for m in ms]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family(family):
    expected, mnems = FAMILIES[family]
    got = {m: classify_mnemonic(m) for m in mnems}
    wrong = {m: c for m, c in got.items() if c != expected}
    assert not wrong, f"{family}: expected {expected!r}, got {wrong}"


@pytest.mark.parametrize(("family", "expected", "mnem"), ALL_CASES, ids=[c[2] for c in ALL_CASES])
def test_each_mnemonic(family, expected, mnem):
    assert classify_mnemonic(mnem) == expected


@pytest.mark.parametrize("mnem", ["s_buffer_load_dword", "s_buffer_load_dwordx4", "s_buffer_load_dwordx16"])
def test_s_buffer_load_is_never_vmem(mnem):
    cls = classify_mnemonic(mnem)
    assert cls == "smem"
    assert not cls.startswith("vmem")


def test_classification_is_stable_across_calls():
    # the result cache must not change the answer
    for _fam, exp, m in ALL_CASES:
        assert classify_mnemonic(m) == exp
        assert classify_mnemonic(m) == exp


@pytest.mark.parametrize(
    ("mnem", "expected"),
    [
        ("buffer_load_dword", "wait_global"),
        ("global_store_dword", "wait_global"),
        ("global_atomic_add", "wait_global"),
        ("ds_read_b128", "wait_lds"),
        ("ds_bpermute_b32", "wait_lds"),
        ("s_load_dword", "wait_smem"),
        ("s_buffer_load_dword", "wait_smem"),
        ("s_sendmsg", "wait_smem"),
        ("v_add_f32", "wait_unresolved"),
    ],
)
def test_producer_wait_class(mnem, expected):
    assert producer_wait_class(mnem) == expected
    assert expected in WAIT_CLASSES
    assert expected in CLASSES


@pytest.mark.parametrize(("family", "expected", "mnem"), ALL_CASES, ids=[c[2] for c in ALL_CASES])
def test_class_ids_are_known(family, expected, mnem):
    cls = classify_mnemonic(mnem)
    assert cls in CLASSES or cls == WAIT


def test_unknown_mnemonic_is_other():
    assert classify_mnemonic("image_sample") in CLASSES
    assert classify_mnemonic("") == "other"


def test_wait_is_not_a_class_id():
    # "wait" is the pre-split placeholder, never a reported class
    assert WAIT == taxonomy.WAIT == "wait"
    assert WAIT not in CLASSES
    assert set(WAIT_CLASSES) <= set(CLASSES)


def test_taxonomy_doc_lists_every_class():
    doc = REPO / "docs" / "taxonomy.md"
    if not doc.is_file():
        pytest.skip("docs/taxonomy.md does not exist yet: cannot check that it documents every class")
    text = doc.read_text(encoding="utf-8")
    # whole-word match, so "lds" is not satisfied by "lds_crosslane"
    missing = [c for c in CLASSES if not re.search(rf"(?<!\w){re.escape(c)}(?!\w)", text)]
    assert not missing, f"classes missing from docs/taxonomy.md: {missing}"
