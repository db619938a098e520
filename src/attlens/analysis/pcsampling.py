"""PC samples joined to a thread trace: per traced instruction, why its waves
stalled (docs/pcsampling.md).

The join, in order of trust:

- ``code-object-id`` — samples of the traced run (its own results.json, or
  one whose ``att_filenames`` name this capture's agent and dispatch), whose
  code object ids and the kernel symbol agree with the trace: a sample's ELF
  address is ``code_object_offset + (load_base − load_delta)`` of its code
  object (computed, never assumed 0) and must be the ``Vaddr`` of a traced
  instruction. Scope ``traced``: only samples of the traced dispatch on the
  traced SE/CU (``hw_id``); ``kernel``: every sample of the kernel's code.
- ``symbol-offset`` — samples of another run (or of an unknown one): the
  kernel is found by name in that run's symbols, a sample's offset from the
  symbol's entry is matched to the same offset from the traced kernel's
  entry, and the instruction texts of both runs are compared. Confidence =
  share of checked samples whose texts agree; below :data:`MIN_TEXT_AGREEMENT`
  the join is refused (the code differs), with no text to check it is
  :data:`UNVERIFIED_CONFIDENCE`.
- ``instruction-text`` — a CSV of the traced run (no code object, no
  address): samples of the traced dispatch whose instruction text names one
  traced instruction; text found at several pcs is left out (ambiguous).
- ``none`` — refused, with the reason; rows then carry no sample figures.

Every sample that is not joined is counted under the reason it was left out.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from attlens.io.pcsampling import ARB_PIPES, METHODS, REASONS
from attlens.results import brief_repr

MIN_TEXT_AGREEMENT = 0.9  # below: the runs' code differs, the join is refused
UNVERIFIED_CONFIDENCE = 0.5  # symbol and offset match, but no instruction text to check them
MIN_TEXT_ATTRIBUTED = 0.5  # instruction-text join: below this share of samples located, refused
SCOPES = ("traced", "kernel")
EXCLUDED = ("other_dispatches", "outside_traced_cus", "unknown_code_object", "other_code_objects", "outside_kernel",
            "not_on_instruction", "ambiguous_text", "text_not_in_kernel")


def normalize_isa(text: str) -> str:
    """Instruction text compared across tools: no comment, one space per
    separator, lower case."""
    t = text.split("//", 1)[0].split(";", 1)[0].replace(",", ", ")
    return " ".join(t.split()).lower()


_BRANCH = re.compile(r"^s_(c?branch|call|setpc|swappc)")


def same_instruction(a: str, b: str) -> bool:
    """Two disassemblies of one instruction: equal text, or the same branch
    mnemonic (branch targets are printed as labels by one tool and as offsets
    by another)."""
    na, nb = normalize_isa(a), normalize_isa(b)
    if na == nb:
        return True
    ma, mb = na.split(" ", 1)[0], nb.split(" ", 1)[0]
    return ma == mb and bool(_BRANCH.match(ma))


@brief_repr("mode", "scope", "confidence", "same_run", ("joined", lambda j: j.joined), ("in_file", lambda j: j.counts.get("in_file")))
@dataclass
class PcSamplingJoin:
    source: dict  # {path, format, methods}
    mode: str  # code-object-id | symbol-offset | instruction-text | none
    scope: str  # traced | kernel
    same_run: bool | None
    confidence: float  # of the attribution (1 = ids of one run, checked)
    reason: str  # why this mode was taken, or why the join was refused
    counts: dict  # in_file, joined, excluded{...}, hw_id_unknown
    samples: np.ndarray  # int64 per pc of the code listing
    issued: np.ndarray  # int64 per pc; -1 where unknown (host-trap samples only)
    stalled: np.ndarray  # int64 per pc (0 where unknown)
    reasons: np.ndarray  # int64 [pc, len(REASONS)]: stalled samples by reason
    issue_known: bool  # some joined sample says whether its wave issued (stochastic, viewer)
    load: list[dict] = field(default_factory=list)  # per code object: load_base, load_delta, vaddr_minus_offset
    text_check: dict | None = None  # {checked, agree}
    cu_filter: dict = field(default_factory=dict)  # {applied, traced: [[se, cu]], ses_per_chiplet, note}
    arbiter: dict | None = None  # share of joined stochastic samples with each pipe issuing / stalled
    wave_count_mean: float | None = None
    lanes_mean: float | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def joined(self) -> int:
        return int(self.samples.sum())

    @property
    def total_stalled(self) -> int:
        return int(self.stalled.sum())

    def reason_counts(self, pcs=None) -> dict[str, int]:
        r = self.reasons if pcs is None else self.reasons[np.asarray(list(pcs), dtype=np.int64)]
        tot = r.sum(axis=0)
        return {REASONS[k]: int(tot[k]) for k in np.argsort(-tot, kind="stable").tolist() if tot[k]}

    def row(self, pcs) -> dict:
        """The ``pc_samples`` object of one instruction (``pcs`` = [pc]) or source line."""
        idx = np.asarray(list(pcs), dtype=np.int64)
        n = int(self.samples[idx].sum())
        known = bool(self.issue_known) and bool((self.issued[idx] >= 0).any()) if n else self.issue_known
        stalled = int(self.stalled[idx].sum()) if known else None
        reasons = self.reason_counts(idx) if known else {}
        top = next(iter(reasons), None)
        return {
            "samples": n,
            "share": round(n / self.joined, 6) if self.joined else 0.0,
            "issued": int(self.issued[idx][self.issued[idx] > 0].sum()) if known else None,
            "stalled": stalled,
            "reasons": reasons,
            "top_reason": top,
            "top_reason_share": round(reasons[top] / stalled, 6) if top and stalled else None,
        }

    def to_dict(self) -> dict:
        """The ``pc_sampling`` object of ``attlens.analyze``."""
        stalled = self.total_stalled if self.issue_known and self.joined else None
        reasons = self.reason_counts() if stalled is not None else {}
        return {
            "source": self.source,
            "join": {"mode": self.mode, "scope": self.scope, "same_run": self.same_run, "confidence": self.confidence,
                     "reason": self.reason, "load": self.load, "text_check": self.text_check, "cu_filter": self.cu_filter},
            "samples": {**self.counts, "joined": self.joined},
            "issued": int(self.issued[self.issued > 0].sum()) if stalled is not None else None,
            "stalled": stalled,
            "reasons": reasons,
            "reason_shares": {k: round(v / stalled, 6) for k, v in reasons.items()} if stalled else {},
            "arbiter": self.arbiter,
            "wave_count_mean": None if self.wave_count_mean is None else round(self.wave_count_mean, 3),
            "active_lanes_mean": None if self.lanes_mean is None else round(self.lanes_mean, 3),
            "warnings": self.warnings,
            "notes": self.notes,
        }


# ---------------------------------------------------------------------------
# the join
# ---------------------------------------------------------------------------


def join_samples(dispatch, table, scope: str = "traced") -> PcSamplingJoin:
    """Join a :class:`~attlens.io.pcsampling.PcSampleTable` to a loaded dispatch."""
    from attlens.errors import UsageError

    if scope not in SCOPES:
        raise UsageError(f"scope={scope!r}: expected one of {', '.join(SCOPES)}")
    j = _Join(dispatch, table, scope)
    return j.run()


class _Join:
    def __init__(self, d, t, scope: str):
        self.d, self.t, self.scope = d, t, scope
        code = d.code
        self.n_pc = code.size
        self.instr = np.flatnonzero(code.instruction_mask)
        self.keep = np.ones(t.rows, dtype=bool)  # samples still in play
        self.pc = np.full(t.rows, -1, dtype=np.int64)  # joined pc per sample
        self.excluded = dict.fromkeys(EXCLUDED, 0)
        self.warnings = list(t.warnings)
        self.notes = list(t.notes)
        self.load: list[dict] = []
        self.text_check = None
        self.cu_filter: dict = {"applied": False, "traced": [], "ses_per_chiplet": None, "note": ""}
        self.hw_unknown = 0

    # -- helpers -------------------------------------------------------------
    def drop(self, mask: np.ndarray, why: str) -> None:
        m = mask & self.keep
        self.excluded[why] += int(self.t.count[m].sum())
        self.keep &= ~mask

    def refuse(self, reason: str, same_run) -> PcSamplingJoin:
        self.keep[:] = False
        self.pc[:] = -1
        return self.result("none", same_run, 0.0, reason)

    def kernel_entry_vaddr(self) -> int | None:
        code = self.d.code
        if code.labels:
            return int(code.vaddr[code.labels[0][0]])
        return int(code.vaddr[self.instr[0]]) if len(self.instr) else None

    # -- run identity --------------------------------------------------------
    def same_run(self) -> tuple[bool | None, str]:
        t, d = self.t, self.d
        own = {os.path.realpath(f) for f in d.rocprof_files}
        if os.path.realpath(t.path) in own:
            return True, "the samples are in the traced run's own results.json"
        handle, disp = d.resources.agent_handle, d.resources.dispatch_id
        if handle is not None and disp is not None:
            pat = re.compile(rf"_{handle}_shader_engine_\d+_{disp}\.att$")
            if any(pat.search(n) for n in t.att_filenames):
                return True, f"the samples' results.json lists this capture's thread-trace files (agent {handle}, dispatch {disp})"
        if t.att_filenames:
            return False, "the samples' results.json lists thread-trace files of other dispatches or agents"
        return None, "nothing ties the samples' run to the traced run (not its results.json, no matching att_filenames)"

    def ids_agree(self) -> tuple[bool, str]:
        """Same-run ids checked against the trace: the kernel's code object is
        known to the samples' run and the kernel symbol sits where the trace's
        first instruction is."""
        t, code = self.t, self.d.code
        cos = {c["id"]: c for c in t.code_objects}
        att_cos = sorted(set(code.codeobj[self.instr].tolist()))
        missing = [c for c in att_cos if c not in cos]
        if missing:
            return False, f"code object {missing[0]} of the trace is not in the samples' code_objects"
        syms = [s for s in t.symbol(self.d.kernel_name) if s["code_object_id"] in att_cos]
        entry = self.kernel_entry_vaddr()
        for s in syms:
            co = cos[s["code_object_id"]]
            if s.get("entry_offset") is None or co["load_base"] is None or co["load_delta"] is None:
                continue
            vaddr = s["entry_offset"] + co["load_base"] - co["load_delta"]
            if vaddr != entry:
                return False, (f"symbol {self.d.kernel_name} starts at ELF address {vaddr:#x} in the samples' run but the trace's "
                               f"kernel starts at {entry:#x}")
        if not syms and t.kernel_symbols:
            return False, f"no kernel symbol {self.d.kernel_name!r} in code object {att_cos[0]} of the samples' run"
        return True, ""

    # -- scope filters ---------------------------------------------------------
    def filter_dispatch(self) -> None:
        disp = self.d.resources.dispatch_id
        if self.scope != "traced" or disp is None:
            return
        known = self.t.dispatch >= 0
        self.drop(known & (self.t.dispatch != disp), "other_dispatches")

    def filter_cus(self) -> None:
        if self.scope != "traced":
            self.cu_filter["note"] = "scope kernel: samples of every CU are kept"
            return
        t, w = self.t, self.d.waves
        traced = sorted({(int(se), int(cu)) for se, cu in zip(w.se.tolist(), w.cu.tolist()) if cu >= 0})
        self.cu_filter["traced"] = [list(x) for x in traced]
        has_hw = (t.se >= 0) & (t.cu >= 0)
        if not has_hw.any():
            self.cu_filter["note"] = "the samples carry no hw_id: every CU is kept"
            return
        spx = self.ses_per_chiplet()
        if spx is None:
            self.cu_filter["note"] = ("shader engines per chiplet unknown (no agent with num_shader_banks and num_xcc in the "
                                      "samples' run): every CU is kept")
            return
        self.cu_filter["ses_per_chiplet"] = spx
        gse = np.maximum(t.chiplet, 0).astype(np.int64) * spx + t.se
        key = gse * 4096 + t.cu
        want = np.array([se * 4096 + cu for se, cu in traced], dtype=np.int64)
        inside = np.isin(key, want) & (t.sa <= 0)
        self.drop(has_hw & ~inside, "outside_traced_cus")
        self.hw_unknown = int(t.count[~has_hw & self.keep].sum())
        self.cu_filter["applied"] = True
        self.cu_filter["note"] = ("kept: samples whose hw_id is a traced (SE, CU) in shader array 0, SE = chiplet × "
                                  f"{spx} + shader_engine_id")

    def ses_per_chiplet(self) -> int | None:
        agents = self.t.agents
        handle = self.d.resources.agent_handle
        pick = [a for a in agents if a.get("handle") == handle] or agents
        vals = {a["shader_engines"] // a["num_xcc"] for a in pick if a.get("shader_engines") and a.get("num_xcc")}
        return vals.pop() if len(vals) == 1 else None

    # -- locating samples ------------------------------------------------------
    def place_by_vaddr(self, sel: np.ndarray, vaddr: np.ndarray, co: int) -> None:
        """Samples ``sel`` (of code object ``co``) at ELF addresses ``vaddr`` → pcs."""
        code = self.d.code
        pcs = self.instr[code.codeobj[self.instr] == co]
        if not len(pcs):
            return
        va = code.vaddr[pcs]
        order = np.argsort(va, kind="stable")
        sv, sp = va[order], pcs[order]
        idx = np.searchsorted(sv, vaddr)
        idx_c = np.minimum(idx, len(sv) - 1)
        exact = sv[idx_c] == vaddr
        rows = np.flatnonzero(sel)
        self.pc[rows[exact]] = sp[idx_c[exact]]
        lo, hi = int(sv[0]), int(sv[-1]) + 16  # the last instruction is at most 16 bytes long
        inside = (vaddr >= lo) & (vaddr < hi)
        miss = np.zeros(self.t.rows, dtype=bool)
        miss[rows[~exact & inside]] = True
        self.drop(miss, "not_on_instruction")
        out = np.zeros(self.t.rows, dtype=bool)
        out[rows[~inside]] = True
        self.drop(out, "outside_kernel")

    def check_text(self) -> tuple[int, int]:
        """(samples checked, samples whose sampled text is the traced instruction's)."""
        t, isa = self.t, self.d.code.isa
        m = self.keep & (self.pc >= 0) & (t.inst >= 0)
        width = len(t.instructions) + 1
        key = self.pc[m] * width + t.inst[m].astype(np.int64)
        if not len(key):
            self.text_check = {"checked": 0, "agree": 0}
            return 0, 0
        uniq, inv = np.unique(key, return_inverse=True)  # each (pc, text) pair compared once
        ok = np.array([same_instruction(isa[k // width], t.instructions[k % width]) for k in uniq.tolist()], dtype=bool)
        cnt = t.count[m]
        checked, agree = int(cnt.sum()), int(cnt[ok[inv.reshape(-1)]].sum())
        self.text_check = {"checked": checked, "agree": agree}
        return checked, agree

    # -- the modes -------------------------------------------------------------
    def by_code_object_id(self) -> None:
        t = self.t
        cos = {c["id"]: c for c in t.code_objects}
        att_cos = set(self.d.code.codeobj[self.instr].tolist())
        known = np.isin(t.code_object, np.array(sorted(cos), dtype=np.int64))
        self.drop(~known, "unknown_code_object")
        self.drop(~np.isin(t.code_object, np.array(sorted(att_cos), dtype=np.int64)), "other_code_objects")
        for co in sorted(att_cos):
            c = cos[co]
            if c["load_base"] is None or c["load_delta"] is None:
                sel = self.keep & (t.code_object == co)
                self.drop(sel, "unknown_code_object")
                self.warnings.append(f"code object {co}: no load_base/load_delta in the samples' run; its samples are left out")
                continue
            shift = c["load_base"] - c["load_delta"]
            self.load.append({"code_object_id": co, "load_base": c["load_base"], "load_delta": c["load_delta"],
                              "vaddr_minus_offset": shift})
            sel = self.keep & (t.code_object == co) & (t.offset >= 0)
            self.place_by_vaddr(sel, t.offset[sel] + shift, co)

    def by_symbol_offset(self) -> str | None:
        """Another run: place by offset from the kernel symbol's entry; returns a refusal reason or None."""
        t, d = self.t, self.d
        entry = self.kernel_entry_vaddr()
        syms = t.symbol(d.kernel_name)
        if t.format == "rcv-ui-output":
            syms = [s for s in syms if s.get("vaddr") is not None]
        else:
            syms = [s for s in syms if s.get("entry_offset") is not None]
        if not syms:
            return f"no kernel symbol named {d.kernel_name!r} with an entry address in the samples' run"
        if len({(s["code_object_id"], s.get("entry_offset"), s.get("vaddr")) for s in syms}) > 1:
            return f"kernel {d.kernel_name!r} is in {len(syms)} places of the samples' run; which one ran is not known"
        s = syms[0]
        co = s["code_object_id"]
        if t.format != "rcv-ui-output":
            known = np.isin(t.code_object, np.array(sorted(c["id"] for c in t.code_objects), dtype=np.int64))
            self.drop(~known, "unknown_code_object")
        self.drop(t.code_object != co, "other_code_objects")
        if t.format == "rcv-ui-output":  # the viewer gives ELF addresses of its own listing
            sel = self.keep & (t.vaddr >= 0)
            vaddr = t.vaddr[sel] - s["vaddr"] + entry
        else:
            sel = self.keep & (t.offset >= 0)
            vaddr = t.offset[sel] - s["entry_offset"] + entry
        att_co = int(d.code.codeobj[self.instr[0]])
        self.load.append({"code_object_id": co, "kernel_entry_in_samples": s.get("entry_offset", s.get("vaddr")),
                          "kernel_entry_vaddr_in_trace": entry, "trace_code_object_id": att_co})
        self.place_by_vaddr(sel, vaddr, att_co)
        return None

    def by_text(self) -> None:
        t, code = self.t, self.d.code
        groups: dict[str, list[int]] = {}
        for pc in self.instr.tolist():
            groups.setdefault(normalize_isa(code.isa[pc]), []).append(pc)
        target = np.full(len(t.instructions), -1, dtype=np.int64)  # inst index -> pc, -2 ambiguous
        for i, text in enumerate(t.instructions):
            pcs = groups.get(normalize_isa(text))
            if pcs:
                target[i] = pcs[0] if len(pcs) == 1 else -2
        tgt = np.where(t.inst >= 0, target[np.maximum(t.inst, 0)] if len(target) else -1, -1)
        amb = np.zeros(t.rows, dtype=bool)
        amb[tgt == -2] = True
        self.drop(amb, "ambiguous_text")
        self.drop(tgt == -1, "text_not_in_kernel")
        self.pc[self.keep] = tgt[self.keep]

    # -- assembling ------------------------------------------------------------
    def run(self) -> PcSamplingJoin:
        t, d = self.t, self.d
        if not len(self.instr):
            return self.refuse("the trace lists no instruction", None)
        if t.format == "rcv-ui-output":
            why = self.by_symbol_offset()
            if why:
                return self.refuse(why, False)
            return self.verified("symbol-offset", False, "a rocprof-compute-viewer listing of its own: matched by kernel name "
                                 "and offset from the kernel's first instruction, checked by instruction text")
        same, why_run = self.same_run()
        if t.format == "rocprofv3-csv":
            return self.csv(same, why_run)
        if same:
            ok, why = self.ids_agree()
            if ok:
                self.filter_dispatch()
                self.filter_cus()
                self.by_code_object_id()
                checked, agree = self.check_text()
                if checked and agree < MIN_TEXT_AGREEMENT * checked:
                    return self.refuse(f"{why_run}, but only {agree:,} of {checked:,} sampled instruction texts equal the traced "
                                       "instruction at that address: the addresses do not line up", True)
                conf = 1.0
                return self.result("code-object-id", True, conf, f"{why_run}; code object ids and the kernel symbol agree with the trace")
            self.notes.append(f"same run by its files, but {why}: joined by kernel symbol and offset instead")
            same = False
        self.scope_note_other_run()
        why = self.by_symbol_offset()
        if why:
            return self.refuse(f"{why_run}; {why}", same)
        return self.verified("symbol-offset", same, f"{why_run}: matched by kernel symbol and offset from its entry, checked by "
                             "instruction text")

    def scope_note_other_run(self) -> None:
        if self.scope == "traced":
            self.notes.append("samples of another run: dispatch ids and CUs of that run say nothing about the traced waves, "
                              "so every sample of the kernel is kept")
        self.scope = "kernel"

    def verified(self, mode: str, same, reason: str) -> PcSamplingJoin:
        checked, agree = self.check_text()
        if not checked:
            return self.result(mode, same, UNVERIFIED_CONFIDENCE, reason + " (no sampled instruction text to check it: unverified)")
        share = agree / checked
        if share < MIN_TEXT_AGREEMENT:
            return self.refuse(f"{reason}, but only {agree:,} of {checked:,} sampled instruction texts ({share:.0%}) equal the "
                               "traced instruction at the same offset: the kernel's code differs between the runs", same)
        return self.result(mode, same, round(share, 3), reason)

    def csv(self, same, why_run: str) -> PcSamplingJoin:
        t, d = self.t, self.d
        prefix_same = _csv_same_run(t.path, d.rocprof_files)
        if not (same or prefix_same):
            return self.refuse("a CSV of another (or an unknown) run carries no code object, address or kernel name: its samples "
                               "cannot be placed; use that run's results.json", same)
        if d.resources.dispatch_id is None:
            return self.refuse("a CSV has no address: its samples can only be placed within the traced dispatch, whose id is "
                               "unknown", True)
        if self.scope == "kernel":
            self.notes.append("a CSV names no kernel: only samples of the traced dispatch are used")
            self.scope = "traced"
        self.filter_dispatch()
        self.drop(t.code_object == -2, "unknown_code_object")  # rocprofv3's "Unrecognized code object id" comment
        self.cu_filter["note"] = "a CSV has no hw_id: every CU is kept"
        before = int(t.count[self.keep].sum())
        self.by_text()
        placed = int(t.count[self.keep].sum())
        if not before:
            return self.refuse("no sample of the traced dispatch in the CSV", True)
        share = placed / before
        if share < MIN_TEXT_ATTRIBUTED:
            return self.refuse(f"only {placed:,} of the traced dispatch's {before:,} samples have an instruction text found at "
                               "exactly one traced pc", True)
        return self.result("instruction-text", True, round(share, 3),
                           f"a CSV of the traced run (same run prefix as {os.path.basename(prefix_same or t.path)}): samples of the "
                           "traced dispatch placed by instruction text; text found at several pcs is left out")

    def result(self, mode: str, same, confidence: float, reason: str) -> PcSamplingJoin:
        t = self.t
        n = self.n_pc
        m = self.keep & (self.pc >= 0)
        pc, cnt = self.pc[m], t.count[m]
        samples = np.bincount(pc, weights=cnt, minlength=n).astype(np.int64)
        iss_mask = t.issued[m]
        issue_known = bool((iss_mask >= 0).any())
        issued = np.bincount(pc[iss_mask == 1], weights=cnt[iss_mask == 1], minlength=n).astype(np.int64)
        stall_m = iss_mask == 0
        stalled = np.bincount(pc[stall_m], weights=cnt[stall_m], minlength=n).astype(np.int64)
        r = t.reason[m]
        rm = stall_m & (r >= 0)
        reasons = np.bincount(pc[rm] * len(REASONS) + r[rm].astype(np.int64), weights=cnt[rm],
                              minlength=n * len(REASONS)).astype(np.int64).reshape(n, len(REASONS))
        # where no joined sample of a pc says whether it issued: unknown (-1)
        known_pc = np.bincount(pc[iss_mask >= 0], weights=cnt[iss_mask >= 0], minlength=n) > 0
        issued = np.where(known_pc | (samples == 0), issued, -1)
        counts = {"in_file": t.samples, "excluded": self.excluded, "hw_id_unknown": self.hw_unknown}
        methods = t.methods
        j = PcSamplingJoin(
            source={"path": t.path, "format": t.format, "methods": methods},
            mode=mode, scope=self.scope, same_run=same, confidence=confidence, reason=reason, counts=counts,
            samples=samples, issued=issued, stalled=stalled, reasons=reasons, issue_known=issue_known,
            load=self.load, text_check=self.text_check, cu_filter=self.cu_filter,
            warnings=self.warnings, notes=self.notes,
        )
        stoch = m & (t.method == METHODS.index("stochastic"))
        if stoch.any():
            w = t.count[stoch]
            tot = float(w.sum())
            j.arbiter = {
                "issue": {p: round(float(w[(t.arb_issue[stoch] >> b) & 1 == 1].sum()) / tot, 6) for b, p in enumerate(ARB_PIPES)},
                "stall": {p: round(float(w[(t.arb_stall[stoch] >> b) & 1 == 1].sum()) / tot, 6) for b, p in enumerate(ARB_PIPES)},
            }
        wc = m & (t.wave_count >= 0)
        if wc.any():
            j.wave_count_mean = float(np.average(t.wave_count[wc], weights=t.count[wc]))
        ln = m & (t.lanes >= 0)
        if ln.any():
            j.lanes_mean = float(np.average(t.lanes[ln], weights=t.count[ln]))
        if mode != "none" and samples.sum() == 0:
            j.notes.append("no sample was left after the join (see samples.excluded); try scope kernel "
                           "(--pc-sampling-scope kernel)" if self.scope == "traced" else "no sample was left after the join")
        return j


def _run_prefix(name: str, suffixes) -> str | None:
    for s in suffixes:
        if name.endswith(s):
            return name[: -len(s)].rstrip("_")
    return None


def _csv_same_run(csv_path: str, rocprof_files) -> str | None:
    """A run output of the capture's run (read by the context lookup) in the
    CSV's folder with the same file-name prefix, if any."""
    from attlens.model.rundirs import RUN_OUTPUT_SUFFIXES

    folder = os.path.realpath(os.path.dirname(csv_path))
    pfx = _run_prefix(os.path.basename(csv_path), ("pc_sampling_stochastic.csv", "pc_sampling_host_trap.csv"))
    if pfx is None:
        return None
    for f in rocprof_files:
        if os.path.realpath(os.path.dirname(f)) == folder and _run_prefix(os.path.basename(f), RUN_OUTPUT_SUFFIXES) == pfx:
            return f
    return None


# ---------------------------------------------------------------------------
# attaching to the analysis
# ---------------------------------------------------------------------------


def attach_pc_samples(hot, join: PcSamplingJoin) -> None:
    """Put each instruction's and each source line's ``pc_samples`` object on
    the hotspot rows (only when the join placed samples)."""
    if join is None or join.mode == "none":
        return
    for h in hot.instructions:
        h.pc_samples = join.row([h.pc])
    for ln in hot.lines:
        ln.pc_samples = join.row(ln.pcs)
