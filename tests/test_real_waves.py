"""Wave-level analyses on every shared capture, against the raw files."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from attlens.analysis.clock import compute_clock
from attlens.analysis.hidden import compute_hidden
from attlens.analysis.phases import PHASES
from attlens.analysis.pipes import PIPES, pipe_of_class
from attlens.analysis.waitattr import attribute_waits
from attlens.analysis.wavestates import compute_wave_states, state_counts_over_time
from attlens.analysis.waves import analyze_waves
from conftest import loaded, require_shared, trace_dirs, trace_id

TRACES = trace_dirs()
_WAVES: dict = {}


def waves_of(path):
    if str(path) not in _WAVES:
        _WAVES[str(path)] = analyze_waves(loaded(path)[1])
    return _WAVES[str(path)]


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_state_totals_equal_wave_lifetimes(path):
    require_shared()
    d, _ = loaded(path)
    st = compute_wave_states(d)
    index = json.loads((path / "filenames.json").read_text())
    for i, name in enumerate(d.waves.filenames):
        w = json.loads((path / name).read_text())["wave"]
        per_state = defaultdict(int)
        for s, dur in w["timeline"]:
            per_state[s] += dur
        assert [per_state[s] for s in (1, 2, 3, 4)] == st.per_wave[i, 1:].tolist()
        over = sum(per_state.values()) - (w["end"] - w["begin"])
        assert over in (0, 4), name  # documented overhang of the last record (att-format.md §2.3)
    assert len(index) and st.overhang.max() <= 4


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_state_counts_over_time_equal_wstates_files(path):
    require_shared()
    d, _ = loaded(path)
    for s in (1, 2, 3, 4):
        f = path / f"wstates{s}.json"
        if not f.is_file():
            continue
        ref = json.loads(f.read_text())
        t, c = state_counts_over_time(d, s)
        assert t.tolist() == ref["time"] and c.tolist() == ref["state"], f.name


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_wait_attribution_conserves_cycles(path):
    require_shared()
    d, r = loaded(path)
    att = attribute_waits(d, r.deps, r.pairs)
    p = att.pairs
    # every resolved wait execution's stall is charged in full to its producers
    charged = defaultdict(int)
    for w, c in zip(p.wait_rec.tolist(), p.stall_share.tolist()):
        charged[w] += c
    for w, c in charged.items():
        assert c == int(d.records.stall[w])
    assert sum(x.waited_cycles for x in att.producers) == att.total_charged == sum(charged.values())
    assert all(x.distance_instructions_min >= 1 for x in att.producers)
    # producers and waits of one pair are in the same wave, producer first
    assert (d.records.wave[p.prod_rec] == d.records.wave[p.wait_rec]).all()
    assert (p.prod_rec < p.wait_rec).all()


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_pipes_and_phases_add_up(path):
    require_shared()
    d, r = loaded(path)
    wa = waves_of(path)
    # issue cycles per pipe recomputed from code.json's own columns (latency - stall per row)
    rows = json.loads((path / "code.json").read_text())["code"]
    ref = defaultdict(int)
    for row in rows:
        if row[0].startswith(";"):
            continue
        pipe = pipe_of_class(d.static.cls[row[2]])
        if pipe != "IMMED/MSG":
            ref[pipe] += row[7] - row[8]
    for p in PIPES:
        v = wa.pipes.kernel[p]
        if p != "IMMED/MSG":
            assert v["issue_cycles"] == ref[p], p
        assert 0 <= v["busy_cycles"] <= wa.pipes.total_window_cycles
    assert sum(wa.phases.kernel[p]["stall"] for p in PHASES) == r.breakdown.total_stall
    assert sum(wa.phases.kernel[p]["records"] for p in PHASES) == d.records.count


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_hidden_never_exceeds_the_cycles(path):
    require_shared()
    d, r = loaded(path)
    h = r.hidden
    assert (h.hidden_idle <= r.sums.idle).all() and (h.hidden_stall <= r.sums.stall).all()
    assert (h.hidden_issue <= r.sums.latency - r.sums.stall).all()
    assert ((h.exposed >= 0) & (h.exposed <= h.total)).all()


def test_clock_alignment_and_frequency(shared):
    # att-format.md §4.11 / §5: offsets and clocks from realtime.json
    base = shared / "traces"
    sm = compute_clock(loaded(base / "softmax/big/ui_output_agent_47920_dispatch_13")[0])
    assert sm.se_offsets_cycles == {0: 0, 1: 755, 2: 1507, 3: 2211}
    assert sm.frequency_hz / 1e9 == pytest.approx(2.036, abs=0.001)
    fa = compute_clock(loaded(base / "flash_attn_func/big/ui_output_agent_38430_dispatch_44")[0])
    assert fa.se_offsets_cycles == {0: 0, 1: 756, 2: 1508, 3: 2211}
    assert fa.frequency_hz / 1e9 == pytest.approx(2.076, abs=0.001)


def test_hidden_share_matches_the_documented_reimplementation(shared):
    # att-format.md §4.5 illustration: 17.4 % hidden for flash big
    d, r = loaded(shared / "traces/flash_attn_func/big/ui_output_agent_38430_dispatch_44")
    assert compute_hidden(d, r.sums).hidden_share == pytest.approx(0.174, abs=0.001)


def test_prologue_only_capture_is_flagged(shared):
    small = waves_of(shared / "traces/pa_mqa_logits_fp4/small/ui_output_agent_32435_dispatch_197")
    big = waves_of(shared / "traces/pa_mqa_logits_fp4/big/ui_output_agent_55351_dispatch_426")
    assert any("never reached the kernel's loop" in f for f in small.phases.flags)
    assert not any("never reached" in f for f in big.phases.flags)
    assert big.phases.kernel["loop_steady"]["stall"] > 0


def test_early_exit_waves_are_flagged(shared):
    d, _ = loaded(shared / "traces/pa/big/ui_output_agent_10886_dispatch_209")
    wa = waves_of(shared / "traces/pa/big/ui_output_agent_10886_dispatch_209")
    short = int(np.count_nonzero(d.waves.n_records < wa.phases.short_wave_threshold))
    assert short == wa.phases.short_waves == 48
    assert any("48 of 56 traced waves" in f for f in wa.phases.flags)


def test_per_execution_distribution(shared):
    path = shared / "traces/softmax/big/ui_output_agent_47920_dispatch_13"
    d, r = loaded(path)
    top = waves_of(path).phases.instructions[0]
    stalls = d.records.stall[d.records.pc == top.pc]
    assert top.executions == len(stalls) == 2056
    assert top.stall_p50 == float(np.percentile(stalls, 50))
    assert top.stall_max == int(stalls.max())


def _traced_cu_share_per_se(w, events):
    """The traced CUs' share of the median starts per CU, one pass over the starts per SE."""
    starts = events[events[:, 5] == 1]
    traced, share = set(w.cu.tolist()), {}
    for se in sorted(set(w.se.tolist()) | set(starts[:, 0].tolist())):
        cus, cnt = np.unique(starts[starts[:, 0] == se, 2], return_counts=True)
        med = float(np.median(cnt)) if len(cnt) else None
        mine = sum(int(c) for cu, c in zip(cus.tolist(), cnt.tolist()) if cu in traced)
        share[int(se)] = mine / med if med else None
    return share


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_traced_cu_share_as_one_pass_per_se(path):
    """The starts counted per (SE, CU) in one grouping give each SE's share as a
    pass over its own starts does, also for a traced SE without starts (None)."""
    from attlens.analysis.phases import traced_cu_share

    require_shared()
    d, _ = loaded(path)
    occ = d.occupancy
    if occ is None or not len(occ.events):
        pytest.skip("no occupancy.json events")
    got = traced_cu_share(d.waves, occ.events)
    assert list(got.items()) == list(_traced_cu_share_per_se(d.waves, occ.events).items())
    assert waves_of(path).phases.traced_cu_share_of_median == got
    lost = occ.events[occ.events[:, 0] != int(d.waves.se[0])]  # the first traced SE's events gone
    shares = traced_cu_share(d.waves, lost)
    assert shares[int(d.waves.se[0])] is None
    assert list(shares.items()) == list(_traced_cu_share_per_se(d.waves, lost).items())


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_phase_totals_are_the_sums_per_phase(path):
    """Records, stall and latency per phase as a mask per phase sums them: for
    the capture's phases (with loops or not) and for every record straight_line
    (the shortcut that counts no phase)."""
    from attlens.analysis.phases import _phase_totals

    require_shared()
    d, _ = loaded(path)
    recs = d.records
    for phase in (waves_of(path).phases.phase, np.zeros(recs.count, dtype=np.int8)):
        want = {name: {"records": int(np.count_nonzero(phase == i)), "stall": int(recs.stall[phase == i].sum()),
                       "latency": int(recs.duration[phase == i].sum())} for i, name in enumerate(PHASES)}
        assert _phase_totals(phase, recs) == want
