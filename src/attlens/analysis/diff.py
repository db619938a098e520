"""Diff two captures of one kernel, robust to rebuilds.

An instruction's pc or address is no identity across builds, so attlens
compares at the level a developer changes: source lines (matched by file and
line, tolerant of different checkout prefixes) and, inside each line, the
instruction sites, matched by sequence alignment of their mnemonics
(difflib's longest-matching-block alignment), so an inserted or removed
instruction does not shift every match after it. All cycle figures are
normalized per traced wave (both raw totals are kept).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path


from attlens.analysis.taxonomy import CLASSES, WAIT
from attlens.errors import Incomparable, UsageError
from attlens.results import brief_repr

NO_SOURCE = "(no source)"
LINE_COLUMNS = ["line", "before_line", "latency_before", "latency_after", "delta", "relative", "stall_before", "stall_after",
                "dominant_before", "dominant_after"]


@dataclass
class Site:
    mnemonic: str
    isa: str
    latency: int
    stall: int
    hit: int
    pc: int


@brief_repr("label", "kernel", "target", "waves", "total_latency", "total_stall", ("lines", lambda s: len(s.line_sites)))
@dataclass
class Side:
    """One capture reduced to what a diff needs (from a capture or a JSON analysis)."""

    label: str
    kernel: str
    target: str | None
    grid: tuple | None
    workgroup: tuple | None
    waves: int
    shader_engines: list[int]
    cus: list[int]
    simds: list[int]
    total_latency: int
    total_stall: int
    class_stall: dict[str, int]
    class_latency: dict[str, int]
    line_sites: dict[str, list[Site]]  # "file:line" or NO_SOURCE -> sites in pc order
    line_class: dict[str, dict[str, int]]  # per line: class -> stall
    partial: bool = False  # some input of this capture was skipped (analyze exits 8)
    warnings: list[str] = field(default_factory=list)  # analyze's warnings about it
    plan: dict | None = None  # plan_summary() of the capture's plan (None: a JSON side, or not asked for)
    # False: its records carry no stall cycles (rocprofv2): its stall figures are unavailable (their zeros are not
    # measurements), so no stall delta is computed against it
    stall_recorded: bool = True

    def ref(self) -> dict:
        """The side as ``before`` / ``after`` of ``attlens.diff``."""
        return {"label": self.label, "kernel": self.kernel, "target": self.target, "waves": self.waves, "partial": self.partial}


def side_from_result(result, label: str) -> Side:
    d = result.dispatch
    lines: dict[str, list[Site]] = {}
    line_class: dict[str, dict[str, int]] = {}
    for h in result.hotspots.instructions:  # executed instructions, pc order
        key = h.source or NO_SOURCE
        lines.setdefault(key, []).append(Site(h.mnemonic, h.isa, h.latency, h.stall, h.hit, h.pc))
        lc = line_class.setdefault(key, {})
        for c, v in h.class_stall.items():
            lc[c] = lc.get(c, 0) + v
    b = result.breakdown
    f = result.quality.facts
    return Side(label, d.kernel_name, d.arch.target, d.resources.grid, d.resources.workgroup, d.waves.count, f.shader_engines, f.cus, f.simds,
                b.total_latency, b.total_stall, dict(b.by_class_stall), dict(b.by_class_latency), lines, line_class,
                bool(d.partial), list(result.warnings), stall_recorded=bool(getattr(d, "stall_recorded", True)))


def plan_summary(plan) -> dict:
    """What a diff compares of a capture's plan: its verdict and findings (rule,
    title, severity, share of traced wave-cycles at stake)."""
    from attlens.report.text import predicted_label

    v = getattr(plan, "verdict", None)
    return {"verdict": None if v is None else v.sentence, "kind": None if v is None else v.kind,
            "findings": [{"key": _finding_key(f), "rule": f.rule, "title": f.title, "severity": f.severity, "kind": f.kind,
                          "share_of_cycles": round(f.share_of_cycles, 6), "predicted_text": predicted_label(f)} for f in plan.findings]}


def _finding_key(f) -> str:
    # stall-class notes come one per class
    return f"{f.rule}:{f.evidence.get('class')}" if f.rule == "stall-class" else f.rule


def compare_plans(a: dict | None, b: dict | None) -> dict | None:
    """Findings present before and gone after (resolved), new after, and in both
    (with their shares of traced wave-cycles at stake, each side's own)."""
    if a is None or b is None:
        return None
    fa = {f["key"]: f for f in a["findings"]}
    fb = {f["key"]: f for f in b["findings"]}
    return {
        "before": {"verdict": a["verdict"], "kind": a["kind"]},
        "after": {"verdict": b["verdict"], "kind": b["kind"]},
        "resolved": [{"rule": f["rule"], "title": f["title"], "severity": f["severity"], "share_before": f["share_of_cycles"],
                      "predicted_before": f.get("predicted_text")} for k, f in fa.items() if k not in fb],
        "new": [{"rule": f["rule"], "title": f["title"], "severity": f["severity"], "share_after": f["share_of_cycles"]}
                for k, f in fb.items() if k not in fa],
        "persisting": [{"rule": f["rule"], "title_before": f["title"], "title_after": fb[k]["title"], "share_before": f["share_of_cycles"],
                        "share_after": fb[k]["share_of_cycles"], "predicted_before": f.get("predicted_text")} for k, f in fa.items() if k in fb],
    }


def side_from_json(path: Path) -> Side:
    from attlens.io.confine import user_path
    from attlens.io.jsonfile import read_json

    doc = read_json(user_path(path))  # regular file, size cap; truncated JSON is CorruptCapture
    if not isinstance(doc, dict) or doc.get("schema") != "attlens.analyze":
        raise UsageError(f"{path}: not an attlens.analyze JSON object")
    try:
        return _side_from_doc(doc, path)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        from attlens.errors import CorruptCapture

        raise CorruptCapture(f"{path}: an incomplete or edited attlens.analyze object (fields missing or of the wrong type)",
                             hint="save it again with attlens analyze --json --top 0") from None


def _num(v):
    """A number of a saved analysis (TypeError otherwise: the file was edited)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError
    return v


def _num_or_zero(v):
    """A stall figure of a saved analysis: null (not recorded, rocprofv2) counts as the records' 0."""
    return 0 if v is None else _num(v)


def _str(v, none_ok: bool = False):
    if v is None and none_ok:
        return None
    if not isinstance(v, str):
        raise TypeError
    return v


def _ints(v):
    if not isinstance(v, list):
        raise TypeError
    return [int(_num(x)) for x in v]


def _side_from_doc(doc: dict, path) -> Side:
    if doc["hotspots"].get("topk") is not None:
        raise UsageError(f"{path}: saved with --top {str(doc['hotspots']['topk'])[:20]}; a diff needs every instruction: save with --top 0")
    lines: dict[str, list[Site]] = {}
    line_class: dict[str, dict[str, int]] = {}
    # no stall recorded (rocprofv2): the stall ranking and figures are null; the rows are the latency ranking's,
    # their stall counted as the capture's own side counts it (the records' zeros)
    rows = doc["hotspots"]["instructions_by_stall"]
    if rows is None:
        rows = doc["hotspots"]["instructions_by_latency"]
    for h in sorted(rows, key=lambda x: _num(x["pc"])):
        key = _str(h["source"], none_ok=True) or NO_SOURCE
        lines.setdefault(key, []).append(Site(_str(h["mnemonic"]), _str(h["isa"]), _num(h["latency"]), _num_or_zero(h["stall"]), _num(h["hit"]), int(h["pc"])))
        lc = line_class.setdefault(key, {})
        for c, v in (h["class_stall"] or {}).items():
            lc[c] = lc.get(c, 0) + _num(v)
    cap, res, tot = doc["capture"], doc["resources"], doc["totals"]
    cls_s = {c: 0 for c in CLASSES}
    cls_l = {c: 0 for c in CLASSES}
    for row in doc["stall_by_class"]:
        if _str(row["class"]) in cls_s:
            cls_s[row["class"]] = _num_or_zero(row["stall"])
            cls_l[row["class"]] = _num(row["latency"])
    partial = cap["partial"]
    recorded = cap.get("stall_recorded", True)  # absent: saved before attlens said so (stall was recorded then)
    if not isinstance(partial, bool) or not isinstance(recorded, bool):
        raise TypeError
    return Side(str(path), _str(cap["kernel"]), _str(doc["target"]["name"], none_ok=True), tuple(_ints(res["grid"])) if res["grid"] else None,
                tuple(_ints(res["workgroup"])) if res["workgroup"] else None, int(_num(cap["waves"])), _ints(cap["shader_engines"]),
                _ints(cap["cus"]), _ints(cap["simds"]), _num(tot["latency"]), _num_or_zero(tot["stall"]), cls_s, cls_l, lines, line_class,
                partial, [_str(w) for w in doc["warnings"]], stall_recorded=recorded)


def load_side(path: str, rocprof_dir=None, with_plan: bool = False) -> Side:
    """A diff side from a capture or an ``attlens.analyze`` JSON file;
    ``with_plan``: a capture's side also carries its plan's summary (the plan
    needs the exposed-latency model, which the totals do not)."""
    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        return side_from_json(p)
    import attlens

    result = attlens.analyze(attlens.load(p, rocprof_dir=rocprof_dir), exposed=with_plan)
    side = side_from_result(result, str(p))
    if with_plan:
        from attlens.analysis.plan import make_plan

        side.plan = plan_summary(make_plan(result))
    return side


# ---------------------------------------------------------------- matching


def _split(key: str) -> tuple[str, str | None]:
    f, sep, ln = key.rpartition(":")
    return (f, ln) if sep and ln.isdigit() else (key, None)


def match_files(before: set[str], after: set[str]) -> dict[str, str]:
    """Map each before-file to an after-file: identical path, else the after-file
    with the same basename sharing the longest path suffix (different
    checkouts: /a/repo/k.py vs /b/work/repo/k.py)."""
    out = {}
    for f in before:
        if f in after:
            out[f] = f
            continue
        parts = Path(f).parts
        best, best_n = None, 0
        for g in after:
            gp = Path(g).parts
            n = 0
            while n < min(len(parts), len(gp)) and parts[-1 - n] == gp[-1 - n]:
                n += 1
            if n > best_n:
                best, best_n = g, n
        if best is not None:
            out[f] = best
    return out


@brief_repr("line", "kind", ("pc_before", lambda s: None if s.before is None else s.before.pc),
            ("pc_after", lambda s: None if s.after is None else s.after.pc), ("mnemonic", lambda s: (s.after or s.before).mnemonic))
@dataclass
class SiteChange:
    line: str
    before: Site | None
    after: Site | None
    moved_from: str | None = None  # matched in the second pass: the before-side line

    @property
    def kind(self) -> str:
        if self.before and self.after:
            return "moved" if self.moved_from is not None else "matched"
        return "removed" if self.before else "added"


@brief_repr("line", "latency_before", "latency_after", "delta", "dominant_before", "dominant_after")
@dataclass
class LineChange:
    line: str  # the after-side key when matched, else the side's own key
    before_line: str | None
    latency_before: float  # per wave
    latency_after: float
    stall_before: float | None  # None: that side records no stall cycles (rocprofv2)
    stall_after: float | None
    dominant_before: str | None
    dominant_after: str | None

    @property
    def delta(self) -> float:
        return self.latency_after - self.latency_before

    @property
    def relative(self) -> float | None:
        return None if not self.latency_before else self.delta / self.latency_before


@brief_repr(("kernel", lambda d: d.after.kernel), ("summary", lambda d: d.verdict.get("summary")),
            ("latency_per_wave_before", lambda d: d.verdict.get("latency_per_wave_before")),
            ("latency_per_wave_after", lambda d: d.verdict.get("latency_per_wave_after")), ("lines", lambda d: len(d.lines)),
            ("sites", lambda d: len(d.sites)))
@dataclass
class DiffResult:
    before: Side
    after: Side
    comparability: list[dict]  # {field, before, after, blocking}
    forced: bool
    normalization: str
    classes: list[dict]
    lines: list[LineChange]
    sites: list[SiteChange]
    site_totals: dict
    noise_floor: float | None
    noise_source: str | None
    verdict: dict = field(default_factory=dict)
    plans: dict | None = None  # compare_plans of the two sides' plans (None: a side has none)

    def moved_lines(self) -> list[dict]:
        """Sites whose source line changed, aggregated per (before line, after line), most latency after first."""
        agg: dict[tuple, list] = {}
        for s in self.sites:
            if s.kind == "moved":
                a = agg.setdefault((s.moved_from, s.line), [0, 0])
                a[0] += 1
                a[1] += s.after.latency
        rows = [{"from": f, "to": t, "sites": n, "latency_after": lat} for (f, t), (n, lat) in agg.items()]
        return sorted(rows, key=lambda r: -r["latency_after"])

    def changed_sites(self) -> list[SiteChange]:
        """The sites added or removed (neither matched nor moved)."""
        return [s for s in self.sites if s.kind in ("added", "removed")]

    def to_pandas(self):
        """Every source line of the diff as a DataFrame (largest change first), one column per key of ``lines`` in ``to_dict()``."""
        from attlens.results import dataframe

        return dataframe(self._line_dicts(self.lines), LINE_COLUMNS)

    @staticmethod
    def _line_dicts(lines) -> list[dict]:
        return [{"line": l.line, "before_line": l.before_line, "latency_before": _r(l.latency_before), "latency_after": _r(l.latency_after),
                 "delta": _r(l.delta), "relative": _r(l.relative, 6), "stall_before": _r(l.stall_before), "stall_after": _r(l.stall_after),
                 "dominant_before": l.dominant_before, "dominant_after": l.dominant_after} for l in lines]

    @property
    def stall_compared(self) -> bool:
        """Both sides record stall cycles: stall deltas exist (otherwise they are null and a warning says why)."""
        return self.before.stall_recorded and self.after.stall_recorded

    def to_dict(self, top: int | None = None) -> dict:
        """The ``attlens.diff`` object (``attlens diff --top TOP --json``; every line and site when ``top`` is None or 0)."""
        from attlens.jsondoc import header, rows

        v = self.verdict
        return {
            **header("attlens.diff"),
            "before": self.before.ref(),
            "after": self.after.ref(),
            "comparability": self.comparability,
            "forced": self.forced,
            "normalization": self.normalization,
            "verdict": {**v, "latency_per_wave_before": _r(v["latency_per_wave_before"]),
                        "latency_per_wave_after": _r(v["latency_per_wave_after"]), "relative_change": _r(v["relative_change"], 6),
                        **{k: [{"line": x["line"], "delta_per_wave": _r(x["delta_per_wave"]), "relative": _r(x["relative"], 6)} for x in v[k]]
                           for k in ("top_improvements", "top_regressions")}},
            "classes": [{k: (_r(x) if isinstance(x, float) else x) for k, x in c.items()} for c in self.classes],
            "lines": self._line_dicts(rows(self.lines, top)),
            "sites": {
                **self.site_totals,
                "changed": [{"line": s.line, "kind": s.kind, "before": _site_dict(s.before, self.before.stall_recorded),
                             "after": _site_dict(s.after, self.after.stall_recorded)}
                            for s in rows(self.changed_sites(), top)],
                "moved_lines": self.moved_lines(),
            },
            "noise_source": self.noise_source,
            "partial": self.partial,
            "warnings": side_warnings(self.before, self.after),
            "plans": self.plans,
        }

    @property
    def partial(self) -> bool:
        """Either capture was partly read: the comparison is of what was read."""
        return self.before.partial or self.after.partial


def side_warnings(before: Side, after: Side) -> list[str]:
    """Both sides' warnings, each naming its side (``before: ...``), then why no stall delta is computed (when so)."""
    out = [f"{name}: {w}" for name, s in (("before", before), ("after", after)) for w in s.warnings]
    note = stall_unrecorded_note(before, after)
    return out + ([note] if note else [])


def stall_unrecorded_note(a: Side, b: Side, names=("before", "after")) -> str | None:
    """One line when either side records no stall cycles (rocprofv2): no stall delta is computed from it."""
    sides = [n for n, s in zip(names, (a, b)) if not s.stall_recorded]
    if not sides:
        return None
    which = " and ".join(sides)
    two = len(sides) == 2
    return (f"stall is not recorded by this profiler (rocprofv2) in the {which} capture{'s' if two else ''}: "
            f"no stall delta is computed ({'their' if two else 'its'} stall figures and every stall delta are null, '-'); latency is compared")


def partial_sides(before: Side, after: Side, names=("before", "after")) -> list[str]:
    return [n for n, s in zip(names, (before, after)) if s.partial]


def _r(x, nd=3):
    return None if x is None else round(float(x), nd)


def _site_dict(s: Site | None, stall_recorded: bool = True) -> dict | None:
    return None if s is None else {"pc": s.pc, "mnemonic": s.mnemonic, "isa": s.isa, "latency": s.latency,
                                   "stall": s.stall if stall_recorded else None, "hit": s.hit}


def comparability(a: Side, b: Side) -> list[dict]:
    rows = []
    for name, x, y, blocking in (
        ("kernel", a.kernel, b.kernel, True),
        ("target", a.target, b.target, True),
        ("grid", a.grid, b.grid, False),
        ("workgroup", a.workgroup, b.workgroup, False),
        ("traced shader engines", a.shader_engines, b.shader_engines, False),
        ("traced CUs", a.cus, b.cus, False),
        ("traced SIMDs", a.simds, b.simds, False),
        ("traced waves", a.waves, b.waves, False),
    ):
        if x != y and not (x is None or y is None):
            rows.append({"field": name, "before": x, "after": y, "blocking": blocking})
    return rows


def _dominant(cls: dict[str, int]) -> str | None:
    cls = {k: v for k, v in cls.items() if v}
    return max(cls, key=cls.get) if cls else None


def diff(a: Side, b: Side, force: bool = False, noise_floor: float | None = None, noise_source: str | None = None) -> DiffResult:
    comp = comparability(a, b)
    blocking = [c for c in comp if c["blocking"]]
    if blocking and not force:
        what = "; ".join(f"{c['field']} {c['before']} vs {c['after']}" for c in blocking)
        raise Incomparable(f"the captures are not comparable ({what})", hint="force them to be compared (--force; force=True in Python and the MCP tools)")
    wa, wb = max(a.waves, 1), max(b.waves, 1)
    ra, rb = a.stall_recorded, b.stall_recorded  # a side without stall cycles (rocprofv2): its stall and every delta are None

    classes = []
    for c in CLASSES:
        x, y = a.class_stall.get(c, 0) / wa, b.class_stall.get(c, 0) / wb
        lx, ly = a.class_latency.get(c, 0) / wa, b.class_latency.get(c, 0) / wb
        if x or y or lx or ly:
            both = ra and rb
            classes.append({"class": c, "stall_before": x if ra else None, "stall_after": y if rb else None,
                            "stall_delta": y - x if both else None, "stall_relative": (y - x) / x if both and x else None,
                            "latency_before": lx, "latency_after": ly, "latency_delta": ly - lx})
    # by the stall change; by the latency change when there is none to compute
    classes.sort(key=lambda r: -abs(r["stall_delta"] if r["stall_delta"] is not None else r["latency_delta"]))

    # lines: map files, then (file, line)
    fa = {_split(k)[0] for k in a.line_sites if k != NO_SOURCE}
    fb = {_split(k)[0] for k in b.line_sites if k != NO_SOURCE}
    fmap = match_files(fa, fb)

    def mapped(key: str) -> str:
        if key == NO_SOURCE:
            return key
        f, ln = _split(key)
        return f"{fmap[f]}:{ln}" if f in fmap and ln is not None else key

    a_by_after = {}
    for k in a.line_sites:
        a_by_after.setdefault(mapped(k), []).append(k)
    lines, sites = [], []
    keys = sorted(set(a_by_after) | set(b.line_sites))
    for key in keys:
        a_keys = a_by_after.get(key, [])
        a_sites = [s for k in a_keys for s in a.line_sites[k]]
        b_sites = b.line_sites.get(key, [])
        a_cls: dict[str, int] = {}
        for k in a_keys:
            for c, v in a.line_class.get(k, {}).items():
                a_cls[c] = a_cls.get(c, 0) + v
        lines.append(LineChange(
            key if b_sites else (a_keys[0] if a_keys else key),
            a_keys[0] if a_keys else None,
            sum(s.latency for s in a_sites) / wa, sum(s.latency for s in b_sites) / wb,
            sum(s.stall for s in a_sites) / wa if ra else None, sum(s.stall for s in b_sites) / wb if rb else None,
            _dominant(a_cls) if ra else None, _dominant(b.line_class.get(key, {})) if rb else None,
        ))
        sm = difflib.SequenceMatcher(a=[s.mnemonic for s in a_sites], b=[s.mnemonic for s in b_sites], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                sites.extend(SiteChange(key, a_sites[i], b_sites[j]) for i, j in zip(range(i1, i2), range(j1, j2)))
            else:
                sites.extend(SiteChange(key, a_sites[i], None) for i in range(i1, i2))
                sites.extend(SiteChange(key, None, b_sites[j]) for j in range(j1, j2))
    lines.sort(key=lambda l: -abs(l.delta))
    sites = _rematch_moved(sites)

    tot = {
        "matched": sum(1 for s in sites if s.kind == "matched"),
        "moved": sum(1 for s in sites if s.kind == "moved"),
        "added": sum(1 for s in sites if s.kind == "added"),
        "removed": sum(1 for s in sites if s.kind == "removed"),
        "latency_before": sum(s.before.latency for s in sites if s.before),
        "latency_after": sum(s.after.latency for s in sites if s.after),
    }
    res = DiffResult(a, b, comp, bool(blocking), "cycles per traced wave (each side's totals divided by its traced waves)",
                     classes, lines, sites, tot, noise_floor, noise_source)
    res.verdict = verdict(res)
    res.plans = compare_plans(a.plan, b.plan)
    return res


def _rematch_moved(sites: list[SiteChange]) -> list[SiteChange]:
    """Second pass: align the sites left unmatched by the per-line pass across
    the whole kernel (pc order), so instructions whose source location changed
    between builds (a compiler location fix) still pair up, as "moved"."""
    removed = sorted((s for s in sites if s.kind == "removed"), key=lambda s: s.before.pc)
    added = sorted((s for s in sites if s.kind == "added"), key=lambda s: s.after.pc)
    if not removed or not added:
        return sites
    sm = difflib.SequenceMatcher(a=[s.before.mnemonic for s in removed], b=[s.after.mnemonic for s in added], autojunk=False)
    paired_r, paired_a, new = set(), set(), []
    for blk in sm.get_matching_blocks():
        for i, j in zip(range(blk.a, blk.a + blk.size), range(blk.b, blk.b + blk.size)):
            r, a = removed[i], added[j]
            paired_r.add(id(r))
            paired_a.add(id(a))
            new.append(SiteChange(a.line, r.before, a.after, moved_from=r.line))
    keep = [s for s in sites if id(s) not in paired_r and id(s) not in paired_a]
    return keep + new


def verdict(res: DiffResult) -> dict:
    a, b = res.before, res.after
    ta, tb = a.total_latency / max(a.waves, 1), b.total_latency / max(b.waves, 1)
    rel = (tb - ta) / ta if ta else None
    improvements = [l for l in res.lines if l.delta < 0][:5]
    regressions = sorted((l for l in res.lines if l.delta > 0), key=lambda l: -l.delta)[:5]
    moved = []
    for l in res.lines[:10]:
        if l.dominant_before and l.dominant_after and l.dominant_before != l.dominant_after and (l.stall_before or l.stall_after):
            moved.append(f"{os.path.basename(l.line)}: dominant stall moved from {CLASSES.get(l.dominant_before, l.dominant_before)} to {CLASSES.get(l.dominant_after, l.dominant_after)}")
    significant = None if res.noise_floor is None or rel is None else abs(rel) > res.noise_floor
    return {
        "latency_per_wave_before": ta,
        "latency_per_wave_after": tb,
        "relative_change": rel,
        "significant": significant,
        "noise_floor": res.noise_floor,
        "summary": ("faster" if rel is not None and rel < 0 else "slower" if rel is not None and rel > 0 else "unchanged")
        + (f" by {abs(rel):.1%} per wave" if rel else "")
        + ("" if significant is None else (" (beyond the noise floor)" if significant else " (within the noise floor)"))
        + _partial_note(a, b),
        "top_improvements": [{"line": l.line, "delta_per_wave": l.delta, "relative": l.relative} for l in improvements],
        "top_regressions": [{"line": l.line, "delta_per_wave": l.delta, "relative": l.relative} for l in regressions],
        "class_moves": moved,
    }


def _partial_note(a: Side, b: Side) -> str:
    sides = partial_sides(a, b)
    if not sides:
        return ""
    return f"; partial: the {' and '.join(sides)} capture{'s were' if len(sides) == 2 else ' was'} partly read (see warnings)"


def noise_between(a: Side, b: Side) -> float:
    """Relative difference of latency per wave between two captures of the same dispatch range."""
    ta, tb = a.total_latency / max(a.waves, 1), b.total_latency / max(b.waves, 1)
    return abs(tb - ta) / ta if ta else 0.0


# ---------------------------------------------------------------- check


def _stall_metric_needs_both(metric: str, cur: Side, base: Side) -> None:
    """A stall metric is gated only when both captures record stall cycles: the
    zeros of a rocprofv2 side are not measurements, so no change is computed from them."""
    sides = [n for n, s in (("current", cur), ("baseline", base)) if not s.stall_recorded]
    if sides:
        raise Incomparable(f"metric {metric}: stall is not recorded by this profiler (rocprofv2) in the {' and '.join(sides)} "
                           f"capture{'s' if len(sides) == 2 else ''}: no stall change can be computed",
                           hint="gate on latency instead (--metric total, or line:FILE:LINE)")


def metric_value(side: Side, metric: str) -> float:
    w = max(side.waves, 1)
    if metric == "total":
        return side.total_latency / w
    if metric == "stall":
        return side.total_stall / w
    if metric.startswith("class:"):
        name = metric[6:]
        if name not in CLASSES and name != WAIT:
            raise UsageError(f"metric {metric}: unknown class (attlens analyze lists the classes)")
        return side.class_stall.get(name, 0) / w
    if metric.startswith("line:"):
        query = metric[5:]
        hits = [k for k in side.line_sites if k == query or k.endswith("/" + query.lstrip("/"))]
        if not hits:
            raise UsageError(f"metric {metric}: no such source line in {side.label}")
        return sum(s.latency for k in hits for s in side.line_sites[k]) / w
    raise UsageError(f"metric {metric}: expected total, stall, class:NAME or line:FILE:LINE")


@brief_repr("kernel", "metric", "baseline", "current", "change_percent", "max_regression_percent", "passed")
@dataclass
class CheckResult:
    """``attlens check``: one metric of a capture against a baseline."""

    kernel: str
    metric: str
    baseline: float
    current: float
    change_percent: float | None  # None: the baseline is 0 and the current value is not
    max_regression_percent: float
    passed: bool  # False whenever ``partial``: a gate never passes on damaged input
    partial: list[str] = field(default_factory=list)  # the sides partly read: "current", "baseline"
    warnings: list[str] = field(default_factory=list)  # their warnings, each naming its side

    @property
    def regressed(self) -> bool:
        return self.change_percent is None or self.change_percent > self.max_regression_percent

    @property
    def verdict(self) -> str:
        return "PARTIAL INPUT" if self.partial else ("REGRESSION" if self.regressed else "ok")

    @property
    def message(self) -> str:
        change = "n/a" if self.change_percent is None else f"{self.change_percent:+.2f}%"
        text = (f"{self.metric} per wave {self.baseline:,.1f} -> {self.current:,.1f} ({change}; "
                f"limit +{self.max_regression_percent}%): {self.verdict}")
        if self.partial:
            text += f" (the {' and '.join(self.partial)} capture{'s were' if len(self.partial) == 2 else ' was'} partly read: not gated)"
        return text

    def to_dict(self) -> dict:
        """The ``attlens.check`` object (``attlens check --json``)."""
        from attlens.jsondoc import header

        return {**header("attlens.check"), "metric": self.metric, "baseline": self.baseline, "current": self.current,
                "change_percent": self.change_percent, "max_regression_percent": self.max_regression_percent, "passed": self.passed,
                "partial": bool(self.partial), "warnings": list(self.warnings)}


def check(cur: Side, base: Side, metric: str = "total", max_regression: float = 5.0, force: bool = False) -> CheckResult:
    """Gate ``cur`` against ``base``: passed when ``metric`` grew by at most ``max_regression`` %."""
    blocking = [c for c in comparability(base, cur) if c["blocking"]]
    if blocking and not force:
        raise Incomparable("not comparable: " + "; ".join(f"{c['field']} {c['before']} vs {c['after']}" for c in blocking), hint="force them to be compared (--force; force=True in Python and the MCP tools)")
    before, after = metric_value(base, metric), metric_value(cur, metric)
    if metric == "stall" or metric.startswith("class:"):
        _stall_metric_needs_both(metric, cur, base)
    change = (after - before) / before * 100 if before else (0.0 if after == 0 else None)
    partial = partial_sides(cur, base, ("current", "baseline"))
    passed = change is not None and change <= max_regression and not partial
    warnings = [f"{n}: {w}" for n, s in (("current", cur), ("baseline", base)) for w in s.warnings]
    return CheckResult(cur.kernel, metric, before, after, change, max_regression, passed, partial, warnings)
