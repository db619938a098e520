"""Mutation fuzz (Hypothesis) of every reader and of the whole
load → analyze → plan → report path, over real captures (docs/security.md).

Each example copies a real capture (hgemm_splitk, 8 waves, with the rocprofv3
outputs of its run beside it), damages one file — byte flips, truncation,
structural JSON edits, type swaps, huge numbers, path tricks (``../x``,
absolute paths, symlinks leading out, FIFOs, devices, directories) — and runs
one attlens command in-process. The invariant, on every example:

* exit 0, 8 or another documented code (never 1), no traceback, and with
  ``--json`` a stdout that is empty or one whole JSON document;
* nothing outside the capture and its rocprofv3 folder is opened (an audit
  hook records every ``open``; every trick points into ``outside/``, which
  also holds a sentinel whose text must never appear in any output);
* the capture's files are unchanged.

The readers of the other generations (8-column and rocprofv2 code.json,
packed occupancy, rocprofv2 filenames.json, the stats table, sysinfo.csv,
wide and long pmc_perf.csv) are fuzzed on samples from ../shared/outside, and
the pipeline also on the same capture rewritten in the early rocprofv3 layout
(``world_early``).

``ATTLENS_FUZZ_EXAMPLES`` scales the number of examples (default: 250 for
the readers and the wave reader, 200 for the pipeline, 40 for the early
layout: about 25 s in all on an idle machine).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from attlens.errors import AttlensError
from clirun import assert_clean, run_main
from conftest import require_shared

CAPTURE = "hgemm_splitk/big/ui_output_agent_4716_dispatch_319"
ROCPROF = "hgemm_splitk/rocprofv3"
SENTINEL = "ATTLENS-FUZZ-SENTINEL-91c4"
SCALE = float(os.environ.get("ATTLENS_FUZZ_EXAMPLES", "1"))
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def fuzz_settings(n: int):
    # CI runs the same examples every time (locally they vary) and reports a
    # failure as found, unshrunk: the draws are few and labelled, and
    # shrinking a pipeline example can take minutes.
    phases = [Phase.explicit, Phase.reuse, Phase.generate] if CI else list(Phase)
    return settings(
        max_examples=max(1, int(n * SCALE)),
        deadline=None,
        derandomize=CI,
        phases=phases,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# --------------------------------------------------------------------------- the world each example damages


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """``run/big/<capture>``, ``run/rocprofv3/`` (the context the loader reads),
    and ``outside/`` (the sentinel, a real wave file, a directory)."""
    shared = require_shared()
    root = tmp_path_factory.mktemp("fuzz")
    cap = root / "run" / "big" / Path(CAPTURE).name
    shutil.copytree(shared / "traces" / CAPTURE, cap)
    shutil.copytree(shared / "traces" / ROCPROF, root / "run" / "rocprofv3")
    # the capture names two source files that the shared copy lacks: give them
    snaps = json.loads((cap / "snapshots.json").read_text())
    for local in _leaves(snaps):
        (cap / local).write_text("".join(f"line {i}\n" for i in range(1, 400)))
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("".join(f"{SENTINEL} {i}\n" for i in range(1, 400)))
    shutil.copy(sorted(cap.glob("se*_wv*.json"))[0], outside / "wave.json")
    (outside / "adir").mkdir()
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


@pytest.fixture(scope="module")
def world_early(tmp_path_factory) -> Path:
    """The same capture rewritten in the early rocprofv3 layout (docs/formats.md):
    8-column code.json without a header, packed occupancy.json, the run's
    files in the default ``DIR/<hostname>/<pid>_*`` folder beside it with the
    ``.att`` name that ties them to the capture; and ``outside/``."""
    shared = require_shared()
    root = tmp_path_factory.mktemp("fuzz-early")
    cap = root / "run" / Path(CAPTURE).name
    shutil.copytree(shared / "traces" / CAPTURE, cap)
    code = json.loads((cap / "code.json").read_text())
    (cap / "code.json").write_text(json.dumps({"code": [r[:8] for r in code["code"]], "version": "3.0.0"}))
    occ = json.loads((cap / "occupancy.json").read_text())
    for se, events in list(occ.items()):
        if se.isdigit():
            occ[se] = [(t // 8) << 23 | cu << 19 | st << 18 | sl << 14 | sm << 12 | k for t, cu, sm, sl, st, k in (e[:6] for e in events)]
    occ.pop("version", None)
    (cap / "occupancy.json").write_text(json.dumps(occ))
    host = root / "run" / "host-a"
    host.mkdir()
    for f in sorted((shared / "traces" / ROCPROF).glob("*.csv")):
        shutil.copy(f, host / ("4242_" + f.name.split("_", 1)[1]))
    handle, dispatch = Path(CAPTURE).name.split("_")[3], Path(CAPTURE).name.split("_")[5]
    (host / f"4242_{handle}_shader_engine_0_{dispatch}.att").write_bytes(b"\0" * 64)
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("".join(f"{SENTINEL} {i}\n" for i in range(1, 400)))
    shutil.copy(sorted(cap.glob("se*_wv*.json"))[0], outside / "wave.json")
    (outside / "adir").mkdir()
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


def _leaves(node):
    for v in node.values():
        if isinstance(v, dict):
            yield from _leaves(v)
        elif isinstance(v, str):
            yield v


def digest(folder: Path) -> dict:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "->" + os.readlink(p)
        elif p.is_fifo():
            out[str(p)] = "fifo"
        elif p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[str(p)] = "dir"
    return out


# --------------------------------------------------------------------------- recording every open()

_OPENED: list | None = None


def _audit(event, args):
    if event == "open" and _OPENED is not None and args and isinstance(args[0], (str, bytes)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


class Opens:
    """Collect the paths opened while the block runs."""

    def __enter__(self):
        global _OPENED
        _OPENED = []
        return self

    def __exit__(self, *exc):
        global _OPENED
        self.paths, _OPENED = _OPENED, None


def assert_never_outside(paths, world: Path) -> None:
    outside = os.path.realpath(world / "outside")
    for p in paths:
        real = os.path.realpath(p)
        assert not (real == outside or real.startswith(outside + os.sep)), f"opened {p} -> {real}, outside the capture"
        assert not real.startswith("/dev/"), f"opened the device {p}"


# --------------------------------------------------------------------------- mutations

WEIRD_VALUES = [
    None, True, False, 0, -1, 7, 2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**30,
    1.5, -0.0, 1e300, "", "x", "²", "٣", "0x10", "1e25", "108392-1", "../x", "/etc/passwd",
    [], [[]], [1, 2], [[1, 2, 3, 4, 5]], {}, {"a": 1}, {"handle": 2**64}, [None] * 3,
]


def path_tricks(world: Path, cap: Path) -> dict:
    """name → a callable that plants the trick in ``cap`` and returns the name to write."""
    out = world / "outside"

    def link(name, target):
        def make():
            p = cap / name
            if p.exists() or p.is_symlink():
                p.unlink() if not p.is_dir() or p.is_symlink() else shutil.rmtree(p)
            p.symlink_to(target)
            return name
        return make

    def fifo(name):
        def make():
            p = cap / name
            if p.exists() or p.is_symlink():
                p.unlink()
            os.mkfifo(p)
            return name
        return make

    return {
        "dotdot-secret": lambda: os.path.relpath(out / "secret.py", cap),
        "dotdot-wave": lambda: os.path.relpath(out / "wave.json", cap),
        "absolute-secret": lambda: str(out / "secret.py"),
        "absolute-dev": lambda: "/dev/zero",
        "subdir-escape": lambda: "sub/../../../outside/secret.py",
        "empty": lambda: "",
        "dot": lambda: ".",
        "dotdot": lambda: "..",
        "nul": lambda: "a\x00b",
        "symlink-secret": link("trick_link.py", out / "secret.py"),
        "symlink-wave": link("trick_wave.json", out / "wave.json"),
        "symlink-dev": link("trick_dev.json", "/dev/zero"),
        "symlink-dir": link("trick_dir.json", out / "adir"),
        "symlink-loop": link("trick_loop.json", "trick_loop.json"),
        "fifo": fifo("trick_fifo.json"),
    }


def json_nodes(doc, limit: int = 4000):
    """(parent, key) of nodes, breadth first, at most ``limit``."""
    out, queue = [], [doc]
    while queue and len(out) < limit:
        node = queue.pop(0)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            out.append((node, k))
            if isinstance(v, (dict, list)):
                queue.append(v)
    return out


def mutate_json(data, doc, cap: Path, tricks: dict):
    nodes = json_nodes(doc)
    if not nodes:
        return doc
    parent, key = nodes[data.draw(st.integers(0, len(nodes) - 1), label="node")]
    ops = ["replace", "delete", "duplicate", "deep", "weird-key"] + (["trick"] if tricks else [])
    op = data.draw(st.sampled_from(ops), label="op")
    if op == "replace":
        parent[key] = data.draw(st.sampled_from(WEIRD_VALUES), label="value")
    elif op == "delete":
        del parent[key]
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(parent[key])
    elif op == "duplicate" and isinstance(parent, dict):
        parent[str(key) + "_"] = parent[key]
        parent["1" if key != "1" else "2"] = parent[key]
    elif op == "trick":
        parent[key] = tricks[data.draw(st.sampled_from(sorted(tricks)), label="trick")]()
    elif op == "deep":
        v = "x"
        for _ in range(data.draw(st.sampled_from([100, 1000]), label="depth")):
            v = {"a": v}
        parent[key] = v
    elif op == "weird-key" and isinstance(parent, dict):
        parent[data.draw(st.sampled_from(["²", "-1", "99999999999999999999", " 3", "+3", "٣", "", "0x1"]), label="key")] = parent[key]
    return doc


def mutate_bytes(data, raw: bytes) -> bytes:
    op = data.draw(st.sampled_from(["flip", "truncate", "splice", "bom", "strip-quotes", "digits"]), label="bytes-op")
    if not raw:
        return b"\x00"
    i = data.draw(st.integers(0, len(raw) - 1), label="pos")
    if op == "flip":
        return raw[:i] + bytes([data.draw(st.integers(0, 255), label="byte")]) + raw[i + 1:]
    if op == "truncate":
        return raw[:i]
    if op == "splice":
        piece = data.draw(st.sampled_from([b"-", b"1e25", b"9223372036854775808", b"-1", b"1e999", b"NaN", b",", b"\"", b"]", b"{", b"\xff\xfe", b"\n"]), label="piece")
        return raw[:i] + piece + raw[i:]
    if op == "bom":
        return b"\xef\xbb\xbf" + raw
    if op == "strip-quotes":
        return raw.replace(b'"', b"")
    # digits: replace one number by a huge or negative one
    j = i
    while j < len(raw) and not raw[j:j + 1].isdigit():
        j += 1
    k = j
    while k < len(raw) and raw[k:k + 1].isdigit():
        k += 1
    return raw[:j] + data.draw(st.sampled_from([b"18446744073709551616", b"-5", b"1e25", b"9223372036854775807"]), label="num") + raw[k:]


def damage(data, world: Path, cap: Path, roc: Path) -> str:
    """Damage one file of the capture or of its rocprofv3 folder; returns a description."""
    files = sorted(p for p in cap.iterdir() if p.is_file()) + sorted(p for p in roc.iterdir() if p.is_file() and p.suffix == ".csv")
    target = data.draw(st.sampled_from(files), label="file")
    tricks = path_tricks(world, cap)
    how = data.draw(st.sampled_from(["json", "bytes", "replace-file"]) if target.suffix == ".json" else st.sampled_from(["bytes", "replace-file"]), label="how")
    if how == "json":
        doc = json.loads(target.read_text())
        doc = mutate_json(data, doc, cap, tricks)
        target.write_text(json.dumps(doc))
    elif how == "bytes":
        target.write_bytes(mutate_bytes(data, target.read_bytes()))
    else:
        kind = data.draw(st.sampled_from(["symlink-out", "fifo", "dir", "symlink-dev", "empty"]), label="file-trick")
        target.unlink()
        if kind == "symlink-out":
            target.symlink_to(world / "outside" / ("wave.json" if target.name.startswith("se") else "secret.py"))
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "dir":
            target.mkdir()
        elif kind == "symlink-dev":
            target.symlink_to("/dev/zero")
        else:
            target.write_bytes(b"")
    return f"{how} {target.name}"


COMMANDS = {
    "analyze-json": lambda c, r, o: ["analyze", c, "--json"],
    "analyze-detail": lambda c, r, o: ["analyze", c, "--detail", "--no-color", "--topk", "20", "--context", "50"],
    "plan-md": lambda c, r, o: ["plan", c, "--format", "md"],
    "report-html": lambda c, r, o: ["report", c, "-o", o / "r.html"],
    "report-md": lambda c, r, o: ["report", c, "--format", "md", "-o", o / "md"],
    "waves-json": lambda c, r, o: ["waves", c, "--json"],
    "deps-json": lambda c, r, o: ["deps", c, "--json"],
    "export": lambda c, r, o: ["export", c, "--perfetto", o / "t.json", "--json"],
    "kernels": lambda c, r, o: ["kernels", r, "--json"],
}


# --------------------------------------------------------------------------- the pipeline fuzz


@fuzz_settings(200)
@given(data=st.data())
def test_fuzz_pipeline_keeps_the_invariant(world, data):
    with tempfile.TemporaryDirectory(dir=world) as tmp:
        tmp = Path(tmp)
        run = tmp / "run"
        shutil.copytree(world / "run", run, symlinks=True)
        cap, roc = run / "big" / Path(CAPTURE).name, run / "rocprofv3"
        what = damage(data, world, cap, roc)
        before = digest(run)
        out = tmp / "out"
        out.mkdir()
        name = data.draw(st.sampled_from(sorted(COMMANDS)), label="command")
        argv = COMMANDS[name](cap, roc, out)
        with Opens() as rec:
            o = run_main(*argv)
        note = f"damage: {what}\n"
        assert_clean(o, as_json="--json" in argv), note + o.describe()
        assert_never_outside(rec.paths, world)
        assert SENTINEL not in o.out + o.err, note + o.describe()
        for f in out.rglob("*"):
            if f.is_file():
                assert SENTINEL not in f.read_text(errors="replace"), f
        assert digest(run) == before, note + "the capture was changed"


@fuzz_settings(40)
@given(data=st.data())
def test_fuzz_early_layout_keeps_the_invariant(world_early, data):
    """The pipeline on the early-rocprofv3 layout (8-column code.json, packed
    occupancy, side files in a hostname folder): the same invariant."""
    world = world_early
    with tempfile.TemporaryDirectory(dir=world) as tmp:
        tmp = Path(tmp)
        run = tmp / "run"
        shutil.copytree(world / "run", run, symlinks=True)
        cap, roc = run / Path(CAPTURE).name, run / "host-a"
        what = damage(data, world, cap, roc)
        before = digest(run)
        out = tmp / "out"
        out.mkdir()
        name = data.draw(st.sampled_from(sorted(set(COMMANDS) - {"kernels"})), label="command")
        argv = COMMANDS[name](cap, roc, out)
        with Opens() as rec:
            o = run_main(*argv)
        note = f"damage: {what}\n"
        assert_clean(o, as_json="--json" in argv), note + o.describe()
        assert_never_outside(rec.paths, world)
        assert SENTINEL not in o.out + o.err, note + o.describe()
        assert digest(run) == before, note + "the capture was changed"


# --------------------------------------------------------------------------- the reader fuzz


def _readers():
    from attlens.io.code_json import read_code_json
    from attlens.io.filenames_json import read_filenames_json
    from attlens.io.occupancy_json import read_occupancy_json
    from attlens.io.realtime_json import read_realtime_json
    from attlens.io.results_json import read_results_json
    from attlens.io.rocprof_csv import read_agent_info, read_kernel_stats, read_kernel_trace_checked
    from attlens.io.snapshots_json import read_snapshots_json
    from attlens.io.pmc_perf import read_pmc_perf
    from attlens.io.stats_csv import read_stats_csv
    from attlens.io.sysinfo_csv import read_sysinfo

    from attlens.analysis.diff import side_from_json

    return {
        # the other generations (../shared/outside, docs/formats.md)
        "code8.json": read_code_json,
        "codev2.json": read_code_json,
        "occupancy_packed.json": read_occupancy_json,
        "filenames_v2.json": read_filenames_json,
        "att_output.csv": read_stats_csv,
        "sysinfo.csv": read_sysinfo,
        "pmc_perf.csv": read_pmc_perf,
        "pmc_perf_long.csv": read_pmc_perf,
        "analysis.json": side_from_json,  # a saved `analyze --json --topk 0`, read by diff / check
        "filenames.json": read_filenames_json,
        "code.json": read_code_json,
        "occupancy.json": read_occupancy_json,
        "realtime.json": read_realtime_json,
        "snapshots.json": read_snapshots_json,
        "results.json": read_results_json,
        "agent_info.csv": read_agent_info,
        "kernel_stats.csv": read_kernel_stats,
        "kernel_trace.csv": read_kernel_trace_checked,
    }


_SAVED: dict[str, bytes] = {}


_OUTSIDE_SAMPLES = {
    "code8.json": "triton-afp4wfp4-gemm/orig/ui_output_agent_979_dispatch_20/code.json",
    "codev2.json": "rocprofv2-elementwise/vectorized_elementwise_kernel_v0_ui/code.json",
    "occupancy_packed.json": "triton-afp4wfp4-gemm/orig/ui_output_agent_979_dispatch_20/occupancy.json",
    "filenames_v2.json": "rocprofv2-elementwise/vectorized_elementwise_kernel_v0_ui/filenames.json",
    "att_output.csv": "triton-afp4wfp4-gemm/orig/ui_output_agent_979_dispatch_20/att_output.csv",
    "sysinfo.csv": "rocprof-compute/fmla_MI300_partition/sysinfo.csv",
    "pmc_perf.csv": "rocprof-compute/vcopy_MI200/pmc_perf.csv",
    "pmc_perf_long.csv": "rocprof-compute/vcopy_MI300X_A1_rocpd/pmc_perf.csv",
}


def _sample(world: Path, kind: str) -> bytes:
    shared = require_shared()
    if kind in _OUTSIDE_SAMPLES:
        return (shared / "outside" / _OUTSIDE_SAMPLES[kind]).read_bytes()
    if kind == "analysis.json":
        if kind not in _SAVED:
            _SAVED[kind] = run_main("analyze", world / "run" / "big" / Path(CAPTURE).name, "--json", "--topk", "0").out.encode()
        return _SAVED[kind]
    if kind == "results.json":
        return (shared / "traces/vec_add/rocprofv3/big_results.json").read_bytes()
    if kind.endswith(".csv"):
        return (shared / "traces/vec_add/rocprofv3" / f"discover_{kind}").read_bytes()
    return (world / "run" / "big" / Path(CAPTURE).name / kind).read_bytes()


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_readers_raise_only_attlens_errors(world, data):
    readers = _readers()
    kind = data.draw(st.sampled_from(sorted(readers)), label="reader")
    raw = _sample(world, kind)
    with tempfile.TemporaryDirectory(dir=world) as tmp:
        d = Path(tmp) / "cap"
        d.mkdir()
        if kind.endswith(".json") and data.draw(st.booleans(), label="structural"):
            doc = mutate_json(data, orjson.loads(raw), d, path_tricks(world, d))
            raw = json.dumps(doc).encode()
        else:
            raw = mutate_bytes(data, raw)
        name = ("x_" + kind) if kind.endswith(".csv") else kind
        (d / name).write_bytes(raw)
        with Opens() as rec:
            try:
                readers[kind](d / name)
            except AttlensError:
                pass
        assert_never_outside(rec.paths, world)


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_wave_reader_is_as_strict_as_json(world, data):
    """The wave-file reader on a damaged real wave file: it returns the wave or
    reports a problem (never raises), refuses every file the JSON grammar
    refuses, and where the file is valid JSON holding only 64-bit integer
    records, returns exactly those records."""
    from attlens.io.filenames_json import WaveEntry
    from attlens.io.wave_files import read_wave_files

    src = sorted((world / "run" / "big" / Path(CAPTURE).name).glob("se*_wv*.json"))
    raw = data.draw(st.sampled_from(src), label="wave").read_bytes()
    if data.draw(st.booleans(), label="structural"):
        raw = json.dumps(mutate_json(data, orjson.loads(raw), world, {})).encode()
    else:
        raw = mutate_bytes(data, raw)
    with tempfile.TemporaryDirectory(dir=world) as tmp:
        (Path(tmp) / "w.json").write_bytes(raw)
        entry = WaveEntry(0, 0, 0, 0, "w.json", 0, 0)
        table = read_wave_files(Path(tmp), [entry])
    waves, problems = table.entries, table.problems
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        assert not waves and problems, f"invalid JSON accepted: {raw[:200]!r}"
        return
    ref = _reference_records(doc)
    if ref is not None and waves:
        instr, timeline = ref
        got_instr = np.column_stack([table.records[k].astype(np.int64) for k in ("time", "category", "stall", "duration", "pc")])
        got_tl = np.column_stack([table.states[k].astype(np.int64) for k in ("state", "duration")])
        assert np.array_equal(got_instr.reshape(-1, 5), np.asarray(instr).reshape(-1, 5)), "instructions differ from the JSON"
        assert np.array_equal(got_tl.reshape(-1, 2), np.asarray(timeline).reshape(-1, 2)), "timeline differs from the JSON"


def _reference_records(doc):
    """(instructions, timeline) when every record is a list of 64-bit integers
    of the documented width (att-format.md §2.3); None when anything is odd."""
    try:
        w = doc["wave"]
        rows, tl = w["instructions"], w["timeline"]
    except (TypeError, KeyError):
        return None

    def ok(table, width):
        return isinstance(table, list) and all(
            isinstance(r, list) and len(r) == width and all(type(x) is int and -(2**63) <= x < 2**63 for x in r) for r in table)

    if not ok(rows, 5) or not ok(tl, 2):
        return None
    return np.array(rows, dtype=np.int64).reshape(-1, 5), np.array(tl, dtype=np.int64).reshape(-1, 2)
