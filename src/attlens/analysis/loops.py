"""Loop structure from the trace: which instructions ran in a loop, and how
many times around.

A loop is a backward branch of the listing (``s_cbranch_*``/``s_branch`` whose
SOPP offset is negative) and the pcs from its target to the branch. From the
trace: the branch is *taken* when the next record of the same wave is the
target. A wave *enters* the loop when a record inside its pc range follows one
outside it (compilers often enter a rotated loop in the middle, not at its
first pc); each entry and each taken back edge is one pass through the body,
so per wave ``trips = (entries + taken) / entries``. A pc belongs to the innermost loop
that contains it; the loop it *iterates in* is the innermost enclosing one that
iterated (an inner loop whose back edge was never taken runs once per pass of
the outer one). Rules whose change speaks of iterations (prefetch the next
iteration, double-buffer) only fire on pcs of a loop that iterated (taken at
least once), and every finding shows its pcs' loop and trip count.

Independently of branches, ``repeats[pc]`` says whether some wave executed the
pc more than once (per-pc hit counts above the number of waves that ran it):
a pc that repeats outside every detected loop (an indirect jump, a loop the
branch decoder did not see) is reported as such, never as loop-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attlens.model.isa import operands
from attlens.results import brief_repr


@dataclass
class StaticLoop:
    branch_pc: int
    first_pc: int
    last_pc: int
    executed: bool  # the backward branch was executed at least once


def backward_branches(dispatch) -> list[StaticLoop]:
    """Backward branches of the listing, with the pc they jump back to."""
    code, st = dispatch.code, dispatch.static
    loops = []
    hit = dispatch.executions_per_pc()
    listed = code.instruction_mask.tolist()  # a property: computed once, not per pc
    vaddr_to_pc = {int(v): pc for pc, v in enumerate(code.vaddr.tolist()) if listed[pc]}
    for pc in np.flatnonzero(code.instruction_mask).tolist():
        m = st.mnemonic[pc]
        if not m.startswith(("s_cbranch", "s_branch")):
            continue
        target = branch_target(dispatch, pc, vaddr_to_pc)
        if target is None or target > pc:
            continue
        loops.append(StaticLoop(pc, target, pc, bool(hit[pc])))
    return loops


def branch_target(dispatch, pc: int, vaddr_to_pc: dict[int, int]) -> int | None:
    """pc a SOPP branch jumps to (simm16 in dwords, relative to the next instruction)."""
    op = operands(dispatch.code.isa[pc]).split(",")[0].strip()
    if not op.lstrip("-").isdigit():
        return None
    simm = int(op)
    if simm >= 32768:
        simm -= 65536
    return vaddr_to_pc.get(int(dispatch.code.vaddr[pc]) + 4 + 4 * simm)


@dataclass
class Loop:
    id: int
    first_pc: int
    branch_pc: int
    parent: int | None  # id of the enclosing loop
    depth: int  # 0 = outermost
    taken: int  # back edges taken, all waves
    iterations: int  # passes through the body: entries + taken back edges
    entries: int  # times a wave entered the pc range from outside (or started in it)
    waves: int  # waves that entered the loop
    trips_mean: float | None  # iterations per entry (None: never entered)
    trips_min: int | None  # per wave: iterations / entries, rounded down
    trips_max: int | None

    @property
    def iterated(self) -> bool:
        return self.taken > 0

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "pcs": [self.first_pc, self.branch_pc],
            "branch_pc": self.branch_pc,
            "parent": self.parent,
            "depth": self.depth,
            "iterated": self.iterated,
            "taken": self.taken,
            "entries": self.entries,
            "waves": self.waves,
            "trips_mean": None if self.trips_mean is None else round(self.trips_mean, 2),
            "trips_min": self.trips_min,
            "trips_max": self.trips_max,
        }


@brief_repr(("loops", lambda s: len(s.loops)), ("iterated", lambda s: sum(1 for x in s.loops if x.iterated)), ("static", lambda s: len(s.static)))
@dataclass
class LoopStructure:
    loops: list[Loop]
    loop_of_pc: np.ndarray  # innermost loop id per pc, -1 outside every loop
    repeats: np.ndarray  # per pc: some wave executed it more than once
    static: list[StaticLoop] = field(default_factory=list)

    def loop(self, pc: int) -> Loop | None:
        i = int(self.loop_of_pc[pc]) if 0 <= pc < len(self.loop_of_pc) else -1
        return self.loops[i] if i >= 0 else None

    def iterating_loop(self, pc: int) -> Loop | None:
        """The innermost loop around ``pc`` that iterated (None: none did)."""
        lp = self.loop(pc)
        while lp is not None and not lp.iterated:
            lp = self.loops[lp.parent] if lp.parent is not None else None
        return lp

    def body(self, lp: Loop) -> list[int]:
        """The pcs one pass of ``lp`` runs, nested loops that never iterated
        included (they run once per pass); loops that iterated excluded."""
        return [pc for pc in range(lp.first_pc, lp.branch_pc + 1)
                if (self.iterating_loop(pc) or self.loop(pc)) is lp]

    def in_loop(self, pc: int) -> bool:
        """The pc ran more than once in some wave (the trace's own evidence of
        iteration; the loop it belongs to may be one the branch decoder did not see)."""
        return bool(self.repeats[pc])

    def where(self, pc: int) -> dict:
        """The pc's place in the loop structure, for a finding's evidence."""
        lp = self.iterating_loop(pc)
        if lp is None:
            out = {"pc": pc, "loop": None}
            if self.repeats[pc]:
                out["note"] = "repeats in some wave outside every detected loop"
            return out
        return {"pc": pc, "loop": lp.id, "loop_pcs": [lp.first_pc, lp.branch_pc], "trips_mean": None if lp.trips_mean is None else round(lp.trips_mean, 2), "depth": lp.depth}

    def to_dict(self) -> dict:
        return {"loops": [lp.to_dict() for lp in self.loops], "repeating_pcs_outside_loops": self.unexplained_repeats()}

    def unexplained_repeats(self) -> list[int]:
        return [int(pc) for pc in np.flatnonzero(self.repeats & (self.loop_of_pc < 0)).tolist()]


TAKEN_CHUNK = 1 << 20  # records compared together (bounds the temporaries)


def taken_mask(dispatch, target_of_pc: np.ndarray) -> np.ndarray:
    """Per record: a branch whose next record (same wave) is its target."""
    recs = dispatch.records
    n = recs.count
    out = np.zeros(n, dtype=bool)
    if not (target_of_pc >= 0).any():  # no backward branch: nothing to compare
        return out
    pc, wave = recs.pc, recs.wave
    for a in range(0, n - 1, TAKEN_CHUNK):
        b = min(a + TAKEN_CHUNK, n - 1)
        tgt = target_of_pc[pc[a:b]]
        out[a:b] = (tgt >= 0) & (pc[a + 1:b + 1] == tgt) & (wave[a + 1:b + 1] == wave[a:b])
    return out


def compute_loops(dispatch, exec_index: np.ndarray | None = None) -> LoopStructure:
    """``exec_index``: per record, how many times its pc ran before in its wave
    (``Phases.exec_index``), when the caller has it."""
    code, recs, w = dispatch.code, dispatch.records, dispatch.waves
    n_pc = code.size
    static = backward_branches(dispatch)
    # innermost first: nested loops are shorter
    static_sorted = sorted(static, key=lambda s: (s.first_pc, -s.branch_pc))
    target_of_pc = np.full(n_pc, -1, dtype=np.int64)
    for s in static_sorted:
        target_of_pc[s.branch_pc] = s.first_pc
    taken = taken_mask(dispatch, target_of_pc)

    # per (wave, pc) executions → repeats and waves per pc
    if exec_index is None:
        key = recs.wave.astype(np.int64) * n_pc + recs.pc
        uk, cnt = np.unique(key, return_counts=True)
        upc = uk % n_pc
        repeats = np.zeros(n_pc, dtype=bool)
        repeats[upc[cnt > 1]] = True
    else:
        repeats = np.bincount(recs.pc[exec_index > 0], minlength=n_pc) > 0

    nw = w.count
    loops: list[Loop] = []
    loop_of_pc = np.full(n_pc, -1, dtype=np.int64)
    span_of: list[int] = []
    for i, s in enumerate(static_sorted):
        t_w = np.bincount(recs.wave[taken & (recs.pc == s.branch_pc)], minlength=nw)
        inside = (recs.pc >= s.first_pc) & (recs.pc <= s.branch_pc)
        # an entry: a record inside whose predecessor in the same wave is outside
        # (compilers also enter rotated loops in the middle, not at the header)
        enter = inside.copy()
        enter[1:] &= ~(inside[:-1] & (recs.wave[1:] == recs.wave[:-1]))
        e_w = np.bincount(recs.wave[enter], minlength=nw)
        it_w = e_w + t_w  # passes through the loop body
        entered = e_w > 0
        tr = (it_w[entered] // e_w[entered]) if entered.any() else np.zeros(0, dtype=np.int64)
        entries = int(e_w.sum())
        parent = None
        for j in range(i - 1, -1, -1):  # the closest enclosing loop already listed
            p = static_sorted[j]
            if p.first_pc <= s.first_pc and s.branch_pc <= p.branch_pc and (p.first_pc, p.branch_pc) != (s.first_pc, s.branch_pc):
                parent = j
                break
        depth = 0 if parent is None else loops[parent].depth + 1
        loops.append(
            Loop(
                id=i,
                first_pc=s.first_pc,
                branch_pc=s.branch_pc,
                parent=parent,
                depth=depth,
                taken=int(t_w.sum()),
                iterations=int(it_w.sum()),
                entries=entries,
                waves=int(np.count_nonzero(e_w)),
                trips_mean=(float(it_w.sum()) / entries) if entries else None,
                trips_min=int(tr.min()) if len(tr) else None,
                trips_max=int(tr.max()) if len(tr) else None,
            )
        )
        span_of.append(s.branch_pc - s.first_pc)
    # innermost loop per pc: assign outer (longer) loops first, inner ones overwrite
    for i in sorted(range(len(loops)), key=lambda k: -span_of[k]):
        lp = loops[i]
        loop_of_pc[lp.first_pc : lp.branch_pc + 1] = i
    return LoopStructure(loops, loop_of_pc, repeats, static)
