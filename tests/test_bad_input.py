"""Bad input reaches the user as one clear line and a documented exit code.

Every fixture is a synthetic capture written by ``attlens.synth.write_capture``
into ``tmp_path`` and then damaged on purpose; no committed trace is used. The
CLI runs as a subprocess (``python -m attlens analyze PATH``) so the exit code,
stderr and stdout are exactly what a user or a script sees. Exit codes are the
constants of ``attlens.errors`` (docs/exit-codes.md).
"""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import attlens
from attlens import errors
from attlens.errors import (
    EXIT_CORRUPT,
    EXIT_EMPTY_CAPTURE,
    EXIT_NOT_A_CAPTURE,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_SEVERAL_CAPTURES,
)
from attlens.synth import write_capture

CAPTURE_NAME = "ui_output_agent_1_dispatch_7"
# A wave file in the middle of the listing (2 SEs x 4 SIMDs x 2 slots x 2 instances).
VICTIM = "se1_sm2_sl1_wv0.json"
ERROR_PREFIX = "attlens: error:"


# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """One valid synthetic capture per module; tests damage copies of it."""
    root = tmp_path_factory.mktemp("pristine")
    cap = write_capture(root)
    assert cap.name == CAPTURE_NAME
    return root


@pytest.fixture
def capture(pristine, tmp_path) -> Path:
    """A private copy of the pristine capture (with its rocprofv3 side files)."""
    dst = tmp_path / "run"
    shutil.copytree(pristine, dst)
    return dst / CAPTURE_NAME


def run_cli(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ATTLENS_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "attlens", "analyze", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def describe(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"


def assert_no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stdout, describe(proc)
    assert "Traceback" not in proc.stderr, describe(proc)
    assert "internal error" not in proc.stderr, describe(proc)


def first_stderr_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.splitlines()
    assert lines, f"nothing on stderr\n{describe(proc)}"
    return lines[0]


def assert_error(proc: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    """Exit ``code``, stderr starts with the error prefix and names every needle."""
    assert_no_traceback(proc)
    assert proc.returncode == code, describe(proc)
    line = first_stderr_line(proc)
    assert line.startswith(ERROR_PREFIX), describe(proc)
    for n in needles:
        assert n in line, f"{n!r} not named in the error line {line!r}"
    return line


def check_error(path, code: int, *needles: str) -> None:
    """Run plain and with --json: same exit code, error line, JSON error object."""
    proc = run_cli(path)
    assert_error(proc, code, *needles)
    assert proc.stdout.strip() == "", f"an error must not print an analysis\n{describe(proc)}"

    proc = run_cli(path, "--json")
    assert_error(proc, code, *needles)
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "attlens.error"
    assert doc["error"]["exit_code"] == code
    for n in needles:
        assert n in doc["error"]["message"]


def run_partial(path) -> tuple[subprocess.CompletedProcess, dict]:
    """Run plain and --json on an input that must give a partial analysis (exit 8)."""
    proc = run_cli(path)
    assert_no_traceback(proc)
    assert proc.returncode == EXIT_PARTIAL, describe(proc)
    assert_analysis_printed(proc)

    jproc = run_cli(path, "--json")
    assert_no_traceback(jproc)
    assert jproc.returncode == EXIT_PARTIAL, describe(jproc)
    doc = json.loads(jproc.stdout)
    assert doc["schema"] == "attlens.analyze"
    assert doc["capture"]["partial"] is True
    return proc, doc


def assert_analysis_printed(proc: subprocess.CompletedProcess) -> None:
    assert "toy_kernel" in proc.stdout, describe(proc)
    assert "Occupancy" in proc.stdout, describe(proc)


def output_lines_with(proc: subprocess.CompletedProcess, *needles: str) -> list[str]:
    text = proc.stdout + "\n" + proc.stderr
    return [ln for ln in text.splitlines() if all(n in ln for n in needles)]


def warnings_with(doc: dict, *needles: str) -> list[str]:
    return [w for w in doc["warnings"] if all(n in w for n in needles)]


def read_doc(path: Path):
    return orjson.loads(path.read_bytes())


def write_doc(path: Path, doc) -> None:
    path.write_bytes(orjson.dumps(doc))


def truncate_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def wave_files(cap: Path) -> list[Path]:
    files = sorted(cap.glob("se*_sm*_sl*_wv*.json"))
    assert len(files) > 2
    return files


def instruction_count(cap: Path) -> int:
    rows = read_doc(cap / "code.json")["code"]
    return sum(1 for r in rows if not r[0].startswith(";"))


def set_pc(wave: Path, pc: int, record: int = 0) -> None:
    doc = read_doc(wave)
    doc["wave"]["instructions"][record][4] = pc
    write_doc(wave, doc)


def make_shell(cap: Path) -> None:
    """An empty shell directory: filenames.json lists no wave, no wave files."""
    for f in wave_files(cap):
        f.unlink()
    idx = read_doc(cap / "filenames.json")
    idx["wave_filenames"] = {}
    write_doc(cap / "filenames.json", idx)


def write_two_captures(root: Path) -> list[Path]:
    return [write_capture(root / "a", dispatch_id=1), write_capture(root / "b", dispatch_id=2)]


# --------------------------------------------------------------- sanity of the fixture


def test_pristine_copy_is_clean(capture):
    proc = run_cli(capture, "--json")
    assert_no_traceback(proc)
    assert proc.returncode == EXIT_OK, describe(proc)
    doc = json.loads(proc.stdout)
    assert doc["capture"]["partial"] is False
    assert doc["capture"]["waves"] == doc["capture"]["waves_listed"] == len(wave_files(capture))


# ------------------------------------------------------------------ 1. path not found


def test_missing_path(tmp_path):
    missing = tmp_path / "no_such_capture"
    check_error(missing, EXIT_NOT_FOUND, "no_such_capture")


def test_path_is_a_regular_file(capture):
    check_error(capture / "code.json", EXIT_NOT_FOUND, "code.json")


# -------------------------------------------------------------- 2. not a capture


def test_directory_without_capture(tmp_path):
    d = tmp_path / "just_a_folder"
    (d / "sub" / "deeper").mkdir(parents=True)
    (d / "notes.txt").write_text("no capture here\n")
    (d / "sub" / "code.json").write_text('{"code": []}')  # a stray file is not a capture
    check_error(d, EXIT_NOT_A_CAPTURE, "just_a_folder")


# -------------------------------------------------------------- 3. several captures


def test_several_captures_lists_candidates(tmp_path):
    caps = write_two_captures(tmp_path)
    proc = run_cli(tmp_path)
    line = assert_error(proc, EXIT_SEVERAL_CAPTURES, "2")
    assert "--all" in proc.stderr, describe(proc)
    for cap in caps:
        expect = f"waves={len(wave_files(cap))} instructions={instruction_count(cap)}"
        hits = [ln for ln in proc.stderr.splitlines()[1:] if str(cap) in ln]
        assert hits, f"{cap} not listed\n{describe(proc)}"
        assert expect in hits[0], f"{expect!r} missing from {hits[0]!r}"
    assert proc.stdout.strip() == "", describe(proc)
    assert line  # named above


def test_several_captures_json(tmp_path):
    caps = write_two_captures(tmp_path)
    proc = run_cli(tmp_path, "--json")
    assert_error(proc, EXIT_SEVERAL_CAPTURES)
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "attlens.error"
    assert doc["error"]["exit_code"] == EXIT_SEVERAL_CAPTURES
    cands = doc["error"]["candidates"]
    assert len(cands) == 2
    assert sorted(c["path"] for c in cands) == sorted(str(c) for c in caps)
    for c in cands:
        assert c["waves"] == len(wave_files(Path(c["path"])))
        assert c["instructions"] == instruction_count(Path(c["path"]))
        assert c["error"] is None


def test_several_captures_all(tmp_path):
    write_two_captures(tmp_path)
    proc = run_cli(tmp_path, "--all")
    assert_no_traceback(proc)
    assert proc.returncode == EXIT_OK, describe(proc)
    assert proc.stdout.count("toy_kernel") >= 2, describe(proc)


def test_several_captures_all_json(tmp_path):
    caps = write_two_captures(tmp_path)
    proc = run_cli(tmp_path, "--all", "--json")
    assert_no_traceback(proc)
    assert proc.returncode == EXIT_OK, describe(proc)
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "attlens.analyze_many"
    assert len(doc["captures"]) == 2
    assert sorted(c["capture"]["path"] for c in doc["captures"]) == sorted(str(c) for c in caps)
    assert sorted(c["capture"]["dispatch_id"] for c in doc["captures"]) == [1, 2]


# ---------------------------------------------------------- 4./5. empty captures


def test_shell_directory(capture):
    make_shell(capture)
    check_error(capture, EXIT_EMPTY_CAPTURE, CAPTURE_NAME)


def test_code_json_with_empty_listing(capture):
    doc = read_doc(capture / "code.json")
    doc["code"] = []
    write_doc(capture / "code.json", doc)
    check_error(capture, EXIT_EMPTY_CAPTURE, "code.json")


def test_code_json_with_only_the_label_row(capture):
    doc = read_doc(capture / "code.json")
    doc["code"] = [r for r in doc["code"] if r[0].startswith(";")]
    assert len(doc["code"]) == 1
    write_doc(capture / "code.json", doc)
    check_error(capture, EXIT_EMPTY_CAPTURE, "code.json")


# ------------------------------------------------------------- 6. corrupt captures


def test_truncated_code_json(capture):
    truncate_half(capture / "code.json")
    check_error(capture, EXIT_CORRUPT, "code.json")


def test_invalid_filenames_json(capture):
    (capture / "filenames.json").write_text('{"wave_filenames": {"0": {"0": ')
    check_error(capture, EXIT_CORRUPT, "filenames.json")


def test_code_json_missing(capture):
    (capture / "code.json").unlink()
    check_error(capture, EXIT_CORRUPT, "code.json")


# --------------------------------------------------------- 7. one truncated wave file


def test_one_truncated_wave_file(capture):
    n = len(wave_files(capture))
    truncate_half(capture / VICTIM)
    proc, doc = run_partial(capture)
    assert output_lines_with(proc, VICTIM), f"no warning names {VICTIM}\n{describe(proc)}"
    assert warnings_with(doc, VICTIM), doc["warnings"]
    assert doc["capture"]["waves_listed"] == n
    assert doc["capture"]["waves"] == n - 1


# ---------------------------------------------------- 8. pc beyond the code.json listing


def test_wave_with_pc_beyond_listing(capture):
    n = len(wave_files(capture))
    set_pc(capture / VICTIM, 99999, record=3)
    proc, doc = run_partial(capture)
    assert output_lines_with(proc, VICTIM, "99999"), describe(proc)
    assert warnings_with(doc, VICTIM, "99999"), doc["warnings"]
    assert doc["capture"]["waves"] == n - 1
    assert doc["capture"]["waves_listed"] == n


def test_every_wave_with_pc_beyond_listing(capture):
    for f in wave_files(capture):
        set_pc(f, 99999)
    check_error(capture, EXIT_CORRUPT, "99999")


# ------------------------------------------------------------- 9. optional side files


def test_truncated_occupancy_json(capture):
    truncate_half(capture / "occupancy.json")
    proc, doc = run_partial(capture)
    assert output_lines_with(proc, "occupancy.json"), describe(proc)
    assert warnings_with(doc, "occupancy.json"), doc["warnings"]
    assert doc["capture"]["waves"] == doc["capture"]["waves_listed"]


@pytest.mark.parametrize("name", ["realtime.json", "snapshots.json"])
def test_missing_optional_file(capture, name):
    (capture / name).unlink()
    proc = run_cli(capture)
    assert_no_traceback(proc)
    assert proc.returncode == EXIT_OK, describe(proc)
    assert_analysis_printed(proc)
    jproc = run_cli(capture, "--json")
    assert_no_traceback(jproc)
    assert jproc.returncode == EXIT_OK, describe(jproc)
    assert json.loads(jproc.stdout)["capture"]["partial"] is False


# ---------------------------------------------------- 10. snapshot source file absent


def test_snapshot_source_file_absent(capture):
    sources = sorted(capture.glob("source_*"))
    assert sources, "the synthetic capture should carry a source snapshot"
    for s in sources:
        s.unlink()
    proc = run_cli(capture)
    assert_no_traceback(proc)
    assert proc.returncode == EXIT_OK, describe(proc)
    assert_analysis_printed(proc)
    proc = run_cli(capture, "--detail")
    assert_no_traceback(proc)
    assert proc.returncode == EXIT_OK, describe(proc)
    jproc = run_cli(capture, "--json")
    assert_no_traceback(jproc)
    assert jproc.returncode == EXIT_OK, describe(jproc)
    assert json.loads(jproc.stdout)["capture"]["partial"] is False


# ------------------------------------------------ 11. num_insts beyond stored records


def test_wave_with_fewer_records_than_num_insts(capture):
    n = len(wave_files(capture))
    doc = read_doc(capture / VICTIM)
    stored = doc["wave"]["instructions"]
    assert doc["num_insts"] == len(stored)
    doc["wave"]["instructions"] = stored[: len(stored) // 2]  # valid JSON, records lost
    write_doc(capture / VICTIM, doc)
    proc, jdoc = run_partial(capture)
    assert output_lines_with(proc, VICTIM), describe(proc)
    assert warnings_with(jdoc, VICTIM), jdoc["warnings"]
    assert jdoc["capture"]["waves"] == n - 1
    assert jdoc["capture"]["waves_listed"] == n


# ---------------------------------------------------------------- direct API


def _damage_truncated_code(cap: Path) -> None:
    truncate_half(cap / "code.json")


def _damage_invalid_filenames(cap: Path) -> None:
    (cap / "filenames.json").write_text("{not json")


def _damage_missing_code(cap: Path) -> None:
    (cap / "code.json").unlink()


@pytest.mark.parametrize(
    "damage",
    [_damage_truncated_code, _damage_invalid_filenames, _damage_missing_code],
    ids=["truncated-code-json", "invalid-filenames-json", "missing-code-json"],
)
def test_api_corrupt(capture, damage):
    damage(capture)
    with pytest.raises(errors.CorruptCapture) as ei:
        attlens.load(capture)
    assert ei.value.exit_code == EXIT_CORRUPT


def test_api_not_found(tmp_path, capture):
    with pytest.raises(errors.InputNotFound) as ei:
        attlens.load(tmp_path / "no_such_capture")
    assert ei.value.exit_code == EXIT_NOT_FOUND
    with pytest.raises(errors.InputNotFound):
        attlens.load(capture / "code.json")


def test_api_not_a_capture(tmp_path):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(errors.NotACapture) as ei:
        attlens.load(tmp_path / "empty")
    assert ei.value.exit_code == EXIT_NOT_A_CAPTURE


def test_api_shell_directory(capture):
    make_shell(capture)
    with pytest.raises(errors.EmptyCapture) as ei:
        attlens.load(capture)
    assert ei.value.exit_code == EXIT_EMPTY_CAPTURE


def test_api_errors_are_attlens_errors():
    for cls in (errors.InputNotFound, errors.NotACapture, errors.EmptyCapture, errors.CorruptCapture):
        assert issubclass(cls, errors.AttlensError)


# =========================================================================== issue 11: no internal error on any input
#
# Each case below once gave an internal error (exit 1), a traceback, or a
# silently wrong result. They run in-process (tests/clirun.py) on copies of a
# real capture (flash_attn_func small) and real rocprofv3 outputs.

import signal  # noqa: E402
import time  # noqa: E402

from clirun import assert_clean, run_main  # noqa: E402
from conftest import require_shared  # noqa: E402

from attlens.errors import EXIT_USAGE  # noqa: E402

REAL = "flash_attn_func/small/ui_output_agent_32235_dispatch_44"


@pytest.fixture(scope="module")
def real_pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("real")
    dst = root / "C"
    shutil.copytree(require_shared() / "traces" / REAL, dst)
    for p in [dst, *dst.iterdir()]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


@pytest.fixture
def real(real_pristine, tmp_path) -> Path:
    c = tmp_path / "C"
    shutil.copytree(real_pristine, c)
    return c


def _vec_add() -> Path:
    return require_shared() / "traces/vec_add/rocprofv3"


# --------------------------------------------------------------- errors: several runs, odd paths


def test_error_kernels_folder_with_two_runs(tmp_path):
    t = tmp_path / "t"
    t.mkdir()
    for name in ("a_kernel_trace.csv", "b_kernel_trace.csv"):
        shutil.copy(_vec_add() / "discover_kernel_trace.csv", t / name)
    o = run_main("kernels", t)
    assert_clean(o)
    assert o.code == EXIT_SEVERAL_CAPTURES and "a_kernel_trace.csv" in o.err and "b_kernel_trace.csv" in o.err, o.describe()
    o = run_main("kernels", t, "--json")
    assert_clean(o)
    cands = o.json()["error"]["candidates"]
    assert sorted(Path(c["path"]).name for c in cands) == ["a_kernel_trace.csv", "b_kernel_trace.csv"]
    assert all(c["waves"] is None and c["instructions"] is None for c in cands)


def test_error_non_utf8_path(tmp_path):
    bad = os.fsdecode(bytes(tmp_path) + b"/x\xff")
    o = run_main("analyze", bad, "--json")
    assert_clean(o)
    assert o.code == EXIT_NOT_FOUND, o.describe()
    assert o.json()["error"]["message"].endswith("x\\xff: no such file or directory")
    assert "x\\xff" in o.err


def test_error_non_utf8_capture_path_is_analyzed(real, tmp_path):
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/run\xff"))
    real.rename(odd)
    out = tmp_path / "out"
    for argv in (["analyze", odd, "--no-color", "--detail"], ["report", odd, "-o", out / "r.html"],
                 ["report", odd, "--format", "md", "-o", out / "md"], ["export", odd, "--perfetto", out / "t.json"],
                 ["plan", odd, "--json"], ["analyze", odd, "--json"]):
        o = run_main(*argv)
        assert_clean(o)
        assert o.code == EXIT_OK, o.describe()
    assert o.json()["capture"]["path"].endswith("run\\xff")
    assert "run\\\\xff" in (out / "r.html").read_text()  # JSON-escaped backslash inside the page
    assert json.loads((out / "md" / "analysis.json").read_text())["capture"]["path"].endswith("run\\xff")


# --------------------------------------------------------------- errors: numbers out of range, odd keys, nesting


def test_error_code_json_count_beyond_int64(real):
    doc = read_doc(real / "code.json")
    row = next(r for r in doc["code"] if not r[0].startswith(";"))
    row[6] = 2**63  # Hit
    write_doc(real / "code.json", doc)
    o = run_main("analyze", real, "--json")
    assert_clean(o)
    assert o.code == EXIT_CORRUPT and "column Hit is not a 64-bit integer: 9223372036854775808" in o.err, o.describe()


def test_error_occupancy_odd_key_and_wrong_type_events(real):
    doc = read_doc(real / "occupancy.json")
    se = next(k for k in doc if k.isdigit())
    n = len(doc[se])
    doc["\u00b2"] = doc[se]  # "²".isdigit() is True, int("²") fails
    doc[se][1] = 5  # not a list
    doc[se][2] = [1, 2, 3]  # too short
    doc[se][3][0] = "x"  # not an integer
    doc[se][4][0] = 2**63  # beyond int64
    write_doc(real / "occupancy.json", doc)
    o = run_main("analyze", real, "--json")
    assert_clean(o)
    assert o.code == EXIT_PARTIAL, o.describe()
    assert f"occupancy.json: SE {se}: 4 of {n} events are not [time, cu, simd, slot, start, kernel_id] integers; dropped" in o.json()["warnings"]


def test_error_snapshots_nested_deeply(real):
    (real / "snapshots.json").write_text('{"a":' * 1000 + '"x"' + "}" * 1000)
    o = run_main("analyze", real, "--json")
    assert_clean(o)
    assert o.code == EXIT_PARTIAL and "snapshots.json: entries nested deeper than 64 levels; ignored" in o.json()["warnings"], o.describe()


def test_error_filenames_json_odd_keys_and_times(real):
    for bad in ({"\u00b2": {"0": {"0": {"0": ["se3_sm0_sl0_wv0.json", 1, 5]}}}}, {"3": {"0": {"0": {"0": ["se3_sm0_sl0_wv0.json", 2**64 - 1, 5]}}}}, {"3": []}):
        write_doc(real / "filenames.json", {"wave_filenames": bad})
        o = run_main("analyze", real)
        assert_clean(o)
        assert o.code == EXIT_CORRUPT and "filenames.json" in o.err, o.describe()


def test_filenames_json_keys_are_checked_where_a_wave_is_listed(tmp_path):
    from attlens.errors import CorruptCapture
    from attlens.io.filenames_json import read_filenames_json

    leaf = ["se3_sm0_sl0_wv0.json", 1, 5]
    cases = {
        "'wave_filenames' key 'x' is not a decimal index": {"3": {"0": {"x": {"0": leaf}}}},
        "'wave_filenames' key '-1' is not a decimal index": {"-1": {"0": {"0": {"0": leaf}}}},
        "wave SE 3 SIMD 0 slot 0 K 1: expected [file name, begin, end]": {"3": {"0": {"0": {"0": leaf, "1": ["f", 1]}}}},
    }
    for i, (msg, nested) in enumerate(cases.items()):
        path = tmp_path / str(i) / "filenames.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"wave_filenames": nested}))
        with pytest.raises(CorruptCapture, match=re.escape(msg)):
            read_filenames_json(path)
    path = tmp_path / "empty" / "filenames.json"  # an odd key with no wave under it lists nothing: not an error
    path.parent.mkdir()
    path.write_text(json.dumps({"wave_filenames": {"x": {}, "3": {"y": {}}}}))
    assert read_filenames_json(path).waves == []


# --------------------------------------------------------------- errors: CSV files


def _stats_csv(tmp_path: Path, transform) -> Path:
    src = (_vec_add() / "discover_kernel_stats.csv").read_bytes()
    d = tmp_path / "csv"
    d.mkdir(exist_ok=True)
    p = d / "x_kernel_stats.csv"
    p.write_bytes(transform(src))
    return p


def test_error_csv_with_utf8_bom(tmp_path):
    ref = run_main("kernels", _vec_add() / "discover_kernel_stats.csv", "--json").json()
    o = run_main("kernels", _stats_csv(tmp_path, lambda b: b"\xef\xbb\xbf" + b), "--json")
    assert_clean(o)
    assert o.code == EXIT_OK, o.describe()
    assert o.json()["rows"] == ref["rows"]


def test_error_unquoted_csv_rows_are_not_lost_silently(tmp_path):
    o = run_main("kernels", _stats_csv(tmp_path, lambda b: b.replace(b'"', b"")), "--json")
    assert_clean(o)
    assert o.code == EXIT_PARTIAL, o.describe()
    doc = o.json()
    # 12 of the 15 kernel names hold commas (C++ templates): those rows are skipped, and said so
    assert doc["kernels"] == 3
    assert any("12 row(s) skipped" in n and "unquoted comma" in n for n in doc["notes"]), doc["notes"]


def test_error_csv_number_out_of_range(tmp_path):
    p = _stats_csv(tmp_path, lambda b: b.replace(b'"vecAddKernel_0",24,', b'"vecAddKernel_0",1e999,'))
    o = run_main("kernels", p, "--json")
    assert_clean(o)
    assert o.code == EXIT_OK, o.describe()
    row = next(r for r in o.json()["rows"] if r["name"] == "vecAddKernel_0")
    assert row["calls"] is None  # unavailable, not infinity or a crash


# --------------------------------------------------------------- errors: option values


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "{C}", "--baseline", "{C}", "--max-regression", "nan"],
        ["check", "{C}", "--baseline", "{C}", "--max-regression", "inf"],
        ["diff", "{C}", "{C}", "--noise-floor", "-1"],
        ["diff", "{C}", "{C}", "--top", "-3"],
        ["analyze", "{C}", "--topk", "-1"],
        ["analyze", "{C}", "--context", "x"],
        ["waves", "{C}", "--topk", "1e3"],
        ["deps", "{C}", "--pc", "-2"],
        ["export", "{C}", "--perfetto", "{T}/t.json", "--max-waves", "0"],
        ["export", "{C}", "--perfetto", "{T}/t.json", "--window", "5:99999999999999999999999"],
        ["export", "{C}", "--perfetto", "{T}/t.json", "--window", "9:3"],
        ["kernels", "{C}", "--top", "-5"],
        ["demo", "--topk", "0"],
        ["capture", "--kernel", "k", "--iteration", "0", "--", "true"],
        ["capture", "--kernel", "k", "--buffer-size", "-5", "--", "true"],
        ["capture", "--kernel", "k", "--buffer-size", "0x1", "--", "true"],
        ["capture", "--kernel", "k", "--timeout", "nan", "--", "true"],
        ["capture", "--kernel", "k", "--timeout", "0", "--", "true"],
        ["capture", "--kernel", "k", "--se-mask", "zz", "--", "true"],
        ["capture", "--kernel", "k", "--se-mask", "0", "--", "true"],
        ["profile", "--simd-select", "0x10", "--", "true"],
        ["profile", "--target-cu", "16", "--", "true"],
        ["pmc", "--target", "gfx950", "--ideal-bytes", "-1", "x.csv"],
        ["pmc", "--target", "gfx950", "--duration-us", "nan", "x.csv"],
        ["pmc", "--timeout", "-1", "--target", "gfx950", "--", "true"],
    ],
    ids=lambda a: " ".join(a[:1] + [x for x in a if x.startswith("--")][:1]) + " " + a[-1],
)
def test_error_option_values_are_validated(real, tmp_path, argv):
    argv = [a.replace("{C}", str(real)).replace("{T}", str(tmp_path)) for a in argv]
    for extra in ([], ["--json"]):
        args = argv[: argv.index("--")] + extra + argv[argv.index("--"):] if "--" in argv else argv + extra
        o = run_main(*args)
        assert_clean(o, as_json=bool(extra))
        assert o.code == EXIT_USAGE, o.describe()
        assert "error: argument" in o.err, o.describe()
        if extra:
            assert o.json()["error"]["kind"] == "UsageError"


def test_error_valid_option_values_still_pass(real):
    o = run_main("check", real, "--baseline", real, "--max-regression", "0")
    assert o.code == EXIT_OK and "ok" in o.out, o.describe()  # identical captures never regress


# --------------------------------------------------------------- errors: diff of damaged JSON


def test_error_diff_of_truncated_or_foreign_json(real, tmp_path):
    full = run_main("analyze", real, "--json", "--topk", "0").out
    cases = {
        "truncated.json": (full[: len(full) // 2], EXIT_CORRUPT, "invalid or truncated JSON"),
        "foreign.json": ('{"foo": 1}', EXIT_USAGE, "not an attlens.analyze JSON object"),
        "list.json": ("[1, 2]", EXIT_USAGE, "not an attlens.analyze JSON object"),
        "edited.json": (full.replace('"hotspots"', '"hotspotz"', 1), EXIT_CORRUPT, "incomplete or edited"),
        "typed.json": (full.replace('"latency": ', '"latency": "x", "_": ', 1), EXIT_CORRUPT, "incomplete or edited"),
    }
    good = tmp_path / "good.json"
    good.write_text(full)
    for name, (text, code, needle) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        for argv in (["diff", good, p], ["diff", p, good, "--json"], ["check", p, "--baseline", good]):
            o = run_main(*argv)
            assert_clean(o)
            assert o.code == code and needle in o.err, o.describe()


# --------------------------------------------------------------- errors: --json discipline


def test_json_usage_error_is_an_error_object():
    for argv in (["analyze", "--json"], ["analyze", "x", "--json", "--sort", "nope"], ["kernels", "--json", "--bogus"]):
        o = run_main(*argv)
        assert_clean(o)
        doc = o.json()
        assert o.code == EXIT_USAGE and doc["schema"] == "attlens.error" and doc["error"]["exit_code"] == EXIT_USAGE, o.describe()
    o = run_main("analyze", "--bogus")  # without --json: stderr only
    assert o.code == EXIT_USAGE and o.out == ""


def test_json_internal_error_is_an_error_object(real, monkeypatch):
    from attlens.analysis import analyze as analyze_mod

    def broken(*_a, **_k):
        raise ZeroDivisionError("planted bug")

    monkeypatch.setattr(analyze_mod, "analyze", broken)
    o = run_main("analyze", real, "--json")
    assert o.code == errors.EXIT_INTERNAL
    doc = o.json()
    assert doc["schema"] == "attlens.error" and doc["error"]["kind"] == "InternalError"
    assert "ZeroDivisionError: planted bug" in doc["error"]["message"] and "Traceback" not in o.err
    assert o.err.startswith("attlens: internal error: ZeroDivisionError: planted bug")


def test_json_interrupted_leaves_stdout_empty(real, monkeypatch):
    from attlens.analysis.analyze import AnalysisResult

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(AnalysisResult, "to_dict", interrupted)
    o = run_main("analyze", real, "--json")
    assert o.code == 130 and o.out == "" and "interrupted" in o.err, o.describe()


def test_json_ctrl_c_while_writing_waits_for_the_whole_document(real, monkeypatch):
    """SIGINT arriving in the middle of writing the document is held until the
    document is complete: stdout is one whole JSON document, exit 130."""
    import io

    chunks = []

    class Slow(io.BytesIO):
        def write(self, b):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C mid-write
            half = len(b) // 2
            chunks.append(bytes(b[:half]))
            time.sleep(0.05)
            chunks.append(bytes(b[half:]))
            return len(b)

    from attlens.cli import common

    class Out:
        buffer = Slow()

        def flush(self):
            pass

        def write(self, s):
            return len(s)

    monkeypatch.setattr(common, "_json_stdout", None)
    monkeypatch.setattr(common.sys, "stdout", Out())
    try:
        common.emit_json({"schema": "attlens.test", "n": list(range(1000))})
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    assert interrupted, "the interrupt is delivered after the write"
    assert json.loads(b"".join(chunks))["n"][-1] == 999


def _child_env() -> dict:
    from conftest import REPO

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def _pipe_holds(fd: int) -> int:
    import array
    import fcntl
    import termios

    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return buf[0]


@pytest.mark.parametrize("answer", ["computed", "stored"])
def test_ctrl_c_while_json_fills_a_pipe_never_cuts_the_document(answer, tmp_path):
    """Row 15: `analyze --json` into a pipe nobody reads yet: the writer blocks
    after 64 KiB; a Ctrl-C then used to cut stdout at exactly 65,536 (or
    131,072) bytes. Now the document is whole, the exit 130, one line on
    stderr (a real process, a real pipe, a real signal)."""
    cap = require_shared() / "traces/layernorm/big/ui_output_agent_22257_dispatch_23"
    env = {**_child_env(), "ATTLENS_CACHE_DIR": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "attlens", "analyze", str(cap), "--json", "--top", "0"]
    if answer == "stored":
        subprocess.run(argv, env=env, capture_output=True, timeout=300, check=True)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while _pipe_holds(p.stdout.fileno()) < 65536 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    assert p.poll() is None, "the document fits the pipe: nothing to interrupt"
    time.sleep(0.05)  # blocked in write()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert b"Traceback" not in err and p.returncode == 130, err.decode()[-2000:]
    doc = json.loads(out)
    assert doc["schema"] == "attlens.analyze" and len(out) > 65536
    assert err.decode().strip().splitlines()[-1] == "attlens: interrupted"


def test_ctrl_c_inside_a_callback_python_cannot_raise_from_is_acted_on_not_printed():
    """A Ctrl-C whose handler runs inside a weakref callback (the import
    machinery's module locks have one) cannot leave it: Python would print
    "Exception ignored ... Traceback" and go on. attlens delivers it again,
    so the command still ends with exit 130 and one line."""
    child = ("import sys, signal, time, weakref\n"
             "from attlens.__main__ import _quiet_interrupt\n"
             "from attlens.interrupts import unraisable\n"
             "sys.unraisablehook = unraisable\n"
             "signal.signal(signal.SIGINT, _quiet_interrupt)\n"
             "class Lock: pass\n"
             "def cb(ref):\n    raise KeyboardInterrupt\n"
             "lock = Lock(); ref = weakref.ref(lock, cb); del lock\n"
             "for _ in range(2000): time.sleep(0.001)\n"
             "print('went on')\n")
    p = subprocess.run([sys.executable, "-c", child], env=_child_env(), capture_output=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (130, b"", b"attlens: interrupted\n")


def test_ctrl_c_at_any_moment_is_never_a_traceback():
    """Row 15: a Ctrl-C from the first line attlens runs (``entry()`` installs
    a quiet handler before the command line is imported), through the
    analysis, to the end: exit 130 and one line, stdout empty or one whole
    document. What Python does before that — its own start-up, site-packages
    hooks, importing the entry module that holds the handler — is not
    attlens' to catch: the child says it is ready once ``entry`` is imported
    (a marker written before that import let a 2 ms Ctrl-C land in Python's
    import of the module on a loaded CI machine)."""
    import random

    cap = require_shared() / "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
    child = ("import os, sys; from attlens.__main__ import entry; fd = int(sys.argv[1]); sys.argv = ['attlens', *sys.argv[2:]]; "
             "os.write(fd, b'r'); os.close(fd); raise SystemExit(entry())")
    rng = random.Random(23)
    # 20-60 ms lands in the first imports (orjson's module init segfaulted there when interrupted)
    delays = [0.002, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06] + [rng.uniform(0.05, 0.4) for _ in range(5)]
    for delay in delays:
        r, w = os.pipe()
        p = subprocess.Popen([sys.executable, "-c", child, str(w), "analyze", str(cap), "--json", "--no-cache"], env=_child_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(w,))
        os.close(w)
        assert os.read(r, 1) == b"r"
        os.close(r)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        assert b"Traceback" not in err, (delay, err.decode()[-2000:])
        assert p.returncode in (0, 130), (delay, p.returncode, err.decode()[-500:])
        if p.returncode == 130:
            assert err.decode().strip().splitlines()[-1] == "attlens: interrupted", (delay, err.decode())
        if out.strip():
            assert json.loads(out)["schema"] == "attlens.analyze"


def test_json_stdout_carries_nothing_else(real, monkeypatch):
    """Whatever a command prints while it runs goes to stderr under --json."""
    from attlens.analysis import analyze as analyze_mod

    orig = analyze_mod.analyze

    def chatty(*a, **k):
        print("stray line from somewhere")
        return orig(*a, **k)

    monkeypatch.setattr(analyze_mod, "analyze", chatty)
    o = run_main("analyze", real, "--json")
    assert o.code == EXIT_OK and o.json()["schema"] == "attlens.analyze"
    assert "stray line" in o.err


def test_json_ctrl_c_turned_into_another_error_is_still_an_interrupt(real, monkeypatch):
    """NumPy turns a Ctrl-C during its import into an ImportError: after a
    SIGINT, any exception is reported as the interrupt (exit 130), not a bug."""
    from attlens.analysis import analyze as analyze_mod

    def import_interrupted(*_a, **_k):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            raise ImportError("PyCapsule_Import could not import module 'datetime'") from None

    monkeypatch.setattr(analyze_mod, "analyze", import_interrupted)
    o = run_main("analyze", real, "--json")
    assert o.code == 130 and o.out == "" and o.err == "attlens: interrupted\n", o.describe()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "main restores the previous handler"


# --------------------------------------------------------------- errors: absurd values in the run's metadata


@pytest.fixture
def real_run(tmp_path) -> Path:
    """The capture with its rocprofv3 folder beside it (results.json, agent_info, kernel_trace)."""
    shared = require_shared()
    shutil.copytree(shared / "traces/flash_attn_func/rocprofv3", tmp_path / "rocprofv3")
    cap = tmp_path / "small" / Path(REAL).name
    shutil.copytree(shared / "traces" / REAL, cap)
    for p in tmp_path.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return cap


@pytest.mark.parametrize("key", ["arch_vgpr_count", "sgpr_count", "group_segment_size", "private_segment_size"])
@pytest.mark.parametrize("value", [-1, -(2**63), 2**64 - 1])
def test_error_resource_counts_out_of_range(real_run, key, value):
    """A negative or out-of-range register / LDS count in results.json is
    unavailable, not a crash (it made the occupancy model divide by zero)."""
    p = real_run.parent.parent / "rocprofv3" / "small_results.json"
    doc = json.loads(p.read_text())
    for s in doc["rocprofiler-sdk-tool"][0]["kernel_symbols"]:
        s[key] = value
    p.write_text(json.dumps(doc))
    o = run_main("analyze", real_run, "--json")
    assert_clean(o)
    assert o.code == EXIT_OK, o.describe()
    res = o.json()["resources"]
    value_of = {"arch_vgpr_count": res["metadata"]["vgprs"], "sgpr_count": res["metadata"]["sgprs"],
                "group_segment_size": res["lds_bytes"], "private_segment_size": res["scratch_bytes"]}
    assert value_of[key] is None, res  # unavailable, never the absurd value


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63), 2**53])
def test_error_realtime_clock_out_of_range(real, value):
    doc = read_doc(real / "realtime.json")
    doc["SE0"][0][1] = value
    write_doc(real / "realtime.json", doc)
    for argv in (["analyze", real, "--json"], ["waves", real, "--json"]):
        o = run_main(*argv)
        assert_clean(o)
        assert o.code in (EXIT_OK, EXIT_PARTIAL), o.describe()


def test_huge_source_line_number_is_not_a_line(tmp_path):
    """A Source column whose line number does not fit any JSON reader
    (``file.py:18446744073709551616``) is kept as text, not as a line number
    (found by the pipeline fuzz: orjson refused the 2**64 line)."""
    from attlens.model.dispatch import parse_source

    own, chain = parse_source("/k/numeric.py:18446744073709551616 -> /k/a.py:12")
    assert own.line is None and own.file == "/k/numeric.py:18446744073709551616"
    assert chain[0].line == 12
    assert parse_source("/k/a.py:872")[0].line == 872


# --------------------------------------------------------------- row 14 of issue 23: the last silent cases


def _edit(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    doc = fn(doc) or doc
    path.write_text(json.dumps(doc))


def test_code_json_header_that_does_not_describe_its_rows(real):
    """A header reordered to start with "Source" (the rows unchanged) read
    source paths as instructions: exit 0, "(unnamed kernel)", 100 % class
    'other', no warning. Now exit 7 naming the header."""
    _edit(real / "code.json", lambda d: d.__setitem__("header", "Source, _, LineNumber, ISA, Codeobj, Vaddr, Hit, Latency, Stall, Idle"))
    o = run_main("analyze", real, "--json")
    assert_clean(o)
    assert o.code == errors.EXIT_CORRUPT and "the header does not describe the rows" in o.err, o.describe()


def test_code_json_header_in_another_order_that_matches_its_rows(real):
    """The twin: columns really in another order, the header saying so: read by name, same analysis."""
    want = run_main("analyze", real, "--json", "--no-cache").json()

    def swap(d):
        d["header"] = "Source, _, LineNumber, ISA, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
        for row in d["code"]:
            row[0], row[3] = row[3], row[0]

    _edit(real / "code.json", swap)
    o = run_main("analyze", real, "--json", "--no-cache")
    assert o.code == 0 and o.json()["totals"] == want["totals"] and o.json()["capture"]["kernel"] == want["capture"]["kernel"]


def test_no_label_row_and_no_known_mnemonic_are_warned(real):
    """Without the kernel's label row the name is unknown, and a listing whose
    instructions no mnemonic rule knows has no stall classes: both said."""
    def strip(d):
        d["code"] = [r for r in d["code"] if not r[0].startswith(";")]
        for r in d["code"]:
            r[0] = "zz_" + r[0]

    _edit(real / "code.json", strip)
    o = run_main("analyze", real, "--json", "--no-cache")
    assert_clean(o)
    ws = o.json()["warnings"]
    assert any("no kernel label row" in w for w in ws) and any("no executed instruction has a known mnemonic" in w for w in ws), ws


@pytest.mark.parametrize("freq", [1e-300, 0, -5, "100MHz", 1e300, None])
def test_realtime_frequency_that_is_no_clock_is_warned(real, freq):
    """frequency = 1e-300 gave a "0.0 MHz" shader clock without a word."""
    def put(d):
        if freq is None:
            del d["metadata"]["frequency"]
        else:
            d["metadata"]["frequency"] = freq

    _edit(real / "realtime.json", put)
    o = run_main("waves", real, "--json", "--no-cache")
    assert_clean(o)
    doc = o.json()
    assert doc["clock"]["shader_clock_mhz"] is None
    assert any("realtime.json" in w and "frequency" in w for w in doc["warnings"]), doc["warnings"]


def test_renamed_shader_engine_keys_are_warned(real):
    """Every SE key of realtime.json and occupancy.json renamed: the clock was
    null and the occupancy dropped, silently. Now a warning each (exit 8)."""
    _edit(real / "realtime.json", lambda d: {("X" + k if k.startswith("SE") else k): v for k, v in d.items()})
    _edit(real / "occupancy.json", lambda d: {("se" + k if k.isdigit() else k): v for k, v in d.items()})
    o = run_main("analyze", real, "--json", "--no-cache")
    assert_clean(o)
    ws = o.json()["warnings"]
    assert o.code == EXIT_PARTIAL and o.json()["capture"]["partial"] is True
    assert any(w.startswith("realtime.json: no 'SE<n>' sample list") for w in ws) and any(w.startswith("occupancy.json: no shader-engine") for w in ws), ws


def test_pristine_capture_has_none_of_the_row_14_warnings(real):
    """The clean twin of every case above."""
    o = run_main("analyze", real, "--json", "--no-cache")
    assert o.code == 0
    for needle in ("realtime.json", "occupancy.json", "label row", "known mnemonic", "header"):
        assert not any(needle in w for w in o.json()["warnings"]), o.json()["warnings"]


def test_a_rocpd_table_without_its_columns_is_refused(tmp_path):
    """A rocpd_kernel_dispatch(a int) table read as one kernel named ""; now exit 7."""
    import sqlite3

    db = tmp_path / "x_results.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE rocpd_kernel_dispatch (a INTEGER)")
    con.execute("INSERT INTO rocpd_kernel_dispatch VALUES (1)")
    con.commit()
    con.close()
    o = run_main("kernels", db, "--json")
    assert_clean(o)
    assert o.code == errors.EXIT_CORRUPT and "rocpd_kernel_dispatch has no dispatch_id" in o.err, o.describe()


def test_a_counter_row_cut_inside_a_quoted_field_is_noted(tmp_path):
    """The last row of a counter_collection.csv cut inside a quoted field was
    dropped silently; every dispatch now says a counter may be missing. The
    twin, the whole file, has no such note."""
    shared = require_shared()
    src = shared / "rocprofv3-samples/gfx1151-sys-trace/decode_fetch_counter_collection.csv"
    whole, cut = tmp_path / "whole_counter_collection.csv", tmp_path / "cut_counter_collection.csv"
    raw = src.read_bytes()
    whole.write_bytes(raw)
    last = raw.rstrip(b"\n").rsplit(b"\n", 1)[1]
    cut.write_bytes(raw[: raw.rindex(last) + last.index(b'"') + 3])  # inside the first quoted field
    for path, noted in ((cut, True), (whole, False)):
        o = run_main("pmc", path, "--target", "gfx942", "--json")
        assert_clean(o)
        notes = [n for d in o.json()["dispatches"] for n in d["notes"] if "row(s) skipped" in n]
        assert bool(notes) is noted, o.describe()
