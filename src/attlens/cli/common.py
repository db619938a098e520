"""What every command group shares: common options, the validators of every
numeric option, loading captures for a command, exit codes from results,
checking and writing outputs, printing JSON and errors.

Only argparse-level code lives at module level; everything heavy is imported
inside the functions so ``attlens --help`` stays instant.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from attlens.limits import MAX_CACHED_CAPTURES, MAX_COUNT, MAX_RETRIES, MAX_SECONDS, MAX_WORKERS

# --help names nothing a pip install lacks: the exit codes themselves, and the command that prints the schemas
EPILOG = ("Exit codes: 0 ok, 2 usage, 3 not found, 4 not a capture, 5 several captures, 6 empty capture, 7 corrupt input, "
          "8 partial input, 9 output refused, 10-14 capture workflow, 20 regression, 21 not comparable, 22 gate on partial input, "
          "30-33 sweeps, 130 interrupted. --json objects: attlens schema NAME prints their JSON Schema.")


# --------------------------------------------------------------------------- option validators
#
# Every numeric option is parsed by one of these (argparse ``type=``): a bad
# value is a usage error (exit 2) naming the option, never a crash later and
# never a silently odd result (``--max-regression nan`` made every check fail).


def int_range(lo: int | None = None, hi: int | None = None, *, base: int = 10):
    """An integer in [lo, hi]; ``base=0`` also takes ``0x..`` literals (masks, sizes)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip(), base)
        except (ValueError, AttributeError):
            kind = "an integer (decimal or 0x hex)" if base == 0 else "an integer"
            raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"{text} is out of range ({_bounds(lo, hi, base)})")
        return value

    parse.__name__ = "integer"
    return parse


def float_range(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False):
    """A finite number in [lo, hi] (or (lo, hi] with ``lo_open``); nan and inf are refused."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if lo is not None and (value < lo or (lo_open and value == lo)):
            raise argparse.ArgumentTypeError(f"{text} must be {'>' if lo_open else '>='} {lo:g}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"{text} must be <= {hi:g}")
        return value

    parse.__name__ = "number"
    return parse


def _bounds(lo, hi, base) -> str:
    fmt = hex if base == 0 and (hi or 0) > 1024 else str
    if hi is None:
        return f">= {fmt(lo)}"
    if lo is None:
        return f"<= {fmt(hi)}"
    return f"{fmt(lo)}..{fmt(hi)}"


def cycle_window(text: str) -> tuple[int, int]:
    """``A:B``: cycles after the first wave starts, 0 <= A < B < 2**62."""
    a, sep, b = text.partition(":")
    parse = int_range(0, (1 << 62) - 1)
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r}: expected A:B in cycles, e.g. 0:200000")
    lo, hi = parse(a), parse(b)
    if hi <= lo:
        raise argparse.ArgumentTypeError(f"{text}: B must be larger than A")
    return lo, hi


CYCLE_WINDOW = cycle_window


def pc_or_address(text: str) -> int | str:
    """``--pc``: an instruction index (973) or an address (0x1738, the Vaddr of
    code.json); the address is kept as text and resolved against the capture
    (attlens.analysis.asm.resolve_pc)."""
    t = text.strip()
    if t.lower().startswith("0x"):
        try:
            value = int(t, 16)
        except ValueError:
            value = -1
        if 0 <= value <= MAX_COUNT:
            return t
        if value > MAX_COUNT:
            raise argparse.ArgumentTypeError(f"{text} is out of range (0x0 to {MAX_COUNT:#x})")
        raise argparse.ArgumentTypeError(f"{text!r} is not an address (0x followed by hex digits)")
    try:
        value = int(t, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither an instruction index (973) nor an address (0x1738)") from None
    if not 0 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text} is out of range (0 to {MAX_COUNT})")
    return value


pc_or_address.__name__ = "pc"
PC = pc_or_address
# Every integer option has an upper bound too (attlens.limits): --top 2**64
# reached the JSON writer and ended in an internal error.
COUNT = int_range(0, MAX_COUNT)  # rows to show (0 = all where documented), pc indices, events
POSITIVE = int_range(1, MAX_COUNT)
RETRIES = int_range(0, MAX_RETRIES)
WORKERS = int_range(1, MAX_WORKERS)
CACHED_CAPTURES = int_range(1, MAX_CACHED_CAPTURES)
PERCENT = float_range()  # a signed percentage (finite)
NONNEG_NUMBER = float_range(0.0)
POSITIVE_NUMBER = float_range(0.0, lo_open=True)
SECONDS = float_range(0.0, MAX_SECONDS, lo_open=True)  # a timeout
BACKOFF_SECONDS = float_range(0.0, MAX_SECONDS)
# ATT parameters, ranges from rocprofv3-interfaces.md §2.4: target CU 0-15 in
# each SE; SE mask: one bit per SE (32 SEs on MI300X/MI350X); SIMD select: a
# 4-bit mask (gfx9) or a SIMD id (gfx10+); buffer 1 MB-2 GB.
TARGET_CU = int_range(0, 15)
SE_MASK = int_range(1, 0xFFFFFFFF, base=0)
SIMD_SELECT = int_range(0, 0xF, base=0)
BUFFER_SIZE = int_range(1 << 20, 2 << 30, base=0)


def power_of_two_cycles(text: str) -> int:
    """A stochastic PC-sampling interval: a power of two from 256 to 2**31 cycles
    (rocprofv3 -L on gfx942: Min_Interval 256, Max_Interval 2147483648, pow2)."""
    value = int_range(256, 1 << 31, base=0)(text)
    if value & (value - 1):
        lo = 1 << (value.bit_length() - 1)
        raise argparse.ArgumentTypeError(f"{text} is not a power of two (e.g. {lo:,} or {lo * 2:,})")
    return value


PC_SAMPLING_INTERVAL = power_of_two_cycles
# Host-trap sampling counts time: microseconds between samples, 1 µs to 1 s
# (rocprofv3 judges the target's own limits; a longer interval samples nothing useful).
HOST_TRAP_US = int_range(1, 1_000_000)


# --------------------------------------------------------------------------- output options


def add_json(p: argparse.ArgumentParser, schema: str) -> None:
    """``--json``: print the object of ``schema`` (its JSON Schema: ``attlens schema``)."""
    p.add_argument("--json", action="store_true", help=f"print one JSON object ({schema}; attlens schema {schema}) instead of text")


def add_no_color(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-color", action="store_true",
                   help="plain text without colour or any escape sequence (so is NO_COLOR=1, or output that is not a terminal)")


ROCPROF_DIR_HELP = "rocprofv3 outputs of the same run (agent_info.csv, kernel_trace.csv, results.json), if not beside the capture"


# --------------------------------------------------------------------------- capture arguments


def add_capture_args(p: argparse.ArgumentParser, schema: str) -> None:
    """The options of every command that reads one capture (or a folder of
    them with ``--all``, printed as ``<schema>_many``)."""
    p.add_argument("path", help="a ui_output_agent_*_dispatch_* directory, or a folder holding captures")
    p.add_argument("--all", action="store_true", help=f"every capture found under PATH (--json: {schema}_many)")
    p.add_argument("--rocprof-dir", metavar="DIR", help=ROCPROF_DIR_HELP)
    add_json(p, schema)
    add_cache_args(p)


def add_pc_sampling_args(p: argparse.ArgumentParser) -> None:
    """The PC-sampling options of the commands that show sampled stall reasons (docs/pcsampling.md)."""
    p.add_argument("--pc-sampling", metavar="PATH",
                   help="PC samples to join: a rocprofv3 *_results.json or *_pc_sampling_{stochastic,host_trap}.csv, or a "
                        "rocprof-compute-viewer PC-sampling ui_output folder (default: found beside the capture)")
    p.add_argument("--no-pc-sampling", action="store_true", help="join no PC samples, not even ones found beside the capture")
    p.add_argument("--pc-sampling-scope", choices=("traced", "kernel"), default="traced",
                   help="traced (default): samples of the traced dispatch on the traced CUs; kernel: every sample of the kernel's code")


def pc_sampling_source(args):
    """What ``analyze(pc_sampling=...)`` gets for these arguments: False with
    --no-pc-sampling, the path of --pc-sampling, else None (find them beside
    the capture; also for commands without the options, which show none)."""
    if not hasattr(args, "pc_sampling"):
        return None
    if args.no_pc_sampling:
        if args.pc_sampling:
            from attlens.errors import UsageError

            raise UsageError("--pc-sampling and --no-pc-sampling together")
        return False
    if args.pc_sampling:
        from attlens.io.confine import user_path

        return user_path(args.pc_sampling)
    return None


def analyze_kwargs(args) -> dict:
    """The PC-sampling arguments of ``analyze()`` for these options: only what differs from its defaults."""
    kw = {}
    source = pc_sampling_source(args)
    if source is not None:
        kw["pc_sampling"] = source
    if getattr(args, "pc_sampling_scope", "traced") != "traced":
        kw["pc_sampling_scope"] = args.pc_sampling_scope
    return kw


def add_cache_args(p: argparse.ArgumentParser) -> None:
    """--cache-dir / --no-cache of every command that reads captures (docs/cache.md)."""
    p.add_argument("--cache-dir", metavar="DIR", help="where capture digests are kept (default $XDG_CACHE_HOME/attlens)")
    p.add_argument("--no-cache", action="store_true", help="read the capture afresh; neither use nor write its digest")
    p.set_defaults(key_scope=True)  # each capture's digest key is computed once per command (cache.keys.command_scope)


def configure_cache(args) -> None:
    """Apply --cache-dir / --no-cache to every load of this command."""
    from attlens.cache import configure

    configure(getattr(args, "cache_dir", None), enabled=not getattr(args, "no_cache", False))


def progress(args):
    """The progress callback of a command: a transient line on stderr when it
    is a terminal (and colour is allowed), nothing otherwise
    (:func:`attlens.report.console.progress`; rich is imported only then)."""
    from contextlib import nullcontext

    from attlens.report.tty import color_allowed

    if not color_allowed(getattr(args, "no_color", False), sys.stderr):
        return nullcontext(lambda stage, done=None, total=None: None)
    from attlens.report.console import progress as _progress

    return _progress(getattr(args, "no_color", False))


def load_analyzed(args, dirs, exposed: bool = True) -> list:
    """Load and analyze each capture directory, showing progress. The
    analysis' modules are imported while the parse child works (the parse
    needs none of them: 9 ms before the fork, attlens.forked.while_waiting)."""
    from attlens.forked import while_waiting
    from attlens.model.loader import load

    out = []
    kw = analyze_kwargs(args)
    with progress(args) as step, while_waiting(_import_analysis):
        for d in dirs:
            dispatch = load(d, rocprof_dir=getattr(args, "rocprof_dir", None), progress=step, hidden=exposed,
                            samples="pc_sampling" not in kw)
            step(f"analyzing {d.name}")
            from attlens.analysis.analyze import analyze

            out.append(analyze(dispatch, exposed=exposed, **kw))
    return out


def _import_analysis() -> None:
    import attlens.analysis.analyze  # noqa: F401


# Options that do not change a --json document (where output goes, colour,
# the cache itself): left out of the question an answer is stored under.
_NOT_IN_QUESTION = {"func", "cmd", "cache_dir", "no_cache", "no_color", "output", "json", "format"}


def json_answer(args, command: str, capture, document, exposed: bool = True) -> int:
    """``--json`` on one capture, to stdout: write the document ``document(result)``
    makes of the analyzed capture, or the stored answer to the same question
    in the same state of the capture (attlens.cache.answers; digests must be
    on). Returns the exit code."""
    from attlens.cache.answers import answer

    def build():
        r = load_analyzed(args, [capture], exposed=exposed)[0]
        return document(r), exit_code([r])

    question = [command, str(capture), sorted((k, v) for k, v in vars(args).items() if k not in _NOT_IN_QUESTION)]
    add_sample_state(question, args, capture)
    doc, code = answer(capture, getattr(args, "rocprof_dir", None), question, build)
    emit_json(doc)
    return code


def add_sample_state(question: list, args, capture) -> None:
    """An answer shows the PC samples it may read: their files' state is part of the question."""
    source = pc_sampling_source(args)
    if hasattr(args, "pc_sampling") and source is not False:
        from attlens.model.pcsampling import sources_state

        question.append(sources_state(capture, getattr(args, "rocprof_dir", None), source))


# Options that do not change a text answer: the terminal facts that do are
# asked of the output stream itself (:func:`_terminal_facts`).
_NOT_IN_TEXT_QUESTION = {"func", "cmd", "cache_dir", "no_cache", "json"}


class _Tee:
    """stdout while a text answer is rendered: everything written reaches the
    real stream and is kept; it is the same terminal (or not) to whoever asks,
    so the renderer lays out and colours exactly as without it."""

    def __init__(self, real):
        self.real = real
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.real.write(text)

    def getvalue(self) -> str:
        return "".join(self.parts)

    def __getattr__(self, name):  # isatty, fileno, encoding, flush, ...
        return getattr(self.real, name)


def _terminal_facts(no_color: bool) -> dict:
    """What the text of a rendering depends on besides the question: the width
    and colour the console will use (report/tty.py), the stream's encoding and,
    with colour, the variables rich picks its colour system from."""
    from attlens.report.tty import color_allowed, terminal_width

    out = sys.stdout
    color = color_allowed(no_color, out)
    facts = {"width": terminal_width(out), "color": color, "encoding": str(getattr(out, "encoding", None))}
    if color:
        facts["env"] = [os.environ.get(k) for k in ("TERM", "COLORTERM", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")]
    return facts


def stored_answer(args, command: str, capture, make, exposed: bool = True, extra=None):
    """``(value, exit code, computed)``: ``make(result)`` of the analyzed capture
    (a string or anything JSON holds), or the value stored for the same question
    in the same state of the capture (attlens.cache.answers). ``computed``
    says which."""
    from attlens.cache.answers import answer

    computed = []

    def build():
        r = load_analyzed(args, [capture], exposed=exposed)[0]
        computed.append(True)
        value = make(r)
        # a value that is not text is kept under a schema like every stored document
        # (cache.answers refuses one without: it would be computed again every time)
        return value if isinstance(value, str) else {"schema": "attlens.stored-value", "value": value}, exit_code([r])

    question = ["text", command, str(capture), sorted((k, v) for k, v in vars(args).items() if k not in _NOT_IN_TEXT_QUESTION),
                extra]
    add_sample_state(question, args, capture)
    value, code = answer(capture, getattr(args, "rocprof_dir", None), question, build)
    if not isinstance(value, str):
        if not (isinstance(value, dict) and value.get("schema") == "attlens.stored-value" and "value" in value):
            value, code = build()  # a stored document of another kind under this question's name
        value = value["value"]
    return value, code, bool(computed)


def text_answer(args, command: str, capture, render, exposed: bool = True) -> int:
    """A text command on one capture, to stdout: ``render(result)`` prints it
    (through the console of report/console.py) and what it printed is stored;
    the same question on the same capture, terminal width and colour gets the
    stored text back without loading anything. Returns the exit code."""

    def make(r) -> str:
        tee = _Tee(sys.stdout)
        sys.stdout = tee
        try:
            render(r)
        finally:
            sys.stdout = tee.real
        return tee.getvalue()

    text, code, computed = stored_answer(args, command, capture, make, exposed, extra=_terminal_facts(getattr(args, "no_color", False)))
    if not computed:
        sys.stdout.write(text)
        sys.stdout.flush()
    return code


def one_capture(args):
    """Load and analyze (without the hidden-latency model) the capture(s) of ``args.path``."""
    from attlens.model.locate import resolve_capture_dirs

    dirs = resolve_capture_dirs(args.path, all_captures=getattr(args, "all", False))
    return load_analyzed(args, dirs, exposed=False)


def exit_code(results) -> int:
    """0, or 8 when some input of any result was skipped."""
    from attlens.errors import EXIT_OK, EXIT_PARTIAL

    return EXIT_PARTIAL if any(r.dispatch.partial for r in results) else EXIT_OK


# --------------------------------------------------------------------------- outputs


def side_inputs(*paths) -> list:
    """What ``diff``/``check`` read for each path: the capture directories
    under a directory, or the JSON file itself (for :func:`check_output`)."""
    from attlens.errors import AttlensError
    from attlens.model.locate import resolve_capture_dirs

    out = []
    for p in paths:
        if p is None:
            continue
        if os.path.isdir(p):
            try:
                out += resolve_capture_dirs(p, all_captures=True)
                continue
            except AttlensError:
                pass
        out.append(p)
    return out


def input_files(results) -> list[str]:
    """The rocprofv3 files read beside the captures of ``results`` (an output
    must not replace one of them)."""
    return [f for r in results for f in r.dispatch.rocprof_files]


def _real(path) -> str:
    return os.path.realpath(os.fspath(path))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_output(path, inputs=(), *, directory: bool = False, names=()) -> None:
    """Refuse an output path before any work is done (docs/exit-codes.md, exit 9).

    ``inputs`` are the paths read (capture directories, JSON or CSV files).
    Refused: an output inside (or equal to) a capture directory or any input
    directory, equal to an input file, an existing directory where a file is
    written (``directory=False``) or a file where a folder is written, or a
    folder path running through a file. With ``directory=True`` the files
    ``names`` written inside it are checked against the inputs too."""
    from attlens.errors import OutputRefused

    out = os.fspath(path)
    if not out:
        raise OutputRefused("empty output path")
    if directory and os.path.exists(out) and not os.path.isdir(out):
        raise OutputRefused(f"{out}: exists and is not a directory (the output is a folder)")
    if not directory and os.path.isdir(out):
        raise OutputRefused(f"{out}: is a directory", hint="give a file name, e.g. " + os.path.join(out, "report.html"))
    if not directory and os.path.exists(out) and not os.path.isfile(out):
        # a device or FIFO would be replaced by a regular file by the atomic rename
        raise OutputRefused(f"{out}: exists and is not a regular file", hint="give a file name")
    parent = os.path.dirname(os.path.abspath(out))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise OutputRefused(f"{out}: {parent} is a file, not a directory")
    from attlens.model.rundirs import run_output_files

    real = _real(out)
    targets = [real] + [os.path.join(real, n) for n in names]
    for src in inputs:
        if src is None:
            continue
        r = _real(src)
        if os.path.isdir(r):
            if _inside(real, r) or any(_inside(t, r) for t in targets):
                raise OutputRefused(f"{out}: inside the input directory {src}; attlens never writes into a capture",
                                    hint="write the output somewhere else")
            # a capture's rocprofv3 outputs beside it are inputs too
            for f in run_output_files(r):
                if _real(f) in targets:
                    raise OutputRefused(f"{out}: is {f}, read beside the capture {src}; it would be overwritten",
                                        hint="write the output somewhere else")
        elif r in targets:
            raise OutputRefused(f"{out}: is the input {src}; it would be overwritten", hint="write the output somewhere else")


def arrange_numpy_import() -> None:
    """When NumPy is first imported in this process, import it with its
    OpenBLAS on one thread (unless the user chose a count), the environment
    as it was right afterwards (no child process inherits it), and then, in
    the command line's own process (:func:`the_command_line_runs_here`), let
    the C allocator keep the memory the command frees (:func:`keep_freed_memory`).
    Why one thread: attlens does no linear algebra, and OpenBLAS's idle
    threads spin on the other cores for about 0.1 s after the import
    (measured: 0.06-0.08 s of CPU on ``export`` and beside a first
    ``analyze``'s parse child, on two cores shared with the work). Only when
    it is imported: a repeat answered from its stored answer never imports
    NumPy (nor pays for the allocator's settings). Every command that reads
    captures arranges it first (cli._main)."""
    if "numpy" in sys.modules:
        return
    if not any(isinstance(f, _OneBlasThread) for f in sys.meta_path):
        sys.meta_path.insert(0, _OneBlasThread())


# The process is the `attlens` command's own (attlens.__main__.entry): short-lived, so the allocator
# may keep what it frees; a Python program that calls attlens.cli.main keeps its allocator as it is.
_COMMAND_LINE_PROCESS = {"here": False}


def the_command_line_runs_here() -> None:
    """Called by the command line's entry point (attlens.__main__.entry), for its process only."""
    _COMMAND_LINE_PROCESS["here"] = True


# glibc malloc's M_TRIM_THRESHOLD and M_MMAP_THRESHOLD (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
KEEP_FREED_BYTES = 256 << 20  # freed memory at the heap's top kept for the next allocations
HEAP_ALLOCATIONS_BELOW = 32 << 20  # blocks below this from the heap (reused), not fresh mappings


def keep_freed_memory() -> bool:
    """Tell glibc's allocator to keep what a command frees for its next
    allocations: blocks up to HEAP_ALLOCATIONS_BELOW from the heap instead of
    a fresh mapping each, and up to KEEP_FREED_BYTES of freed heap not given
    back. A command's NumPy temporaries (a parse part's columns, a batch's
    intervals) are freed and made again at the same sizes hundreds of times;
    each fresh mapping is zeroed page by page by the kernel on first touch
    (12 % of a first softmax ``analyze``'s page faults). Measured: the first
    ``analyze`` about 14 ms shorter at 1x, 0.26-0.35 s at 30x, peak RSS the
    same. A short-lived process only (the command line's own, inherited by
    its forked children); True if glibc took both settings, False elsewhere."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS; Windows has no CDLL(None)): its allocator as it is
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    took_trim = mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES)
    took_mmap = mallopt(_M_MMAP_THRESHOLD, HEAP_ALLOCATIONS_BELOW)
    return bool(took_trim and took_mmap)


class _OneBlasThread:
    """A one-shot import finder: NumPy's package runs with
    OPENBLAS_NUM_THREADS=1 set (its OpenBLAS reads it when it loads), then unset."""

    def find_spec(self, name, path=None, target=None):
        if name != "numpy":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _EnvDuringExec(spec.loader)
        return spec


class _EnvDuringExec:
    """NumPy's own loader, with the variable set while its package runs (not
    when the user set a count), and in the command line's own process the
    allocator's settings once it ran (NumPy has imported ctypes by then: they
    cost nothing more)."""

    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, name):  # everything else (resource readers, is_package, ...) is the real loader's
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        had = "OPENBLAS_NUM_THREADS" in os.environ
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            self.loader.exec_module(module)
        finally:
            if not had:
                os.environ.pop("OPENBLAS_NUM_THREADS", None)
        if _COMMAND_LINE_PROCESS["here"]:
            keep_freed_memory()


def write_atomic(path: str, text: str) -> None:
    from attlens.fsutil import write_atomic as _write

    _write(path, text)


def say(text: str, file=None) -> None:
    """Print a message (default: to stderr) with the control characters of
    any path or name in it made visible (:func:`attlens.report.controls.safe_text`)."""
    from attlens.report.controls import safe_text
    from attlens.textsafe import utf8_safe_str

    print(safe_text(utf8_safe_str(str(text))), file=sys.stderr if file is None else file)


def emit(text: str) -> None:
    """Write a text rendering (Markdown, plain text) to stdout, control
    characters made visible, ending with a newline."""
    from attlens.report.controls import safe_text
    from attlens.textsafe import utf8_safe_str

    text = safe_text(utf8_safe_str(text))
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


# --------------------------------------------------------------------------- JSON on stdout and errors
#
# With --json, stdout carries exactly one whole JSON document, or nothing:
# cli.main points sys.stdout at stderr while a command runs (so nothing else
# can reach stdout), and emit_json writes the document to the real stdout in
# one call with Ctrl-C held off until it is written.

_json_stdout = None  # the real stdout while a --json command runs
_json_emitted = False


def begin_json_mode() -> None:
    global _json_stdout, _json_emitted
    _json_stdout, _json_emitted = sys.stdout, False
    sys.stdout = sys.stderr


def end_json_mode() -> None:
    global _json_stdout
    if _json_stdout is not None:
        sys.stdout = _json_stdout
        _json_stdout = None


def json_emitted() -> bool:
    return _json_emitted


def json_text(obj) -> str:
    """``obj`` as indented JSON (non-UTF-8 path bytes as ``\\xNN``: attlens.textsafe)."""
    from attlens.jsondoc import dumps

    return dumps(obj)


def emit_json(obj) -> None:
    """Write ``obj`` as one JSON document (and a newline) to stdout, whole.

    The document is serialized first, then written with Ctrl-C blocked at the
    system level (``pthread_sigmask``) straight to the file descriptor, so no
    write is cut short: into a slow pipe, an interrupted buffered write
    returned after the first 64 KiB and the rest was lost. A Ctrl-C that
    arrived meanwhile is delivered when the document is complete (then the
    command exits 130 with the whole document on stdout)."""
    global _json_emitted
    import signal
    import threading

    data = (json_text(obj) + "\n").encode("utf-8")
    out = _json_stdout if _json_stdout is not None else sys.stdout
    out.flush()
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (pytest's capture, an in-memory stream)
        fd = None
    # Held twice: the Python handler only notes the signal (whichever thread
    # the kernel gives it to), and the system mask keeps it from interrupting
    # the write itself.
    held: list[int] = []
    hold = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum)) if hold else None
    try:
        with _sigint_blocked():
            if fd is not None:
                _write_all(fd, data)
            elif getattr(out, "buffer", None) is not None:
                out.buffer.write(data)
                out.buffer.flush()
            else:
                out.write(data.decode("utf-8"))
                out.flush()
            _json_emitted = True
    finally:
        if hold:
            signal.signal(signal.SIGINT, old)
    if held:
        raise KeyboardInterrupt


def _write_all(fd: int, data: bytes) -> None:
    import select

    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:  # a non-blocking stdout the caller set up: wait until it takes more
            select.select([], [fd], [])
            continue
        view = view[n:]


class _sigint_blocked:
    """SIGINT held pending in this thread while the block runs (no-op where
    the platform has no pthread_sigmask)."""

    def __enter__(self):
        import signal

        self.old = None
        if hasattr(signal, "pthread_sigmask"):
            self.old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        return self

    def __exit__(self, *exc):
        import signal

        if self.old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.old)  # a pending Ctrl-C is raised from here
        return False


def print_error(exc, as_json: bool) -> None:
    """One line on stderr (plus the candidates of a folder with several
    captures); with ``--json`` also the ``attlens.error`` object on stdout
    (unless a document was already written)."""
    from attlens.errors import SeveralCaptures

    msg = f"attlens: error: {exc.message}"
    if exc.hint:
        msg += f" (hint: {exc.hint})"
    say(msg)
    if isinstance(exc, SeveralCaptures) and not as_json:
        counted = any(c.waves is not None or c.instructions is not None for c in exc.candidates)
        say("captures found:" if counted else "candidates:")
        for c in exc.candidates:
            counts = "" if c.waves is None and c.instructions is None else (
                f"  waves={'?' if c.waves is None else c.waves} instructions={'?' if c.instructions is None else c.instructions}")
            say(f"  {c.path}{counts}" + (f"  ({c.error})" if c.error else ""))
    if as_json and not _json_emitted:
        emit_json(exc.to_dict())
