"""PC samples on their own (no thread trace): per instruction and per source
line, how often it was sampled, issued and stalled and why
(``attlens pcsampling PATH``, and ``attlens analyze`` on a PC-sampling-only
``ui_output`` directory; docs/pcsampling.md).

Instructions are keyed by what the format gives: the viewer's listing (pc
index, code object, ``Vaddr``), a results.json's code object and offset
(each attributed to the kernel symbol whose entry is the last one at or
before it), or a CSV's instruction text and comment (it has no address).
There are no cycles here: a PC-sampling capture has no wave records, so every
cycle figure is unavailable (null), never zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attlens.io.pcsampling import REASONS
from attlens.results import brief_repr

SCHEMA = "attlens.pc_sampling"
NO_CYCLES = "a PC-sampling capture has no thread trace: no wave records, so no cycles (latency, stall, idle are unavailable)"


def _mix(samples: int, issued: int, stalled: int, reasons: np.ndarray, issue_known: bool, total: int) -> dict:
    rs = {REASONS[k]: int(reasons[k]) for k in np.argsort(-reasons, kind="stable").tolist() if reasons[k]} if issue_known else {}
    top = next(iter(rs), None)
    return {"samples": samples, "share": round(samples / total, 6) if total else 0.0,
            "issued": issued if issue_known else None, "stalled": stalled if issue_known else None, "reasons": rs,
            "top_reason": top, "top_reason_share": round(rs[top] / stalled, 6) if top and stalled else None}


@brief_repr(("format", lambda v: v.source["format"]), "kernel", "grouping", ("rows", lambda v: len(v.rows)),
            ("samples", lambda v: v.totals["samples"]))
@dataclass
class PcSamplingView:
    source: dict  # {path, format, methods}
    kernel: str | None  # the kernel the rows are restricted to (None: every kernel)
    dispatch: int | None
    grouping: str  # listing | code-object-offset | instruction-text
    rows: list[dict]  # instructions, most sampled first
    lines: list[dict]  # source lines, most sampled first
    totals: dict
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_pandas(self, table: str = "instructions"):
        """``instructions`` or ``lines`` as a DataFrame, ``pc_samples`` spread into columns."""
        from attlens.analysis.analyze import _flat_samples
        from attlens.errors import UsageError
        from attlens.results import dataframe

        if table not in ("instructions", "lines"):
            raise UsageError(f"table={table!r}: expected instructions or lines")
        rows = self.rows if table == "instructions" else self.lines
        return dataframe([_flat_samples(dict(r, pc_samples=dict(r["pc_samples"]))) for r in rows])

    def to_dict(self, top: int | None = None) -> dict:
        """The ``attlens.pc_sampling`` object (``attlens pcsampling PATH --json``)."""
        from attlens.jsondoc import header, rows, top_or_none

        k = top_or_none(top)
        return {**header(SCHEMA), "source": self.source, "kernel": self.kernel, "dispatch": self.dispatch, "grouping": self.grouping,
                "cycles": None, "cycles_unavailable": NO_CYCLES, "topk": k, "totals": self.totals,
                "instructions": rows(self.rows, k), "lines": rows(self.lines, k), "warnings": self.warnings, "notes": self.notes}


def _kernel_of(table) -> tuple[np.ndarray, list[str]]:
    """Per sample: index into the returned names of the kernel whose entry is
    the last at or before its offset in its code object (-1: none)."""
    names: list[str] = []
    out = np.full(table.rows, -1, dtype=np.int64)
    by_co: dict[int, list[tuple[int, int]]] = {}
    for s in table.kernel_symbols:
        if s.get("entry_offset") is None:
            continue
        names.append(s["name"])
        by_co.setdefault(s["code_object_id"], []).append((s["entry_offset"], len(names) - 1))
    for co, entries in by_co.items():
        entries.sort()
        starts = np.array([e for e, _ in entries], dtype=np.int64)
        ids = np.array([i for _, i in entries], dtype=np.int64)
        sel = np.flatnonzero((table.code_object == co) & (table.offset >= 0))
        pos = np.searchsorted(starts, table.offset[sel], side="right") - 1
        ok = pos >= 0
        out[sel[ok]] = ids[pos[ok]]
    return out, names


def pc_sampling_view(table, kernel: str | None = None, dispatch: int | None = None) -> PcSamplingView:
    """Group a :class:`~attlens.io.pcsampling.PcSampleTable` by instruction and source line."""
    from attlens.errors import UsageError
    from attlens.model.dispatch import parse_source

    t = table
    keep = np.ones(t.rows, dtype=bool)
    notes = list(t.notes)
    if dispatch is not None:
        if not (t.dispatch >= 0).any():
            raise UsageError(f"--dispatch {dispatch}: {t.format} samples carry no dispatch id")
        keep &= t.dispatch == dispatch
    kernel_idx, names = _kernel_of(t) if t.format == "rocprofv3-json" else (np.full(t.rows, -1), [])
    if kernel is not None:
        if t.format == "rocprofv3-json":
            wanted = [i for i, n in enumerate(names) if n == kernel or kernel in n]
            if not wanted:
                raise UsageError(f"--kernel {kernel}: no kernel symbol of that name in {t.path}")
            keep &= np.isin(kernel_idx, wanted)
        elif t.format == "rcv-ui-output":
            if not any(kernel == s["name"] or kernel in s["name"] for s in t.kernel_symbols):
                raise UsageError(f"--kernel {kernel}: the listing is of {t.kernel_symbols[0]['name'] if t.kernel_symbols else 'an unnamed kernel'}")
        else:
            raise UsageError("--kernel: a PC-sampling CSV names no kernel (select with --dispatch, or use the run's results.json)")
    if t.format == "rcv-ui-output":
        grouping, key_cols = "listing", (t.inst,)
    elif t.format == "rocprofv3-json":
        grouping, key_cols = "code-object-offset", (t.code_object, t.offset)
    else:
        grouping, key_cols = "instruction-text", (t.inst, t.comment)
    idx = np.flatnonzero(keep)
    if not len(idx):
        raise UsageError("no sample left after --kernel / --dispatch")
    keys = np.stack([c[idx].astype(np.int64) for c in key_cols], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    g = len(uniq)
    cnt = t.count[idx]
    iss, rsn = t.issued[idx], t.reason[idx]
    samples = np.bincount(inv, weights=cnt, minlength=g).astype(np.int64)
    issued = np.bincount(inv[iss == 1], weights=cnt[iss == 1], minlength=g).astype(np.int64)
    stalled = np.bincount(inv[iss == 0], weights=cnt[iss == 0], minlength=g).astype(np.int64)
    rm = (iss == 0) & (rsn >= 0)
    reasons = np.bincount(inv[rm] * len(REASONS) + rsn[rm].astype(np.int64), weights=cnt[rm],
                          minlength=g * len(REASONS)).astype(np.int64).reshape(g, len(REASONS))
    first = np.full(g, -1, dtype=np.int64)
    first[inv[::-1]] = idx[::-1]  # a representative sample of each group
    known = bool((iss >= 0).any())
    total = int(samples.sum())
    rows = []
    for gi in np.argsort(-samples, kind="stable").tolist():
        r = int(first[gi])
        inst, com = int(t.inst[r]), int(t.comment[r])
        row = {
            "pc": inst if grouping == "listing" else None,
            "code_object": int(t.code_object[r]) if t.code_object[r] >= 0 else None,
            "offset": int(t.offset[r]) if t.offset[r] >= 0 else None,
            "vaddr": int(t.vaddr[r]) if t.vaddr[r] >= 0 else None,
            "kernel": names[kernel_idx[r]] if kernel_idx[r] >= 0 else None,
            "isa": t.instructions[inst] if 0 <= inst < len(t.instructions) else None,
            "source": (t.comments[com] or None) if 0 <= com < len(t.comments) else None,
            "latency": None, "stall": None, "idle": None,
            "pc_samples": _mix(int(samples[gi]), int(issued[gi]), int(stalled[gi]), reasons[gi], known, total),
        }
        rows.append(row)
    lines = _lines(rows, reasons_of={id(r): reasons[gi] for r, gi in zip(rows, np.argsort(-samples, kind="stable").tolist())},
                   known=known, total=total, parse=parse_source)
    tot_reasons = reasons.sum(axis=0)
    st = int(stalled.sum())
    totals = {**_mix(total, int(issued.sum()), st, tot_reasons, known, total), "in_file": t.samples, "rows": len(rows)}
    totals.pop("share")
    totals["reason_shares"] = {k: round(v / st, 6) for k, v in totals["reasons"].items()} if st else {}
    if t.format == "rcv-ui-output" and kernel is None and t.kernel_symbols:
        kernel = t.kernel_symbols[0]["name"]
    return PcSamplingView({"path": t.path, "format": t.format, "methods": t.methods}, kernel, dispatch, grouping, rows, lines,
                          totals, list(t.warnings), notes)


def _lines(rows, reasons_of, known: bool, total: int, parse) -> list[dict]:
    groups: dict[str, dict] = {}
    for r in rows:
        own, _chain = parse(r["source"] or "")
        key = str(own) if own is not None and own.line is not None else "(no source line)"
        gr = groups.setdefault(key, {"source": key, "file": own.file if own is not None and own.line is not None else None,
                                     "line": own.line if own is not None else None, "instructions": 0,
                                     "_n": [0, 0, 0], "_r": np.zeros(len(REASONS), dtype=np.int64)})
        gr["instructions"] += 1
        ps = r["pc_samples"]
        gr["_n"][0] += ps["samples"]
        gr["_n"][1] += ps["issued"] or 0
        gr["_n"][2] += ps["stalled"] or 0
        gr["_r"] += reasons_of[id(r)]
    out = []
    for gr in groups.values():
        n, rr = gr.pop("_n"), gr.pop("_r")
        gr["latency"] = gr["stall"] = gr["idle"] = None
        gr["pc_samples"] = _mix(n[0], n[1], n[2], rr, known, total)
        out.append(gr)
    out.sort(key=lambda x: -x["pc_samples"]["samples"])
    return out
