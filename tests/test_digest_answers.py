"""Issue 24: the compact digest gives back every column exactly, the two parse
processes' per-half analysis adds up to the serial one, and the cold path,
the digest path and the stored answers (--json and text) print the same bytes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from clirun import run_main
from conftest import require_fork, require_shared
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attlens.cache.packing import pack, unpack

VEC_ADD = "vec_add/big/ui_output_agent_14705_dispatch_25"
FLASH = "flash_attn_func/big/ui_output_agent_38430_dispatch_44"  # MFMA, several (SE, SIMD) scopes

INT_TYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.int64, np.uint64]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(INT_TYPES).flatmap(lambda t: arrays(t, st.integers(0, 3000))), st.sampled_from([None, True, False]))
def test_packing_gives_back_the_array_exactly(a, delta):
    stored, enc = pack(a, delta)
    assert stored.nbytes <= a.nbytes or enc is None
    back = unpack(stored, enc)
    assert back.dtype == a.dtype and back.shape == a.shape and np.array_equal(back, a)


def test_packing_narrows_and_uses_differences_when_smaller():
    times = np.cumsum(np.full(5000, 7, dtype=np.int64)) + 10**15  # large, slowly growing: deltas fit a byte
    stored, enc = pack(times)
    assert stored.dtype == np.uint8 and enc[1] == "delta" and np.array_equal(unpack(stored, enc), times)
    pcs = np.arange(3000, dtype=np.int32) % 700
    stored, enc = pack(pcs)
    assert stored.dtype == np.uint16 and enc[1] == "plain"
    for bad in (["<i4", "zip", [3]], ["O", "plain", [3]], ["<i4", "plain", [4]]):
        with pytest.raises(ValueError):
            unpack(np.zeros(3, dtype=np.uint8), bad)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(INT_TYPES).flatmap(lambda t: arrays(t, st.one_of(st.integers(0, 3000), st.tuples(st.integers(1, 40), st.integers(1, 9))))),
       st.sampled_from([None, True, False]), st.integers(1, 50))
def test_a_column_packed_step_by_step_has_the_bytes_of_the_whole(a, delta, step):
    """The digest's writer makes each stored column a step at a time in one
    reused buffer (packing.Packed); its bytes, step after step, are those of
    the stored array pack() makes whole, with the same encoding."""
    from attlens.cache import packing
    from attlens.cache.store import _byte_steps

    real = packing.STEP
    packing.STEP = step
    try:
        whole, enc = pack(a, delta)
        lazy, enc_lazy = packing.pack_lazily(a, delta)
        made = b"".join(bytes(v) for v in _byte_steps(lazy))
    finally:
        packing.STEP = real
    assert enc_lazy == enc and lazy.dtype == whole.dtype and tuple(lazy.shape) == whole.shape and lazy.nbytes == whole.nbytes
    assert made == np.ascontiguousarray(whole).tobytes()


def _reference_pack_choice(a: np.ndarray, delta):
    """The stored dtype and kind pack() must choose, from every difference at once."""
    from attlens.cache.packing import MIN_DELTA, _fits

    plain = _fits(int(a.min()), int(a.max()))
    if a.ndim == 1 and delta is not False and (delta or (len(a) >= MIN_DELTA and plain.itemsize >= 4)):
        d = np.diff(a.astype(np.int64)) if len(a) > 1 else np.zeros(0, dtype=np.int64)
        dt = _fits(min(0, int(d.min(initial=0))), max(0, int(d.max(initial=0))))
        if dt is not None and (dt.itemsize < plain.itemsize or (delta and dt.itemsize <= a.dtype.itemsize)):
            return dt, "delta"
    return (plain, "plain") if plain.itemsize < a.dtype.itemsize else (a.dtype, None)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([np.int32, np.int64, np.uint32]).flatmap(lambda t: arrays(t, st.integers(1, 3000))),
       st.sampled_from([None, True]), st.integers(1, 64), st.booleans())
def test_packing_stops_looking_at_differences_once_they_cannot_win(a, delta, step, jumps):
    """The differences are scanned in steps and the scan stops when they need
    more bytes than can win: the choice is the one a scan of all of them makes
    (steps of a few elements here, so the stop happens within one array)."""
    from attlens.cache import packing

    if jumps and len(a) > 2 and a.dtype != np.uint32:  # record times: growing by little, falling back at each wave's start
        a = np.cumsum(np.abs(a.astype(np.int64)) % 50).astype(a.dtype)
        a[len(a) // 2 :] -= a[len(a) // 2]
    want_dtype, want_kind = _reference_pack_choice(a, delta)
    real = packing.STEP
    packing.STEP = step
    try:
        stored, enc = pack(a, delta)
    finally:
        packing.STEP = real
    assert stored.dtype == want_dtype and (enc[1] if enc else None) == want_kind
    assert np.array_equal(unpack(stored, enc), a)


def test_packing_record_times_look_at_one_step_of_differences(monkeypatch):
    """Times that fall back at a wave's start in the first step: the
    differences are not looked at past it (they cannot be narrower than the
    values), and the times are stored plain."""
    from attlens.cache import packing

    times = np.concatenate([np.arange(0, 70_000, 7), np.arange(5, 70_000, 7)] * 50).astype(np.int64) + 10**9
    steps = []
    real_fits = packing._fits
    monkeypatch.setattr(packing, "_fits", lambda lo, hi: steps.append(1) or real_fits(lo, hi))
    monkeypatch.setattr(packing, "STEP", 20_000)
    stored, enc = pack(times)
    assert enc[1] == "plain" and stored.dtype == np.uint32 and np.array_equal(unpack(stored, enc), times)
    assert len(steps) == 1 + 1, "the values' range, then one step of differences"


def _columns(d) -> dict:
    out = {}
    for group in ("records", "waves", "timeline", "code"):
        obj = getattr(d, group)
        for f in obj.__dataclass_fields__:
            v = getattr(obj, f)
            if isinstance(v, np.ndarray):
                out[f"{group}.{f}"] = v
    out["occupancy.events"] = d.occupancy.events
    return out


def test_compact_digest_reproduces_every_column(tmp_path):
    from attlens.model.loader import load

    cap = require_shared() / "traces" / FLASH
    fresh = load(cap, cache=False)
    load(cap, cache=tmp_path)
    mapped = load(cap, cache=tmp_path)
    assert mapped.digest is not None
    a, b = _columns(fresh), _columns(mapped)
    assert a.keys() == b.keys() and {"records.idle", "records.wave", "timeline.wave"} <= a.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and np.array_equal(a[k], b[k]), k
    digest = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    capture = sum(p.stat().st_size for p in cap.iterdir() if p.is_file())
    assert digest < capture, (digest, capture)


def test_parse_halves_add_up_to_the_serial_analysis(monkeypatch):
    from attlens.analysis.hidden import _compute_hidden
    from attlens.analysis.stalls import basic_pc_sums, compute_pc_sums
    from attlens.io.filenames_json import read_filenames_json
    from attlens.io.wave_files import _parts, read_wave_files
    from attlens.model.loader import load

    require_fork()  # else both "halves" are read in one process
    cap = require_shared() / "traces" / FLASH
    entries = read_filenames_json(cap / "filenames.json").waves
    parts = _parts(entries, [1] * len(entries))
    assert len(parts) >= 2
    for (_, stop), (first, _) in zip(parts, parts[1:]):  # parts end at a change of (SE, SIMD)
        assert stop == first and (entries[first].se, entries[first].simd) != (entries[first - 1].se, entries[first - 1].simd)
    table = read_wave_files(cap, entries, workers=2, per_part=lambda t: len(t.entries), fold=sum)
    assert len(table.derived) == 2 and sum(table.derived) == len(entries)  # both processes parsed parts, every wave once
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", "2")
    two = load(cap, cache=False)
    assert len(two.prepared["hidden_acc"]) == 3  # the parts' scopes were disjoint
    sums = compute_pc_sums(two)[0]
    serial = basic_pc_sums(two.records, two.code.size)
    for x, y in zip(two.prepared["pc_basic"], serial):
        assert np.array_equal(x, y)
    merged = _compute_hidden(two, sums)
    two.prepared = {}
    alone = _compute_hidden(two, sums)
    for f in ("hidden_idle", "hidden_stall", "hidden_issue", "exposed", "total"):
        assert np.array_equal(getattr(merged, f), getattr(alone, f)), f
    assert int(merged.total.sum() - merged.exposed.sum()) > 0  # a capture where latency is hidden


QUESTIONS = [
    ["analyze", "--json"], ["plan", "--json"], ["waves", "--json"], ["deps", "--json"],
    ["analyze"], ["analyze", "--by", "line"], ["plan"], ["plan", "--format", "md"], ["waves"], ["deps"],
]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_cold_digest_and_stored_answers_print_the_same_bytes(tmp_path, monkeypatch, workers):
    """Each question: --no-cache (the reference), the first run (digest written),
    the digest alone (stored answers removed) and the stored answer."""
    if workers == "2":
        require_fork()
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", workers)
    monkeypatch.setenv("COLUMNS", "100")
    cap = require_shared() / "traces" / (FLASH if workers == "2" else VEC_ADD)
    cache = tmp_path / "cache"
    for q in QUESTIONS:
        ref = run_main(*q[:1], cap, *q[1:], "--no-cache")
        assert ref.code in (0, 8) and ref.out, q
        runs = [run_main(*q[:1], cap, *q[1:], "--cache-dir", cache)]
        stored = list(cache.rglob("answer-*.json"))
        assert len(stored) == 1, q  # the first run kept its answer
        stored[0].unlink()
        runs += [run_main(*q[:1], cap, *q[1:], "--cache-dir", cache) for _ in range(2)]
        assert len(list(cache.rglob("answer-*.json"))) == 1, q
        for r in runs:
            assert (r.code, r.out, r.err) == (ref.code, ref.out, ref.err), q
        stored[0].unlink()


def test_a_stored_text_answer_is_kept_per_terminal_width(tmp_path, monkeypatch):
    import attlens.cli.common as common

    cap = require_shared() / "traces" / VEC_ADD
    cache = tmp_path / "cache"
    texts = {}
    for cols in ("80", "140", "80"):
        monkeypatch.setenv("COLUMNS", cols)
        texts.setdefault(cols, []).append(run_main("waves", cap, "--cache-dir", cache).out)
    assert texts["80"][0] == texts["80"][1] != texts["140"][0]
    assert len(list(cache.rglob("answer-*.json"))) == 2
    # a repeat loads nothing: the stored text is printed as it is
    monkeypatch.setattr(common, "load_analyzed", lambda *a, **k: pytest.fail("loaded a capture for a stored answer"))
    assert run_main("waves", cap, "--cache-dir", cache).out == texts["80"][0]


def test_a_stored_report_writes_the_same_page(tmp_path, monkeypatch):
    import attlens.report.html as html

    cap = require_shared() / "traces" / VEC_ADD
    cache, a, b = tmp_path / "cache", tmp_path / "a.html", tmp_path / "b.html"
    ref = run_main("report", cap, "-o", a, "--no-cache", "--json")
    first = run_main("report", cap, "-o", b, "--cache-dir", cache, "--json")
    page = b.read_bytes()
    b.unlink()
    # the repeat renders nothing: the stored page is written as it is
    monkeypatch.setattr(html, "render_captures", lambda *a, **k: pytest.fail("rendered a report that was stored"))
    again = run_main("report", cap, "-o", b, "--cache-dir", cache, "--json")
    assert "stored answer" not in again.err
    assert a.read_bytes() == page == b.read_bytes()
    assert first.out == again.out == ref.out.replace(os.fspath(a), os.fspath(b)) and first.code == again.code == ref.code
    shutil.rmtree(cache)
    assert Path(b).is_file()


def test_a_plan_written_to_a_file_is_a_stored_answer(tmp_path, monkeypatch):
    import attlens.cli.common as common

    cap = require_shared() / "traces" / VEC_ADD
    cache, out = tmp_path / "cache", tmp_path / "plan.md"
    first = run_main("plan", cap, "-o", out, "--format", "md", "--cache-dir", cache)
    page = out.read_bytes()
    out.unlink()
    monkeypatch.setattr(common, "load_analyzed", lambda *_, **__: pytest.fail("loaded a capture for a stored answer"))
    again = run_main("plan", cap, "-o", out, "--format", "md", "--cache-dir", cache)
    assert first.code == again.code == 0 and "stored answer" not in again.err
    assert out.read_bytes() == page and page.startswith(b"# ")


def test_a_stored_markdown_bundle_writes_the_same_files(tmp_path, monkeypatch):
    import attlens.cli.report_cmds as report_cmds

    cap = require_shared() / "traces" / VEC_ADD
    cache, ref_dir, out = tmp_path / "cache", tmp_path / "ref", tmp_path / "bundle"
    ref = run_main("report", cap, "--format", "md", "-o", ref_dir, "--no-cache", "--json")
    first = run_main("report", cap, "--format", "md", "-o", out, "--cache-dir", cache, "--json")
    files = {n: (out / n).read_bytes() for n in ("report.md", "analysis.json")}
    shutil.rmtree(out)
    monkeypatch.setattr(report_cmds, "load_analyzed", lambda *_, **__: pytest.fail("loaded a capture for a stored answer"))
    again = run_main("report", cap, "--format", "md", "-o", out, "--cache-dir", cache, "--json")
    assert "stored answer" not in again.err and first.code == again.code == ref.code == 0
    assert files == {n: (out / n).read_bytes() for n in files} == {n: (ref_dir / n).read_bytes() for n in files}
    assert first.out == again.out == ref.out.replace(os.fspath(ref_dir), os.fspath(out))


# --------------------------------------------------------------------------- write-behind digests (cache/behind.py)


@pytest.fixture
def behind_always(monkeypatch):
    from attlens.cache import behind

    require_fork()
    monkeypatch.setattr(behind, "MIN_RECORDS_BYTES", 0)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    return forks


def _derived(cache: Path) -> set[str]:
    return {p.name for p in cache.rglob("derived-*.json")}


@pytest.mark.parametrize("q", [["analyze", "--json"], ["plan"]])
def test_a_digest_written_behind_gives_the_same_answers_and_keeps_the_derived_results(tmp_path, monkeypatch, behind_always, q):
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", "1")  # the only fork is the digest's writer
    monkeypatch.setenv("COLUMNS", "100")
    cap = require_shared() / "traces" / VEC_ADD
    ref = run_main(*q[:1], cap, *q[1:], "--no-cache")
    sync = tmp_path / "sync"
    from attlens.cache import behind

    with monkeypatch.context() as m:
        m.setattr(behind, "MIN_RECORDS_BYTES", 1 << 62)  # written in place: the reference digest
        assert run_main(*q[:1], cap, *q[1:], "--cache-dir", sync).out == ref.out
    assert not behind_always
    cache = tmp_path / "cache"
    first = run_main(*q[:1], cap, *q[1:], "--cache-dir", cache)
    assert behind_always == [1], "the digest was written by a child"
    assert (first.code, first.out, first.err) == (ref.code, ref.out, ref.err)
    assert len(list(cache.rglob("capture.json"))) == 1 and len(list(cache.rglob("answer-*.json"))) == 1
    assert _derived(cache) == _derived(sync) and _derived(cache), "every derived result reached the digest"
    for a in cache.rglob("answer-*.json"):
        a.unlink()
    again = run_main(*q[:1], cap, *q[1:], "--cache-dir", cache)  # from the digest the child wrote
    assert again.out == ref.out and behind_always == [1]


@pytest.mark.parametrize("replay", [True, False])
def test_a_report_beside_its_digest_writer_keeps_every_derived_result(tmp_path, monkeypatch, behind_always, replay):
    """``report`` forks its replay's child after the digest is in place (what
    the child stores must reach it); without a replay the child stores
    nothing and the writer is not waited for. Either way the page is the
    one a digest written in place gives, and so are the derived results."""
    from attlens import forked, limits
    from attlens.cache import behind

    if not replay:
        monkeypatch.setattr(limits, "MAX_REPLAY_RECORDS_IN_PLAN", 0)
    events = []
    real_settle, real_relay = behind.settle, forked.relay
    monkeypatch.setattr(behind, "settle", lambda: events.append("settle" if behind._state["pending"] else "-") or real_settle())
    monkeypatch.setattr(forked, "relay", lambda *a: events.append("relay") or real_relay(*a))
    cap = require_shared() / "traces" / VEC_ADD
    sync = tmp_path / "sync"
    with monkeypatch.context() as m:
        m.setattr(behind, "MIN_RECORDS_BYTES", 1 << 62)  # written in place: the reference digest
        assert run_main("report", cap, "-o", tmp_path / "ref.html", "--cache-dir", sync).code == 0
    events.clear()
    assert run_main("report", cap, "-o", tmp_path / "page.html", "--cache-dir", tmp_path / "cache").code == 0
    assert (tmp_path / "page.html").read_bytes() == (tmp_path / "ref.html").read_bytes()
    assert _derived(tmp_path / "cache") == _derived(sync) and len(_derived(sync)) > 3
    settled_first = events.index("settle") < events.index("relay")
    assert settled_first == replay, events


def test_a_failed_digest_writer_costs_only_the_digest(tmp_path, monkeypatch, behind_always):
    import attlens.cache.capture as capture

    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", "1")
    monkeypatch.setattr(capture, "write_digest", lambda *a, **k: os._exit(9))  # the child dies (killed, out of memory)
    cap = require_shared() / "traces" / VEC_ADD
    ref = run_main("analyze", cap, "--json", "--no-cache")
    cache = tmp_path / "cache"
    first = run_main("analyze", cap, "--json", "--cache-dir", cache)
    assert behind_always == [1] and (first.code, first.out) == (ref.code, ref.out)
    assert not list(cache.rglob("capture.json")) and not list(cache.rglob("answer-*.json"))
    assert not [p for p in cache.rglob("*") if p.name.startswith(".tmp")]


def test_a_capture_changed_before_the_digest_settles_gets_no_digest_of_its_new_state(tmp_path, monkeypatch, behind_always):
    """The capture's key is looked at again before a digest written behind is
    placed (by the command when it waits, or by the child done before it): a
    wave file touched after the parse leaves no digest under the capture's
    new state and no temporary folder, and the next command reads it again."""
    import attlens.analysis.analyze as analyze_mod
    from attlens.cache import open_cache
    from attlens.cache.keys import current_capture_key

    cap = tmp_path / "cap"
    shutil.copytree(require_shared() / "traces" / VEC_ADD, cap)
    ref = run_main("analyze", cap, "--json", "--no-cache")
    real = analyze_mod.analyze
    wave = next(p for p in sorted(cap.iterdir()) if p.name.startswith("se"))

    def touching(*a, **k):
        os.utime(wave, ns=(1, 1))  # after the parse, before the settling
        return real(*a, **k)

    monkeypatch.setattr(analyze_mod, "analyze", touching)
    cache = tmp_path / "cache"
    first = run_main("analyze", cap, "--json", "--cache-dir", cache)
    assert behind_always == [1], "the digest was written by a child"
    assert (first.code, first.out) == (ref.code, ref.out)
    assert not [p for p in cache.rglob("*") if p.name.startswith(".tmp")]
    assert open_cache(cache).open(cap, current_capture_key(cap)) is None
    monkeypatch.setattr(analyze_mod, "analyze", real)
    again = run_main("analyze", cap, "--json", "--cache-dir", cache)
    assert again.out == ref.out and behind_always == [1, 1], "read again, and its digest written"
    assert open_cache(cache).open(cap, current_capture_key(cap)) is not None


def _digest_written_behind(tmp_path, monkeypatch, cap, look):
    """(store, key, the PendingDigest) of ``cap``'s digest handed to a child,
    whose own look at the capture is ``look(capture, key)``."""
    from attlens.cache import behind, open_cache
    from attlens.cache.capture import digest_of
    from attlens.model.loader import read_capture

    require_fork()
    monkeypatch.setattr(behind, "MIN_RECORDS_BYTES", 0)
    monkeypatch.setattr(behind, "_unchanged", look)
    store = open_cache(tmp_path / "cache")
    monkeypatch.setitem(behind._state, "on", True)
    monkeypatch.setitem(behind._state, "pending", [])
    key = digest_of(cap)
    pending = behind.write(store, cap, key, read_capture(cap))
    assert isinstance(pending, behind.PendingDigest)
    return store, key, pending


@pytest.mark.parametrize("unchanged", [True, False])
def test_a_digest_child_without_the_commands_word_looks_itself(tmp_path, monkeypatch, unchanged):
    """The child is done writing before the command comes to wait (a report,
    the next capture of --all) or the command ended without a word: it looks
    at the capture itself and places the digest only if it is unchanged."""
    from attlens.cache import behind

    cap = require_shared() / "traces" / VEC_ADD
    store, key, pending = _digest_written_behind(tmp_path, monkeypatch, cap, lambda capture, key: unchanged)  # what the child finds
    os.close(pending.word_w)  # no word
    assert os.read(pending.done_r, 1) == behind.LOOKING  # said before it looks
    assert os.read(pending.done_r, 1) == bytes([0 if unchanged else 3])
    os.close(pending.done_r)
    os.waitpid(pending.pid, 0)
    assert (store.open(cap, key) is not None) == unchanged
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.name.startswith(".tmp")]


def test_a_command_that_comes_while_the_digest_child_looks_does_not_look_too(tmp_path, monkeypatch):
    """The child, done before the command's word, says it is looking at the
    capture itself: the command that comes to wait meanwhile waits for that
    look instead of making its own, and stores what it kept in the digest."""
    import time

    class ArrayCodec:  # one array, nothing else
        def encode(self, value):
            return {"x": np.asarray(value)}, {}

        def decode(self, arrays, meta):
            return np.asarray(arrays["x"])

    cap = require_shared() / "traces" / VEC_ADD
    looks = tmp_path / "looks"

    def slow_look(capture, key):  # in whichever process looks: its pid, then the answer after a while
        with open(looks, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.3)
        return True

    _store, _key, pending = _digest_written_behind(tmp_path, monkeypatch, cap, slow_look)
    pending.put_derived("kept", np.arange(5), ArrayCodec())
    deadline = time.monotonic() + 60
    while not looks.exists():  # the child is looking
        assert time.monotonic() < deadline
        time.sleep(0.005)
    digest = pending.settle()
    assert looks.read_text().split() == [str(pending.pid)], "the child looked, the command did not"
    assert digest is not None and np.array_equal(digest.get_derived("kept", ArrayCodec()), np.arange(5))


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_a_stored_page_of_another_shape_is_made_again(tmp_path, fmt):
    """A stored answer with a valid CRC and an attlens schema but not the shape
    report keeps (written by hand in the user's own cache): the page is made
    again, never a traceback."""
    import zlib

    import orjson

    cap = require_shared() / "traces" / VEC_ADD
    cache = tmp_path / "cache"
    out = tmp_path / ("r.html" if fmt == "html" else "bundle")
    args = ["report", cap, "-o", out, "--cache-dir", cache] + (["--format", "md"] if fmt == "md" else [])
    first = run_main(*args)
    good = out.read_bytes() if fmt == "html" else (out / "report.md").read_bytes()
    (path,) = cache.rglob("answer-*.json")
    body = orjson.loads(path.read_bytes().partition(b"\n")[2])
    body["document"] = {"schema": body["document"]["schema"], "log": [1], "entry": 3}
    raw = orjson.dumps(body)
    path.write_bytes(b"%08x\n" % zlib.crc32(raw) + raw)
    again = run_main(*args)
    assert again.code == first.code == 0 and "Traceback" not in again.err and "internal error" not in again.err
    assert (out.read_bytes() if fmt == "html" else (out / "report.md").read_bytes()) == good


@pytest.mark.parametrize("workers,threads", [("1", False), ("2", False), ("2", True)])
def test_wait_dependencies_of_the_parse_parts_equal_the_whole(monkeypatch, workers, threads):
    """The parse processes simulate the wait counters of each part they parse;
    joined (on one thread, or on two as a large capture's are), that is the
    simulation of the whole dispatch, array by array."""
    from attlens import twothreads
    from attlens.analysis.waitdeps import _compute_wait_deps, compute_wait_deps
    from attlens.model.loader import WAITDEPS_KEY, load

    if workers == "2":
        require_fork()
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", workers)
    monkeypatch.setattr(twothreads, "MIN_BYTES", 0 if threads else 1 << 62)
    for name in (FLASH, VEC_ADD):
        d = load(require_shared() / "traces" / name, cache=False)
        ready = d.prepared[WAITDEPS_KEY]
        whole = _compute_wait_deps(d, "gfx9")
        assert whole.count > 0 and len(whole.producers) > 0
        for f in ("entry_wait", "entry_wave", "entry_start", "entry_stop", "producers", "entry_outstanding"):
            a, b = getattr(ready, f), getattr(whole, f)
            assert a.dtype == b.dtype and np.array_equal(a, b), (name, f)
        assert compute_wait_deps(d) is ready  # what the analysis uses


@pytest.mark.parametrize("workers,threads", [("1", False), ("2", False), ("2", True)])
def test_wait_pairs_and_class_sums_of_the_parse_parts_equal_the_whole(monkeypatch, workers, threads):
    """The parts' wait/producer pairs and class sums, joined (on one thread,
    or on two as a large capture's are), are those of the whole dispatch:
    the pc sums and breakdown equal the serial computation."""
    from attlens import twothreads
    from attlens.analysis.stalls import _compute_pc_sums
    from attlens.analysis.waitattr import split_waits
    from attlens.analysis.waitdeps import compute_wait_deps
    from attlens.model.loader import load

    if workers == "2":
        require_fork()
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", workers)
    monkeypatch.setattr(twothreads, "MIN_BYTES", 0 if threads else 1 << 62)
    for name in (FLASH, VEC_ADD):
        d = load(require_shared() / "traces" / name, cache=False)
        deps = compute_wait_deps(d)
        ready = d.prepared["wait_pairs"]
        whole = split_waits(d, deps)
        assert len(whole.wait_rec) > 0
        for f in whole.__dataclass_fields__:
            a, b = getattr(ready, f), getattr(whole, f)
            assert a.dtype == b.dtype and np.array_equal(a, b), (name, f)
        sums, breakdown, _deps, pairs = _compute_pc_sums(d, deps)
        assert pairs is ready  # the analysis took the parts' pairs
        d.prepared = {}
        sums2, breakdown2, _deps2, _pairs2 = _compute_pc_sums(d, deps)
        assert breakdown == breakdown2 and breakdown.waits_resolved > 0
        for f in sums.__dataclass_fields__:
            assert np.array_equal(getattr(sums, f), getattr(sums2, f)), (name, f)
