"""Kernel resources when several kernels share the traced kernel's name, and
the gfx950 VGPR reconciliation (2 x rocprofv3's VGPR_Count with the ISA scan)."""

from __future__ import annotations

from dataclasses import replace

import attlens
from attlens.synth.toy import default_kernel, write_capture


def _rows(path):
    return path.read_text().splitlines()


def _add_kernel(root, kernel_id: int, dispatch: int, lds: int, vgprs: int, grid: int, start: int = 500_000, dur: int = 40_000):
    """Append a dispatch of another kernel with the same name to the run's kernel_trace.csv."""
    f = root.parent / "demo_kernel_trace.csv"
    head, row = _rows(f)
    cols = row.split(",")
    cols[5], cols[6], cols[8] = str(dispatch), str(kernel_id), str(dispatch)
    cols[9], cols[10] = str(start), str(start + dur)
    cols[11], cols[13], cols[19] = str(lds), str(vgprs), str(grid)
    f.write_text("\n".join([head, row, ",".join(cols)]) + "\n")


def _set_dispatch(root, dispatch: int):
    f = root.parent / "demo_kernel_trace.csv"
    head, row, *rest = _rows(f)
    cols = row.split(",")
    cols[5] = cols[8] = str(dispatch)
    f.write_text("\n".join([head, ",".join(cols), *rest]) + "\n")


def test_picks_the_kernel_whose_lds_fits_the_code(tmp_path):
    # the capture executes ds_read_b128 / ds_write_b64: a kernel with 0 B of LDS cannot be it
    k = default_kernel()
    root = write_capture(tmp_path, k)
    _set_dispatch(root, 3)  # no row carries the capture's dispatch id 7
    _add_kernel(root, kernel_id=9, dispatch=4, lds=0, vgprs=16, grid=256 * 16)
    d = attlens.load(root)
    res = d.resources
    assert res.lds_bytes == 8192 and res.grid == (256 * 4096, 1, 1)  # kernel id 5, not 9
    picked = [c for c in res.candidates if c["picked"]]
    other = [c for c in res.candidates if not c["picked"]]
    assert [c["kernel_id"] for c in picked] == [5] and [c["kernel_id"] for c in other] == [9]
    assert other[0]["misfit"] == ["0 B LDS, but the code executes ds_read_b128"]
    assert any("picked kernel id 5" in n and "kernel id 9: 0 B LDS, but the code executes ds_read_b128" in n for n in res.notes)
    assert res.duration_ns == k.duration_ns  # the picked kernel's own dispatch


def test_a_misfit_kernel_never_wins_on_dispatch_id(tmp_path):
    root = write_capture(tmp_path, default_kernel())
    _set_dispatch(root, 3)
    _add_kernel(root, kernel_id=9, dispatch=7, lds=0, vgprs=16, grid=256 * 16)  # same dispatch id as the capture, but no LDS
    res = attlens.load(root).resources
    assert res.lds_bytes == 8192 and res.grid == (256 * 4096, 1, 1)


def test_too_few_registers_rule_a_kernel_out(tmp_path):
    # the toy listing uses v0..v15 and a0..a3: 16 + 4 = 20 registers; 2 x 8 = 16 < 20 on gfx950
    root = write_capture(tmp_path, default_kernel())
    _set_dispatch(root, 3)
    _add_kernel(root, kernel_id=9, dispatch=4, lds=8192, vgprs=8, grid=256 * 16)
    res = attlens.load(root).resources
    bad = next(c for c in res.candidates if c["kernel_id"] == 9)
    assert bad["misfit"] == ["8 VGPRs reported (16 usable), but the code uses 20"] and not bad["picked"]


def test_gfx950_uses_twice_the_reported_vgprs_reconciled_with_the_isa(tmp_path):
    for reported, want in ((100, 200), (8, 20)):  # 2 x 100 = 200 > ISA 20; 2 x 8 = 16 < ISA 16 + 4 AGPRs = 20
        root = write_capture(tmp_path / str(reported), replace(default_kernel(), vgprs=reported))
        d = attlens.load(root)
        r = attlens.analyze(d)
        vi = r.occupancy.vgpr_inputs
        assert (vi["reported_vgprs"], vi["isa_vgprs"], vi["isa_agprs"], vi["isa_registers"]) == (reported, 16, 4, 20)
        assert vi["registers_used"] == want and vi["allocated"] == -(-want // 8) * 8
        assert d.resources.unified_vgprs == want
        assert r.occupancy.theoretical_waves_per_simd == min(8, 512 // vi["allocated"])


def test_other_targets_keep_the_metadata_count(tmp_path):
    root = write_capture(tmp_path, replace(default_kernel(), target="gfx942", vgprs=100))
    d = attlens.load(root)
    assert d.resources.unified_vgprs is None
    vi = attlens.analyze(d).occupancy.vgpr_inputs
    assert vi["registers_used"] == 104  # 100 arch VGPRs (rounded to 4) + 4 AGPRs from the ISA
