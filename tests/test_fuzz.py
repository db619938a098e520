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

The same invariant is kept where 0.2 added state (issue 23): the capture's
digest in the cache (every digest file damaged, a FIFO or symlink in its
place, a record edited with a recomputed CRC), a sweep folder's manifest
(bytes, any value in any column, tables and columns dropped, the lock file),
sweep files (bytes, structural edits, aliases), and the real outputs of
other teams and tool generations in ``../shared/outside`` through the whole
command line.

``ATTLENS_FUZZ_EXAMPLES`` scales the number of examples (default: 250 for
the readers and the wave reader, 200 for the pipeline, 40 for the early
layout, 120 digests, 150 manifests, 300 sweep files, 80 outside captures:
about a minute in all on an idle machine).
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
    return _with_outside(root, cap)


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
    return _with_outside(root, cap)


def _with_outside(root: Path, cap: Path) -> Path:
    """``root/outside/``: what no capture may make attlens read (the sentinel
    source, a real wave file, a directory); then plain permissions."""
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


# --------------------------------------------------------------------------- the digest fuzz (issue 23)
#
# The digest of the capture (its columns, derived results, stored answers) is
# damaged the ways the capture is: bytes flipped or cut, a JSON record edited
# *with its checksum recomputed* (what a CRC cannot catch), a FIFO, a
# directory, a symlink out, an empty file in place of any file. The command
# keeps the invariant; where the damage breaks a checksum (or the file), the
# output is exactly the fresh parse's.

DIGEST_COMMANDS = {
    "analyze-json": ["analyze", "--json"],  # the stored answer
    "analyze-top3": ["analyze", "--json", "--top", "3"],  # a new question: digest and derived results
    "plan-json": ["plan", "--json"],
    "deps-json": ["deps", "--json"],
    "waves-json": ["waves", "--json"],
    "detail": ["analyze", "--detail", "--no-color", "--top", "5"],
}


@pytest.fixture(scope="module")
def digest_world(world):
    """A cache holding the capture's digest, derived results and the stored
    answers of every DIGEST_COMMANDS question; and each question's fresh output."""
    cap = world / "run" / "big" / Path(CAPTURE).name
    cache = world / "digest-cache"
    fresh = {}
    for name, argv in DIGEST_COMMANDS.items():
        o = run_main(argv[0], cap, *argv[1:], "--no-cache")
        fresh[name] = (o.code, o.out)
        built = run_main(argv[0], cap, *argv[1:], "--cache-dir", cache)
        assert (built.code, built.out) == fresh[name], name
    assert list(cache.glob("digests-v1/*/*/answer-*.json")) and list(cache.glob("digests-v1/*/*/derived-*.json"))
    return cap, cache, fresh


def _recrc(raw: bytes, data, cap: Path, world: Path) -> bytes:
    """A structural edit of a ``<crc>\\n<json>`` record, with a matching CRC-32."""
    import zlib

    body = raw.partition(b"\n")[2]
    doc = mutate_json(data, orjson.loads(body), cap, {})
    new = json.dumps(doc).encode()
    return b"%08x\n" % zlib.crc32(new) + new


@fuzz_settings(120)
@given(data=st.data())
def test_fuzz_digest_files_keep_the_invariant(digest_world, world, data):
    cap, cache0, fresh = digest_world
    with tempfile.TemporaryDirectory(dir=world) as tmp:
        cache = Path(tmp) / "cache"
        shutil.copytree(cache0, cache, symlinks=True)
        folder = next(cache.glob("digests-v1/*/*/"))
        files = sorted(p for p in folder.iterdir() if p.is_file())
        target = data.draw(st.sampled_from(files), label="file")
        kinds = ["bytes", "replace-file"] + (["json-recrc"] if target.suffix == ".json" else [])
        how = data.draw(st.sampled_from(kinds), label="how")
        if how == "bytes":
            target.write_bytes(mutate_bytes(data, target.read_bytes()))
        elif how == "json-recrc":
            target.write_bytes(_recrc(target.read_bytes(), data, cap, world))
        else:
            kind = data.draw(st.sampled_from(["fifo", "dir", "symlink-out", "symlink-dev", "empty"]), label="file-trick")
            target.unlink()
            if kind == "fifo":
                os.mkfifo(target)
            elif kind == "dir":
                target.mkdir()
            elif kind == "symlink-out":
                target.symlink_to(world / "outside" / "secret.py")
            elif kind == "symlink-dev":
                target.symlink_to("/dev/zero")
            else:
                target.write_bytes(b"")
        name = data.draw(st.sampled_from(sorted(DIGEST_COMMANDS)), label="command")
        argv = DIGEST_COMMANDS[name]
        with Opens() as rec:
            o = run_main(argv[0], cap, *argv[1:], "--cache-dir", cache)
        note = f"damage: {how} {target.name}\n"
        assert_clean(o, as_json="--json" in argv), note + o.describe()
        assert SENTINEL not in o.out + o.err, note + o.describe()
        assert_never_outside(rec.paths, world)
        if how != "json-recrc" and target.name != "used":
            assert (o.code, o.out) == fresh[name], note + o.describe()


# --------------------------------------------------------------------------- the sweep manifest fuzz (issue 23)
#
# A sweep folder's manifest (SQLite) damaged: bytes flipped or cut, a value
# of any type in any column (SQLite keeps whatever it is given), a JSON
# column edited, a table dropped, rows deleted, the file replaced by a FIFO,
# a folder, a symlink; the lock file too. `sweep status` and `sweep report`
# keep the invariant: a documented exit code (7 with the repair hint for a
# damaged manifest), never an internal error or a traceback.

WEIRD_SQL = [None, -1, 0, 2**63 - 1, -(2**63), 1.5, 1e300, "", "x", "done", "\x00", "{", "[]", '{"a": 1}', "../../x", b"\x00\xff"]


@pytest.fixture(scope="module")
def manifest_world(world):
    """A sweep folder: job a done (with the summary of the real capture), b failed, c pending."""
    import time

    from attlens.sweep.manifest import Manifest
    from attlens.sweep.spec import Job
    from attlens.sweep.summary import analyze_capture

    root = world / "sweepdir"
    cap = world / "run" / "big" / Path(CAPTURE).name
    m = Manifest.open(root, create=True)
    jobs = [Job(name=n, argv=["true"], cwd=str(root), tags=["t"], shape="s") for n in ("a", "b", "c")]
    m.sync_jobs(jobs)
    now = time.time()
    m.set_meta(sweep_file=str(root / "sweep.toml"), engine="local")
    m.begin_attempt("a", 1, "local", "host", "0", now, 1234, "99")
    adir = root / "jobs" / "a" / "attempt-1"
    adir.mkdir(parents=True)
    (adir / "report.html").write_text("<html></html>")
    rec = {"engine": "local", "host": "host", "gpu": "0", "started_at": now, "ended_at": now + 1, "seconds": 1.0, "exit_code": 0}
    m.record_done("a", 1, rec, {"attempt_dir": "jobs/a/attempt-1", "capture": str(cap), "report": "jobs/a/attempt-1/report.html",
                                "profile_json": None, "summary": analyze_capture(cap, None)})
    m.begin_attempt("b", 1, "local", "host", "1", now, 1235, "98")
    m.end_attempt("b", 1, {**rec, "outcome": "failed", "exit_code": 14, "error": "rocprofv3 failed"}, job_state="failed")
    m.close()
    for p in [root, *root.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    assert run_main("sweep", "status", root, "--json").code == 0
    return root


def _damage_manifest(data, world: Path, root: Path) -> str:
    import sqlite3

    m = root / "manifest.sqlite"
    how = data.draw(st.sampled_from(["bytes", "value", "json", "schema", "replace-file", "lock"]), label="how")
    if how == "bytes":
        m.write_bytes(mutate_bytes(data, m.read_bytes()))
        return how
    if how in ("replace-file", "lock"):
        target = m if how == "replace-file" else root / ".sweep.lock"
        kind = data.draw(st.sampled_from(["fifo", "dir", "symlink-out", "empty"]), label="file-trick")
        if target.exists() or target.is_symlink():
            target.unlink()
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "dir":
            target.mkdir()
        elif kind == "symlink-out":
            target.symlink_to(world / "outside" / "secret.py")
        else:
            target.write_bytes(b"")
        return f"{how} {kind}"
    con = sqlite3.connect(str(m))
    try:
        con.execute("PRAGMA foreign_keys = OFF")
        con.execute("PRAGMA ignore_check_constraints = ON")
        table = data.draw(st.sampled_from(["jobs", "attempts", "meta"]), label="table")
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        rows = [r[0] for r in con.execute(f"SELECT rowid FROM {table}")]
        if how == "schema":
            op = data.draw(st.sampled_from(["drop-table", "drop-column", "delete-rows", "duplicate-row"]), label="schema-op")
            if op == "drop-table":
                con.execute(f"DROP TABLE {table}")
            elif op == "drop-column":
                con.execute(f"ALTER TABLE {table} DROP COLUMN {data.draw(st.sampled_from(cols), label='column')}")
            elif op == "delete-rows":
                con.execute(f"DELETE FROM {table}")
            elif rows:
                con.execute(f"INSERT OR IGNORE INTO {table} SELECT * FROM {table} WHERE rowid = ?", (rows[0],))
        elif rows:
            col = data.draw(st.sampled_from(cols if how == "value" else [c for c in cols if c in ("spec", "summary")] or cols), label="column")
            row = data.draw(st.sampled_from(rows), label="row")
            if how == "json":
                raw = con.execute(f"SELECT {col} FROM {table} WHERE rowid = ?", (row,)).fetchone()[0]
                try:
                    value = json.dumps(mutate_json(data, json.loads(raw), root, {}))
                except (TypeError, ValueError):
                    value = data.draw(st.sampled_from(WEIRD_SQL), label="value")
            else:
                value = data.draw(st.sampled_from(WEIRD_SQL), label="value")
            con.execute(f"UPDATE {table} SET {col} = ? WHERE rowid = ?", (value, row))
        con.commit()
    except sqlite3.Error:
        pass  # an edit SQLite refuses (a primary key clash): the file as it is
    finally:
        con.close()
    return how


SWEEP_COMMANDS = {
    "status-json": lambda d, o: ["sweep", "status", d, "--json"],
    "status-text": lambda d, o: ["sweep", "status", d, "--no-color"],
    "report": lambda d, o: ["sweep", "report", d, "-o", o / "dash.html", "--json"],
}


@fuzz_settings(150)
@given(data=st.data())
def test_fuzz_sweep_manifest_keeps_the_invariant(manifest_world, world, data):
    with tempfile.TemporaryDirectory(dir=world) as tmp:
        root = Path(tmp) / "sweep"
        shutil.copytree(manifest_world, root, symlinks=True)
        what = _damage_manifest(data, world, root)
        name = data.draw(st.sampled_from(sorted(SWEEP_COMMANDS)), label="command")
        argv = SWEEP_COMMANDS[name](root, Path(tmp))
        with Opens() as rec:
            o = run_main(*argv)
        note = f"damage: {what}\n"
        assert_clean(o, as_json="--json" in argv), note + o.describe()
        assert SENTINEL not in o.out + o.err, note + o.describe()
        assert_never_outside(rec.paths, world)
        if o.code == 7:
            assert "move it aside" in o.err or "remove it" in o.err, note + o.describe()


# --------------------------------------------------------------------------- the sweep file fuzz (issue 23)


def _sweep_samples() -> dict:
    from attlens.sweep.spec import example

    return {"toml": example("toml").encode(), "yaml": example("yaml").encode()}


@fuzz_settings(300)
@given(data=st.data())
def test_fuzz_sweep_files_raise_only_sweep_file_errors(world, data):
    """A damaged sweep file (bytes, or the document edited and written as
    YAML/JSON: weird values, deep nesting, huge numbers, path tricks, aliases)
    is a SweepFileError (exit 30) or a sweep whose every job passes the
    checks the schema promises."""
    import math

    from attlens.errors import AttlensError
    from attlens.sweep.spec import MAX_SECONDS, load_sweep, policy_problem

    samples = _sweep_samples()
    kind = data.draw(st.sampled_from(["toml-bytes", "yaml-bytes", "structural", "alias"]), label="kind")
    if kind == "toml-bytes":
        name, raw = "s.toml", mutate_bytes(data, samples["toml"])
    elif kind == "yaml-bytes":
        name, raw = "s.yaml", mutate_bytes(data, samples["yaml"])
    elif kind == "structural":
        import yaml

        doc = mutate_json(data, yaml.safe_load(samples["yaml"]), world, {})
        name, raw = "s.yaml", json.dumps(doc).encode()  # JSON is YAML
    else:
        name = "s.yaml"
        raw = samples["yaml"].replace(b"jobs:", b"x: &x [1, 2]\njobs:", 1) + b"  - {name: extra, argv: *x}\n"
    with tempfile.TemporaryDirectory(dir=world) as tmp:
        f = Path(tmp) / name
        f.write_bytes(raw)
        try:
            sweep = load_sweep(f)
        except AttlensError as exc:
            assert exc.exit_code == 30 and "\n" not in str(exc) and len(str(exc)) < 2000, str(exc)[:3000]
            return
    names = [j.name for j in sweep.jobs]
    assert len(set(names)) == len(names)
    for j in sweep.jobs:
        assert policy_problem(j) is None, j
        assert all(isinstance(a, str) for a in j.argv) and j.argv
        assert 0 < j.timeout <= MAX_SECONDS and math.isfinite(j.backoff)


# --------------------------------------------------------------------------- the outside captures (issue 23)
#
# Real outputs of other teams, GPUs and tool generations (../shared/outside:
# an early-rocprofv3 Triton capture with its side files, a PC-sampling
# directory, legacy rocprof v1 databases, gfx1151 CSVs), damaged like the
# FlyDSL capture above. Whatever attlens makes of them, the invariant holds.

OUTSIDE = {
    "triton": ("triton-afp4wfp4-gemm/orig", ["analyze --json", "plan --json", "waves --json", "deps --json"]),
    "pcsampling": ("rcv-pcsampling", ["analyze --json", "captures --json"]),
    "legacy": ("legacy-rocprof-v1", ["kernels --json"]),
    "csv": ("rocprofv3-csv-gfx1151", ["kernels --json", "pmc --json"]),
}


@pytest.fixture(scope="module")
def outside_world(world):
    shared = require_shared()
    root = world / "outside-world"
    for key, (rel, _cmds) in OUTSIDE.items():
        shutil.copytree(shared / "outside" / rel, root / key)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


def _outside_target(key: str, folder: Path) -> Path:
    """The path a command is given: the capture directory, or the folder."""
    if key == "triton":
        return next(folder.glob("ui_output_agent_*"))
    return folder


@fuzz_settings(80)
@given(data=st.data())
def test_fuzz_outside_captures_keep_the_invariant(outside_world, world, data):
    key = data.draw(st.sampled_from(sorted(OUTSIDE)), label="source")
    with tempfile.TemporaryDirectory(dir=world) as tmp:
        folder = Path(tmp) / key
        shutil.copytree(outside_world / key, folder, symlinks=True)
        target = _outside_target(key, folder)
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".csv", ".db", ".att"))
        victim = data.draw(st.sampled_from(files), label="file")
        tricks = path_tricks(world, target) if target.is_dir() else {}
        how = data.draw(st.sampled_from(["json", "bytes", "none"] if victim.suffix == ".json" else ["bytes", "none"]), label="how")
        if how == "json":
            try:
                doc = orjson.loads(victim.read_bytes())
            except orjson.JSONDecodeError:
                doc = None
            if doc is not None:
                victim.write_text(json.dumps(mutate_json(data, doc, target, tricks)))
        elif how == "bytes":
            victim.write_bytes(mutate_bytes(data, victim.read_bytes()))
        before = digest(folder)
        cmd = data.draw(st.sampled_from(OUTSIDE[key][1]), label="command").split()
        argv = [cmd[0], target, *cmd[1:]]
        if cmd[0] == "pmc":
            argv += ["--target", "gfx942"]
        with Opens() as rec:
            o = run_main(*argv)
        note = f"damage: {how} {victim.relative_to(folder)}\n"
        assert_clean(o, as_json="--json" in argv), note + o.describe()
        assert SENTINEL not in o.out + o.err, note + o.describe()
        assert_never_outside(rec.paths, world)
        assert digest(folder) == before, note + "an input was changed"
