"""Capture digests (docs/cache.md): same answers as a fresh parse, never a
stale or damaged one, and never a write into the capture."""

from __future__ import annotations

import io
import os
import shutil
import stat
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


# --------------------------------------------------------------------------- a stale digest is never served (issue 23)


def _nest_first_wave(capture: Path) -> Path:
    """Move the first wave file into ``sub/`` and name it there in filenames.json."""
    import json

    fn = capture / "filenames.json"
    doc = json.loads(fn.read_text())
    se = next(iter(doc["wave_filenames"]))
    entry = doc["wave_filenames"][se]["0"]["0"]["0"]
    (capture / "sub").mkdir()
    os.rename(capture / entry[0], capture / "sub" / "W0.json")
    entry[0] = "sub/W0.json"
    fn.write_text(json.dumps(doc))
    return capture / "sub" / "W0.json"


def _add_stall(wave: Path, extra: int, same_size: bool = False) -> None:
    """Rewrite a wave file with every record's stall raised (``same_size``: one
    digit changed in place, size and mtime restored afterwards)."""
    import json

    st = wave.stat()
    if same_size:
        data = bytearray(wave.read_bytes())
        i = data.index(b'"instructions":[[') + len(b'"instructions":[[')
        i = data.index(b",", data.index(b",", i) + 1) + 1  # the first record's stall field
        data[i] = ord("9") if data[i] != ord("9") else ord("8")
        with open(wave, "r+b") as f:  # in place: same inode
            f.write(bytes(data))
        os.utime(wave, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert wave.stat().st_size == st.st_size and wave.stat().st_mtime_ns == st.st_mtime_ns
        return
    doc = json.loads(wave.read_text())
    for r in doc["wave"]["instructions"]:
        r[2] += extra
    wave.write_text(json.dumps(doc))


@pytest.mark.parametrize("same_size", [False, True], ids=["new_size_and_mtime", "same_size_and_mtime_in_place"])
def test_a_rewritten_wave_file_in_a_subfolder_invalidates_the_digest(capture, tmp_path, same_size):
    """Row 1: filenames.json names ``sub/W0.json``; rewriting it must give the
    fresh totals, not the digest's (0.2 keyed only the top-level entries)."""
    cache = tmp_path / "cache"
    wave = _nest_first_wave(capture)
    before, _ = _analyze(capture, cache)
    _add_stall(wave, 10, same_size)
    after, err = _analyze(capture, cache)
    fresh = _fresh(capture)
    assert after == fresh != before
    assert orjson.loads(after)["totals"]["stall"] != orjson.loads(before)["totals"]["stall"]
    assert "digest is out of date" in err


def test_an_unchanged_capture_with_a_subfolder_keeps_its_digest(capture, tmp_path):
    """The clean twin of row 1: nothing changed, the digest (and the stored
    answer) is served, without a note."""
    cache = tmp_path / "cache"
    _nest_first_wave(capture)
    first, _ = _analyze(capture, cache)
    again, err = _analyze(capture, cache)
    assert again == first == _fresh(capture) and "note" not in err
    assert len(_answers(cache)) == 1


def test_capture_key_is_stat_only_and_computed_once_per_command(capture, tmp_path, monkeypatch):
    """The key reads no file (stat only) and a --json command computes it once
    (plus once more to check that a parsed capture did not change meanwhile)."""
    from attlens.cache import keys

    calls = []
    real = keys._compute_capture_key
    monkeypatch.setattr(keys, "_compute_capture_key", lambda c: calls.append(c) or real(c))
    opened = []
    hook_on = [True]

    def audit(event, args):
        if hook_on[0] and event == "open" and args and isinstance(args[0], str) and args[0].startswith(str(capture)):
            opened.append(args[0])

    sys.addaudithook(audit)
    try:
        key = keys.capture_key(capture)
        assert opened == []
        cache = tmp_path / "cache"
        _analyze(capture, cache)  # parses: key, then the check after reading
        assert len(calls) == 1 + 2
        _analyze(capture, cache)  # the stored answer: one key
        assert len(calls) == 1 + 2 + 1
        assert keys.capture_key(capture) == key
    finally:
        hook_on[0] = False


def _plant_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)



def _within(seconds: int, fn, *args):
    """``fn(*args)``, failing instead of hanging (a FIFO opened for reading blocks forever)."""
    import signal

    def boom(*_):
        raise TimeoutError(f"did not finish within {seconds} s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        return fn(*args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("victim", ["capture.json", "capture-*.bin", "answer-*.json", "derived-*.json", "derived-*.bin", "used"])
def test_a_fifo_in_the_digest_is_refused_at_once(capture, tmp_path, victim):
    """Row 4: a FIFO in place of any digest file never blocks; the digest (or
    the answer) is dropped with a note and the output is the fresh parse's."""
    cache = tmp_path / "cache"
    _analyze(capture, cache)
    folder = next((cache / "digests-v1").glob("*/*/"))
    target = sorted(folder.glob(victim))[0]
    _plant_fifo(target)
    # a new question reads the derived results; the same question reads the answer
    args = ("analyze", capture, "--json", "--topk", "0", "--cache-dir", cache) if victim.startswith("answer") else \
        ("analyze", capture, "--json", "--topk", "7", "--cache-dir", cache)
    code, out, err = _within(60, run, *args)
    assert code == 0 and out == run(*args[:-2], "--no-cache")[1]
    if victim != "used":
        assert "damaged" in err and "not a regular file" in err, err
        assert not target.exists() or not stat.S_ISFIFO(os.lstat(target).st_mode)
    code, out, err = _within(60, run, "cache", "info", "--cache-dir", cache, "--json")
    assert code == 0


def test_the_cache_is_created_private(capture, tmp_path):
    """Folders 0700, files 0600, whatever the umask."""
    cache = tmp_path / "fresh" / "cache"
    old = os.umask(0o002)
    try:
        _analyze(capture, cache)
    finally:
        os.umask(old)
    for p in [cache, *cache.rglob("*")]:
        mode = stat.S_IMODE(p.lstat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))


def _forge_answer(cache: Path, exit_code: int = 8) -> Path:
    """Edit the stored answer (exit code, kernel name) and write a matching CRC-32."""
    import zlib

    path = _answers(cache)[0]
    body = orjson.loads(path.read_bytes().partition(b"\n")[2])
    body["exit_code"] = exit_code
    body["document"]["capture"]["kernel"] = "FORGED"
    raw = orjson.dumps(body)
    path.write_bytes(b"%08x\n" % zlib.crc32(raw) + raw)
    return path


@pytest.mark.parametrize("how", ["world_writable", "group_writable", "other_owner"])
def test_a_cache_folder_others_can_write_is_not_used(capture, tmp_path, how):
    """Row 12: a stored answer with a recomputed CRC-32 is served only from a
    folder nobody else can write; from any other the command computes afresh
    and says why (a CRC catches accidents, not forgeries: docs/cache.md)."""
    cache = tmp_path / "cache"
    _analyze(capture, cache)
    _forge_answer(cache)
    if how == "world_writable":
        cache.chmod(0o777)
    elif how == "group_writable":
        from attlens.cache.private import _own_private_group

        cache.chmod(0o770)
        if os.geteuid() == 0:
            os.chown(cache, -1, 65534)  # a group of other users
        elif _own_private_group(cache.stat().st_gid):
            pytest.skip("the user's private group may write the cache (user-private-group convention)")
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can give a folder to another user")
        for p in [cache, *cache.rglob("*")]:
            os.lchown(p, 65534, 65534)
    code, out, err = run("analyze", capture, "--json", "--topk", "0", "--cache-dir", cache)
    assert code == 0 and out == _fresh(capture) and "FORGED" not in out
    assert "not using the cache directory" in err and err.count("note:") == 1, err


def test_a_forged_answer_in_a_private_folder_is_what_the_user_wrote(capture, tmp_path):
    """The twin of row 12, and the limit docs/cache.md states: in the user's
    own private folder only the user can write, and what they wrote is served
    (a CRC-32 is no signature)."""
    cache = tmp_path / "cache"
    _analyze(capture, cache)
    _forge_answer(cache)
    code, out, err = run("analyze", capture, "--json", "--topk", "0", "--cache-dir", cache)
    assert code == 8 and "FORGED" in out and "note" not in err


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can plant another user's file")
def test_a_digest_file_of_another_user_is_not_used(capture, tmp_path):
    """Row 12: a digest written by another user in an otherwise private folder is dropped."""
    cache = tmp_path / "cache"
    _analyze(capture, cache)
    folder = next((cache / "digests-v1").glob("*/*/"))
    os.lchown(folder / "capture.json", 65534, 65534)
    code, out, err = run("analyze", capture, "--json", "--topk", "3", "--cache-dir", cache)
    assert code == 0 and out == run("analyze", capture, "--json", "--topk", "3", "--no-cache")[1]
    assert "damaged" in err and "owned by uid 65534" in err


def _no_temporaries(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if ".tmp" in p.name]


def test_a_full_disk_leaves_no_temporary_file(capture, tmp_path):
    """Row 10: writes that fail (here: a file size limit, as a full disk
    fails them) leave no temporary file, and the command still answers."""
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    limit = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv.pop(1)), resource.RLIM_INFINITY)); "
        "from attlens.cli import main; raise SystemExit(main(sys.argv[1:]))"
    )
    fresh = {q: run(*q, capture, "--json", "--no-cache")[1] for q in (("analyze",), ("plan",), ("deps",))}

    def ask(q, size):
        p = subprocess.run([sys.executable, "-c", limit, str(size), *q, str(capture), "--json", "--cache-dir", str(cache)],
                           capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0 and p.stdout == fresh[q], p.stderr
        return p.stderr

    for _ in range(2):  # nothing fits: no digest at all
        err = ask(("analyze",), 64 << 10)
        assert "cannot write to the cache directory" in err
        assert not _no_temporaries(cache) and not list(cache.rglob("capture.json"))
    ask(("analyze",), 1 << 40)  # a digest; then the derived results and answers do not fit
    for q in (("plan",), ("deps",)):
        ask(q, 4 << 10)
        assert not _no_temporaries(cache), _no_temporaries(cache)


def test_a_failed_write_of_a_derived_result_removes_its_files(capture, tmp_path, monkeypatch):
    """ENOSPC in the middle of a record: neither the temporary files nor a data
    file without its record are left."""
    import errno

    from attlens.cache import private

    cache = tmp_path / "cache"
    _analyze(capture, cache)
    folder = next((cache / "digests-v1").glob("*/*/"))
    before = sorted(p.name for p in folder.iterdir())
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, b):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(private.os, "fdopen", lambda fd, mode="r", *a, **k: Full(real_fdopen(fd, mode, *a, **k)) if "w" in mode else real_fdopen(fd, mode, *a, **k))
    code, out, err = run("plan", capture, "--json", "--cache-dir", cache)
    monkeypatch.undo()
    assert code == 0 and out == run("plan", capture, "--json", "--no-cache")[1]
    assert "cannot write to the cache directory" in err and "No space left" in err
    assert sorted(p.name for p in folder.iterdir()) == before


def test_cache_clear_reports_what_it_really_removed(capture, tmp_path, monkeypatch):
    """Row 11: digests that cannot be deleted are not reported as removed: the
    command fails (exit 9) and says how many are left and why."""
    import json

    cache = tmp_path / "cache"
    _analyze(capture, cache)
    folder = next((cache / "digests-v1").glob("*/"))
    if os.geteuid() != 0:
        folder.chmod(0o500)
    else:  # root may delete anything: deny it here
        import shutil as _sh

        def deny(path, *a, **k):
            raise PermissionError(13, "Permission denied", str(path))

        monkeypatch.setattr(os, "unlink", deny)
        assert _sh.rmtree  # shutil looks os.unlink up at call time
    try:
        code, out, err = run("cache", "clear", "--cache-dir", cache, "--json")
    finally:
        monkeypatch.undo()
        folder.chmod(0o700)
    assert code == 9, (code, out, err)
    doc = json.loads(out)
    assert doc["schema"] == "attlens.error" and "removed 0 digest(s)" in doc["error"]["message"]
    assert "1 could not be removed" in doc["error"]["message"] and "Permission denied" in doc["error"]["message"]
    assert list(cache.rglob("capture.json"))
    # the twin: a clear that can delete reports it and removes it
    code, out, err = run("cache", "clear", "--cache-dir", cache, "--json")
    assert code == 0 and json.loads(out)["digests_removed"] == 1 and not list(cache.rglob("capture.json"))
