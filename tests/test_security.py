"""A capture may only make attlens read that capture; outputs never land in or
over an input; embedded source is capped; profile/capture touch only their own
run's outputs (docs/security.md).

Fixtures are copies of a real capture (flash_attn_func small) in a temp dir.
A sentinel file is planted *outside* the capture, and every path trick a
capture can play (``../x``, an absolute path, a symlink leading out, a FIFO,
a device) points at it: its content must never appear in any output, and the
capture's files must be unchanged afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from attlens.errors import EXIT_CORRUPT, EXIT_OK, EXIT_OUTPUT, EXIT_PARTIAL, EXIT_PROFILER_FAILED
from clirun import assert_clean, run_main
from conftest import require_shared

CAPTURE = "flash_attn_func/small/ui_output_agent_32235_dispatch_44"
SENTINEL = "ATTLENS-SENTINEL-5b1e"
# The two source paths snapshots.json of this capture names.
KERNEL_SRC = "/sgl-workspace/jin/flash_attn_func_probe/kernels/flash_attn_func.py"


# --------------------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    shared = require_shared()
    root = tmp_path_factory.mktemp("sec")
    dst = root / "C"
    shutil.copytree(shared / "traces" / CAPTURE, dst)
    for p in [dst, *dst.iterdir()]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


@pytest.fixture
def cap(pristine, tmp_path) -> Path:
    """A private copy of the capture, and beside it ``outside/`` holding the
    sentinel source file and a copy of a real wave file."""
    c = tmp_path / "C"
    shutil.copytree(pristine, c)
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.py").write_text("".join(f"{SENTINEL} line {i}\n" for i in range(1, 400)))
    shutil.copy(c / "se3_sm0_sl0_wv0.json", out / "wave.json")
    return c


def digest(folder: Path) -> dict[str, str]:
    """Every entry of ``folder``: file content hashes, symlink targets, FIFOs."""
    out = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        if p.is_symlink():
            out[key] = "->" + os.readlink(p)
        elif p.is_fifo():
            out[key] = "fifo"
        elif p.is_file():
            out[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@contextmanager
def deadline(seconds: int):
    """Fail instead of hanging (a FIFO opened for reading blocks forever)."""

    def boom(*_):
        raise TimeoutError(f"did not finish within {seconds} s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def trick(cap: Path, kind: str, target: Path, name: str) -> str:
    """Make the capture name ``target`` (outside it) by trick ``kind``; returns
    the name to write into the capture's index file."""
    if kind == "dotdot":
        return os.path.relpath(target, cap)
    if kind == "absolute":
        return str(target)
    link = cap / name
    if link.exists() or link.is_symlink():
        link.unlink()
    if kind == "symlink":
        link.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(link)
    elif kind == "device":
        link.symlink_to("/dev/zero")
    return name


TRICKS = ["dotdot", "absolute", "symlink", "fifo", "device"]


def every_output(cap: Path, tmp: Path) -> list:
    """Run every command that reads snapshots or wave files; return outcomes and written files."""
    runs = [
        run_main("analyze", cap, "--detail", "--no-color", "--topk", "40", "--context", "400"),
        run_main("analyze", cap, "--json"),
        run_main("report", cap, "-o", tmp / "r.html"),
        run_main("report", cap, "--format", "md", "-o", tmp / "md"),
    ]
    files = [p for p in (tmp / "r.html", tmp / "md" / "report.md", tmp / "md" / "analysis.json") if p.exists()]
    return runs, files


def assert_sentinel_never_shown(runs, files) -> None:
    for o in runs:
        assert_clean(o)
        assert SENTINEL not in o.out + o.err, o.describe()
    for f in files:
        assert SENTINEL not in f.read_text(errors="replace"), f


# --------------------------------------------------------------------------- 1. outside the capture: snapshots


@pytest.mark.parametrize("kind", TRICKS)
def test_outside_capture_snapshot_entry_is_refused(cap, tmp_path, kind):
    name = trick(cap, kind, tmp_path / "outside" / "secret.py", "source_0_flash_attn_func.py")
    edit_json(cap / "snapshots.json",
              lambda d: d["/"]["sgl-workspace"]["jin"]["flash_attn_func_probe"]["kernels"].__setitem__("flash_attn_func.py", name))
    before = digest(cap)
    with deadline(60):
        runs, files = every_output(cap, tmp_path)
    assert_sentinel_never_shown(runs, files)
    assert digest(cap) == before
    js = runs[1].json()
    assert runs[1].code == EXIT_PARTIAL and js["capture"]["partial"] is True
    refused = [w for w in js["warnings"] if "snapshots.json" in w and KERNEL_SRC in w and "refused" in w]
    assert len(refused) == 1, js["warnings"]
    shown = [ln for ln in runs[0].out.splitlines() if "(source not shown:" in ln]
    assert shown and all("source copy not in the capture" in ln or "refused" in ln for ln in shown), shown


def test_outside_capture_planted_source_is_shown_when_inside(cap, tmp_path):
    """The clean twin: the same sentinel file *inside* the capture is shown, so
    the refusals above are not a reader that never shows anything."""
    shutil.copy(tmp_path / "outside" / "secret.py", cap / "source_0_flash_attn_func.py")
    with deadline(60):
        runs, files = every_output(cap, tmp_path)
    for o in runs:
        assert_clean(o)
        assert o.code == EXIT_OK, o.describe()
    assert SENTINEL in runs[0].out
    assert SENTINEL in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("body,reason", [
    ("x = 1\n" * 300 + "#" * (5 << 20), "more than the 4,194,304-byte limit"),  # over MAX_SOURCE_FILE_BYTES
    ("x = 1\n" * 3, "is past the end of the capture's copy (3 lines)"),  # the trace names lines 257, 283
])
def test_detail_says_why_a_source_is_not_shown(cap, body, reason):
    (cap / "source_0_flash_attn_func.py").write_text(body)
    o = run_main("analyze", cap, "--detail", "--top", "3")
    assert_clean(o)
    shown = [ln.strip() for ln in o.out.splitlines() if "(source not shown:" in ln]
    # lines 1 and 2 are in flash_attn_func.py (that copy), line 3 in numeric.py (never copied)
    assert len(shown) == 3 and all(reason in ln for ln in shown[:2]), shown
    assert shown[2] == "(source not shown: source copy not in the capture)"


# --------------------------------------------------------------------------- 2. outside the capture: wave files


@pytest.mark.parametrize("kind", TRICKS)
def test_outside_capture_wave_entry_is_refused(cap, tmp_path, kind):
    name = trick(cap, kind, tmp_path / "outside" / "wave.json", "se3_sm0_sl0_wv0.json")
    edit_json(cap / "filenames.json", lambda d: d["wave_filenames"]["3"]["0"]["0"]["0"].__setitem__(0, name))
    before = digest(cap)
    with deadline(60):
        o = run_main("analyze", cap, "--json")
    assert_clean(o)
    assert o.code == EXIT_PARTIAL, o.describe()
    js = o.json()
    assert js["capture"]["waves"] == 3 and js["capture"]["waves_listed"] == 4
    assert [w for w in js["warnings"] if w.startswith(name) and "not read, wave skipped" in w], js["warnings"]
    assert digest(cap) == before


def test_outside_capture_every_wave_refused_is_corrupt(cap, tmp_path):
    def point_out(d):
        for simd in d["wave_filenames"]["3"].values():
            simd["0"]["0"][0] = "../outside/wave.json"

    edit_json(cap / "filenames.json", point_out)
    o = run_main("analyze", cap)
    assert_clean(o)
    assert o.code == EXIT_CORRUPT and "none of the 4 wave files is usable" in o.err, o.describe()


def test_outside_capture_symlink_inside_is_followed(cap):
    """A symlink that stays inside the capture is fine (clean twin)."""
    (cap / "se3_sm0_sl0_wv0.json").rename(cap / "moved.json")
    (cap / "se3_sm0_sl0_wv0.json").symlink_to("moved.json")
    o = run_main("analyze", cap, "--json")
    assert_clean(o)
    assert o.code == EXIT_OK and o.json()["capture"]["waves"] == 4, o.describe()


@pytest.mark.parametrize("name,code", [("code.json", EXIT_CORRUPT), ("occupancy.json", EXIT_PARTIAL), ("filenames.json", EXIT_CORRUPT)])
def test_outside_capture_fixed_file_symlink_is_refused(cap, tmp_path, name, code):
    shutil.copy(cap / name, tmp_path / "outside" / name)
    (cap / name).unlink()
    (cap / name).symlink_to(tmp_path / "outside" / name)
    o = run_main("analyze", cap, "--json")
    assert_clean(o)
    if name == "filenames.json":  # a capture is recognised by its filenames.json: still a capture, refused
        assert o.code == code and "filenames.json: not read (leads outside the capture directory)" in o.err, o.describe()
    elif code == EXIT_PARTIAL:
        assert o.code == code and any(name in w and "leads outside" in w for w in o.json()["warnings"]), o.describe()
    else:
        assert o.code == code and f"{name}: not read (leads outside the capture directory)" in o.err, o.describe()


def test_outside_capture_fifo_side_file_does_not_hang(cap):
    (cap / "occupancy.json").unlink()
    os.mkfifo(cap / "occupancy.json")
    with deadline(60):
        o = run_main("analyze", cap, "--json")
    assert_clean(o)
    assert o.code == EXIT_PARTIAL and any("occupancy.json" in w and "not a regular file" in w for w in o.json()["warnings"]), o.describe()


def test_outside_capture_symlinked_capture_folder_is_not_searched(cap, tmp_path):
    """A bundle holding a symlink to a capture elsewhere does not make attlens
    analyze that capture; a real capture inside the bundle still is."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "ui_output_agent_1_dispatch_1").symlink_to(cap)
    o = run_main("analyze", bundle, "--json")
    assert_clean(o)
    assert o.code == 4, o.describe()  # NOT_A_CAPTURE
    shutil.copytree(cap, bundle / "real")
    o = run_main("analyze", bundle, "--json")
    assert o.code == EXIT_OK and o.json()["capture"]["path"] == str(bundle / "real"), o.describe()


def test_outside_capture_rocprofv3_symlink_in_the_capture_is_not_searched(cap, tmp_path, shared):
    """The capture's own rocprofv3/ is part of the capture: a symlink from it to
    a folder of run outputs elsewhere is not read; the same folder really
    inside the capture is (the clean twin)."""
    run = shared / "traces/flash_attn_func/rocprofv3"
    (cap / "rocprofv3").symlink_to(run)
    o = run_main("analyze", cap, "--json", "--no-cache")
    assert_clean(o)
    assert o.json()["capture"]["rocprof_files"] == [], o.describe()
    (cap / "rocprofv3").unlink()
    shutil.copytree(run, cap / "rocprofv3")
    o = run_main("analyze", cap, "--json", "--no-cache")
    assert o.json()["capture"]["rocprof_files"] and all(f.startswith(str(cap / "rocprofv3")) for f in o.json()["capture"]["rocprof_files"])


def test_duplicate_wave_entries_count_once(cap):
    edit_json(cap / "filenames.json", lambda d: d["wave_filenames"]["3"]["0"]["0"].__setitem__("1", d["wave_filenames"]["3"]["0"]["0"]["0"]))
    o = run_main("analyze", cap, "--json")
    assert_clean(o)
    js = o.json()
    assert js["capture"]["waves"] == 4, "the duplicate entry must not count a wave twice"
    assert o.code == EXIT_PARTIAL and any("listed again in filenames.json" in w and "counted once" in w for w in js["warnings"])
    # the totals equal the clean capture's
    edit_json(cap / "filenames.json", lambda d: d["wave_filenames"]["3"]["0"]["0"].pop("1"))
    ref = run_main("analyze", cap, "--json").json()
    assert js["totals"] == ref["totals"]


# --------------------------------------------------------------------------- 3. size caps on embedded source


def test_size_cap_huge_snapshot_is_left_out(cap, tmp_path):
    big = cap / "source_0_flash_attn_func.py"
    with big.open("wb") as fh:  # 1 GiB, sparse: costs nothing to make
        fh.truncate(1 << 30)
    t0 = time.monotonic()
    o = run_main("report", cap, "-o", tmp_path / "r.html")
    assert_clean(o)
    assert o.code == EXIT_OK, o.describe()
    html = (tmp_path / "r.html").read_text()
    assert len(html) < 5_000_000
    data = json.loads(html.split('<script type="application/json" id="attlens-data">', 1)[1].split("</script>", 1)[0])
    files = {f["file"]: f for f in data["source"]["files"]}
    assert files[KERNEL_SRC]["text"] is None
    assert "1,073,741,824 bytes, more than the 4,194,304-byte limit" in files[KERNEL_SRC]["omitted"]
    o = run_main("report", cap, "--format", "md", "-o", tmp_path / "md")
    assert_clean(o)
    assert "not shown (source\\_0\\_flash\\_attn\\_func.py: 1,073,741,824 bytes" in (tmp_path / "md" / "report.md").read_text()
    assert time.monotonic() - t0 < 60


def test_size_cap_total_embedded_source(cap, tmp_path, monkeypatch):
    from attlens.report import html

    text = "".join(f"x = {i}\n" for i in range(1, 300))
    (cap / "source_0_flash_attn_func.py").write_text(text)
    (cap / "source_1_numeric.py").write_text(text)
    monkeypatch.setattr(html, "MAX_EMBEDDED_SOURCE_BYTES", len(text) + 10)  # room for one file only
    assert run_main("report", cap, "-o", tmp_path / "r.html").code == EXIT_OK
    page = (tmp_path / "r.html").read_text()
    data = json.loads(page.split('<script type="application/json" id="attlens-data">', 1)[1].split("</script>", 1)[0])
    shown = [f for f in data["source"]["files"] if f["text"] is not None]
    left = [f for f in data["source"]["files"] if f["omitted"]]
    assert len(shown) == 1 and len(left) == 1 and "cap" in left[0]["omitted"]
    assert "source text left out" in page  # the page says so (report.js)


def test_source_lines_are_counted_on_newlines_only(cap):
    """A form feed or U+2028 in a source file must not shift line numbers
    (compilers count newlines only; str.splitlines does not)."""
    import attlens
    from attlens.model.dispatch import SourceLoc

    (cap / "source_0_flash_attn_func.py").write_text("a = 1\fb\nline two\u2028x\nline three\r\n")
    d = attlens.load(cap)
    assert d.source_text(SourceLoc(KERNEL_SRC, 2)) == ["a = 1\fb", "line two\u2028x", "line three"]


# --------------------------------------------------------------------------- 4. outputs never land in or over an input


@pytest.fixture
def saved_json(cap, tmp_path) -> Path:
    p = tmp_path / "a.json"
    o = run_main("analyze", cap, "--json", "--topk", "0")
    p.write_text(o.out)
    return p


OVER_INPUT = {
    "plan-over-code.json": lambda c, j, t: ["plan", c, "-o", c / "code.json"],
    "plan-into-capture": lambda c, j, t: ["plan", c, "--format", "md", "-o", c / "plan.md"],
    "plan-json-into-capture": lambda c, j, t: ["plan", c, "--json", "-o", c / "plan.json"],
    "report-into-capture": lambda c, j, t: ["report", c, "-o", c / "report.html"],
    "report-md-into-capture": lambda c, j, t: ["report", c, "--format", "md", "-o", c],
    "export-into-capture": lambda c, j, t: ["export", c, "--perfetto", c / "trace.json"],
    "diff-over-input": lambda c, j, t: ["diff", j, c, "-o", j],
    "diff-into-capture": lambda c, j, t: ["diff", j, c, "--format", "md", "-o", c / "diff.md"],
    "check-junit-over-baseline": lambda c, j, t: ["check", c, "--baseline", j, "--junit", j],
    "report-diff-over-input": lambda c, j, t: ["report", "--diff", j, c, "-o", j],
}


@pytest.mark.parametrize("case", sorted(OVER_INPUT))
def test_output_never_over_an_input(cap, saved_json, tmp_path, case):
    argv = OVER_INPUT[case](cap, saved_json, tmp_path)
    before, before_json = digest(cap), saved_json.read_bytes()
    o = run_main(*argv)
    assert_clean(o)
    assert o.code == EXIT_OUTPUT, o.describe()
    assert digest(cap) == before and saved_json.read_bytes() == before_json
    assert o.err.count("\n") == 1 and o.err.startswith("attlens: error:"), o.describe()


def test_output_beside_a_capture_is_fine(cap, tmp_path):
    """Clean twin: writing next to the capture (its parent folder) is allowed."""
    o = run_main("plan", cap, "--format", "md", "-o", cap.parent / "plan.md")
    assert o.code == EXIT_OK, o.describe()
    assert (cap.parent / "plan.md").read_text().startswith("#")


def test_output_path_problems_are_clear_errors(cap, tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    for argv, needle in (
        (["plan", cap, "-o", tmp_path / "adir"], "is a directory"),
        (["plan", cap, "-o", tmp_path / "afile" / "plan.txt"], "is a file, not a directory"),
        (["report", cap, "-o", tmp_path / "afile" / "sub" / "r.html"], "is a file, not a directory"),
        (["report", cap, "--format", "md", "-o", tmp_path / "afile"], "is not a directory"),
        (["export", cap, "--perfetto", tmp_path / "adir"], "is a directory"),
    ):
        o = run_main(*argv)
        assert_clean(o)
        assert o.code == EXIT_OUTPUT and needle in o.err, o.describe()
    assert (tmp_path / "afile").read_text() == "x"


def test_output_write_failure_is_a_clear_error(cap, tmp_path, monkeypatch):
    """A read-only folder or a full disk fails in os.replace / write: exit 9."""
    import errno

    from attlens import fsutil

    def refuse(*_a, **_k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(fsutil.os, "replace", refuse)
    o = run_main("plan", cap, "-o", tmp_path / "plan.txt")
    assert_clean(o)
    assert o.code == EXIT_OUTPUT and "Read-only file system" in o.err, o.describe()
    assert not list(tmp_path.glob(".plan.txt.tmp-*")), "the temporary file is removed"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_output_read_only_folder(cap, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    o = run_main("plan", cap, "-o", ro / "plan.txt")
    assert_clean(o)
    assert o.code == EXIT_OUTPUT, o.describe()


@pytest.mark.parametrize("argv", [
    ["report", "CAP", "--format", "md", "-o", "X/md"], ["report", "CAP", "-o", "X/r.html"], ["demo", "--out", "X/demo"],
    ["export", "CAP", "-o", "X/t.json"], ["diff", "CAP", "CAP", "-o", "X/d.txt"], ["check", "CAP", "--baseline", "CAP", "--junit", "X/j.xml"],
    ["plan", "CAP", "-o", "X/p.txt"], ["sweep", "init", "X/s.toml"],
])
def test_an_output_folder_that_cannot_be_made_is_exit_9(cap, argv):
    """Row 13: report --format md into a folder that cannot be created exited 1
    (the HTML report: 9). /proc refuses a new folder even to root."""
    x = f"/proc/attlens-no-such-{os.getpid()}"
    o = run_main(*[str(cap) if a == "CAP" else a.replace("X", x) for a in argv])
    assert_clean(o)
    assert o.code == EXIT_OUTPUT and f"cannot write {x}" in o.err, o.describe()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_markdown_report_into_a_read_only_folder(cap, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    o = run_main("report", cap, "--format", "md", "-o", ro / "md")
    assert_clean(o)
    assert o.code == EXIT_OUTPUT, o.describe()
    twin = run_main("report", cap, "--format", "md", "-o", tmp_path / "md")
    assert twin.code == 0 and (tmp_path / "md" / "report.md").is_file()


def test_demo_refuses_a_non_empty_folder(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("keep me")
    o = run_main("demo", "--out", d, "--json")
    assert_clean(o)
    assert o.code == EXIT_OUTPUT and "--force" in o.err, o.describe()
    assert sorted(p.name for p in d.iterdir()) == ["notes.txt"]
    o = run_main("demo", "--out", d, "--json", "--force")
    assert o.code == EXIT_OK and (d / "notes.txt").read_text() == "keep me", o.describe()
    o = run_main("demo", "--out", tmp_path / "new", "--json")  # a new folder needs no --force
    assert o.code == EXIT_OK, o.describe()


# --------------------------------------------------------------------------- 5. profile/capture touch only their own run

from test_profile import app_args, env  # noqa: E402,F401  (the fake rocprofv3 environment)


def _attlens(e, *args):
    return subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, env=e["env"],
                          timeout=300, cwd=e["tmp"])


def test_profile_ignores_result_files_outside_out(env):
    """rocprofv3 names files of another run in "Opened result file" lines:
    profile must not follow them, count that run's capture, or move its shells."""
    foreign = env["tmp"] / "older_run"
    shutil.copytree(env["shared"] / "traces/vec_add/rocprofv3", foreign)
    shutil.copytree(env["shared"] / "traces/hgemm_splitk/big/ui_output_agent_4716_dispatch_319", foreign / "ui_output_agent_4716_dispatch_319")
    shell = foreign / "ui_output_agent_99_dispatch_1"
    shell.mkdir()
    (shell / "filenames.json").write_text('{"wave_filenames": {}}')
    extra = [foreign / "discover_kernel_trace.csv", foreign / "discover_agent_info.csv", shell / "filenames.json",
             foreign / "ui_output_agent_4716_dispatch_319" / "code.json"]
    env["env"]["FAKE_ROCPROF_OPENED_EXTRA"] = os.pathsep.join(map(str, extra))
    before = digest(foreign)
    out = env["tmp"] / "prof"
    p = _attlens(env, "profile", "--out", out, "--json", *app_args(env))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert digest(foreign) == before, "a folder outside --out was changed"
    assert all(str(out) in c["path"] for c in doc["captures"]) and len(doc["captures"]) == 2
    assert all(str(out) in s for s in doc["empty_shells_moved_to"])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("phase", ["version", "echo", "discovery"])
def test_timeout_ends_hung_rocprofv3_and_its_grandchildren(env, phase):
    pidfile = env["tmp"] / "grandchild.pid"
    env["env"].update(FAKE_ROCPROF_HANG=phase, FAKE_ROCPROF_GRANDCHILD_PIDFILE=str(pidfile))
    t0 = time.monotonic()
    p = _attlens(env, "profile", "--out", env["tmp"] / "o", "--timeout", "2", *app_args(env))
    took = time.monotonic() - t0
    assert p.returncode == EXIT_PROFILER_FAILED, p.stderr
    assert "did not finish within 2 s" in p.stderr and "Traceback" not in p.stderr
    assert took < 30, f"--timeout 2 took {took:.0f} s (the {phase} run must honour it)"
    grandchild = int(pidfile.read_text())
    end = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < end:
        time.sleep(0.1)
    assert not _alive(grandchild), "the hung rocprofv3's grandchild outlived the timeout"


def test_outputs_never_replace_the_run_outputs_read_beside_a_capture(tmp_path, shared):
    """Every command that writes refuses a path that is one of the rocprofv3
    files it reads beside the capture (report, index, report --diff, diff,
    check --junit, plan, export), and a device or FIFO given as an output."""
    run = tmp_path / "vec_add"
    cap = run / "big" / "ui_output_agent_14705_dispatch_25"
    shutil.copytree(shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25", cap)
    shutil.copytree(shared / "traces/vec_add/rocprofv3", run / "rocprofv3")
    agent = run / "rocprofv3" / "big_agent_info.csv"
    trace = run / "rocprofv3" / "discover_kernel_trace.csv"
    before = {f: f.read_bytes() for f in (agent, trace)}
    other = tmp_path / "other"
    shutil.copytree(cap, other / "ui_output_agent_14705_dispatch_25")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (agent, trace, fifo):
        for argv in (["report", cap, "-o", target], ["report", cap, other, "-o", target], ["report", "--diff", cap, cap, "-o", target],
                     ["diff", cap, cap, "-o", target], ["check", cap, "--baseline", cap, "--junit", target],
                     ["plan", cap, "-o", target], ["export", cap, "-o", target]):
            with deadline(60):
                o = run_main(*argv)
            assert_clean(o)
            assert o.code == EXIT_OUTPUT, (argv, o.describe())
    assert {f: f.read_bytes() for f in before} == before and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_wave_file_over_the_size_limit_is_skipped_not_allocated(cap):
    """A (sparse) wave file of 10 TiB: one wave skipped with the reason, the rest
    analyzed (it ended in an out-of-memory internal error, exit 1)."""
    with open(cap / "se3_sm0_sl0_wv0.json", "r+b") as f:
        f.truncate(10 << 40)
    o = run_main("analyze", cap, "--json", "--no-cache")
    assert_clean(o)
    assert o.code == EXIT_PARTIAL, o.describe()
    assert any("se3_sm0_sl0_wv0.json" in w and "byte limit" in w for w in o.json()["warnings"]), o.json()["warnings"]
