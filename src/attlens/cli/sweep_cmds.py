"""Sweeps: many ``attlens profile`` runs over GPUs and nodes (docs/sweep.md):
sweep init, run, status, report."""

from __future__ import annotations

from attlens.cli.common import BACKOFF_SECONDS, EPILOG, POSITIVE, RETRIES, SECONDS, WORKERS, add_json, add_no_color, emit_json

ENGINES = ("local", "ray", "slurm")


def register(sub) -> None:
    p = sub.add_parser("sweep", help="profile many kernels on many GPUs and nodes, resumably; see them side by side", epilog=EPILOG)
    ss = p.add_subparsers(dest="sweep_command", metavar="SWEEP_COMMAND")
    p.set_defaults(func=lambda args: _no_subcommand(p))

    q = ss.add_parser("init", help="write a commented example sweep file", epilog=EPILOG)
    q.add_argument("path", nargs="?", default=None, help="file to write (default sweep.toml, or sweep.yaml with --format yaml)")
    q.add_argument("--format", choices=("toml", "yaml"), default=None, help="default: from the file name, else toml")
    q.add_argument("--force", action="store_true", help="overwrite an existing file")
    q.add_argument("--json", action="store_true", help="print what was written (attlens.sweep_init)")
    q.set_defaults(func=cmd_init)

    q = ss.add_parser("run", help="run (or resume) every job of a sweep file", epilog=EPILOG)
    q.add_argument("sweep", help="the sweep file (TOML or YAML; attlens sweep init writes an example)")
    q.add_argument("-o", "--output", "--out", dest="out", required=True, metavar="DIR", help="the sweep folder: manifest, one folder per job (re-run to resume); --out is the same")
    q.add_argument("--engine", choices=ENGINES, default="local", help="local (default): this machine's GPUs; ray: a Ray cluster; slurm: a job array")
    q.add_argument("--gpus", metavar="LIST", help="local/ray: GPUs to use, e.g. 0,1,2,3 or 0-7 (default: discovered: ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, else the GPUs the driver lists)")
    q.add_argument("--only", metavar="NAMES", help="run only these jobs (comma-separated names)")
    q.add_argument("--timeout", type=SECONDS, metavar="S", help="seconds per job (overrides the sweep file)")
    q.add_argument("--retries", type=RETRIES, metavar="N", help="retries of a transient failure (overrides the sweep file)")
    q.add_argument("--backoff", type=BACKOFF_SECONDS, metavar="S", help="seconds before the first retry, doubled after (overrides the sweep file)")
    q.add_argument("--analysis-workers", type=WORKERS, metavar="N", help="local: analyses run at once on the CPUs (default: half the cores, at least 1)")
    q.add_argument("--address", metavar="ADDR", help="ray: address of an existing cluster (default: start a local one)")
    q.add_argument("--partition", metavar="P", help="slurm: partition")
    q.add_argument("--max-parallel", type=POSITIVE, metavar="K", help="slurm: array tasks running at once (--array=0-N%%K; default: all)")
    q.add_argument("--gres", default="gpu:1", metavar="GRES",
                   help="slurm: generic resource per task (default gpu:1; 'none' to ask for none, e.g. on CPU-only test clusters)")
    q.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG", help="slurm: extra sbatch option, repeatable (e.g. --sbatch-arg=--account=X)")
    q.add_argument("--wait", action="store_true", help="slurm: wait for the array to finish (default: submit and return)")
    q.add_argument("--no-progress", action="store_true", help="no progress output on stderr")
    q.add_argument("--json", action="store_true", help="print the final attlens.sweep_status object")
    add_no_color(q)
    q.set_defaults(func=_manifest_errors("out")(cmd_run))

    q = ss.add_parser("status", help="the state of every job of a sweep folder", epilog=EPILOG)
    q.add_argument("dir", help="the --out folder of attlens sweep run")
    add_json(q, "attlens.sweep_status")
    add_no_color(q)
    q.set_defaults(func=_manifest_errors("dir")(cmd_status))

    q = ss.add_parser("report", help="dashboard.html (sortable table, links to each report) and FINDINGS.md of a sweep or a folder of captures",
                      epilog=EPILOG)
    q.add_argument("path", help="a sweep folder, or any folder holding captures (ui_output_agent_*_dispatch_*)")
    q.add_argument("-o", "--output", metavar="FILE", help="dashboard file (default: DIR/dashboard.html for a sweep, ./dashboard.html for captures)")
    q.add_argument("--rocprof-dir", metavar="DIR", help="captures: rocprofv3 outputs of the same run(s)")
    q.add_argument("--json", action="store_true", help="print the attlens.sweep_report object (the rows) as well")
    q.set_defaults(func=_manifest_errors("path")(cmd_report))


def _manifest_errors(folder_arg: str):
    """A damaged manifest found while the command runs (SQLite refuses a page,
    a table) is the one-line SweepDamaged error with the repair hint, never an
    internal error."""
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def run(args):
            import sqlite3

            try:
                return fn(args)
            except sqlite3.DatabaseError as exc:
                from pathlib import Path

                from attlens.sweep.manifest import Manifest, damaged

                raise damaged(Manifest.path(Path(getattr(args, folder_arg))), f"SQLite: {exc}") from None

        return run

    return wrap


def _no_subcommand(p) -> int:
    p.print_help()
    return 2




def cmd_init(args) -> int:
    from pathlib import Path

    from attlens.errors import UsageError
    from attlens.fsutil import write_atomic
    from attlens.sweep.spec import example

    path = Path(args.path or ("sweep.yaml" if args.format == "yaml" else "sweep.toml"))
    fmt = args.format or ("yaml" if path.suffix.lower() in (".yaml", ".yml") else "toml")
    if path.suffix.lower() not in ((".yaml", ".yml") if fmt == "yaml" else (".toml",)):
        raise UsageError(f"{path}: a {fmt} sweep file needs the extension {'.yaml' if fmt == 'yaml' else '.toml'}")
    if path.exists() and not args.force:
        raise UsageError(f"{path} exists", hint="pass --force to overwrite it, or give another name")
    write_atomic(path, example(fmt))
    if args.json:
        from attlens.jsondoc import header

        emit_json({**header("attlens.sweep_init"), "path": str(path), "format": fmt})
    else:
        print(f"wrote {path}: edit the jobs, then: attlens sweep run {path} --out sweep-out")
    return 0


def _stop_on_sigterm() -> None:
    """SIGTERM / SIGHUP end a sweep like Ctrl-C: every job's tree is ended and recorded."""
    import signal

    def handler(signum, frame):
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def cmd_run(args) -> int:
    import sys

    from attlens.errors import EXIT_OK, EngineUnavailable, SweepIncomplete, UsageError
    from attlens.sweep.progress import Progress
    from attlens.sweep.run import open_session
    from attlens.sweep.spec import load_sweep
    from attlens.sweep.status import status_doc

    for name, v in (("--timeout", args.timeout), ("--backoff", args.backoff)):
        if v is not None and not (v >= 0 if name == "--backoff" else v > 0):
            raise UsageError(f"{name} must be {'≥ 0' if name == '--backoff' else '> 0'}, got {v:g}")
    if args.retries is not None and args.retries < 0:
        raise UsageError(f"--retries must be ≥ 0, got {args.retries}")
    if args.max_parallel is not None and args.max_parallel < 1:
        raise UsageError(f"--max-parallel must be ≥ 1, got {args.max_parallel}")
    if args.analysis_workers is not None and args.analysis_workers < 1:
        raise UsageError(f"--analysis-workers must be ≥ 1, got {args.analysis_workers}")
    if args.engine != "slurm" and (args.partition or args.max_parallel or args.wait or args.sbatch_arg):
        raise UsageError("--partition, --max-parallel, --sbatch-arg and --wait are options of --engine slurm")
    if args.engine != "ray" and args.address:
        raise UsageError("--address is an option of --engine ray")
    sweep = load_sweep(args.sweep)
    only = {x.strip() for x in args.only.split(",") if x.strip()} if args.only else None
    gpus = None
    if args.engine in ("local", "ray") and (args.engine == "local" or args.gpus or not args.address):
        from attlens.sweep.gpus import discover

        try:
            gpus, source = discover(args.gpus)
        except ValueError as exc:
            raise UsageError(f"--gpus: {exc}") from None
        if not gpus:
            raise EngineUnavailable(f"no GPU to run on: {source}", hint="pass --gpus 0,1,...")
    overrides = {"timeout": args.timeout, "retries": args.retries, "backoff": args.backoff}
    _stop_on_sigterm()
    s = open_session(args.out, sweep, args.engine, overrides, only)
    quiet = args.no_progress
    try:
        for note in s.notes:
            if not quiet:
                print(f"attlens sweep: {note}", file=sys.stderr)
        todo = s.todo(only)
        if args.engine == "slurm":
            from attlens.sweep.slurm import SlurmOptions, run_slurm

            opts = SlurmOptions(partition=args.partition, max_parallel=args.max_parallel, gres=args.gres, extra=list(args.sbatch_arg),
                                wait=args.wait)
            with Progress(len(todo), [], quiet=quiet) as progress:
                submitted = run_slurm(s, opts, progress, only)
            if not args.wait:
                doc = status_doc(s.manifest)
                doc["submitted"] = submitted
                _print_run(args, doc)
                return EXIT_OK
        else:
            slots = [f"GPU {g}" for g in gpus] if gpus and args.engine == "local" else []
            with Progress(len(todo), slots, quiet=quiet) as progress:
                if args.engine == "local":
                    from attlens.sweep.local import run_local

                    run_local(s, gpus, progress, only, args.analysis_workers)
                else:
                    from attlens.sweep.ray_engine import run_ray

                    run_ray(s, progress, only, address=args.address, gpus=gpus)
        doc = status_doc(s.manifest)
        _print_run(args, doc)
        failed = [j["job"] for j in doc["jobs"] if j["state"] == "failed" and (only is None or j["job"] in only)]
        if failed:
            e = SweepIncomplete(f"{len(failed)} job(s) failed: {', '.join(failed[:10])}{' …' if len(failed) > 10 else ''}",
                                hint=f"see attlens sweep status {args.out}; re-run the same command to retry them")
            from attlens.cli.common import print_error

            print_error(e, False)
            return e.exit_code
        return EXIT_OK
    finally:
        s.close()


def _print_run(args, doc) -> None:
    if args.json:
        emit_json(doc)
    else:
        from attlens.report.console import make_console
        from attlens.sweep.status import render_status

        render_status(doc, make_console(args.no_color))


def cmd_status(args) -> int:
    from attlens.sweep.manifest import Manifest
    from attlens.sweep.status import status_doc

    m = Manifest.open(args.dir)
    try:
        scheduler = None
        if m.slurm_arrays():
            from attlens.sweep.run import FolderLock
            from attlens.sweep.slurm import refresh

            # Fold the ended tasks in, unless a `sweep run` holds the folder (it does that itself).
            lock = FolderLock(m.root)
            owner = lock.acquire()
            try:
                scheduler = refresh(m, fold=owner)
            finally:
                lock.release()
        doc = status_doc(m, scheduler)
    finally:
        m.close()
    _print_run(args, doc)
    return 0


def cmd_report(args) -> int:
    from attlens.sweep.dashboard import report

    doc = report(args.path, args.output, rocprof_dir=args.rocprof_dir)
    if args.json:
        emit_json(doc)
    else:
        print(f"wrote {doc['dashboard']} ({len(doc['rows'])} row(s)) and {doc['findings_md']}")
    return 0
