"""The grouped (NumPy) forms of per-row Python loops give what the loops gave,
values and key order alike, on a real capture's wait/producer pairs: the
load-use-distance charges and distances (rules/memory.py), the in-order-wait
rule's resolved sets (rules/inorder.py, both of its paths), the timeline's
run-length encoding (report/html.py)."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from conftest import loaded, require_shared

CAPTURE = "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"


@pytest.fixture(scope="module")
def pairs_of_capture():
    d, r = loaded(require_shared() / CAPTURE)
    pairs = r.pairs
    assert len(pairs.prod_rec) > 1000, "the capture has wait/producer pairs"
    return d, pairs


@pytest.mark.parametrize("direct", [True, False])  # one table of every (producer, wait) key, and np.unique
def test_charges_and_distances_grouped_as_the_loop(pairs_of_capture, monkeypatch, direct):
    from attlens.analysis import waitattr

    monkeypatch.setattr(waitattr, "DIRECT_KEYS", 1 << 40 if direct else 0)
    from attlens.analysis.rules.memory import _charged_by_pair, _lists_by_pc

    d, pairs = pairs_of_capture
    ppc, wpc = d.records.pc[pairs.prod_rec], d.records.pc[pairs.wait_rec]
    charge, dist = pairs.stall_share, pairs.distance_instr
    out, lists = defaultdict(float), defaultdict(list)
    for p, w, c, dd in zip(ppc.tolist(), wpc.tolist(), charge.tolist(), dist.tolist()):
        out[(p, w)] += c
        lists[p].append(dd)
    got = _charged_by_pair(ppc, wpc, charge, d.code.size)
    assert list(got.items()) == list(out.items()) and isinstance(got, defaultdict)
    got_lists = _lists_by_pc(ppc, dist)
    assert list(got_lists.items()) == list(lists.items()) and isinstance(got_lists, defaultdict)


@pytest.mark.parametrize("cells", [None, 256, 0])  # the grid, the grid in many blocks, and one by one (a grid too large)
def test_resolved_sets_counted_as_tuples(pairs_of_capture, monkeypatch, cells):
    from attlens.analysis.rules import inorder

    if cells is not None:
        monkeypatch.setattr(inorder, "SET_GRID_CELLS", cells)
    d, pairs = pairs_of_capture
    ppc, wpc = d.records.pc[pairs.prod_rec].astype(np.int64), d.records.pc[pairs.wait_rec].astype(np.int64)
    first = np.zeros(len(ppc), dtype=bool)
    first[pairs.first_of_wait] = True
    gid = np.cumsum(first) - 1
    order = np.lexsort((pairs.prod_rec, gid))
    cut = np.flatnonzero(np.r_[True, gid[order][1:] != gid[order][:-1], True])
    pcs = ppc[order].tolist()
    want = Counter()
    for w, a, b in zip(wpc[order[cut[:-1]]].tolist(), cut[:-1].tolist(), cut[1:].tolist()):
        want[(w, tuple(pcs[a:b]))] += 1
    got = inorder._execution_sets(wpc[order[cut[:-1]]], ppc[order], cut[:-1], cut[1:])
    assert list(got.items()) == list(want.items())
    assert any(len(k[1]) > 1 for k in want), "some executions resolve several ops"
    assert got.most_common(3) == want.most_common(3)


@pytest.mark.parametrize("high", [5, 3000, 1 << 40])  # many columns a word, a few, one
def test_packed_rows_keep_the_rows_order_and_equality(high):
    from attlens.analysis.groups import packed_rows

    rng = np.random.default_rng(7)
    grid = rng.integers(0, high, size=(500, 6))
    grid[::7] = grid[3]  # equal rows
    words = packed_rows(grid)
    order = np.lexsort(grid.T[::-1])
    assert np.array_equal(np.lexsort(words[::-1]), order)
    sg = grid[order]
    same_words = np.all([w[order][1:] == w[order][:-1] for w in words], axis=0)
    assert np.array_equal(same_words, (sg[1:] == sg[:-1]).all(axis=1))


@pytest.mark.parametrize("shape", [(7, 40), (5, 1), (1, 1)])
def test_run_length_encoding_of_all_lanes_at_once(shape):
    from attlens.report.html import _rle
    from attlens.report.viewerdata import unpack

    rng = np.random.default_rng(3)
    rows = rng.integers(-1, 3, size=shape).astype(np.int8)
    rows[-1] = 1  # one run
    if len(rows) > 1:
        rows[1, 0] = rows[0, -1]  # a lane starting with the previous lane's last value: still a run start
    enc = _rle(rows)
    start, val = unpack(enc["start"]), unpack(enc["val"])
    for lane, row in enumerate(rows):
        a, b = enc["off"][lane], enc["off"][lane + 1]
        starts = np.cumsum(start[a:b])
        assert starts[0] == 0
        back = np.repeat(val[a:b], np.diff(np.r_[starts, len(row)]))
        assert back.tolist() == row.tolist()


@pytest.mark.parametrize("direct", [True, False])  # one table of every possible key, and np.unique
def test_sums_by_key_as_unique_and_bincount(pairs_of_capture, monkeypatch, direct):
    from attlens.analysis import waitattr

    monkeypatch.setattr(waitattr, "DIRECT_KEYS", 1 << 40 if direct else 0)
    d, pairs = pairs_of_capture
    n = d.code.size
    key = d.records.pc[pairs.wait_rec].astype(np.int64) * n + d.records.pc[pairs.prod_rec]
    uk, inv = np.unique(key, return_inverse=True)
    want = np.bincount(inv, weights=pairs.stall_share).round().astype(np.int64)
    got_k, got = waitattr._sums_by_key(key, pairs.stall_share, n * n)
    assert np.array_equal(got_k, uk) and np.array_equal(got, want) and got.dtype == want.dtype


@pytest.mark.parametrize("n_pc", [700, 40000])  # 16-bit radix, and the plain stable sort
def test_stable_pc_order_is_the_stable_argsort(n_pc):
    from attlens.analysis.groups import stable_pc_order

    pc = np.random.default_rng(5).integers(0, n_pc, 20000).astype(np.int32)
    assert np.array_equal(stable_pc_order(pc, n_pc), np.argsort(pc, kind="stable"))


def test_order_by_is_the_lexsort_sorted_or_not():
    from attlens.analysis.rules.inorder import _order_by

    rng = np.random.default_rng(2)
    major, minor = rng.integers(0, 50, 3000), rng.integers(0, 9, 3000)
    assert np.array_equal(_order_by(major, minor), np.lexsort((minor, major)))
    o = np.lexsort((minor, major))
    assert np.array_equal(_order_by(major[o], minor[o]), np.arange(3000))  # in order already (ties kept)
    assert len(_order_by(major[:0], minor[:0])) == 0
