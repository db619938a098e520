"""Capture digests (docs/cache.md): same answers as a fresh parse, never a
stale or damaged one, and never a write into the capture."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import orjson
import pytest
from conftest import require_shared, trace_dirs, trace_id

from attlens.cli import main

TRACES = trace_dirs()
SMALL = "flash_attn_func/small/ui_output_agent_32235_dispatch_44"


def run(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def snapshot(folder: Path) -> dict:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


@pytest.fixture
def capture(tmp_path, shared) -> Path:
    dst = tmp_path / "cap" / Path(SMALL).name
    shutil.copytree(shared / "traces" / SMALL, dst)
    return dst


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_digest_gives_the_same_json_as_a_fresh_parse(path, tmp_path):
    """Every command that loads a capture: --no-cache, then the run that builds
    the digest, then runs that map it: byte-identical --json."""
    require_shared()
    cache = tmp_path / "cache"
    commands = (["analyze", "--topk", "0"], ["plan"], ["waves"], ["deps", "--topk", "0"])
    fresh = {}
    for cmd in commands:
        code, out, _ = run(*cmd, path, "--json", "--no-cache")
        fresh[cmd[0]] = (code, out)
    assert not (cache / "digests-v1").exists()
    # analyze builds the digest, the others map it (and add derived results),
    # the last analyze maps everything.
    for cmd in (*commands, commands[0]):
        code, out, err = run(*cmd, path, "--json", "--cache-dir", cache)
        assert (code, out) == fresh[cmd[0]], cmd
        assert "note" not in err
    digests = list((cache / "digests-v1").glob("*/*/capture.json"))
    assert len(digests) == 1
    derived = {p.name for p in digests[0].parent.glob("derived-*.json")}
    assert {"derived-waitdeps-gfx9.json", "derived-pc_sums-gfx9.json", "derived-hidden.json"} <= derived


def _analyze(capture, cache) -> tuple[str, str]:
    code, out, err = run("analyze", capture, "--json", "--topk", "0", "--cache-dir", cache)
    assert code in (0, 8)
    return out, err


def _fresh(capture) -> str:
    return run("analyze", capture, "--json", "--topk", "0", "--no-cache")[1]


@pytest.mark.parametrize("change", ["touch", "truncate", "replace_same_size_and_mtime", "add_file", "remove_wave"])
def test_any_change_to_the_capture_invalidates_its_digest(capture, tmp_path, change):
    cache = tmp_path / "cache"
    before, _ = _analyze(capture, cache)
    assert _analyze(capture, cache)[0] == before
    wave = sorted(capture.glob("se*_wv*.json"))[1]
    st = wave.stat()
    if change == "touch":
        os.utime(wave, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    elif change == "truncate":
        with open(wave, "r+b") as f:
            f.truncate(st.st_size // 2)
    elif change == "replace_same_size_and_mtime":
        data = bytearray(wave.read_bytes())
        i = data.index(b'"instructions":[[') + len(b'"instructions":[[')
        data[i] = ord("9") if data[i] != ord("9") else ord("8")  # another first record time, same size
        tmp = wave.with_name("new.tmp")
        tmp.write_bytes(bytes(data))
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, wave)
    elif change == "add_file":
        (capture / "snapshots.json").write_text("{}")
    else:
        wave.unlink()
    after, err = _analyze(capture, cache)
    assert after == _fresh(capture)
    if change in ("truncate", "replace_same_size_and_mtime", "remove_wave"):
        assert after != before
    assert "digest is out of date" in err
    assert len(list((cache / "digests-v1").glob("*/*/capture.json"))) == 1


@pytest.mark.parametrize("target", ["columns", "manifest", "derived", "missing_bin", "missing_manifest"])
def test_a_damaged_digest_is_dropped_with_a_note_and_rebuilt(capture, tmp_path, target):
    """Columns are checked when first used (``export`` reads every record and
    timeline column); damaged data is never used, whatever reads it."""
    cache = tmp_path / "cache"
    trace = tmp_path / "t.json"

    def export():
        code, out, err = run("export", capture, "--perfetto", trace, "--max-events", "0", "--cache-dir", cache)
        assert code == 0
        return trace.read_bytes(), err

    good, _ = export()
    good_analysis, _ = _analyze(capture, cache)  # adds the derived results
    folder = next((cache / "digests-v1").glob("*/*/"))
    if target == "columns":
        f = next(folder.glob("capture-*.bin"))
        data = bytearray(f.read_bytes())
        data[len(data) // 3] ^= 0x40  # one flipped bit in the middle of the columns
        f.write_bytes(bytes(data))
    elif target == "manifest":
        f = folder / "capture.json"
        f.write_bytes(f.read_bytes()[:-20])
    elif target == "derived":
        f = next(folder.glob("derived-hidden-*.bin"))
        data = bytearray(f.read_bytes())
        data[-1] ^= 0x01
        f.write_bytes(bytes(data))
    elif target == "missing_manifest":
        (folder / "capture.json").unlink()  # the folder stayed and blocked every rewrite
    else:
        next(folder.glob("capture-*.bin")).unlink()
    if target == "derived":
        # a question not answered before, so the damaged result is read (the
        # stored answer to the earlier question does not depend on that file)
        code, out, err = run("analyze", capture, "--json", "--topk", "3", "--cache-dir", cache)
        assert out == run("analyze", capture, "--json", "--topk", "3", "--no-cache")[1]
    else:
        out, err = export()
        assert out == good
    assert "damaged" in err and err.count("note:") == 1
    out, err = _analyze(capture, cache)  # rebuilt: clean again
    assert out == good_analysis and "note" not in err


def test_read_only_capture_is_never_written(capture, tmp_path):
    cache = tmp_path / "cache"
    before = snapshot(capture)
    for p in [capture, *capture.iterdir()]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        out, err = _analyze(capture, cache)
        assert _analyze(capture, cache)[0] == out == _fresh(capture)
        assert snapshot(capture) == before
        assert list((cache / "digests-v1").glob("*/*/capture.json"))
    finally:
        for p in [capture, *capture.iterdir()]:
            p.chmod(0o755 if p.is_dir() else 0o644)


def test_unwritable_cache_dir_means_no_cache_with_a_note(capture, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    out, err = _analyze(capture, blocker / "cache")  # cannot be created, even as root
    assert out == _fresh(capture)
    assert "cannot write to the cache directory" in err
    assert err.count("note:") == 1


def test_concurrent_commands_share_one_digest(capture, tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, "-m", "attlens", "analyze", str(capture), "--json", "--topk", "0", "--cache-dir", str(cache)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert {o for o, _ in outs} == {_fresh(capture).encode()}
    assert len(list((cache / "digests-v1").glob("*/*/capture.json"))) == 1
    assert not list((cache / "digests-v1").glob("*/.tmp-*"))


def test_cache_info_and_clear(capture, tmp_path):
    import json

    cache = tmp_path / "cache"
    _analyze(capture, cache)
    code, out, _ = run("cache", "info", "--cache-dir", cache, "--json")
    info = json.loads(out)
    assert code == 0 and info["schema"] == "attlens.cache"
    assert [d["capture"] for d in info["digests"]] == [str(capture)]
    on_disk = sum(f.stat().st_size for f in (cache / "digests-v1").rglob("*") if f.is_file())
    assert info["bytes"] == on_disk > 0
    code, out, _ = run("cache", "clear", "--cache-dir", cache, "--json")
    assert json.loads(out)["digests_removed"] == 1
    assert not (cache / "digests-v1").exists()
    assert capture.is_dir() and (capture / "code.json").is_file()


def test_size_cap_evicts_least_recently_used(capture, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    other = tmp_path / "cap2" / capture.name
    shutil.copytree(capture, other)
    _analyze(capture, cache)
    size = sum(f.stat().st_size for f in (cache / "digests-v1").rglob("*") if f.is_file())
    monkeypatch.setenv("ATTLENS_CACHE_MAX_BYTES", str(int(size * 1.5)))
    _analyze(other, cache)
    left = [str(p) for p in (cache / "digests-v1").glob("*/*/capture.json")]
    assert len(left) == 1
    import orjson

    body = Path(left[0]).read_bytes().partition(b"\n")[2]
    assert orjson.loads(body)["meta"]["capture"] == str(other)


def test_library_load_uses_the_digest(capture, tmp_path):
    import attlens

    cache = tmp_path / "cache"
    d1 = attlens.load(capture, cache=cache)
    d2 = attlens.load(capture, cache=cache)
    d3 = attlens.load(capture, cache=False)
    assert d1.digest is not None and d2.digest is not None and d3.digest is None
    for d in (d2, d3):
        assert (d.records.time == d1.records.time).all() and (d.records.idle == d1.records.idle).all()
        assert d.waves.filenames == d1.waves.filenames and d.warnings == d1.warnings
        assert d.waves.stored_waitcnt(0) == d1.waves.stored_waitcnt(0)


def test_files_beside_the_capture_are_read_again_when_they_change(shared, tmp_path):
    """Target and resources come from rocprofv3 outputs beside the capture; the
    digest keeps them only while those files are unchanged."""
    root = tmp_path / "flash_attn_func"
    cap = root / "small" / Path(SMALL).name
    shutil.copytree(shared / "traces" / SMALL, cap)
    shutil.copytree(shared / "traces/flash_attn_func/rocprofv3", root / "rocprofv3")
    cache = tmp_path / "cache"
    with_info, _ = _analyze(cap, cache)
    assert _analyze(cap, cache)[0] == with_info == _fresh(cap)
    for f in (root / "rocprofv3").iterdir():
        if f.name.endswith(("agent_info.csv", "results.json")):
            f.unlink()
    without, _ = _analyze(cap, cache)
    assert without == _fresh(cap) != with_info


def test_the_same_capture_through_a_symlink_gives_the_same_json(shared, tmp_path):
    """A digest made through one spelling of the capture's path serves another
    (the key is the files themselves): the output must not depend on which
    came first, so the run outputs beside the capture are named by their
    resolved paths, like the capture itself."""
    root = tmp_path / "real" / "flash_attn_func"
    cap = root / "small" / Path(SMALL).name
    shutil.copytree(shared / "traces" / SMALL, cap)
    shutil.copytree(shared / "traces/flash_attn_func/rocprofv3", root / "rocprofv3")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    via_link = tmp_path / "link" / "flash_attn_func" / "small" / Path(SMALL).name
    cache = tmp_path / "cache"
    first, _ = _analyze(cap, cache)
    second, _ = _analyze(via_link, cache)  # maps the digest the first run made
    assert first == _fresh(cap) and second == _fresh(via_link)
    real = os.path.realpath(root / "rocprofv3")
    for doc in (first, second):
        files = orjson.loads(doc)["capture"]["rocprof_files"]
        assert files and all(f.startswith(real + os.sep) for f in files), files


def test_context_key_covers_only_the_run_outputs_it_may_read(shared, tmp_path):
    """An unrelated file beside the capture (a log, a notebook) leaves the key
    of the run-output lookup alone; a run output it may read changes it."""
    from attlens.cache.keys import context_key

    root = tmp_path / "flash_attn_func"
    cap = root / "small" / Path(SMALL).name
    shutil.copytree(shared / "traces" / SMALL, cap)
    shutil.copytree(shared / "traces/flash_attn_func/rocprofv3", root / "rocprofv3")
    key = context_key(cap, None)
    (root / "notes.log").write_text("unrelated")
    (root / "small" / "run.ipynb").write_text("{}")
    assert context_key(cap, None) == key
    (root / "small" / "x_agent_info.csv").write_text("")
    assert context_key(cap, None) != key


def _answers(cache: Path) -> list[Path]:
    return sorted((cache / "digests-v1").glob("*/*/answer-*.json"))


def test_answers_are_stored_per_question_and_state(shared, tmp_path):
    """A --json answer is stored beside the digest and served only to the same
    question in the same state of the capture, of the files beside it and of
    attlens; a damaged one is computed again."""
    root = tmp_path / "flash_attn_func"
    cap = root / "small" / Path(SMALL).name
    shutil.copytree(shared / "traces" / SMALL, cap)
    shutil.copytree(shared / "traces/flash_attn_func/rocprofv3", root / "rocprofv3")
    cache = tmp_path / "cache"

    def ask(*args):
        code, out, err = run(*args, cap, "--json", "--cache-dir", cache)
        assert code in (0, 8)
        return out, err

    first, _ = ask("plan")
    assert len(_answers(cache)) == 1
    again, err = ask("plan")
    assert again == first == run("plan", cap, "--json", "--no-cache")[1] and "note" not in err
    ask("plan", "--disable", "stall-class")  # other arguments: another question
    ask("deps", "--pc", "973")
    assert len(_answers(cache)) == 3
    # the files beside the capture changed (no kernel trace: no duration, no grid): not served stale
    for f in (root / "rocprofv3").iterdir():
        if f.name.endswith("kernel_trace.csv"):
            f.unlink()
    changed, _ = ask("plan")
    assert changed == run("plan", cap, "--json", "--no-cache")[1] != first
    # a damaged answer: a note, then the right document
    victim = max(_answers(cache), key=lambda p: p.stat().st_mtime_ns)  # the plan asked last
    victim.write_bytes(victim.read_bytes()[:-10] + b"0000000000")
    notes = []
    for args in (("plan",), ("plan", "--disable", "stall-class"), ("deps", "--pc", "973")):
        out, err = ask(*args)
        assert out == run(*args, cap, "--json", "--no-cache")[1]
        notes += [ln for ln in err.splitlines() if "stored answer is damaged" in ln]
    assert len(notes) == 1
    # the capture changed: its digest and every answer go with it
    (cap / "code.json").touch()
    out, err = ask("plan")
    assert "digest is out of date" in err and len(_answers(cache)) == 1


def test_a_cache_directory_inside_the_capture_stores_nothing(capture):
    """--cache-dir CAPTURE (or a folder in it): the capture stays as it was, the
    output is the fresh parse's, and a note says why nothing was stored."""
    before = snapshot(capture)
    fresh = _fresh(capture)
    for cache in (capture, capture / "sub"):
        code, out, err = run("analyze", capture, "--json", "--topk", "0", "--cache-dir", cache)
        assert code == 0 and out == fresh and "inside the capture" in err
        assert snapshot(capture) == before
