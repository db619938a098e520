"""The counter rules of att-format.md §4.3 on hand-built instruction streams."""

from attlens.analysis.waitdeps import simulate_sequence as sim


def test_load_issued_n_before_its_wait():
    seq = ["buffer_load_dword v0, v1, s[4:7], 0 offen", "v_add_f32 v2, v3, v4", "v_add_f32 v5, v3, v4", "s_waitcnt vmcnt(0)"]
    assert sim(seq) == [(3, [0])]


def test_partial_count_resolves_only_the_oldest():
    seq = ["global_load_dword v0, v[0:1], off"] * 3 + ["s_waitcnt vmcnt(1)", "s_waitcnt vmcnt(0)"]
    assert sim(seq) == [(3, [0, 1]), (4, [2])]


def test_wait_with_count_above_outstanding_resolves_nothing():
    seq = ["ds_read_b32 v0, v1", "s_waitcnt lgkmcnt(3)"]
    assert sim(seq) == []


def test_scalar_loads_are_out_of_order_until_a_wait_of_zero():
    seq = ["s_load_dword s0, s[0:1], 0x0", "s_load_dword s1, s[0:1], 0x4", "s_waitcnt lgkmcnt(1)", "s_waitcnt lgkmcnt(0)"]
    # lgkmcnt(1) cannot tell which scalar load returned: no edge until the 0
    assert sim(seq) == [(3, [0, 1])]


def test_ds_and_smem_share_lgkm():
    seq = ["ds_read_b64 v[0:1], v2", "s_buffer_load_dword s4, s[8:11], 0x0", "s_waitcnt lgkmcnt(0)"]
    assert sim(seq) == [(2, [0, 1])]


def test_flat_goes_in_front_of_the_next_in_order_resolve():
    seq = ["flat_load_dword v0, v[2:3]", "buffer_load_dword v1, v4, s[0:3], 0 offen", "s_waitcnt vmcnt(0) lgkmcnt(0)"]
    # lgkm is processed first: FLAT is attached to the first in-order resolve
    assert sim(seq) == [(2, [0]), (2, [1])]


def test_mixed_wait_emits_per_counter_entries():
    seq = ["buffer_load_dword v0, v4, s[0:3], 0 offen", "ds_read_b32 v1, v2", "s_waitcnt vmcnt(0) lgkmcnt(0)"]
    assert sim(seq) == [(2, [1]), (2, [0])]


def test_stores_count_on_vmcnt_on_gfx9_but_vscnt_on_gfx10():
    seq = ["global_store_dword v[0:1], v2, off", "global_load_dword v3, v[0:1], off", "s_waitcnt vmcnt(0)"]
    assert sim(seq, "gfx9") == [(2, [0, 1])]
    seq10 = seq + ["s_waitcnt_vscnt null, 0x0"]
    assert sim(seq10, "gfx10") == [(2, [1]), (3, [0])]


def test_gfx12_wait_names():
    seq = [
        "global_load_b32 v0, v[0:1], off",
        "ds_load_b32 v1, v2",
        "s_load_b32 s0, s[0:1], 0x0",
        "global_store_b32 v[0:1], v3, off",
        "s_wait_loadcnt 0x0",
        "s_wait_dscnt 0x0",
        "s_wait_kmcnt 0x0",
        "s_wait_storecnt 0x0",
    ]
    assert sim(seq, "gfx12") == [(4, [0]), (5, [1]), (6, [2]), (7, [3])]


def test_gfx12_wait_idle_drains_everything():
    seq = ["global_load_b32 v0, v[0:1], off", "ds_load_b32 v1, v2", "s_wait_idle"]
    assert sim(seq, "gfx12") == [(2, [0, 1])]


def test_s_wait_alu_is_not_a_memory_wait():
    seq = ["global_load_b32 v0, v[0:1], off", "s_wait_alu 0xfffe", "s_wait_loadcnt 0x0"]
    assert sim(seq, "gfx12") == [(2, [0])]
