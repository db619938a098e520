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
    from attlens.analysis import groups

    monkeypatch.setattr(groups, "DIRECT_KEYS", 1 << 40 if direct else 0)
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


@pytest.mark.parametrize("direct", [True, False])  # one-word rows counted in one table (the longer sets sorted), and all by a sort
@pytest.mark.parametrize("cells", [None, 256, 3, 0])  # the grids, each in many blocks, a row a block, one by one (a grid too large)
def test_resolved_sets_counted_as_tuples(pairs_of_capture, monkeypatch, cells, direct):
    from attlens.analysis import groups
    from attlens.analysis.rules import inorder

    if cells is not None:
        monkeypatch.setattr(inorder, "SET_GRID_CELLS", cells)
    monkeypatch.setattr(groups, "DIRECT_KEYS", 1 << 24 if direct else 0)
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
    assert all(np.array_equal(a, b) for a, b in zip(words, packed_rows([grid[:, j].copy() for j in range(6)])))  # as columns
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
    from attlens.analysis import groups, waitattr

    monkeypatch.setattr(groups, "DIRECT_KEYS", 1 << 40 if direct else 0)
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


@pytest.mark.parametrize("direct", [True, False])  # the keys' ranks sorted by radix, and the keys by a stable sort
def test_distances_grouped_as_the_loop(pairs_of_capture, monkeypatch, direct):
    from attlens.analysis import groups
    from attlens.analysis.rules.inorder import _distances

    monkeypatch.setattr(groups, "DIRECT_KEYS", 1 << 40 if direct else 0)
    d, pairs = pairs_of_capture
    ppc, wpc = d.records.pc[pairs.prod_rec], d.records.pc[pairs.wait_rec]
    order = np.flatnonzero(np.arange(len(ppc)) % 3 != 1)  # some rows, ascending
    want = defaultdict(list)
    for i in order.tolist():
        want[(int(wpc[i]), int(ppc[i]))].append([int(pairs.distance_instr[i]), int(pairs.distance_cycles[i])])
    got = _distances(pairs, order, wpc, ppc)
    assert sorted(got) == sorted(want)
    assert all(got[k].tolist() == v for k, v in want.items())


@pytest.mark.parametrize("high", [50, 400000])  # ranks of 16 bits (radix), and more keys present than 16 bits hold
def test_stable_key_order_is_the_stable_argsort(high):
    from attlens.analysis.rules.inorder import _stable_key_order

    key = np.random.default_rng(4).integers(0, high, 100000) * 7
    assert np.array_equal(_stable_key_order(key, high * 7), np.argsort(key, kind="stable"))
    assert len(_stable_key_order(key[:0], 5)) == 0


@pytest.mark.parametrize("flat_pcs", [0, 3])  # no FLAT op (the shortcut and the split alike), and some producer pcs taken as FLAT
def test_load_charges_as_the_formula_over_every_pair(pairs_of_capture, flat_pcs):
    from attlens.analysis.rules.memory import _blocker, _charges

    d, pairs = pairs_of_capture
    rng = np.random.default_rng(11)
    ppc, wpc = d.records.pc[pairs.prod_rec], d.records.pc[pairs.wait_rec]
    first = np.zeros(len(ppc), dtype=bool)
    first[pairs.first_of_wait] = True
    gid = np.cumsum(first) - 1
    ng = int(gid.max()) + 1
    is_load = (rng.random(d.code.size) < 0.8)[ppc]
    flat = np.zeros(d.code.size, dtype=bool)
    flat[rng.choice(np.unique(ppc), flat_pcs, replace=False)] = True
    flat_vm = flat[ppc]
    vm_cyc = np.bincount(gid, weights=pairs.stall_share, minlength=ng)
    coupled = (rng.random(d.code.size) < 0.3)[wpc]
    blocks = is_load & _blocker(pairs.prod_rec, first, gid, is_load, coupled)
    # the blocking load chosen per execution as per pair: the oldest load where coupled, else the youngest
    rec = pairs.prod_rec
    oldest = np.minimum.reduceat(np.where(is_load, rec, np.iinfo(np.int64).max), pairs.first_of_wait)[gid]
    youngest = np.maximum.reduceat(np.where(is_load, rec, -1), pairs.first_of_wait)[gid]
    assert np.array_equal(blocks, is_load & np.where(coupled, oldest == rec, youngest == rec))
    # every pair's charge, then the charged ones
    has_flat = (np.bincount(gid, weights=flat_vm, minlength=ng) > 0)[gid]
    head, even = blocks & ~has_flat, is_load & has_flat
    n_load = np.bincount(gid, weights=is_load, minlength=ng)[gid]
    charge = np.where(head, vm_cyc[gid], np.where(even, vm_cyc[gid] / np.maximum(n_load, 1), 0.0))
    want = np.flatnonzero((head | even) & (charge > 0))
    for got in ([_charges(gid, is_load, blocks, vm_cyc, flat_vm)] if flat_pcs else
                [_charges(gid, is_load, blocks, vm_cyc, None), _charges(gid, is_load, blocks, vm_cyc, flat_vm)]):
        assert np.array_equal(got[0], want) and np.array_equal(got[1], charge[want])
    assert even.any() == bool(flat_pcs)
