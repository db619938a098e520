"""Edits of the traced streams: what a change to the kernel does to the trace
(docs/whatif.md).

- ``hide-wait`` (pc = an ``s_waitcnt``): the ops it waits on are back when it
  is reached (their latency covered: loads issued earlier, or prefetched).
- ``prefetch`` (pc = a memory op): that op's latency is covered wherever it
  is waited on (its data is in flight a full iteration ahead).
- ``move`` (pc = a memory op, before_pc): every execution of the op issues
  right before the latest execution of ``before_pc`` in the same iteration
  (since the op's previous execution in the wave); it keeps its own gap, the
  waits that consumed it still wait on it.
- ``barrier-skew`` (pc = an ``s_barrier``, or None for every barrier): each
  wave leaves the barrier after the instance's own latency, not after the last
  arriver.
- ``waves-per-simd`` (waves_per_simd = N): each SIMD's traced waves run in N
  slots, each taking the slot that frees first.
- ``early-exit``: the traced waves that exited early (dispatch facts) are not
  run; the next wave of their slot takes their place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attlens.analysis.replay.model import Spec

KINDS = ("hide-wait", "prefetch", "move", "barrier-skew", "waves-per-simd", "early-exit")


@dataclass
class Edit:
    kind: str
    pc: int | None = None  # hide-wait: the s_waitcnt pc; move/prefetch: the memory op's pc; barrier-skew: the s_barrier pc
    before_pc: int | None = None  # move: the op at ``pc`` issues right before ``before_pc``
    waves_per_simd: int | None = None
    source: str = "cli"  # "cli" | "rule:<rule id>"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "pc": self.pc, "before_pc": self.before_pc, "waves_per_simd": self.waves_per_simd, "source": self.source}

    def key(self) -> tuple:
        return (self.kind, self.pc, self.before_pc, self.waves_per_simd)


def _usage(msg: str):
    from attlens.errors import UsageError

    return UsageError(msg)


def _executed(result, pc: int) -> bool:
    s = result.sums
    return 0 <= pc < len(s.hit) and int(s.hit[pc]) > 0


def check_edit(result, e: Edit) -> None:
    """Raise UsageError when ``e`` names a pc that does not exist or is not
    what the edit needs."""
    d = result.dispatch
    st, isa = d.static, d.code.isa

    def pc_ok(pc):
        if pc is None or not (0 <= pc < d.code.size) or not isa[pc]:
            raise _usage(f"{e.kind}: pc {pc} is not an instruction of the kernel")
        if not _executed(result, pc):
            raise _usage(f"{e.kind}: pc {pc} (`{isa[pc]}`) never executed in the traced waves")

    if e.kind not in KINDS:
        raise _usage(f"unknown edit kind {e.kind!r} (expected one of {', '.join(KINDS)})")
    if e.kind == "hide-wait":
        pc_ok(e.pc)
        if st.cls[e.pc] != "wait":
            raise _usage(f"--hide-wait {e.pc}: `{isa[e.pc]}` is not an s_waitcnt")
    elif e.kind in ("move", "prefetch"):
        pc_ok(e.pc)
        if not _is_memory(st.mnemonic[e.pc]):
            raise _usage(f"--{e.kind} {e.pc}: `{isa[e.pc]}` is not a memory instruction")
        if e.kind == "move":
            pc_ok(e.before_pc)
            if e.before_pc == e.pc:
                raise _usage(f"--move {e.pc}:{e.before_pc}: a pc cannot move before itself")
    elif e.kind == "barrier-skew":
        if e.pc is not None:
            pc_ok(e.pc)
            if st.cls[e.pc] != "barrier":
                raise _usage(f"barrier-skew: `{isa[e.pc]}` at pc {e.pc} is not an s_barrier")
    elif e.kind == "waves-per-simd":
        top = wave_slots_per_simd(d)  # registers may allow fewer: the occupancy says, the edit replays what is asked
        if not isinstance(e.waves_per_simd, int) or not 1 <= e.waves_per_simd <= top:
            raise _usage(f"--waves-per-simd {e.waves_per_simd}: expected a whole number of waves from 1 to {top} "
                         f"({d.arch.target or 'the target'}'s wave slots per SIMD)")


def wave_slots_per_simd(d) -> int:
    """The target's wave slots per SIMD (the architecture table), or the
    generic bound of limits.py when the target is unknown."""
    from attlens.limits import MAX_WAVES_PER_SIMD

    return int((d.arch.facts or {}).get("max_waves_per_simd") or MAX_WAVES_PER_SIMD)


def _is_memory(m: str) -> bool:
    return m.startswith(("global_", "buffer_", "tbuffer_", "scratch_", "flat_", "ds_", "s_load", "s_buffer_load"))


def edits_from_options(hide_wait: list[int], move: list[tuple[int, int]], waves_per_simd: int | None, result) -> list[Edit]:
    """The edits of ``attlens whatif --hide-wait PC --move PC:BEFORE_PC --waves-per-simd N``
    (checked; UsageError names the first bad one)."""
    out = [Edit("hide-wait", pc=int(p)) for p in hide_wait or []]
    out += [Edit("move", pc=int(a), before_pc=int(b)) for a, b in move or []]
    if waves_per_simd is not None:
        out.append(Edit("waves-per-simd", waves_per_simd=int(waves_per_simd)))
    for e in out:
        check_edit(result, e)
    return out


def compile_edits(s, result, edits: list[Edit], early_mask=None) -> tuple[Spec, list[str]]:
    """The replay spec of ``edits`` and notes on what they did (moves that
    found no place, an early-exit edit with no early waves)."""
    notes: list[str] = []
    hidden = frozenset(e.pc for e in edits if e.kind == "hide-wait")
    pref = frozenset(e.pc for e in edits if e.kind == "prefetch")
    skew = [e for e in edits if e.kind == "barrier-skew"]
    no_skew = None if any(e.pc is None for e in skew) else frozenset(e.pc for e in skew)
    wps = [e.waves_per_simd for e in edits if e.kind == "waves-per-simd"]
    spec = Spec(hidden_wait_pcs=hidden, prefetched_pcs=pref, no_skew_barrier_pcs=no_skew, waves_per_simd=max(wps) if wps else None)
    moves = [e for e in edits if e.kind == "move"]
    if moves:
        spec.order, spec.moved_recs, n_unplaced = _move_order(s, result.dispatch.records.wave, moves)
        if n_unplaced:
            notes.append(f"{n_unplaced} execution(s) of the moved op(s) had no earlier execution of the target pc in their iteration and stay in place")
    if any(e.kind == "early-exit" for e in edits):
        if early_mask is None or not early_mask.any():
            notes.append("early-exit: no traced wave exited early; nothing removed")
        else:
            spec.removed = np.asarray(early_mask, dtype=bool)
    return spec, notes


def _move_order(s, wave_of_rec: np.ndarray, moves: list[Edit]):
    n = len(s.pc)
    key = np.arange(n, dtype=np.float64)
    moved = unplaced = 0
    for e in moves:
        recs = np.flatnonzero(s.pc == e.pc)
        targets = np.flatnonzero(s.pc == e.before_pc)
        if not len(recs):
            continue
        j = np.searchsorted(targets, recs) - 1
        p = np.where(j >= 0, targets[np.maximum(j, 0)], -1)
        # the op's previous execution in the same wave: the target must come after it (same iteration)
        prev = np.r_[-1, recs[:-1]]
        prev = np.where(np.r_[False, wave_of_rec[recs[1:]] == wave_of_rec[recs[:-1]]], prev, -1)
        ok = (p >= 0) & (wave_of_rec[np.maximum(p, 0)] == wave_of_rec[recs]) & (p > prev)
        # moved ops keep their order among themselves, just before the target
        key[recs[ok]] = p[ok] - 0.5 + (recs[ok] - p[ok]) / (2.0 * (n + 1))
        moved += int(ok.sum())
        unplaced += int((~ok).sum())
    return np.argsort(key, kind="stable"), moved, unplaced
