"""The fast paths of issue 12 against plain reference code: the strict
wave-file reader against ``orjson.loads`` + the documented schema, the
vectorized wait-counter simulation against the per-wave loop it replaced,
the vectorized hidden-latency model against its previous implementation."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import loaded, require_fork, require_shared, trace_dirs, trace_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attlens.io.filenames_json import WaveEntry
from attlens.io.wave_files import WaveFileError, parse_wave_bytes

TRACES = trace_dirs()
VEC_ADD = "vec_add/big/ui_output_agent_14705_dispatch_25"
ENTRY = WaveEntry(0, 0, 0, 0, "se0_sm0_sl0_wv0.json", 0, 0)

# ---------------------------------------------------------------------------
# wave files: the fast path is exactly as strict as JSON + the schema
# ---------------------------------------------------------------------------

I64_TIME, U8, I32 = 10**18 - 1, 255, 2**31 - 1  # times below 10^18 (io/wave_files.TIME_LIMIT)


def _int(x, lo, hi) -> bool:
    return type(x) is int and lo <= x <= hi


def oracle(data: bytes):
    """Plain orjson + the schema of att-format.md §2.3 with the decoder's field
    types, written independently of attlens: None when the file is invalid."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("wave"), dict):
        return None
    w = doc["wave"]
    if not (_int(w.get("begin"), 0, I64_TIME) and _int(w.get("end"), 0, I64_TIME)) or w["end"] < w["begin"]:
        return None
    if any(k in w and not _int(w[k], 0, I32) for k in ("cu", "id", "simd", "slot")):
        return None
    n_decl = doc.get("num_insts")
    if n_decl is not None and type(n_decl) is not int:
        return None
    instr, tl, wc = w.get("instructions", []), w.get("timeline", []), w.get("waitcnt", [])
    limits = ((0, I64_TIME), (0, U8), (0, I32), (0, I32), (0, I32))
    if not isinstance(instr, list) or not all(
        isinstance(r, list) and len(r) == 5 and all(_int(x, lo, hi) for x, (lo, hi) in zip(r, limits)) for r in instr
    ):
        return None
    if not isinstance(tl, list) or not all(
        isinstance(r, list) and len(r) == 2 and _int(r[0], 0, U8) and _int(r[1], 0, I32) for r in tl
    ):
        return None
    if not isinstance(wc, list) or not all(
        isinstance(e, list) and len(e) == 2 and _int(e[0], 0, I32) and isinstance(e[1], list)
        and all(isinstance(p, list) and len(p) == 2 and _int(p[0], 0, I32) and _int(p[1], 0, I32) for p in e[1])
        for e in wc
    ):
        return None
    if n_decl is not None and n_decl != len(instr):
        return None
    return {k: w[k] for k in ("begin", "end", "cu", "id", "simd", "slot") if k in w}, instr, tl, wc


def fast(data: bytes):
    try:
        p = parse_wave_bytes(data, ENTRY)
    except WaveFileError:
        return None
    sc = {k: v for k, v in p.scalars.items() if k not in ("num_insts",)}
    return sc, p.instructions.tolist(), p.timeline.tolist(), p.waitcnt


@pytest.fixture(scope="module")
def wave_bytes() -> bytes:
    d = require_shared()
    return (d / "traces" / VEC_ADD / "se0_sm0_sl0_wv0.json").read_bytes()


def _record_edit(data: bytes, new: bytes) -> bytes:
    """Replace the first record's first number with ``new``."""
    i = data.index(b'"instructions":[[') + len(b'"instructions":[[')
    j = data.index(b",", i)
    return data[:i] + new + data[j:]


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: _record_edit(d, b"108392-1"),
        lambda d: _record_edit(d, b"-"),
        lambda d: _record_edit(d, b"1e25"),
        lambda d: _record_edit(d, b"9223372036854775808"),  # 2^63
        lambda d: _record_edit(d, b"999999999999999999"),  # 10^18 - 1: the largest time kept
        lambda d: _record_edit(d, b"1000000000000000000"),  # 10^18: out of range, in both readers
        lambda d: _record_edit(d, b"99999999999999999999999"),
        lambda d: _record_edit(d, b"00070120"),
        lambda d: _record_edit(d, b"70120.0"),
        lambda d: _record_edit(d, b"true"),
        lambda d: _record_edit(d, b'"70120"'),
        lambda d: _record_edit(d, b"-70120"),
        lambda d: d.replace(b'"cu":1', b'"cu":"one"'),
        lambda d: d.replace(b'"cu":1', b'"cu":-1'),
        lambda d: d.replace(b"[70140,9,920,920,6]", b"[70140,9,-920,920,6]"),  # negative stall
        lambda d: d.replace(b"[70140,9,920,920,6]", b"[70140,9,920,920]"),  # 4 fields
        lambda d: d.replace(b"[70140,9,920,920,6]", b"[70140,9,920,920,6,7]"),
        lambda d: d.replace(b"[70140,9,920,920,6],", b"[70140,9,920,920,],6"),  # number moved across a bracket
        lambda d: d.replace(b"[70140,9,920,920,6]", b"[70140,9,920,920,6],[]"),
        lambda d: d.replace(b"[70140,9,920,920,6]", b"[70140,9,920,920,256000000000]"),
        lambda d: d.replace(b"[70140,9,920,920,6]", b"[70140,300,920,920,6]"),  # type beyond uint8
        lambda d: d.replace(b'"begin":70088', b'"begin":80000000'),  # end before begin
        lambda d: d.replace(b'"num_insts":22', b'"num_insts":21'),
        lambda d: d[: len(d) // 2],
        lambda d: d.replace(b'"timeline":[[', b'"timeline":[[-'),
        lambda d: d.replace(b'"waitcnt":[[', b'"waitcnt":[["x",'),
        lambda d: d.replace(b'"waitcnt":[[', b'"waitcnt":[[1,[[2,-3]]],['),
        lambda d: d.replace(b'"instructions":', b'"instructions":[[1,1,1,1,1]],"x":'),  # key twice: last wins
        lambda d: b'{"instructions":[[1,2,3,4,5]],' + d[1:],  # a decoy key before "wave"
        lambda d: b'{"timeline":[[1,2]],' + d[1:],  # a decoy timeline before "wave"
        lambda d: d.replace(b'"instructions":', b'"timeline":[[0,5]],"instructions":'),  # the wave's timeline twice: last wins
        lambda d: orjson.dumps(orjson.loads(d), option=orjson.OPT_INDENT_2),  # pretty-printed: valid
        lambda d: d.replace(b"],[71232,", b"] ,[71232,"),  # one space inside an array: valid (found by the mutation test)
        lambda d: d.replace(b"],[71232,", b"],\n[71232,").replace(b"[1,32],", b"[1, 32],"),
        lambda d: d,
    ],
)
def test_wave_file_edits_are_judged_like_orjson_plus_schema(wave_bytes, edit):
    data = edit(wave_bytes)
    assert fast(data) == oracle(data)


_ALPHABET = st.sampled_from(list(b'0123456789-+.eE,[]{}":tfn ') + [0, 0x7F, 0xC3, 0xFF])


@st.composite
def mutations(draw):
    out = []
    for _ in range(draw(st.integers(1, 3))):
        out.append((draw(st.floats(0, 1)), draw(st.sampled_from(("replace", "insert", "delete"))),
                    bytes(draw(st.lists(_ALPHABET, min_size=1, max_size=3)))))
    return out


@given(mutations())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_bytewise_mutations_agree_with_orjson_plus_schema(wave_bytes, muts):
    data = bytearray(wave_bytes)
    for frac, op, chunk in muts:
        i = min(int(frac * len(data)), len(data) - 1)
        if op == "replace":
            data[i : i + len(chunk)] = chunk
        elif op == "insert":
            data[i:i] = chunk
        else:
            del data[i : i + len(chunk)]
    data = bytes(data)
    assert fast(data) == oracle(data)


def test_every_shared_wave_file_passes_the_fast_path_unchanged(shared):
    """The real files take the compact fast path and equal orjson's reading."""
    import attlens.io.wave_files as wf

    for cap in TRACES:
        names = sorted(cap.glob("se*_wv*.json"))[:3]
        for p in names:
            data = p.read_bytes()
            cut = wf._cut_file(data, ENTRY)
            assert cut.instr == data[data.index(b'"instructions":[') + 15 : data.index(b',"simd"')]
            assert fast(data) == oracle(data) != None  # noqa: E711


def _copy(shared, tmp_path, rel=VEC_ADD, n=None) -> Path:
    src = shared / "traces" / rel
    dst = tmp_path / Path(rel).name
    shutil.copytree(src, dst)
    return dst


def test_fifo_and_device_symlink_among_wave_files_are_skipped(shared, tmp_path):
    import attlens

    cap = _copy(shared, tmp_path)
    waves = sorted(cap.glob("se*_wv*.json"))
    waves[0].unlink()
    os.mkfifo(waves[0])
    waves[1].unlink()
    waves[1].symlink_to("/dev/zero")
    waves[2].unlink()
    waves[2].symlink_to("../../outside.json")
    (tmp_path / "outside.json").write_bytes(waves[3].read_bytes())
    d = attlens.load(cap, cache=False)
    assert d.partial and d.waves.count == len(waves) - 3
    text = "\n".join(d.warnings)
    for w in waves[:3]:
        assert f"{w.name}:" in text


@pytest.mark.parametrize("move_threads", [True, False])
def test_two_processes_read_the_same_columns_as_one(shared, monkeypatch, move_threads):
    from attlens.io import wave_files
    from attlens.io.filenames_json import read_filenames_json
    from attlens.io.wave_files import read_wave_files

    require_fork()  # else "two" is read in one process too
    monkeypatch.setattr(wave_files, "MOVE_THREADS_MIN_BYTES", 0 if move_threads else 1 << 62)
    cap = shared / "traces" / VEC_ADD
    entries = read_filenames_json(cap / "filenames.json").waves
    one = read_wave_files(cap, entries, workers=1)
    two = read_wave_files(cap, entries, workers=2)
    assert [e.filename for e in one.entries] == [e.filename for e in two.entries]
    for k in one.records:
        assert one.records[k].dtype == two.records[k].dtype and np.array_equal(one.records[k], two.records[k])
    for k in one.states:
        assert np.array_equal(one.states[k], two.states[k])
    assert np.array_equal(one.waitcnt_blob, two.waitcnt_blob) and np.array_equal(one.waitcnt_off, two.waitcnt_off)
    assert np.array_equal(one.begin, two.begin) and np.array_equal(one.rec_count, two.rec_count)


def test_a_failed_parse_child_is_parsed_again_here(shared):
    """The child dies after filling its half of the shared columns (killed,
    out of memory): the parent parses that half itself, to the same columns."""
    from attlens.io.filenames_json import read_filenames_json
    from attlens.io.wave_files import read_wave_files

    require_fork()
    cap = shared / "traces" / VEC_ADD
    entries = read_filenames_json(cap / "filenames.json").waves
    parent = os.getpid()
    one = read_wave_files(cap, entries, workers=1)
    def per_part(t):  # the child dies on its first part; the parent is slow enough for the child to take one
        if os.getpid() != parent:
            os._exit(5)
        time.sleep(0.05)
        return len(t.entries)

    two = read_wave_files(cap, entries, workers=2, per_part=per_part, fold=sum)
    assert sum(two.derived) == len(one.entries) and len(two.derived) == 2, "every part was parsed here"
    assert two.derived[1] > 0, "the child had taken a part before it died"
    for k in one.records:
        assert np.array_equal(one.records[k], two.records[k])
    for k in one.states:
        assert np.array_equal(one.states[k], two.states[k])
    assert np.array_equal(one.waitcnt_blob, two.waitcnt_blob) and np.array_equal(one.rec_count, two.rec_count)


def _same_columns(one, two):
    assert [e.filename for e in one.entries] == [e.filename for e in two.entries]
    for k in one.records:
        assert np.array_equal(one.records[k], two.records[k]), k
    for k in one.states:
        assert np.array_equal(one.states[k], two.states[k]), k
    assert np.array_equal(one.waitcnt_blob, two.waitcnt_blob) and np.array_equal(one.rec_count, two.rec_count)


@pytest.mark.parametrize("slow", ["parent", "child"])
def test_the_faster_process_takes_more_parts(shared, slow):
    """Parts are claimed from both ends: when one process is slowed (the
    parent's other work, or a busy core under the child), the other takes
    more of them, and the columns are still those of one process."""
    from attlens.io.filenames_json import read_filenames_json
    from attlens.io.wave_files import read_wave_files

    require_fork()
    cap = shared / "traces" / VEC_ADD
    entries = read_filenames_json(cap / "filenames.json").waves
    parent = os.getpid()

    def per_part(t):
        if (os.getpid() == parent) == (slow == "parent"):
            time.sleep(0.1)
        return 1

    one = read_wave_files(cap, entries, workers=1)
    two = read_wave_files(cap, entries, workers=2, per_part=per_part, fold=sum)
    _same_columns(one, two)
    mine, theirs = two.derived
    assert mine + theirs >= 4
    assert (theirs > mine) if slow == "parent" else (mine > theirs), two.derived


def test_a_wave_file_that_grew_while_read_is_refused_not_overflowed(shared, monkeypatch):
    """The columns are sized by the files' sizes before reading; a file that
    is larger when read (written meanwhile) is skipped with a warning."""
    from attlens.io import wave_files
    from attlens.io.filenames_json import read_filenames_json

    cap = shared / "traces" / VEC_ADD
    entries = read_filenames_json(cap / "filenames.json").waves
    sizes = wave_files._file_sizes
    monkeypatch.setattr(wave_files, "_file_sizes", lambda root, es: [s // 2 if e is es[-1] else s for e, s in zip(es, sizes(root, es))])
    table = wave_files.read_wave_files(cap, entries, workers=1)
    assert [(e.filename, msg) for e, msg in table.problems] == [(entries[-1].filename, "the file grew while the capture was read")]
    assert len(table.entries) == len(entries) - 1


def test_the_reader_sizes_files_by_the_listings_check_not_another_stat(shared, monkeypatch, tmp_path):
    """read_filenames_json notes each file's size as it checks it; the reader
    uses that (no second stat of every file), and a file that is larger when
    read than when the listing was checked is refused as one that grew."""
    from attlens.io import wave_files
    from attlens.io.filenames_json import read_filenames_json

    cap = tmp_path / "cap"
    shutil.copytree(shared / "traces" / VEC_ADD, cap)
    entries = read_filenames_json(cap / "filenames.json").waves
    assert all(e.size == (cap / e.filename).stat().st_size for e in entries)
    ref = wave_files.read_wave_files(cap, entries, workers=1)
    grown = cap / entries[0].filename
    grown.write_bytes(grown.read_bytes() + b" " * 4096)  # after the listing was checked
    stats = []
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda *a, **k: stats.append(a[0]) or real_stat(*a, **k))
    table = wave_files.read_wave_files(cap, entries, workers=1)
    monkeypatch.setattr(os, "stat", real_stat)
    assert not [s for s in stats if str(s).endswith(".json")], "no wave file looked at again before reading"
    assert [(e.filename, msg) for e, msg in table.problems] == [(entries[0].filename, "the file grew while the capture was read")]
    assert len(table.entries) == len(ref.entries) - 1


def test_rows_move_down_over_their_own_place():
    """_move_down with source and destination one row apart (a part whose
    rows nearly filled the room its bytes allowed) and steps shorter than the move."""
    from attlens.io.wave_files import _move_down

    col = np.arange(40, dtype=np.int64)
    _move_down({"c": col}, 11, 10, 25, step=4)
    assert col[10:35].tolist() == list(range(11, 36)) and col[:10].tolist() == list(range(10))


def _sink_with_child_parts():
    """Columns of 60 rows: the parent's rows 0..9, three child parts placed
    top-down with gaps (as the child places them), and where each must go."""
    from types import SimpleNamespace

    rec = {"a": np.arange(60, dtype=np.int64) * 10, "b": (np.arange(60) % 7).astype(np.uint8)}
    tl = {"s": np.arange(60, dtype=np.int32) + 1000}
    parts = [(14, 6, 12, 3), (27, 9, 30, 5), (45, 12, 48, 4)]  # (at, rows, t_at, states), file order
    moves, r, t = [], 10, 10
    for at, n, t_at, nt in parts:
        moves.append(((at, r, n), (t_at, t, nt)))
        r, t = r + n, t + nt
    want = {k: np.concatenate([c[:10]] + [c[at : at + n] for at, n, _, _ in parts]) for k, c in rec.items()}
    want_tl = {k: np.concatenate([c[:10]] + [c[t_at : t_at + nt] for _, _, t_at, nt in parts]) for k, c in tl.items()}
    return SimpleNamespace(rec=rec, tl=tl), moves, want, want_tl


@pytest.mark.parametrize("threads", [True, False])
def test_child_parts_move_down_in_order_on_one_or_two_threads(monkeypatch, threads):
    """Each column's parts move in file order (a part's destination overlaps
    the source of the one before it), whichever thread moves the column."""
    from attlens.io import wave_files

    monkeypatch.setattr(wave_files, "MOVE_THREADS_MIN_BYTES", 0 if threads else 1 << 62)
    started = []
    real_thread = threading.Thread
    monkeypatch.setattr(threading, "Thread", lambda *a, **k: started.append(1) or real_thread(*a, **k))
    sink, moves, want, want_tl = _sink_with_child_parts()
    wave_files._move_parts(sink, moves)
    assert bool(started) == threads
    for k, w in want.items():
        assert np.array_equal(sink.rec[k][: len(w)], w), k
    for k, w in want_tl.items():
        assert np.array_equal(sink.tl[k][: len(w)], w), k


def test_an_error_in_the_move_thread_is_raised_and_no_thread_is_left(monkeypatch):
    from attlens.io import wave_files

    monkeypatch.setattr(wave_files, "MOVE_THREADS_MIN_BYTES", 0)
    main = threading.get_ident()

    def failing(cols, src, dst, n, step=1 << 20):
        if threading.get_ident() != main:
            raise MemoryError("no page for the move")

    monkeypatch.setattr(wave_files, "_move_down", failing)
    sink, moves, _, _ = _sink_with_child_parts()
    with pytest.raises(MemoryError):
        wave_files._move_parts(sink, moves)
    assert threading.active_count() == 1


def test_record_columns_have_the_decoder_dtypes(shared):
    d, _ = loaded(shared / "traces" / VEC_ADD)
    r = d.records
    assert (r.time.dtype, r.category.dtype, r.stall.dtype, r.duration.dtype, r.pc.dtype, r.idle.dtype) == (
        np.int64, np.uint8, np.int32, np.int32, np.int32, np.int64)


def test_times_beyond_2_pow_31_are_kept_exactly(shared, tmp_path):
    """Shader clocks run past 2^31 cycles after a second: shift every time of
    a capture by 2^40 and the analysis must be the same, shifted."""
    import attlens

    cap = _copy(shared, tmp_path)
    shift = 2**40
    for p in cap.glob("se*_wv*.json"):
        doc = orjson.loads(p.read_bytes())
        w = doc["wave"]
        w["begin"] += shift
        w["end"] += shift
        for rec in w["instructions"]:
            rec[0] += shift
        p.write_bytes(orjson.dumps(doc))
    d0 = attlens.load(shared / "traces" / VEC_ADD, cache=False)
    d1 = attlens.load(cap, cache=False)
    assert np.array_equal(d1.records.time - shift, d0.records.time)
    assert np.array_equal(d1.records.idle, d0.records.idle)
    r0, r1 = attlens.analyze(d0), attlens.analyze(d1)
    assert np.array_equal(r0.hidden.exposed, r1.hidden.exposed)
    assert np.array_equal(r0.deps.producers, r1.deps.producers)


# ---------------------------------------------------------------------------
# wait counters: vectorized == the per-wave loop it replaced
# ---------------------------------------------------------------------------


def loop_gfx9(events, fields_of):
    """The previous per-wave implementation (kept here as the oracle)."""
    from attlens.analysis import waitdeps as wd

    out = []
    lg, vm = deque(), deque()
    lg_in = vm_in = True
    flat = []
    for rec, act, pc in events:
        if act == wd.ACT_WAIT:
            f = fields_of[pc]
            outstanding = len(lg) + len(vm) + len(flat)
            for name, q, is_lg in (("lgkmcnt", lg, True), ("vmcnt", vm, False)):
                n = f.get(name)
                if n is None:
                    continue
                if n == 0:
                    if is_lg:
                        lg_in = True
                    else:
                        vm_in = True
                if lg_in if is_lg else vm_in:
                    k = len(q) - n
                    got = flat + [q.popleft() for _ in range(k)] if k > 0 else flat
                    flat = []
                    if got:
                        out.append((rec, got, outstanding))
        elif act in (wd.ACT_VM_LOAD, wd.ACT_VM_STORE):
            vm.append(rec)
        elif act in (wd.ACT_LGKM, wd.ACT_MSG, wd.ACT_SENDMSG_RTN):
            lg.append(rec)
        elif act == wd.ACT_SMEM:
            lg.append(rec)
            lg_in = False
        elif act in (wd.ACT_FLAT_LOAD, wd.ACT_FLAT_STORE):
            flat.append(rec)
            lg_in = vm_in = False
    return out


_OPS = [
    "buffer_load_dword v0, v1, s[0:3], 0 offen",
    "buffer_store_dword v0, v1, s[0:3], 0 offen",
    "global_load_dword v0, v[0:1], off",
    "ds_read_b32 v0, v1",
    "s_load_dword s0, s[0:1], 0x0",
    "flat_load_dword v0, v[2:3]",
    "flat_store_dword v[2:3], v0",
    "s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)",
    "v_add_f32 v0, v1, v2",
    "s_waitcnt vmcnt(0)",
    "s_waitcnt vmcnt(1)",
    "s_waitcnt vmcnt(2)",
    "s_waitcnt lgkmcnt(0)",
    "s_waitcnt lgkmcnt(1)",
    "s_waitcnt vmcnt(0) lgkmcnt(0)",
    "s_waitcnt vmcnt(1) lgkmcnt(2)",
    "s_waitcnt expcnt(0)",
]


@given(st.lists(st.lists(st.sampled_from(_OPS), max_size=40), min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_vectorized_wait_counters_equal_the_loop(waves):
    from attlens.analysis.waitdeps import ACT_NONE, ACT_WAIT, _resolve_gfx9, _wait_counts, pc_action
    from attlens.model.isa import waitcnt_fields

    texts = [t for w in waves for t in w]
    wave_of = np.repeat(np.arange(len(waves)), [len(w) for w in waves])
    acts = [pc_action(t, "gfx9") for t in texts]
    fields_of = {i: waitcnt_fields(t) for i, (t, a) in enumerate(zip(texts, acts)) if a == ACT_WAIT}
    expect = []
    start = 0
    for w in waves:
        ev = [(i, acts[i], i) for i in range(start, start + len(w)) if acts[i] != ACT_NONE]
        expect += [(r, g, o) for r, g, o in loop_gfx9(ev, fields_of)]
        start += len(w)
    idx = np.array([i for i, a in enumerate(acts) if a != ACT_NONE], dtype=np.int64)
    n = len(texts)
    wait, _wave, outstanding, a, b, prods = _resolve_gfx9(
        idx, np.array(acts, dtype=np.int8)[idx] if len(idx) else np.zeros(0, np.int8),
        wave_of[idx].astype(np.int32) if len(idx) else np.zeros(0, np.int32),
        _wait_counts(fields_of, n, "lgkmcnt")[idx], _wait_counts(fields_of, n, "vmcnt")[idx],
    )
    got = [(int(r), prods[x:y].tolist(), int(o)) for r, x, y, o in zip(wait, a, b, outstanding)]
    assert got == expect


# ---------------------------------------------------------------------------
# hidden latency: vectorized == the previous implementation
# ---------------------------------------------------------------------------


def previous_hidden(dispatch, sums):
    """compute_hidden as it was before issue 12 (one (SE, SIMD) at a time)."""
    from attlens.analysis.intervals import merge_blocks, serial_blocks

    def covered_upto(x, blocks):  # as it was then (the module's is a prepared lookup now)
        bs, be = blocks
        if len(bs) == 0:
            return np.zeros(len(x), dtype=np.int64)
        lens = be - bs
        cum = np.r_[0, np.cumsum(lens)]
        i = np.searchsorted(bs, x, side="right") - 1
        ic = np.where(i >= 0, i, 0)
        return np.where(i >= 0, cum[ic] + np.clip(x - bs[ic], 0, lens[ic]), 0)

    recs, w = dispatch.records, dispatch.waves
    n_pc = dispatch.code.size
    is_matrix_pc = np.array([m.startswith(("v_mfma", "v_smfma", "v_wmma", "v_swmma")) for m in dispatch.static.mnemonic], dtype=bool)
    typ = np.where(is_matrix_pc[recs.pc], 13, recs.category.astype(np.int64))
    time, stall = recs.time.astype(np.int64), recs.stall.astype(np.int64)
    length = np.maximum(stall, recs.duration.astype(np.int64))
    t_issue, t_end = time + stall, time + length
    cursor = np.empty_like(time)
    cursor[1:] = t_end[:-1]
    ok = w.rec_start < len(time)
    cursor[w.rec_start[ok]] = w.begin[ok]
    cursor = np.minimum(cursor, time)
    h = np.zeros((3, len(time)), dtype=np.int64)
    scope = (w.se.astype(np.int64) * 64 + w.simd)[recs.wave]
    for key in np.unique(scope):
        idx = np.flatnonzero(scope == key)
        ty, s, e = typ[idx], t_issue[idx], t_end[idx]
        ln = e - s
        is_mat = ty == 13
        wmma = serial_blocks(s[is_mat], ln[is_mat])
        valu = serial_blocks(np.concatenate([s[ty == 6], s[is_mat]]), np.concatenate([ln[ty == 6], (3 * ln[is_mat]) // 4]))
        vm_m, sc_m = np.isin(ty, (5, 3, 4)), np.isin(ty, (2, 1))
        vmem, scal = serial_blocks(s[vm_m], ln[vm_m]), serial_blocks(s[sc_m], ln[sc_m])
        math = merge_blocks(valu, wmma)
        vector = merge_blocks(math, vmem)
        allb = merge_blocks(vector, scal)
        c, t0, t1, t2 = cursor[idx], time[idx], t_issue[idx], t_end[idx]

        def parts(sel, blocks, zero_issue):
            cov = covered_upto(np.concatenate([c[sel], t0[sel], t1[sel], t2[sel]]), blocks).reshape(4, -1)
            pu = np.zeros_like(cov[0]) if zero_issue else cov[3] - cov[2]
            return np.stack([cov[1] - cov[0], cov[2] - cov[1], pu])

        for sel, first, second in (
            (is_mat, (valu, True), (wmma, True)),
            (ty == 6, (valu, True), (wmma, False)),
            (vm_m, (math, False), (vmem, True)),
            (sc_m, (vector, False), (scal, True)),
        ):
            if sel.any():
                a, b = parts(sel, *first), parts(sel, *second)
                h[:, idx[sel]] = np.where(a.sum(axis=0) >= b.sum(axis=0), a, b)
        sel = ~np.isin(ty, (13, 6, 5, 3, 4, 2, 1))
        if sel.any():
            h[:, idx[sel]] = parts(sel, allb, False)
    per_pc = [np.bincount(recs.pc, weights=v, minlength=n_pc).round().astype(np.int64) for v in h]
    hi = np.minimum(per_pc[0], sums.idle)
    hs = np.minimum(per_pc[1], sums.stall)
    hu = np.minimum(per_pc[2], sums.latency - sums.stall)
    return hi, hs, hu


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_hidden_latency_equals_the_previous_implementation(path):
    require_shared()
    d, r = loaded(path)
    hi, hs, hu = previous_hidden(d, r.sums)
    assert np.array_equal(r.hidden.hidden_idle, hi)
    assert np.array_equal(r.hidden.hidden_stall, hs)
    assert np.array_equal(r.hidden.hidden_issue, hu)
    assert np.array_equal(r.hidden.exposed, r.hidden.total - hi - hs - hu)


@pytest.mark.parametrize("gone", ["valu_and_matrix", "vmem", "scalar", "all_but_valu"])
def test_hidden_latency_with_empty_busy_lists_equals_the_previous_implementation(shared, gone):
    """A busy list with nothing in it is not looked up (its overlaps are 0): with
    the first candidate empty (no VALU or matrix op: the memory records' "math"),
    the second (no VMEM, no scalar op) or every list but VALU, the cycles are
    the reference's. The records' categories are remapped on a real capture."""
    from types import SimpleNamespace

    from attlens.analysis.hidden import _compute_hidden
    from attlens.model.dispatch import Records

    d, r = loaded(shared / "traces/flash_attn_func/big/ui_output_agent_38430_dispatch_44")
    is_matrix = np.array([m.startswith(("v_mfma", "v_smfma", "v_wmma", "v_swmma")) for m in d.static.mnemonic], dtype=bool)
    cat = d.records.category.copy()
    pc_is_matrix = is_matrix[d.records.pc]
    if gone == "valu_and_matrix":
        cat[(cat == 6) | pc_is_matrix] = 2  # SALU
        mnemonic = [("s_nop" if m else x) for m, x in zip(is_matrix, d.static.mnemonic)]
    else:
        mnemonic = list(d.static.mnemonic)
        lost = {"vmem": (3, 4, 5), "scalar": (1, 2), "all_but_valu": (1, 2, 3, 4, 5)}[gone]
        cat[np.isin(cat, lost)] = 0  # another kind: compared with the "all" list only
        if gone == "all_but_valu":
            mnemonic = [("s_nop" if m else x) for m, x in zip(is_matrix, mnemonic)]
    rec = d.records
    records = Records(time=rec.time, category=cat, stall=rec.stall, duration=rec.duration, pc=rec.pc, wave=rec.wave, idle=rec.idle)
    view = SimpleNamespace(records=records, waves=d.waves, code=d.code, static=SimpleNamespace(mnemonic=mnemonic), prepared={})
    h = _compute_hidden(view, r.sums)
    hi, hs, hu = previous_hidden(view, r.sums)
    assert int(hi.sum() + hs.sum() + hu.sum()) > 0  # something is hidden: the case is not empty
    assert np.array_equal(h.hidden_idle, hi)
    assert np.array_equal(h.hidden_stall, hs)
    assert np.array_equal(h.hidden_issue, hu)


@pytest.mark.parametrize("batch", [1, 5000])
def test_hidden_latency_does_not_depend_on_the_batch_size(shared, batch):
    """One (SE, SIMD) scope per batch (no shifting at all) or a few: same result."""
    from attlens.analysis.hidden import _compute_hidden

    d, r = loaded(shared / "traces/flash_attn_func/big/ui_output_agent_38430_dispatch_44")
    h = _compute_hidden(d, r.sums, batch_records=batch)
    for k in ("hidden_idle", "hidden_stall", "hidden_issue", "exposed"):
        assert np.array_equal(getattr(h, k), getattr(r.hidden, k))


# ---------------------------------------------------------------------------
# Perfetto export: streamed, capped, and saying what was cut
# ---------------------------------------------------------------------------


def test_perfetto_export_caps_events_and_says_what_was_cut(shared, tmp_path):
    import io
    import json
    from contextlib import redirect_stderr, redirect_stdout

    from attlens.cli import main

    cap = shared / "traces" / VEC_ADD
    full, small = tmp_path / "all.json", tmp_path / "small.json"

    def export(out, *extra):
        o, e = io.StringIO(), io.StringIO()
        with redirect_stdout(o), redirect_stderr(e):
            assert main(["export", str(cap), "--perfetto", str(out), "--json", *extra]) == 0
        return json.loads(o.getvalue()), e.getvalue()

    s_all, _ = export(full, "--max-events", "0")
    doc = json.loads(full.read_text())
    assert s_all["waves_exported"] == s_all["waves_total"] == 632 and s_all["waves_cut_by_max_events"] == 0
    assert s_all["events"] == len(doc["traceEvents"]) and s_all["bytes"] == full.stat().st_size
    s_cap, _ = export(small, "--max-events", "15000")
    doc = json.loads(small.read_text())
    meta = doc["metadata"]
    assert len(doc["traceEvents"]) == s_cap["events"] <= 15000
    assert 0 < s_cap["waves_exported"] < 632 and s_cap["waves_cut_by_max_events"] == 632 - s_cap["waves_exported"]
    assert meta["waves_cut_by_max_events"] == s_cap["waves_cut_by_max_events"] and meta["max_events"] == 15000
    waves = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"].startswith("wave ")]
    assert len(waves) == s_cap["waves_exported"]
    # the earliest-starting waves are the ones kept
    all_waves = sorted((e["ts"], e["name"]) for e in json.loads(full.read_text())["traceEvents"]
                       if e["ph"] == "X" and e["name"].startswith("wave "))
    assert sorted(e["name"] for e in waves) == sorted(n for _, n in all_waves[: len(waves)])


@pytest.mark.parametrize("batch", [7, 1000])
def test_wait_dependencies_do_not_depend_on_the_batch_size(shared, batch):
    from attlens.analysis.waitdeps import ACT_NONE, ACT_WAIT, _batched_gfx9, pc_action
    from attlens.model.isa import waitcnt_fields

    d, r = loaded(shared / "traces/flash_attn_func/big/ui_output_agent_38430_dispatch_44")
    actions = np.array([pc_action(t, "gfx9") for t in d.code.isa], dtype=np.int8)
    fields_of = {pc: waitcnt_fields(d.code.isa[pc]) for pc in np.flatnonzero(actions == ACT_WAIT).tolist()}
    rec_act = actions[d.records.pc]
    got = _batched_gfx9(d, np.flatnonzero(rec_act != ACT_NONE), rec_act, fields_of, batch_events=batch)
    for k in ("entry_wait", "entry_wave", "entry_start", "entry_stop", "producers", "entry_outstanding"):
        assert np.array_equal(getattr(got, k), getattr(r.deps, k)), k
