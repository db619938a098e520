"""The terminal (docs/commands.md, "Terminal output"): every table keeps its
numbers whole at 80, 120 and 200 columns; the width follows COLUMNS, the
terminal, or 120; no escape sequence without a colour terminal; control
characters of the capture never reach the terminal raw; progress only on a
terminal's stderr."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from attlens.analysis.waitattr import attribute_waits
from attlens.analysis.waves import analyze_waves
from attlens.report.console import Col, FitTable, make_console, safe_text, terminal_width
from attlens.synth import write_capture
from attlens.synth.toy import Op, default_kernel
from conftest import REPO, loaded, require_shared

WIDTHS = (80, 120, 200)
SOFTMAX = "traces/softmax/big/ui_output_agent_47920_dispatch_13"
PA = "traces/pa/big/ui_output_agent_10886_dispatch_209"
NO_SOURCE = "traces/pa_mqa_logits_fp4/big/ui_output_agent_55351_dispatch_426"


def render(fn, width: int) -> str:
    buf = io.StringIO()
    fn(make_console(file=buf, width=width))
    return buf.getvalue()


def whole(text: str, number: str) -> bool:
    """``number`` appears with no digit or separator glued to either side."""
    return re.search(rf"(?<![\d,.]){re.escape(number)}(?![\d,]|\.\d)", text) is not None


def check_fits(text: str, width: int) -> None:
    assert "\x1b" not in text
    long = [ln for ln in text.splitlines() if len(ln.rstrip()) > width]
    assert not long, f"{len(long)} line(s) wider than {width}: {long[0]!r}"


def code_rows(cap: Path) -> list[list]:
    return [r for r in json.loads((cap / "code.json").read_text())["code"] if isinstance(r[0], str) and not r[0].startswith(";")]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("rel", [SOFTMAX, PA, NO_SOURCE])
def test_analyze_tables_keep_every_number(width, rel):
    from attlens.report.terminal import render_analysis

    cap = require_shared() / rel
    _, r = loaded(cap)
    text = render(lambda c: render_analysis(r, c, topk=10), width)
    check_fits(text, width)
    # the top instructions by stall, straight from code.json (columns: 6 hit, 7 latency, 8 stall, 9 idle)
    rows = code_rows(cap)
    top = sorted(rows, key=lambda x: (-x[8], x[2]))[:10]
    for row in top:
        for v in (row[6], row[7], row[8], row[9]):
            assert whole(text, f"{v:,}"), f"{v:,} missing at {width} columns"
        assert whole(text, str(row[2]))
    # every class row: stall, latency and records
    b = r.breakdown
    for c, stall in b.by_class_stall.items():
        if b.by_class_latency[c] or b.by_class_records[c]:
            assert whole(text, f"{stall:,}") and whole(text, f"{b.by_class_latency[c]:,}") and whole(text, f"{b.by_class_records[c]:,}")
    for i in r.hotspots.lines_by_stall[:10] if r.quality.has_source_lines else []:
        ln = r.hotspots.lines[i]
        assert whole(text, f"{ln.latency:,}") and whole(text, f"{ln.stall:,}") and whole(text, f"{ln.exposed:,}")


@pytest.mark.parametrize("width", WIDTHS)
def test_waves_and_deps_tables_keep_every_number(width):
    from attlens.analysis.deps import select_deps
    from attlens.report.terminal import render_deps, render_waves

    cap = require_shared() / PA
    _, r = loaded(cap)
    wa = analyze_waves(r, top=10)
    text = render(lambda c: render_waves(wa, c, top=10), width)
    check_fits(text, width)
    doc = wa.to_dict(per_wave=False)
    for v in doc["states"]["cycles"].values():
        assert whole(text, f"{v:,}")
    for v in doc["pipes"]["kernel"].values():
        assert whole(text, f"{v['issue_cycles']:,}") and whole(text, f"{v['busy_cycles']:,}")
    for x in doc["phases"]["instructions"]:
        assert whole(text, f"{x['executions']:,}") and whole(text, f"{x['stall_max']:,}")
    att = attribute_waits(r.dispatch, r.deps, r.pairs)
    dr = select_deps(r, attribution=att)
    text = render(lambda c: render_deps(dr, c, top=10), width)
    check_fits(text, width)
    d = dr.to_dict(10)
    for p in d["producers"]:
        assert whole(text, f"{p['waited_cycles']:,}") and whole(text, f"{p['pairs']:,}")
    for w in d["waits"]:
        assert whole(text, f"{w['stall']:,}") and whole(text, f"{w['charged_cycles']:,}")


@pytest.mark.parametrize("width", WIDTHS)
def test_kernels_pmc_diff_tables_keep_every_number(width):
    from attlens.analysis.diff import diff, load_side
    from attlens.analysis.pmc import analyze_dispatches
    from attlens.capture.kernels import kernel_table
    from attlens.capture.pmc_run import read_pmc_outputs
    from attlens.report.terminal import render_diff, render_kernels, render_pmc

    shared = require_shared()
    table = kernel_table(shared / "traces/hgemm_splitk/rocprofv3")
    text = render(lambda c: render_kernels(table, c, top=20), width)
    check_fits(text, width)
    for row in table.to_dict()["rows"][:20]:
        assert whole(text, f"{row['total_us']:,.1f}") and whole(text, f"{row['calls']:,}")
        for k in ("vgpr", "sgpr", "lds_bytes"):
            v = row["resources"][k]
            if v is not None:
                assert whole(text, f"{v:,}")
        for kid in row["kernel_ids"]:
            assert whole(text, str(kid))
    pivot, _ = read_pmc_outputs(shared / "rocprofv3-samples/rocprof-compute-vcopy/MI350")
    results = analyze_dispatches(pivot, "gfx950")
    text = render(lambda c: render_pmc(results, c), width)
    check_fits(text, width)
    for res in results:
        assert f"{100 * res.l2_hit_rate:.1f}%" in text and f"{res.l2_hits:,.0f} hit / {res.l2_misses:,.0f} miss" in " ".join(text.split())
    f1, f2 = (shared / "traces/flash_attn_func/big" / n for n in ("ui_output_agent_38430_dispatch_44", "ui_output_agent_55287_dispatch_44_after_loc_fix"))
    res = diff(load_side(str(f1)), load_side(str(f2)))
    text = render(lambda c: render_diff(res, c, top=10), width)
    check_fits(text, width)
    for c in res.to_dict(20)["classes"][:10]:
        assert whole(text, f"{c['stall_before']:,.0f}") and whole(text, f"{c['stall_after']:,.0f}")


def test_fit_table_policy():
    """Numbers never cut, even when they alone do not fit; text gives way
    first: ellipsis, path keeps its end, wrap keeps everything, then text moves
    onto a line below its row."""
    t = FitTable("t", [Col("n"), Col("name", "text"), Col("src", "path"), Col("isa", "wrap"), Col("big number")])
    t.add_row("123,456,789", "a_very_long_kernel_name_" * 3, "/deep/dir/structure/file.py:1234", "v_add_f32 v1, v2, v3 ; a long comment here", "9,876,543,210")
    for width in (200, 90, 60, 40, 20):
        text = render(lambda c: c.print(t), width)
        assert whole(text, "123,456,789") and whole(text, "9,876,543,210"), width
        if width >= 40:
            check_fits(text, width)
        assert "file.py:1234" in text.replace("\n", "")
    wide = render(lambda c: c.print(t), 200)
    assert "a_very_long_kernel_name_" * 3 in wide and "below each row" not in wide
    narrow = render(lambda c: c.print(t), 40)
    assert "below each row" in narrow and "v_add_f32" in narrow


def _env(**over):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR", "TERM")}
    env.update({"PYTHONPATH": str(REPO / "src"), "TERM": "xterm-256color", **over})
    return env


def run(*args, env=None, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, env=env or _env(), timeout=120)
    assert p.returncode == code, p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    return p


def run_tty(*args, env=None, stdout_tty=True, stderr_tty=True) -> tuple[str, str, int]:
    """Run with stdout and/or stderr on a pseudo-terminal (120 columns)."""
    master, slave = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "attlens", *map(str, args)], stdin=subprocess.DEVNULL,
                         stdout=slave if stdout_tty else subprocess.PIPE, stderr=slave if stderr_tty else subprocess.PIPE, env=env or _env())
    os.close(slave)
    chunks = []
    while True:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    rc = p.wait(timeout=120)
    piped = (p.stdout or p.stderr).read().decode() if (p.stdout or p.stderr) else ""
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace"), piped, rc


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return write_capture(tmp_path_factory.mktemp("toy"))


def inproc(capsys, *args, code=0) -> tuple[str, str]:
    """The command line in this process, output captured (not a terminal)."""
    from attlens.cli import main

    capsys.readouterr()
    assert main([str(a) for a in args]) == code
    return capsys.readouterr()


def test_piped_output_has_no_escapes_and_follows_columns(toy, capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    p = run("analyze", toy)
    assert "\x1b" not in p.stdout + p.stderr and p.stderr == ""
    for args in (["waves", toy], ["deps", toy], ["plan", toy], ["demo", "--out", toy.parent / "demo"], ["diff", toy, toy]):
        out, err = inproc(capsys, *args)
        assert "\x1b" not in out + err, args
        assert err == "", f"nothing on a non-terminal stderr: {err!r}"
    shared = require_shared()
    cap = shared / PA
    default = run("analyze", cap).stdout
    widest = max(len(ln.rstrip()) for ln in default.splitlines())
    assert 80 < widest <= 120, "piped without COLUMNS: 120 columns"
    narrow = run("analyze", cap, env=_env(COLUMNS="80")).stdout
    assert max(len(ln.rstrip()) for ln in narrow.splitlines()) <= 80
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width(io.StringIO()) == 120
    monkeypatch.setenv("COLUMNS", "99")
    assert terminal_width(io.StringIO()) == 99
    monkeypatch.setenv("COLUMNS", "wide")
    assert terminal_width(io.StringIO()) == 120


def test_no_color_and_no_color_env_on_a_terminal(toy):
    colored, _, rc = run_tty("analyze", toy, stderr_tty=False)
    assert rc == 0 and "\x1b[" in colored, "a colour terminal gets colour (so the checks below can fail)"
    for out in (run_tty("analyze", toy, "--no-color")[0], run_tty("analyze", toy, env=_env(NO_COLOR="1"))[0],
                run_tty("analyze", toy, env=_env(TERM="dumb"))[0]):
        assert "\x1b" not in out and "toy_kernel.py:24" in out


def test_progress_only_on_a_terminal_stderr(toy):
    err, out, rc = run_tty("analyze", toy, "--no-cache", stdout_tty=False, stderr_tty=True)
    assert rc == 0 and "wave files" in err and "\x1b[" in err, "progress drawn on a terminal's stderr"
    assert "Instruction stall by class" in out and "\x1b" not in out
    assert run("analyze", toy).stderr == ""
    err, _, _ = run_tty("analyze", toy, "--no-color", stdout_tty=False, stderr_tty=True)
    assert err == "", "--no-color: no progress animation either"


def test_progress_on_a_terminal_starts_no_thread(monkeypatch):
    """A second thread makes the loader parse in one process (attlens.forked.can_fork):
    the progress line is drawn at each stage, never by a refresh thread."""
    import threading

    from attlens.report.console import progress

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as tty:
        before = threading.active_count()
        with progress(stream=tty) as step:
            step("parsing wave files", 1, 4)
            during = threading.active_count()
    os.close(master)
    assert step is not None and step.__name__ != "_no_progress", "a terminal gets the progress line"
    assert during == before


EVIL_NAME = "evil\x1b]0;pwned\x07\x1b[2J_kernel\x9b31m\u202e"
EVIL_ISA = "v_add_f32 v1, v2, v3 ; \x1b[31mred\x1b[0m \x07"
EVIL_SRC = "/tmp/\x1b]8;;http://x\x07link.py:3"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
SGR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def evil(tmp_path_factory):
    k = default_kernel()
    k.name = EVIL_NAME
    k.body[5] = Op(EVIL_ISA, 25, size=8, source=EVIL_SRC)
    root = tmp_path_factory.mktemp("evil")
    return write_capture(root / "a", k), write_capture(root / "b", k, dispatch_id=8)


def test_control_characters_never_reach_the_terminal(evil, tmp_path, capsys):
    a, b = evil
    cases = [["analyze", a, "--topk", "40"], ["analyze", a, "--detail", "--mode", "src"], ["waves", a], ["deps", a], ["plan", a],
             ["plan", a, "--format", "md"], ["diff", a, b], ["diff", a, b, "--format", "md"], ["kernels", tmp_path / "no\x1b[2Jsuch"]]
    outputs = {}
    for args in cases:
        out, err = inproc(capsys, *args, code=3 if args[0] == "kernels" else 0)
        for stream in (out, err):
            assert not RAW.search(stream.replace("\n", "").replace("\t", "")), (args, RAW.search(stream))
        outputs[args[0], str(args[-1])] = out + err
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J_kernel\\x9b31m\\u202e" in outputs["analyze", "40"]
    assert "\\x1b[31mred" in outputs["analyze", "40"]
    assert "no\\x1b[2Jsuch" in outputs["kernels", str(tmp_path / "no\x1b[2Jsuch")]
    p = run("analyze", tmp_path / "no\x1b]0;t\x07such", code=3)  # the error line, from a real process
    assert "\\x1b]0;t\\x07" in p.stderr and not RAW.search(p.stderr.replace("\n", ""))
    # with colour on a terminal, the only escapes are attlens's own colours
    out, _, _ = run_tty("analyze", a, stderr_tty=False)
    assert not RAW.search(SGR.sub("", out).replace("\r", "").replace("\n", "")), "only SGR colour sequences"
    md = tmp_path / "md"
    run("report", a, "--format", "md", "-o", md)
    assert not RAW.search((md / "report.md").read_text().replace("\n", ""))


def test_safe_text():
    assert safe_text("a\x1b[2Jb\x07\x9b\u202e\tc\n") == "a\\x1b[2Jb\\x07\\x9b\\u202e\tc\n"
    assert safe_text("plain µs ×") == "plain µs ×"


# --------------------------------------------------------------------------- the ISA is never cut (issue 22)


def test_isa_column_never_splits_a_word_and_gives_way_last():
    """Columns give way in their stated order: the source path, then the class,
    and the instruction last; the instruction wraps between operands only."""
    isa = "v_permlane32_swap_b32_e32 v3, v35, s[12:15] offset:2560"
    t = FitTable(None, [Col("pc"), Col("class", "wrap", min_width=11, give_way=5), Col("instruction", "isa", give_way=9),
                        Col("source", "path", give_way=3)])
    t.add_row("141", "valu", isa, "/very/long/path/to/the/kernels/softmax_kernel.py:41")
    for width in (40, 60, 80, 120):
        text = render(lambda c: c.print(t), width)
        words = text.split()
        for w in isa.split():
            assert w in words, (width, w, text)  # every mnemonic and operand whole
    wide = render(lambda c: c.print(t), 200)
    assert isa in wide and "softmax_kernel.py:41" in wide
    # at 60 columns the source gives way (cut at its start) before the instruction wraps
    text = render(lambda c: c.print(t), 60)
    assert "…" in text and "kernel.py:41" in text


def test_empty_text_column_takes_no_width():
    t = FitTable(None, [Col("pc"), Col("instruction", "isa"), Col("waits on (pc: cycles)", "wrap")])
    t.add_row("1", "s_nop 0", "")
    t.add_row("2", "s_endpgm", "-")
    text = render(lambda c: c.print(t), 80)
    assert "waits on" not in text
    assert max(len(line) for line in text.splitlines()) < 20


def test_no_trailing_spaces():
    t = FitTable("T", [Col("pc"), Col("instruction", "isa"), Col("source", "path")])
    t.add_row("1", "s_nop 0", "a.py:1")
    t.add_row("22", "buffer_load_dword v1, v2, s[0:3], 0 offen", "-")
    text = render(lambda c: c.print(t), 120)
    assert text and not [ln for ln in text.splitlines() if ln != ln.rstrip()]


@pytest.mark.parametrize("width", WIDTHS)
def test_real_tables_keep_every_mnemonic_whole(width):
    """softmax's longest mnemonics (v_permlane32_swap_b32_e32, buffer_load_ushort)
    stay whole in analyze, asm, waits and deps at 80/120/200 columns, each table
    shows the pc index and the address, and no line has trailing spaces."""
    from attlens.api import asm, deps, waits
    from attlens.report.terminal import render_analysis, render_asm, render_deps, render_waits

    _d, r = loaded(require_shared() / SOFTMAX)
    att = attribute_waits(r.dispatch, r.deps, r.pairs)
    outs = {
        "analyze": render(lambda c: render_analysis(r, c, topk=10, mode="asm"), width),
        "asm": render(lambda c: render_asm(asm(r, 141, 6, attribution=att), c), width),
        "waits": render(lambda c: render_waits(waits(r, attribution=att), c), width),
        "deps": render(lambda c: render_deps(deps(r, attribution=att), c), width),
    }
    isa = r.dispatch.code.isa
    for name, text in outs.items():
        words = set(text.split())
        assert not [ln for ln in text.splitlines() if ln != ln.rstrip()], name
        shown = [p for p in range(r.dispatch.code.size) if r.dispatch.code.instruction_mask[p] and hex(int(r.dispatch.code.vaddr[p])) in words]
        assert shown, name  # addresses are shown
        for p in shown:
            mnemonic = isa[p].split()[0]
            assert mnemonic in words, (name, width, mnemonic)
    assert "v_permlane32_swap_b32_e32" in outs["asm"].split()


def test_pc_takes_an_index_or_an_address():
    from clirun import run_main

    cap = str(require_shared() / SOFTMAX)
    by_index = run_main("asm", cap, "--pc", "10", "--around", "2", "--json")
    by_addr = run_main("asm", cap, "--pc", "0x1738", "--around", "2", "--json")
    assert by_index.code == by_addr.code == 0 and by_index.json() == by_addr.json()
    assert by_addr.json()["pc"] == 10 and [r["vaddr"] for r in by_addr.json()["rows"] if r["center"]] == [0x1738]
    assert [w["wait_pc"] for w in run_main("deps", cap, "--pc", "0x1970", "--json").json()["waits"]] == [98]
    off = run_main("asm", cap, "--pc", "0x1739")
    assert off.code == 2 and "no instruction starts at that address" in off.err and "pc 10 at 0x1738" in off.err
    assert run_main("asm", cap, "--pc", "0xzz").code == 2
    # the Python API: the same, and its errors name the argument, not a CLI flag
    import attlens

    _d, r = loaded(require_shared() / SOFTMAX)
    assert attlens.asm(r, "0x1738", 0).pc == 10
    from attlens.errors import UsageError

    with pytest.raises(UsageError) as e:
        attlens.asm(r, 10**6)
    assert "--" not in str(e.value) and str(e.value).startswith("pc 1000000")


def test_captures_paths_tell_big_from_small_at_100_columns():
    folder = require_shared() / "traces/flash_attn_func"
    buf = io.StringIO()
    from attlens.api import captures
    from attlens.report.terminal import render_captures

    render_captures(captures(folder), make_console(file=buf, width=100))
    text = buf.getvalue()
    for rel in ("big/ui_output_agent_38430_dispatch_44", "big/ui_output_agent_55287_dispatch_44_after_loc_fix",
                "small/ui_output_agent_32235_dispatch_44", "small/ui_output_agent_58550_dispatch_44_after_loc_fix"):
        assert rel in text.split(), rel
