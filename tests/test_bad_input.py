"""Bad input reaches the user as one clear line and a documented exit code.

Every fixture is a synthetic capture written by ``attlens.synth.write_capture``
into ``tmp_path`` and then damaged on purpose; no committed trace is used. The
CLI runs as a subprocess (``python -m attlens analyze PATH``) so the exit code,
stderr and stdout are exactly what a user or a script sees. Exit codes are the
constants of ``attlens.errors`` (docs/exit-codes.md).
"""

from __future__ import annotations

import json
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
