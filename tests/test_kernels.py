"""The kernel table (capture/kernels.py) and its JSON/terminal output on the
real rocprofv3 outputs of ../shared."""

from __future__ import annotations

import re
import shutil
import sqlite3

import orjson
import pytest
from rich.console import Console

from attlens.capture.kernels import (
    DEFAULT_EXCLUDE,
    KernelTable,
    NoKernelData,
    NoKernelMatch,
    dispatches_of,
    kernel_table,
    pick_kernel,
)
from attlens.errors import EXIT_NOT_A_CAPTURE, InputNotFound, SeveralCaptures, UsageError
from attlens.io.rocprof_csv import read_kernel_stats
from attlens.report.terminal import render_kernels
from conftest import require_shared
from test_readers import TRACES, UUID_A, UUID_B, build_rocpd_db

# the kernel each capture's input_trace.yaml targeted, where the default choice finds it
TARGETS = {
    "blockscale_preshuffle_gemm": "bs_gemm_bf16_direct_t16x64x256",
    "flash_attn_func": "flash_attn_func_kernel_0",
    "layernorm": "layernorm_kernel_0",
    "moe_blockscale": "mfma_moe1_bs_fp8_f16_cshuffle_t16x256x128_wpe2_abi8",
    "moe_gemm": "moe_gemm1_0",
    "pa": "pa_decode_ps_kernel_0",
    "preshuffle_gemm": "kernel_gemm_0",
    "rmsnorm": "rmsnorm_kernel_0",
    "softmax": "softmax_kernel_0",
    "vec_add": "vecAddKernel_0",
}


def _tables():
    shared = require_shared()
    return {name: kernel_table(shared / "traces" / name / "rocprofv3") for name in TRACES}


@pytest.fixture(scope="module")
def tables():
    return _tables()


def test_every_trace_dir_matches_its_stats_file(tables):
    shared = require_shared()
    for name, t in tables.items():
        d = shared / "traces" / name / "rocprofv3"
        assert isinstance(t, KernelTable) and t.source == "kernel_trace"
        assert [f.name for f in t.files] == ["discover_kernel_trace.csv"]
        assert not t.notes, (name, t.notes)  # the stats cross-check found no disagreement
        stats = read_kernel_stats(d / "discover_kernel_stats.csv")
        assert len(t) == len(stats) == TRACES[name][1]
        for s in stats:
            r = t.row(s["name"])
            assert r is not None
            assert r.calls == s["calls"] == r.dispatch_count
            assert r.total_us * 1000 == pytest.approx(s["total_ns"], abs=0.5)
            assert r.average_us * 1000 == pytest.approx(s["average_ns"], abs=1e-3)
            assert r.min_us * 1000 == pytest.approx(s["min_ns"]) and r.max_us * 1000 == pytest.approx(s["max_ns"])
            assert r.stddev_us * 1000 == pytest.approx(s["stddev"], abs=1e-3)  # sample standard deviation
            assert r.percent == pytest.approx(s["percentage"], rel=1e-3, abs=6e-3)
        assert sum(r.percent for r in t) == pytest.approx(100.0)
        assert [r.rank for r in t] == list(range(1, len(t) + 1))
        totals = [r.total_us for r in t]
        assert totals == sorted(totals, reverse=True)
        assert t.total_kernel_time_us * 1000 == pytest.approx(read_kernel_stats(d / "discover_domain_stats.csv")[0]["total_ns"])


def test_vec_add_top_kernel(tables):
    shared = require_shared()
    t = tables["vec_add"]
    row, reason = pick_kernel(t)
    assert row.name == "vecAddKernel_0" and not row.excluded
    stats = {s["name"]: s for s in read_kernel_stats(shared / "traces/vec_add/rocprofv3/discover_kernel_stats.csv")}
    v = stats["vecAddKernel_0"]
    assert row.calls == v["calls"] == 24
    assert round(row.total_us * 1000) == v["total_ns"] == 461564
    assert row.average_us * 1000 == pytest.approx(v["average_ns"], abs=1e-3)
    assert row.kernel_ids == [27] and row.agents == [2]
    assert (row.vgpr, row.agpr, row.sgpr, row.lds_bytes, row.scratch_bytes) == (8, 0, 32, 0, 0)
    assert row.workgroup == (256, 1, 1) and row.grid == (2560000, 1, 1) and not row.several_shapes
    assert "largest total GPU time" in reason and "461.6 µs" in reason and "14 runtime helper" in reason
    # vecAddKernel_0 is the top kernel overall too, but the PyTorch add right behind it is a helper
    assert t.rows[1].excluded and "CUDAFunctor_add" in t.rows[1].name


def test_default_choice_finds_the_captured_kernel(tables):
    for name, t in tables.items():
        row, _ = pick_kernel(t)
        assert not row.excluded
        if name in TARGETS:
            assert row.name == TARGETS[name], name
    # where the harness ran a bigger library GEMM than the kernel under test, a regex picks it
    assert pick_kernel(tables["hgemm_splitk"])[0].name.startswith("Cijk_")
    row, reason = pick_kernel(tables["hgemm_splitk"], "hgemm_bf16")
    assert row.name == "hgemm_bf16_32x64x256_W1x2x2_S2_BT_BLDS1_AS1_SPK14_0" and "matching /hgemm_bf16/" in reason
    row, _ = pick_kernel(tables["pa_mqa_logits_fp4"], "^pa_mqa_logits_fp4_kernel_0$")
    assert row.calls == 12 and row.total_us == pytest.approx(390.121)


def test_exclude_flags(tables):
    rx = re.compile(DEFAULT_EXCLUDE)
    for t in tables.values():
        for r in t:
            assert r.excluded == bool(rx.search(r.name))
            if r.name.startswith("__amd_rocclr_") or "at::native::vectorized_elementwise_kernel" in r.name:
                assert r.excluded
            if r.name in TARGETS.values() or r.name.startswith(("Cijk_", "void ck::")) or "cunn_SoftMax" in r.name:
                assert not r.excluded
    for name in ("vectorized_elementwise_kernel", "elementwise_kernel_manual_unroll", "distribution_elementwise_grid_stride_kernel",
                 "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_", "__amd_rocclr_fillBufferAligned"):
        assert rx.search(name), name
    for name in ("vecAddKernel_0", "reduce_kernel", "my_elementwise_kernel_v2", "_rms_norm_tiled_onepass"):
        assert not rx.search(name), name


def test_exclude_is_overridable():
    shared = require_shared()
    d = shared / "traces/vec_add/rocprofv3"
    t = kernel_table(d, exclude=None)
    assert t.exclude is None and not any(r.excluded for r in t)
    assert pick_kernel(t)[0].name == "vecAddKernel_0"  # it is the largest kernel anyway
    t = kernel_table(d, exclude="vecAdd")
    assert [r.name for r in t if r.excluded] == ["vecAddKernel_0"]
    assert "CUDAFunctor_add" in pick_kernel(t)[0].name
    t = kernel_table(d, exclude=".")
    row, reason = pick_kernel(t)
    assert row.rank == 1 and "every kernel matches" in reason
    with pytest.raises(UsageError):
        kernel_table(d, exclude="(")


def test_pick_kernel_regex():
    shared = require_shared()
    t = kernel_table(shared / "traces/vec_add/rocprofv3")
    row, reason = pick_kernel(t, "CUDAFunctor_add")
    assert row.excluded and row.calls == 25 and "exclude pattern" in reason and "other kernel" not in reason
    row, reason = pick_kernel(t, "elementwise")
    assert row.rank == 2 and "other kernel(s) match too" in reason
    with pytest.raises(NoKernelMatch) as ei:
        pick_kernel(t, "^no_such_kernel$")
    assert isinstance(ei.value, LookupError) and "no kernel name matches" in str(ei.value) and "vecAddKernel_0" in str(ei.value)
    with pytest.raises(UsageError):
        pick_kernel(t, "[")
    with pytest.raises(NoKernelMatch):
        pick_kernel([], None)


def test_dispatches_of_gives_rocprofv3_iterations(tables):
    t = tables["vec_add"]
    row = t.row("vecAddKernel_0")
    ids = dispatches_of(t, row.kernel_ids)
    assert len(ids) == 24 and ids == sorted(ids)
    # the ATT job's kernel_iteration_range "[6, [8-8]]" traced dispatches 25 and 27 (rocprofv3-interfaces.md §2.6)
    assert (ids[5], ids[7]) == (25, 27)
    assert dispatches_of(t.dispatches, 27) == ids
    # rows out of Dispatch_Id order in the file (hgemm_splitk) still come back in dispatch order
    h = tables["hgemm_splitk"]
    for r in h:
        got = dispatches_of(h, r.kernel_ids)
        assert got == sorted(got) and len(got) == r.dispatch_count


def test_several_shapes_are_reported(tables):
    t = tables["hgemm_splitk"]
    copy = t.row("__amd_rocclr_copyBuffer")
    assert copy.several_shapes and copy.grid is None and len(copy.shapes) == 4
    assert copy.workgroup == (512, 1, 1)  # one workgroup size, several grids
    assert sum(s["dispatches"] for s in copy.shapes) == copy.calls == 252
    assert "grid" in copy.varying and any("launch shapes" in n for n in copy.notes)
    hg = t.row("hgemm_bf16_32x64x256_W1x2x2_S2_BT_BLDS1_AS1_SPK14_0")
    assert not hg.several_shapes and hg.grid == (1536, 14, 1) and hg.vgpr == 132 and hg.lds_bytes == 98304


def test_mi350_host_pid_directory():
    shared = require_shared()
    t = kernel_table(shared / "rocprofv3-samples/mi350-kernel-trace-run")
    assert t.source == "kernel_trace" and [f.name for f in t.files] == ["1857180_kernel_trace.csv"]
    row, _ = pick_kernel(t)
    assert row.name == "_rms_norm_tiled_onepass" and row.calls == 60 and row.kernel_ids == [395] and row.agents == [9]
    assert {d["pid"] for d in t.dispatches} == {1857180}
    assert len(t) == 4


def test_gfx1151_quoted_directory():
    shared = require_shared()
    t = kernel_table(shared / "rocprofv3-samples/gfx1151-sys-trace")
    assert t.source == "kernel_trace" and [f.name for f in t.files] == ["decode_kernel_trace.csv"]
    assert len(t) == 17 and sum(r.calls for r in t) == 144
    row, _ = pick_kernel(t)
    assert row.name.startswith("void mul_mat_vec_q<") and not row.excluded


def test_stats_file_alone():
    shared = require_shared()
    f = shared / "traces/vec_add/rocprofv3/discover_kernel_stats.csv"
    t = kernel_table(f)
    assert t.source == "kernel_stats" and t.dispatches == []
    row, _ = pick_kernel(t)
    assert row.name == "vecAddKernel_0" and row.calls == 24 and row.total_us == pytest.approx(461.564)
    assert row.kernel_ids == [] and row.dispatch_count is None and row.vgpr is None and row.grid is None
    d = t.to_dict()["rows"][0]
    assert d["kernel_ids"] is None and d["dispatch_count"] is None and d["resources"]["vgpr"] is None


def test_trace_preferred_over_stats_and_json(tmp_path):
    shared = require_shared()
    src = shared / "traces/vec_add/rocprofv3"
    for f in ("discover_kernel_stats.csv", "big_results.json"):
        shutil.copy(src / f, tmp_path / f)
    t = kernel_table(tmp_path)  # stats + a results.json without dispatch records
    assert t.source == "kernel_stats"
    assert any("no kernel dispatch records" in n for n in t.notes)
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    shutil.copy(src / "discover_kernel_trace.csv", deep / "discover_kernel_trace.csv")
    t = kernel_table(tmp_path)
    assert t.source == "kernel_trace" and t.files == [deep / "discover_kernel_trace.csv"]
    too_deep = tmp_path / "x" / "1" / "2" / "3" / "4"
    too_deep.mkdir(parents=True)
    shutil.copy(src / "discover_kernel_trace.csv", too_deep / "1234_kernel_trace.csv")
    assert kernel_table(tmp_path).files == [deep / "discover_kernel_trace.csv"]  # depth 5 is not searched


def test_stats_crosscheck_note(tmp_path):
    shared = require_shared()
    src = shared / "traces/vec_add/rocprofv3"
    shutil.copy(src / "discover_kernel_trace.csv", tmp_path / "run_kernel_trace.csv")
    text = (src / "discover_kernel_stats.csv").read_text().replace('"vecAddKernel_0",24,', '"vecAddKernel_0",23,')
    (tmp_path / "run_kernel_stats.csv").write_text(text)
    t = kernel_table(tmp_path)
    assert t.source == "kernel_trace" and t.row("vecAddKernel_0").calls == 24
    assert t.notes == ["run_kernel_stats.csv disagrees with the trace for 1 kernel(s) (e.g. vecAddKernel_0)"]


def test_results_json_source(tmp_path):
    shared = require_shared()
    from test_readers import _inject_records

    f = _inject_records(shared, tmp_path)
    t = kernel_table(f)
    assert t.source == "results.json" and len(t) == 1
    row = t.rows[0]
    assert row.name == "vecAddKernel_0" and row.calls == 24 and round(row.total_us * 1000) == 461564 and row.agents == [2]
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(shared / "traces/vec_add/rocprofv3/big_results.json", only / "big_results.json")
    with pytest.raises(NoKernelData, match="no kernel dispatch records"):
        kernel_table(only)


def test_rocpd_sources(tmp_path):
    shared = require_shared()
    va = shared / "traces/vec_add/rocprofv3"
    ln = shared / "traces/layernorm/rocprofv3"
    run = tmp_path / "host"
    run.mkdir()
    a = build_rocpd_db(run / "1612545_results.db", va / "discover_kernel_trace.csv", va / "discover_agent_info.csv", UUID_A, 1612545)
    t = kernel_table(a)
    ref = kernel_table(va / "discover_kernel_trace.csv")
    assert t.source == "rocpd"
    assert [(r.name, r.calls, r.total_us, r.kernel_ids, r.vgpr, r.grid) for r in t] == [
        (r.name, r.calls, r.total_us, r.kernel_ids, r.vgpr, r.grid) for r in ref
    ]
    # two processes of one run (<pid>_results.db in one directory): merged
    build_rocpd_db(run / "1610001_results.db", ln / "discover_kernel_trace.csv", ln / "discover_agent_info.csv", UUID_B, 1610001)
    t = kernel_table(tmp_path)
    assert t.source == "rocpd" and len(t.files) == 2
    assert t.row("vecAddKernel_0").calls == 24 and t.row("layernorm_kernel_0").calls == 112
    assert len(t.dispatches) == 68 + 135
    assert {d["pid"] for d in t.dispatches} == {1612545, 1610001}
    # kernel ids are per process: dispatches_of must not mix them up across databases
    assert len(dispatches_of([d for d in t.dispatches if d["pid"] == 1612545], 27)) == 24


def test_several_runs_in_one_directory(tmp_path):
    shared = require_shared()
    with pytest.raises(SeveralCaptures) as ei:
        kernel_table(shared / "traces")
    assert "12 rocprofv3 runs" in str(ei.value) and len(ei.value.candidates) == 12
    # naming both files explicitly is fine
    t = kernel_table([shared / "traces/vec_add/rocprofv3/discover_kernel_trace.csv", shared / "traces/rmsnorm/rocprofv3/discover_kernel_trace.csv"])
    assert t.row("vecAddKernel_0").calls == 24 and t.row("rmsnorm_kernel_0").calls == 111
    # two -o prefixes in one directory are two runs
    for p in ("a_kernel_trace.csv", "b_kernel_trace.csv"):
        shutil.copy(shared / "traces/vec_add/rocprofv3/discover_kernel_trace.csv", tmp_path / p)
    with pytest.raises(SeveralCaptures):
        kernel_table(tmp_path)


def test_nothing_usable(tmp_path):
    shared = require_shared()
    with pytest.raises(NoKernelData) as ei:
        kernel_table(tmp_path)
    assert ei.value.exit_code == EXIT_NOT_A_CAPTURE and "\n" not in str(ei.value)
    # rocprofiler-compute's converted files are not rocprofv3 outputs
    with pytest.raises(NoKernelData):
        kernel_table(shared / "rocprofv3-samples/rocprof-compute-vcopy")
    with pytest.raises(NoKernelData, match="not a rocprofv3"):
        kernel_table(shared / "rocprofv3-samples/rocprof-compute-vcopy/MI350/pmc_perf.csv")
    with pytest.raises(InputNotFound):
        kernel_table(tmp_path / "missing")
    empty = tmp_path / "e"
    empty.mkdir()
    (empty / "run_kernel_trace.csv").write_text('"Kind","Kernel_Name","Start_Timestamp","End_Timestamp"\n')
    with pytest.raises(NoKernelData, match="no kernel dispatch"):
        kernel_table(empty)
    junk = tmp_path / "j"
    junk.mkdir()
    (junk / "x_results.db").write_bytes(b"junk")
    from attlens.errors import CorruptCapture

    with pytest.raises(CorruptCapture):
        kernel_table(junk)
    other = tmp_path / "o"
    other.mkdir()
    conn = sqlite3.connect(other / "x_results.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(Exception) as ei:
        kernel_table(other)
    assert ei.value.exit_code == EXIT_NOT_A_CAPTURE


def test_unnamed_file_is_sniffed(tmp_path):
    shared = require_shared()
    f = tmp_path / "trace.txt"
    shutil.copy(shared / "traces/softmax/rocprofv3/discover_kernel_trace.csv", f)
    t = kernel_table(f)
    assert t.source == "kernel_trace" and pick_kernel(t)[0].name == "softmax_kernel_0"


def test_json_output(tables):
    t = tables["hgemm_splitk"]
    d = t.to_dict()
    assert d["schema"] == "attlens.kernels" and d["schema_version"] == 1
    assert d["source"] == "kernel_trace" and d["kernels"] == len(d["rows"]) == 34 and d["excluded_kernels"] == 25
    orjson.loads(orjson.dumps(d))
    rows = {r["name"]: r for r in d["rows"]}
    copy = rows["__amd_rocclr_copyBuffer"]
    assert copy["excluded"] and copy["several_shapes"] and copy["resources"]["grid"] is None
    assert copy["resources"]["workgroup"] == [512, 1, 1] and len(copy["shapes"]) == 4 and copy["varying"]["grid"]
    hg = rows["hgemm_bf16_32x64x256_W1x2x2_S2_BT_BLDS1_AS1_SPK14_0"]
    assert hg["resources"] == {"vgpr": 132, "agpr": 0, "sgpr": 112, "lds_bytes": 98304, "scratch_bytes": 0,
                               "workgroup": [256, 1, 1], "grid": [1536, 14, 1]}
    assert hg["calls"] == 55 and hg["total_us"] == 392.803 and hg["kernel_ids"] and hg["varying"] is None


def test_terminal_output(tables):
    console = Console(record=True, width=200, color_system=None)
    render_kernels(tables["vec_add"], console, top=5)
    text = console.export_text()
    assert "vecAddKernel_0" in text and "461.6" in text and "(helper)" in text
    assert "10 more kernel(s) not shown" in text and "default pattern" in text
    console = Console(record=True, width=200, color_system=None)
    render_kernels(tables["hgemm_splitk"], console)
    assert "4 shapes" in console.export_text()
