"""`attlens export -o t.json` (Chrome JSON) against a reference: one dict per
event, recomputed here from the raw record, timeline and occupancy columns of
real captures (the way the writer worked before its rows were formatted by
NumPy, issue 24), compared event by event, numbers by value. ts/dur are
checked exactly: the file's decimal text is ``ns / 1000``.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from decimal import Decimal
from types import SimpleNamespace

import numpy as np
import pytest

import attlens
from attlens.analysis.clock import compute_clock
from attlens.model.dispatch import STATE_NAMES
from attlens.report import perfetto
from attlens.report.jsonrows import Rows, Table, squeeze, squeeze_groups
from attlens.textsafe import dumps_json

FLASH_SMALL = "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"  # SE offsets, realtime clock
VEC_ADD = "traces/vec_add/big/ui_output_agent_14705_dispatch_25"  # 632 waves
SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"  # the benchmark's capture


@functools.lru_cache(maxsize=None)
def _load(path):
    return attlens.load(path)


def reference(d, clock, max_events: int | None, only: int | None = None) -> tuple[list[dict], dict]:
    """Every event as a dict (ts/dur exact Decimals, µs), of the first
    ``only`` exported waves when given, then the counters; and the summary."""
    w, recs, tl = d.waves, d.records, d.timeline
    offsets = clock.se_offsets_cycles or {}
    scale = 1e9 / clock.frequency_hz if clock.frequency_hz else 1.0
    shift = [offsets.get(int(se), 0) for se in w.se.tolist()]
    begin = [int(b) + s for b, s in zip(w.begin.tolist(), shift)]
    end = [int(e) + s for e, s in zip(w.end.tolist(), shift)]
    origin = min(begin)

    def ns(cycles: int) -> int:  # round half to even, as np.rint
        return round((float(cycles) - origin) * scale)

    def us(n: int) -> Decimal:
        return Decimal(n) / 1000

    by_start = sorted(range(w.count), key=lambda i: begin[i])
    occ = d.occupancy
    counters = {}
    if occ is not None and len(occ.events):
        for se in sorted(set(occ.events[:, 0].tolist())):
            counters[se] = occ.events[occ.events[:, 0] == se]
    kept = by_start
    if max_events:  # waves in start order while the events (+ 4 track names each) fit
        budget = max_events - 2 * len(set(w.se.tolist())) - sum(len(set(ev[:, 1].tolist())) for ev in counters.values())
        kept, total = [], 0
        for i in by_start:
            total += int(w.rec_stop[i] - w.rec_start[i]) + int(w.tl_stop[i] - w.tl_start[i]) + 1 + 4
            if total <= budget:
                kept.append(i)
    kept = sorted(kept)
    events, procs, threads = [], set(), set()
    for i in kept[:only]:
        se, cu, simd, slot = (int(x[i]) for x in (w.se, w.cu, w.simd, w.slot))
        pid, tid = se + 1, cu * 10000 + simd * 100 + slot + 1
        if pid not in procs:
            procs.add(pid)
            events += [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"SE{se}"}},
                       {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": se}}]
        if (pid, tid) not in threads:
            threads.add((pid, tid))
            events += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"CU{cu} SIMD{simd} slot{slot}"}},
                       {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + 5000, "args": {"name": f"CU{cu} SIMD{simd} slot{slot} states"}}]
        a, b = int(w.rec_start[i]), int(w.rec_stop[i])
        slices, last_end = [], ns(end[i])
        for k in range(a, b):  # issue to the next record's issue, at most its duration, never past the wave's end
            t0 = int(recs.time[k]) + shift[i]
            t1 = int(recs.time[k + 1]) + shift[i] if k + 1 < b else end[i]
            t1 = min(max(min(t1, t0 + int(recs.duration[k])), t0), end[i])
            last_end = max(last_end, ns(t1))
            pc = int(recs.pc[k])
            source = d.static.own_source[pc]
            slices.append({"ph": "X", "name": d.static.mnemonic[pc], "pid": pid, "tid": tid, "ts": us(ns(t0)), "dur": us(ns(t1) - ns(t0)),
                           "args": {"pc": pc, "source": str(source) if source else None, "stall": int(recs.stall[k])}})
        events.append({"ph": "X", "name": f"wave {w.filenames[i][:-5]}", "pid": pid, "tid": tid, "ts": us(ns(begin[i])),
                       "dur": us(last_end - ns(begin[i])), "args": {"file": w.filenames[i], "records": b - a}})
        events += slices
        t = begin[i]
        for k in range(int(w.tl_start[i]), int(w.tl_stop[i])):
            state, t_end = int(tl.state[k]), t + int(tl.duration[k])
            events.append({"ph": "X", "name": STATE_NAMES.get(state, str(state)), "pid": pid, "tid": tid + 5000,
                           "ts": us(ns(t)), "dur": us(ns(t_end) - ns(t))})
            t = t_end
    n_wave_events = len(events)
    for se, ev in counters.items():
        if not any(int(w.se[i]) == se for i in kept):
            continue
        level, points = 0, {}
        for row in sorted(ev.tolist(), key=lambda r: (r[1], r[5])):  # by time, an end before a start
            level += 1 if row[5] == 1 else -1
            points[row[1] + offsets.get(int(se), 0)] = level  # the level after the time's last change
        events += [{"ph": "C", "name": "waves resident (all CUs)", "pid": se + 1, "tid": 0, "ts": us(ns(t)), "args": {"waves": lv}}
                   for t, lv in points.items()]
    summary = {"waves_exported": len(kept), "waves_selected": w.count, "waves_cut_by_max_events": w.count - len(kept)}
    return events, summary, n_wave_events


def exported(d, path, max_events, chunk_events=None, monkeypatch=None):
    if chunk_events is not None:
        monkeypatch.setattr(perfetto, "CHUNK_EVENTS", chunk_events)
    summary = perfetto.stream_trace(SimpleNamespace(dispatch=d), compute_clock(d), path, max_events=max_events)
    assert summary["bytes"] == path.stat().st_size
    return json.loads(path.read_bytes(), parse_float=Decimal), summary


def assert_same(doc, summary, ref, ref_summary, d):
    got = doc["traceEvents"]
    assert len(got) == len(ref) == summary["events"]
    for k, (g, r) in enumerate(zip(got, ref)):
        assert g == r, f"event {k}: {g} != {r}"
    for key, value in ref_summary.items():
        assert summary[key] == doc["metadata"][key] == value, key
    used = sorted({e["args"]["pc"] for e in ref if e["ph"] == "X" and "pc" in e.get("args", {})})
    assert doc["metadata"]["instructions"] == {str(pc): d.code.isa[pc] for pc in used}


@pytest.mark.parametrize("formatters", ["processes", "threads"])
@pytest.mark.parametrize("chunk_events", [None, 1, 997])
def test_every_event_of_a_real_capture_matches_the_reference(shared, tmp_path, monkeypatch, chunk_events, formatters):
    """flash_attn (SEs realtime-aligned), every wave: formatted in few
    chunks, one wave per chunk, and chunks of a few waves; by two processes
    taking turns and by two threads (where a fork is not safe)."""
    from attlens.report import turns

    if formatters == "processes" and not turns.usable():
        pytest.skip("no safe fork here (not Linux, or other threads running)")
    monkeypatch.setattr(turns, "usable", (lambda: True) if formatters == "processes" else (lambda: False))
    d = _load(shared / FLASH_SMALL)
    assert compute_clock(d).se_offsets_cycles and d.occupancy is not None  # the shift and the counters are exercised
    doc, summary = exported(d, tmp_path / "t.json", 0, chunk_events, monkeypatch)
    ref, ref_summary, _ = reference(d, compute_clock(d), None)
    assert_same(doc, summary, ref, ref_summary, d)


def test_the_event_cap_keeps_the_same_waves_as_the_reference(shared, tmp_path, monkeypatch):
    d = _load(shared / VEC_ADD)
    doc, summary = exported(d, tmp_path / "t.json", 15000, 512, monkeypatch)
    ref, ref_summary, _ = reference(d, compute_clock(d), 15000)
    assert 0 < ref_summary["waves_cut_by_max_events"] < d.waves.count
    assert_same(doc, summary, ref, ref_summary, d)


def test_softmax_under_the_default_cap_matches_the_reference(shared, tmp_path):
    """The benchmark's capture, default cap (980 waves, ~1 M events): the
    reference's first 40 waves and every counter event, and the counts."""
    d = _load(shared / SOFTMAX)
    doc, summary = exported(d, tmp_path / "t.json", perfetto.DEFAULT_MAX_EVENTS)
    ref, ref_summary, n = reference(d, compute_clock(d), perfetto.DEFAULT_MAX_EVENTS, only=40)
    got = doc["traceEvents"]
    assert got[:n] == ref[:n]
    assert got[len(got) - (len(ref) - n):] == ref[n:]
    for key, value in ref_summary.items():
        assert summary[key] == doc["metadata"][key] == value, key
    per_wave = (d.waves.rec_stop - d.waves.rec_start) + (d.waves.tl_stop - d.waves.tl_start) + 1
    kept = [e["args"]["file"] for e in got if e["ph"] == "X" and e["name"].startswith("wave ")]
    index = {f: i for i, f in enumerate(d.waves.filenames)}
    names = sum(1 for e in got if e["ph"] == "M")
    assert len(got) == summary["events"] == int(sum(per_wave[index[f]] for f in kept)) + names + (len(ref) - n)


# --------------------------------------------------------------------------- the row formatter


EDGES = [0, 1, 9, 10, 999, 1000, 1001, 999_999, 1_000_000, 10**17 + 3, 10**18, 2**62, 2**63 - 1]
INT64_MIN = -(2**63)  # what an out-of-range float becomes in ns(); its magnitude does not fit an int64


def _formatted(values, how):
    rows = Rows(len(values)).const(b"[")
    getattr(rows, how)(np.array(values, dtype=np.int64))
    out, _ = squeeze(rows.const(b"]").matrix())
    return bytes(out).split(b"]")[:-1]


def test_integers_are_written_as_python_writes_them():
    rng = np.random.default_rng(24)
    values = EDGES + [-v for v in EDGES] + [INT64_MIN] + rng.integers(-(2**62), 2**62, 3000).tolist() + rng.integers(0, 5000, 3000).tolist()
    assert _formatted(values, "integer") == [b"[%d" % v for v in values]
    assert _formatted(values[:9], "integer") == [b"[%d" % v for v in values[:9]]  # one digit group only


def test_thousandths_are_the_exact_quotient_with_three_decimals():
    rng = np.random.default_rng(25)
    values = EDGES + [-v for v in EDGES] + [INT64_MIN] + rng.integers(-(10**15), 10**15, 3000).tolist() + rng.integers(0, 200_000, 3000).tolist()
    for text, v in zip(_formatted(values, "thousandths"), values):
        body = text[1:].decode()
        assert Decimal(body) == Decimal(v) / 1000 and len(body.split(".")[1]) == 3, (body, v)
        assert json.loads(body) == v / 1000  # the same double as the shortest form of v / 1000


def test_table_rows_are_the_json_of_their_values_and_groups_are_byte_offsets():
    values = ["s_mov_b32", "", None, "x" * 70, 'quote " and \\ and \n', "caf\u00e9", "bad \udcff byte"]
    table = Table.of_json(b',{"name":', values, b"}")
    idx = np.array([3, 0, 6, 2, 1, 5, 4, 0, 0], dtype=np.int64)
    out, at = squeeze(Rows(len(idx)).table(table, idx).matrix(), np.array([0, 2, 2, 9]))
    expected = [b',{"name":' + dumps_json(values[i]) + b"}" for i in idx.tolist()]
    assert bytes(out) == b"".join(expected)
    assert at.tolist() == [0, len(b"".join(expected[:2])), len(b"".join(expected[:2])), len(bytes(out))]
    groups = squeeze_groups(Rows(len(idx)).table(table, idx).matrix(), np.array([0, 2, 2, 9]))
    assert [bytes(g) for g in groups] == [b"".join(expected[:2]), b"", b"".join(expected[2:])]
    assert b"\\\\xff" in bytes(out)  # a non-UTF-8 byte written as \xNN, as dumps_json does
    with pytest.raises(ValueError):
        Table([b"a\0b"])


def _thousandths(v: int) -> bytes:
    return b"%s%d.%03d" % (b"-" if v < 0 else b"", abs(v) // 1000, abs(v) % 1000)


@pytest.mark.parametrize("long_names", [True, False])
@pytest.mark.parametrize("n", [0, 1, 2, 500])
def test_rows_of_several_tables_constants_and_numbers_are_each_rows_json(n, long_names):
    """The matrix is a take of a template (the tables of the widest index and
    the constants) with the other blocks written over it: two tables on one
    index and one on another, the one or the other widest; constants between
    and numbers; one row and none."""
    rng = np.random.default_rng(28)
    names = ["s_mov_b32", "v_add_f32", "", "x" * (60 if long_names else 3), 'q"uote']
    sources = [None, "/a/b.py:3", "/a/long/path/to/it.py:1234" + "y" * (0 if long_names else 90), "caf\u00e9"]
    head, args = Table.of_json(b',{"name":', names), Table.of_json(b',"source":', sources)
    tail = Table([b',"pc":%d' % pc for pc in range(len(names))])
    waves = Table([b',"tid":%d,"ts":' % t for t in (7, 10001, 123456)])
    pc, wave, src = rng.integers(0, 5, n), rng.integers(0, 3, n), rng.integers(0, 4, n)
    ts, stall = rng.integers(-(10**7), 10**9, n), rng.integers(0, 5000, n)
    rows = (Rows(n).table(head, pc).table(waves, wave).thousandths(ts).const(b',"dur":1').table(args, src).table(tail, pc)
            .const(b',"stall":').integer(stall).const(b"}"))
    expected = b"".join(b',{"name":' + dumps_json(names[p]) + b',"tid":%d,"ts":' % (7, 10001, 123456)[w] + _thousandths(t)
                        + b',"dur":1,"source":' + dumps_json(sources[s]) + b',"pc":%d,"stall":%d}' % (p, st)
                        for p, w, s, t, st in zip(pc.tolist(), wave.tolist(), src.tolist(), ts.tolist(), stall.tolist()))
    assert bytes(rows.squeezed()) == expected
    assert bytes(squeeze(rows.matrix())[0]) == expected


def test_a_table_row_out_of_range_is_an_index_error():
    table = Table([b"a", b"b"])
    for idx in ([0, 2], [-1, 0]):
        with pytest.raises(IndexError):
            Rows(2).table(table, np.array(idx))


def test_rows_built_in_the_reused_buffer_are_the_rows_of_a_fresh_matrix():
    """squeezed() builds each matrix in one buffer per thread: a wide one,
    then a narrower and shorter one over it, then one on another thread at
    the same time; each result stays what a fresh matrix gives."""
    import threading

    rng = np.random.default_rng(26)

    def rows(n, width):
        table = Table([b"x" * int(k) for k in rng.integers(1, width, 50)])
        idx = rng.integers(0, 50, n)
        return Rows(n).const(b",{").table(table, idx).integer(rng.integers(-(10**9), 10**9, n)).const(b"}")

    made = [rows(3000, 90), rows(700, 9), rows(5000, 30)]
    expected = [bytes(squeeze(r.matrix())[0]) for r in made]
    got = [r.squeezed() for r in made[:2]]
    other = threading.Thread(target=lambda: got.append(made[2].squeezed()))
    other.start()
    other.join()
    assert [bytes(g) for g in got] == expected


# --------------------------------------------------------------------------- writing


def test_results_are_taken_in_order_whichever_thread_finishes_first():
    import threading
    import time

    got, threads = [], set()

    def work(i):
        threads.add(threading.current_thread().name)
        time.sleep(0.003 if i % 3 == 0 else 0)
        return i * i

    perfetto._in_order(work, iter(range(60)), got.append)
    assert got == [i * i for i in range(60)]
    assert len(threads) == 2


@pytest.mark.parametrize("failing", ["main", "helper"])
def test_the_first_error_on_either_thread_stops_the_work_and_is_raised(failing):
    import threading

    got = []

    def work(i):
        if i >= 5 and (threading.current_thread() is threading.main_thread()) == (failing == "main"):
            raise ValueError(f"item {i}")
        return i

    with pytest.raises(ValueError, match="item"):
        perfetto._in_order(work, iter(range(10_000)), got.append)
    assert got == list(range(len(got))) and len(got) < 10_000


def _written_back(tmp_path, pieces) -> bytes:
    from attlens import fsutil

    path = tmp_path / "w.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        fsutil.write_all(fd, pieces)
    finally:
        os.close(fd)
    return path.read_bytes()


def _pieces(n: int) -> list:
    rng = np.random.default_rng(27)
    return [rng.integers(1, 256, int(k), dtype=np.uint8) for k in rng.integers(0, 40, n)] + [b"", b"end", memoryview(b"view")]


def test_write_all_writes_more_buffers_than_one_writev_takes(tmp_path):
    from attlens import fsutil

    pieces = _pieces(3 * fsutil._IOV_MAX + 5)
    assert _written_back(tmp_path, pieces) == b"".join(bytes(p) for p in pieces)


def test_write_all_goes_on_where_a_writev_stopped(tmp_path, monkeypatch):
    """A writev may write less than asked (a signal, a full disk's last
    blocks): the rest follows, from inside a buffer too."""
    from attlens import fsutil

    calls = []
    write = os.write

    def short_writev(fd, buffers):
        calls.append(len(buffers))
        return write(fd, b"".join(bytes(b) for b in buffers)[:7])

    monkeypatch.setattr(fsutil.os, "writev", short_writev)
    pieces = _pieces(300)
    assert _written_back(tmp_path, pieces) == b"".join(bytes(p) for p in pieces)
    assert len(calls) > 300 and max(calls) <= fsutil._IOV_MAX


@pytest.mark.parametrize("failing_write", [2, 3])
def test_a_full_disk_while_a_formatting_thread_writes_refuses_the_output_and_keeps_the_old_file(shared, tmp_path, monkeypatch, failing_write):
    """ENOSPC from the chunk writes (the 2nd or 3rd: the threads take turns)
    is the command's 'output refused'; the older trace stays, no temporary."""
    import errno

    from attlens import fsutil
    from attlens.errors import OutputRefused
    from attlens.report import turns

    d = _load(shared / VEC_ADD)
    out = tmp_path / "t.json"
    out.write_bytes(b"older trace")
    calls, writev = [], os.writev

    def fills_up(fd, buffers):
        calls.append(len(buffers))
        if len(calls) == failing_write:
            raise OSError(errno.ENOSPC, "No space left on device")
        return writev(fd, buffers)

    monkeypatch.setattr(fsutil.os, "writev", fills_up)
    monkeypatch.setattr(perfetto, "CHUNK_EVENTS", 512)
    monkeypatch.setattr(turns, "usable", lambda: False)  # the threads' writes (the processes': test_export_turns.py)
    with pytest.raises(OutputRefused):
        perfetto.stream_trace(SimpleNamespace(dispatch=d), compute_clock(d), out, max_events=0)
    assert out.read_bytes() == b"older trace" and [p.name for p in tmp_path.iterdir()] == ["t.json"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc (Linux)")
def test_numpy_is_imported_with_one_blas_thread_and_leaves_the_environment_alone():
    """No idle OpenBLAS thread spinning beside attlens' own work (measured:
    0.06-0.08 s of CPU), no OPENBLAS_NUM_THREADS for child processes, and
    NumPy not imported before something needs it (a stored answer does not)."""
    code = ("import os, sys; from attlens.cli.common import arrange_numpy_import; arrange_numpy_import(); "
            "before = 'numpy' in sys.modules; import numpy, importlib.resources; "
            "print(before, 'numpy' in sys.modules, os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')), "
            "importlib.resources.files('numpy').joinpath('__init__.py').is_file())")  # the real loader still answers
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "None", "1", "True"]
    plain = code.replace("arrange_numpy_import(); ", "")  # the reference: OpenBLAS's own threads
    out = subprocess.run([sys.executable, "-c", plain], env=env, capture_output=True, text=True, check=True).stdout.split()
    if os.cpu_count() and os.cpu_count() > 1:
        assert int(out[3]) > 1


def test_the_allocator_keeps_freed_memory_once_numpy_is_imported_by_a_command():
    """In the command line's own process, the allocator's settings
    (cli.common.keep_freed_memory) are made right after the NumPy import the
    command arranged, not before (a stored answer that never imports NumPy
    never pays for them), and glibc takes them; with the user's own OpenBLAS
    count too. A Python program that calls attlens.cli.main keeps its
    allocator as it is."""
    def calls_around_the_import(command_line: bool, env: dict) -> str:
        code = ("import os, sys; import attlens.cli.common as c; calls = []; real = c.keep_freed_memory; "
                "c.keep_freed_memory = lambda: calls.append(real()) or calls[-1]; "
                + ("c.the_command_line_runs_here(); " if command_line else "")
                + "c.arrange_numpy_import(); before = list(calls); import numpy; "
                "print(before, calls, os.environ.get('OPENBLAS_NUM_THREADS'))")
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()

    glibc = bool(os.confstr("CS_GNU_LIBC_VERSION")) if "CS_GNU_LIBC_VERSION" in getattr(os, "confstr_names", {}) else False
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert calls_around_the_import(True, env) == f"[] [{glibc}] None"  # once, after the import; the variable unset after
    assert calls_around_the_import(True, {**env, "OPENBLAS_NUM_THREADS": "2"}) == f"[] [{glibc}] 2"
    assert calls_around_the_import(False, env) == "[] [] None"  # a Python caller's process: never


def test_the_command_line_freezes_the_objects_it_leaves_for_the_teardown(shared, tmp_path):
    """entry() ends with gc.freeze(): the collections of Python's teardown
    skip what the command left (0.015 s of export's 0.025 s teardown)."""
    code = ("import gc, sys; from attlens.__main__ import entry; sys.argv = ['attlens', 'export', sys.argv[1], '-o', sys.argv[2]]; "
            "code = entry(); print(code, gc.get_freeze_count() > 1000)")
    out = subprocess.run([sys.executable, "-c", code, str(shared / VEC_ADD), str(tmp_path / "t.json")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "True"]
