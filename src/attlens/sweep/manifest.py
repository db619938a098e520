"""The sweep's state: one SQLite file, ``DIR/manifest.sqlite`` (docs/sweep.md).

Only the process that drives the sweep writes it (``sweep run``, and ``sweep
status`` for a Slurm sweep, which folds in what the array tasks wrote in
their job folders); Slurm tasks and Ray workers never open it, so it can live
on a shared file system without SQLite's locking across nodes. Every change is
one transaction: a job is recorded ``done`` together with its attempt, its
paths and its headline figures, after its folder is complete, or not at all.

Paths are stored relative to DIR, so the folder can be moved.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import orjson

from attlens import __version__
from attlens.errors import InputNotFound, SweepDamaged, UsageError

FILE = "manifest.sqlite"
SCHEMA_VERSION = 1
JOB_STATES = ("pending", "running", "done", "failed")
# running: profiling; analyzing: profiled, the analysis/report is being made;
# retry: failed in a way that looks transient, another attempt follows;
# interrupted: the sweep was stopped (Ctrl-C, SIGTERM) and ended the job;
# lost: the sweep (or the node, or the Slurm task) died and left no record.
ATTEMPT_OUTCOMES = ("running", "analyzing", "done", "retry", "failed", "interrupted", "lost")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
    job_id      TEXT PRIMARY KEY,
    position    INTEGER NOT NULL,
    spec        TEXT NOT NULL,
    spec_hash   TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN {JOB_STATES}),
    attempts    INTEGER NOT NULL DEFAULT 0,
    engine      TEXT,
    host        TEXT,
    gpu         TEXT,
    started_at  REAL,
    ended_at    REAL,
    seconds     REAL,
    exit_code   INTEGER,
    error       TEXT,
    attempt_dir TEXT,
    capture     TEXT,
    report      TEXT,
    profile_json TEXT,
    summary     TEXT,
    slurm_job   TEXT,
    updated_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    job_id     TEXT NOT NULL REFERENCES jobs(job_id),
    attempt    INTEGER NOT NULL,
    engine     TEXT NOT NULL,
    host       TEXT,
    gpu        TEXT,
    pid        INTEGER,
    pid_start  TEXT,
    started_at REAL NOT NULL,
    ended_at   REAL,
    seconds    REAL,
    outcome    TEXT NOT NULL CHECK (outcome IN {ATTEMPT_OUTCOMES}),
    exit_code  INTEGER,
    error      TEXT,
    PRIMARY KEY (job_id, attempt)
);
CREATE TABLE IF NOT EXISTS slurm_arrays (
    array_id     TEXT PRIMARY KEY,
    submitted_at REAL NOT NULL,
    script       TEXT NOT NULL,
    tasks        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS slurm_tasks (
    task     TEXT PRIMARY KEY,
    array_id TEXT NOT NULL REFERENCES slurm_arrays(array_id),
    job_id   TEXT NOT NULL REFERENCES jobs(job_id),
    folded   INTEGER NOT NULL DEFAULT 0
);
"""

_JSON_COLUMNS = ("spec", "summary")
_COLUMNS: dict | None = None


def columns() -> dict[str, dict[str, tuple[str, bool]]]:
    """Every table and column of the manifest this attlens writes (from
    ``_SCHEMA`` itself): table -> column -> (declared type, NOT NULL). A
    manifest missing one is damaged; a value of another type is too."""
    global _COLUMNS
    if _COLUMNS is None:
        conn = sqlite3.connect(":memory:")
        try:
            conn.executescript(_SCHEMA)
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            _COLUMNS = {t: {r[1]: (r[2].upper(), bool(r[3]) or bool(r[5])) for r in conn.execute(f"PRAGMA table_info({t})")} for t in tables}
        finally:
            conn.close()
    return _COLUMNS


_PY_TYPES = {"INTEGER": (int,), "REAL": (int, float), "TEXT": (str,)}
_CHOICES = {("jobs", "state"): JOB_STATES, ("attempts", "outcome"): ATTEMPT_OUTCOMES}


def repair_hint(p: Path) -> str:
    """How to get a sweep going again from a damaged manifest: the finished
    jobs' results are in their folders, and a new manifest takes them from
    there (Manifest.open + run.rebuild), so nothing done is profiled again."""
    return (f"move it aside (mv {p} {p}.damaged) and run the same attlens sweep run again: "
            f"jobs whose result is in {p.parent / 'jobs'} are taken from there, not run again")


def damaged(p: Path, why: str) -> SweepDamaged:
    return SweepDamaged(f"{p}: the sweep manifest is damaged ({why})", hint=repair_hint(p))


def _row(cur, row, where: Path | None = None, table: str | None = None) -> dict:
    """One row as a dict, every value of the type its column declares (SQLite
    keeps whatever it is given: an edited manifest may hold text in an integer
    column) and the JSON columns parsed and checked."""
    d = {c[0]: v for c, v in zip(cur.description, row)}
    decl = columns().get(table or "", {})
    for k, v in d.items():
        if k not in decl:
            continue
        kind, notnull = decl[k]
        ok = (v is None and not notnull) or (isinstance(v, _PY_TYPES.get(kind, (object,))) and not isinstance(v, bool))
        if ok and (table, k) in _CHOICES and v not in _CHOICES[(table, k)]:
            ok = False
        if not ok:
            name = d.get("job_id") if isinstance(d.get("job_id"), str) else d.get("array_id")
            raise damaged(where or Path(FILE), f"{table} {str(name)[:100]!r}: {k} holds {type(v).__name__} {str(v)[:40]!r}, not what attlens wrote")
    for k in _JSON_COLUMNS:
        if k in d and d[k] is not None:
            try:
                d[k] = json.loads(d[k])
                orjson.dumps(d[k])  # what the status and the dashboard print must be printable (not 1,000 levels deep)
            except (TypeError, ValueError, RecursionError):
                d[k] = _BAD
            if d[k] is _BAD or not (_spec_ok(d[k]) if k == "spec" else _summary_ok(d[k])):
                raise damaged(where or Path(FILE), f"job {str(d.get('job_id'))[:100]!r}: its {k} is not the JSON object attlens wrote")
    return d


def _text_or_none(x) -> bool:
    return x is None or isinstance(x, str)


def _number_or_none(x) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))


def _finding_ok(f) -> bool:
    return isinstance(f, dict) and all(isinstance(f.get(k), str) for k in ("rule", "title", "severity")) and _number_or_none(f.get("share"))


def _spec_ok(spec) -> bool:
    """A job spec as attlens stores it, in the parts the status and the dashboard read."""
    tags = spec.get("tags", []) if isinstance(spec, dict) else None
    return (isinstance(spec, dict) and _text_or_none(spec.get("kernel")) and _text_or_none(spec.get("shape"))
            and isinstance(tags, list) and all(isinstance(t, str) for t in tags))


def _summary_ok(s) -> bool:
    """A dashboard row (attlens.sweep.summary) in the parts status, report and
    FINDINGS.md read; the rest is data the page shows as it is."""
    if not isinstance(s, dict):
        return False
    findings, top, health = s.get("findings", []), s.get("top_finding"), s.get("health", {})
    return (_text_or_none(s.get("kernel")) and _text_or_none(s.get("shape")) and _number_or_none(s.get("bandwidth_fraction"))
            and isinstance(findings, list) and all(_finding_ok(f) for f in findings) and (top is None or _finding_ok(top))
            and isinstance(health, dict) and _text_or_none(health.get("status"))
            and isinstance(health.get("issues", []), list) and all(isinstance(i, str) for i in health.get("issues", []))
            and isinstance(s.get("att_available", False), bool))


_BAD = object()


class Manifest:
    def __init__(self, conn: sqlite3.Connection, root: Path):
        self.conn = conn
        self.root = root
        self.created = False  # made by this open (a new sweep, or one whose manifest was moved aside)

    # ------------------------------------------------------------ open/close
    @classmethod
    def path(cls, root: Path) -> Path:
        return Path(root) / FILE

    @classmethod
    def exists(cls, root: Path) -> bool:
        return cls.path(root).is_file()

    @classmethod
    def open(cls, root: Path, create: bool = False) -> Manifest:
        """The manifest of ``root`` (``create``: a new one when there is none).
        One that exists is checked before anything is written to it: empty,
        truncated, not SQLite, a table or column missing, or not a regular file
        is :class:`~attlens.errors.SweepDamaged` with a repair hint — never
        replaced by a fresh manifest, which would run every finished job again."""
        root = Path(root)
        p = cls.path(root)
        exists = os.path.lexists(p)
        if exists and not p.is_file():
            raise damaged(p, "not a regular file")
        if not exists:
            if not create:
                raise InputNotFound(f"{root}: not a sweep folder (no {FILE})",
                                    hint="give the --out folder of attlens sweep run; for a folder of captures use attlens sweep report")
            root.mkdir(parents=True, exist_ok=True)
        elif p.stat().st_size == 0:
            raise damaged(p, "an empty file")
        conn = None
        try:
            conn = sqlite3.connect(str(p), timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA busy_timeout = 30000")
            m = cls(conn, root)
            if exists:
                m._check(p)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")  # a committed "done" survives a power cut
            conn.execute("PRAGMA foreign_keys = ON")
            if not exists:
                conn.executescript(_SCHEMA)
                m.set_meta(schema_version=str(SCHEMA_VERSION), created_at=str(time.time()), attlens_version=__version__)
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            raise damaged(p, f"not a usable SQLite manifest: {exc}") from None
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        m.created = not exists
        return m

    def _check(self, p: Path) -> None:
        """An existing manifest is whole and attlens': its integrity, its
        tables and columns, its schema version."""
        ok = self.conn.execute("PRAGMA quick_check").fetchone()
        if not ok or ok[0] != "ok":
            raise damaged(p, f"SQLite says: {str(ok[0] if ok else 'no answer')[:200]}")
        for table, want in columns().items():
            cols = set(want)
            have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
            if not have:
                raise damaged(p, f"no {table} table")
            if not cols <= have:
                raise damaged(p, f"the {table} table lacks {', '.join(sorted(cols - have))}")
        version = self.meta("schema_version")
        if version is None or not version.isdigit():
            raise damaged(p, "no schema version: not an attlens sweep manifest")
        if int(version) > SCHEMA_VERSION:
            raise UsageError(f"{p}: manifest schema version {version} is newer than this attlens ({__version__}) reads",
                             hint="use the attlens that wrote it")

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------ meta
    def meta(self, key: str) -> str | None:
        try:
            r = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:
            return None
        return r[0] if r is not None and isinstance(r[0], str) else None  # a value attlens did not write: as absent

    def set_meta(self, **kv) -> None:
        with _txn(self.conn):
            for k, v in kv.items():
                self.conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (k, str(v)))

    # ------------------------------------------------------------ jobs
    def sync_jobs(self, jobs) -> dict:
        """Add the sweep file's jobs: new ones as pending; a known job whose
        spec hash changed is re-run (its old attempts stay on disk); labels and
        run policy are updated in place. Returns the names per change."""
        now = time.time()
        added, changed = [], []
        with _txn(self.conn):
            base = self.conn.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM jobs").fetchone()[0]
            for i, job in enumerate(jobs):
                spec = json.dumps(job.to_dict(), sort_keys=True)
                r = self.conn.execute("SELECT spec_hash, state FROM jobs WHERE job_id = ?", (job.name,)).fetchone()
                if r is None:
                    self.conn.execute("INSERT INTO jobs(job_id, position, spec, spec_hash, state, updated_at) VALUES (?, ?, ?, ?, 'pending', ?)",
                                      (job.name, base + i, spec, job.spec_hash, now))
                    added.append(job.name)
                elif r[0] != job.spec_hash:
                    self.conn.execute(
                        "UPDATE jobs SET spec = ?, spec_hash = ?, state = 'pending', exit_code = NULL, error = NULL, attempt_dir = NULL, "
                        "capture = NULL, report = NULL, profile_json = NULL, summary = NULL, slurm_job = NULL, updated_at = ? WHERE job_id = ?",
                        (spec, job.spec_hash, now, job.name))
                    changed.append(job.name)
                else:
                    self.conn.execute("UPDATE jobs SET spec = ? WHERE job_id = ?", (spec, job.name))
        return {"added": added, "changed": changed}

    def jobs(self) -> list[dict]:
        cur = self.conn.execute("SELECT * FROM jobs ORDER BY position")
        return [_row(cur, r, self.path(self.root), "jobs") for r in cur.fetchall()]

    def attempts(self, job_id: str | None = None) -> list[dict]:
        if job_id is None:
            cur = self.conn.execute("SELECT * FROM attempts ORDER BY job_id, attempt")
        else:
            cur = self.conn.execute("SELECT * FROM attempts WHERE job_id = ? ORDER BY attempt", (job_id,))
        return [_row(cur, r, self.path(self.root), "attempts") for r in cur.fetchall()]

    def counts(self) -> dict:
        out = {s: 0 for s in JOB_STATES}
        for state, n in self.conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state"):
            if state in out:  # another value is a damaged row, refused where the rows are read
                out[state] = n
        return out

    def set_state(self, job_ids, state: str, **fields) -> None:
        cols = "".join(f", {k} = ?" for k in fields)
        with _txn(self.conn):
            for j in job_ids:
                self.conn.execute(f"UPDATE jobs SET state = ?{cols}, updated_at = ? WHERE job_id = ?", (state, *fields.values(), time.time(), j))

    # ------------------------------------------------------------ attempts
    def begin_attempt(self, job_id: str, attempt: int, engine: str, host: str | None, gpu: str | None, started_at: float,
                      pid: int | None = None, pid_start: str | None = None) -> None:
        with _txn(self.conn):
            self.conn.execute(
                "INSERT INTO attempts(job_id, attempt, engine, host, gpu, pid, pid_start, started_at, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running') "
                "ON CONFLICT(job_id, attempt) DO UPDATE SET engine = excluded.engine, host = excluded.host, gpu = excluded.gpu, pid = excluded.pid, "
                "pid_start = excluded.pid_start, started_at = excluded.started_at, outcome = 'running'",
                (job_id, attempt, engine, host, gpu, pid, pid_start, started_at))
            self._count_attempts(job_id)
            self.conn.execute("UPDATE jobs SET state = 'running', engine = ?, host = ?, gpu = ?, started_at = ?, updated_at = ? WHERE job_id = ?",
                              (engine, host, gpu, started_at, time.time(), job_id))

    def set_attempt_process(self, job_id: str, attempt: int, pid: int, pid_start: str | None) -> None:
        """The process now working for the attempt (its analysis step), so a
        later run can end it if this sweep dies."""
        with _txn(self.conn):
            self.conn.execute("UPDATE attempts SET pid = ?, pid_start = ? WHERE job_id = ? AND attempt = ?", (pid, pid_start, job_id, attempt))

    def _count_attempts(self, job_id: str) -> None:
        self.conn.execute("UPDATE jobs SET attempts = (SELECT COUNT(*) FROM attempts WHERE job_id = ?) WHERE job_id = ?", (job_id, job_id))

    def _upsert_attempt(self, job_id: str, attempt: int, rec: dict) -> None:
        cols = ("engine", "host", "gpu", "started_at", "ended_at", "seconds", "outcome", "exit_code", "error")
        vals = [rec.get(c) for c in cols]
        self.conn.execute(
            f"INSERT INTO attempts(job_id, attempt, {', '.join(cols)}) VALUES (?, ?, {', '.join('?' * len(cols))}) "
            f"ON CONFLICT(job_id, attempt) DO UPDATE SET {', '.join(f'{c} = COALESCE(excluded.{c}, {c})' for c in cols)}",
            (job_id, attempt, *vals))
        self._count_attempts(job_id)

    def end_attempt(self, job_id: str, attempt: int, rec: dict, job_state: str | None = None) -> None:
        """Record how an attempt ended (``rec``: the attempt record of
        :mod:`attlens.sweep.job`) and move the job to ``job_state``
        (``pending`` before a retry, ``failed``, or unchanged while analyzing)."""
        with _txn(self.conn):
            self._upsert_attempt(job_id, attempt, rec)
            if job_state is not None:
                self.conn.execute(
                    "UPDATE jobs SET state = ?, exit_code = ?, error = ?, ended_at = ?, seconds = ?, attempt_dir = ?, gpu = COALESCE(?, gpu), "
                    "host = COALESCE(?, host), engine = COALESCE(?, engine), updated_at = ? WHERE job_id = ?",
                    (job_state, rec.get("exit_code"), rec.get("error"), rec.get("ended_at"), rec.get("seconds"), rec.get("attempt_dir"),
                     rec.get("gpu"), rec.get("host"), rec.get("engine"), time.time(), job_id))

    def record_done(self, job_id: str, attempt: int, rec: dict, result: dict) -> None:
        """The job's folder is complete (result.json written): record the
        attempt, the job's paths and its headline figures in one transaction."""
        rec = {**rec, "outcome": "done"}
        with _txn(self.conn):
            self._upsert_attempt(job_id, attempt, rec)
            self.conn.execute(
                "UPDATE jobs SET state = 'done', exit_code = ?, error = NULL, started_at = COALESCE(?, started_at), ended_at = ?, seconds = ?, "
                "attempt_dir = ?, capture = ?, report = ?, profile_json = ?, summary = ?, gpu = COALESCE(?, gpu), host = COALESCE(?, host), "
                "engine = COALESCE(?, engine), updated_at = ? WHERE job_id = ?",
                (rec.get("exit_code"), rec.get("started_at"), rec.get("ended_at"), rec.get("seconds"), result["attempt_dir"], result.get("capture"),
                 result.get("report"), result.get("profile_json"), json.dumps(result.get("summary"), sort_keys=True), rec.get("gpu"),
                 rec.get("host"), rec.get("engine"), time.time(), job_id))

    def running_attempts(self) -> list[dict]:
        cur = self.conn.execute("SELECT * FROM attempts WHERE outcome IN ('running', 'analyzing') ORDER BY job_id, attempt")
        return [_row(cur, r, self.path(self.root), "attempts") for r in cur.fetchall()]

    # ------------------------------------------------------------ slurm
    def add_slurm_array(self, array_id: str, script: str, tasks: list[str]) -> None:
        with _txn(self.conn):
            self.conn.execute("INSERT OR REPLACE INTO slurm_arrays(array_id, submitted_at, script, tasks) VALUES (?, ?, ?, ?)",
                              (array_id, time.time(), script, json.dumps(tasks)))
            for i, job_id in enumerate(tasks):
                self.conn.execute("INSERT OR REPLACE INTO slurm_tasks(task, array_id, job_id, folded) VALUES (?, ?, ?, 0)",
                                  (f"{array_id}_{i}", array_id, job_id))
                self.conn.execute("UPDATE jobs SET slurm_job = ?, state = 'pending', engine = 'slurm', updated_at = ? WHERE job_id = ?",
                                  (f"{array_id}_{i}", time.time(), job_id))

    def open_slurm_tasks(self) -> list[tuple[str, str]]:
        """(task, job) of array tasks whose outcome is not folded in yet."""
        return list(self.conn.execute("SELECT task, job_id FROM slurm_tasks WHERE folded = 0 ORDER BY array_id, task"))

    def fold_slurm_task(self, task: str) -> None:
        with _txn(self.conn):
            self.conn.execute("UPDATE slurm_tasks SET folded = 1 WHERE task = ?", (task,))

    def slurm_arrays(self) -> list[dict]:
        cur = self.conn.execute("SELECT * FROM slurm_arrays ORDER BY submitted_at")
        out = []
        for r in cur.fetchall():
            d = _row(cur, r, self.path(self.root), "slurm_arrays")
            try:
                d["tasks"] = json.loads(d["tasks"])
            except (TypeError, ValueError):
                raise damaged(self.path(self.root), f"Slurm array {str(d.get('array_id'))[:50]}: its task list is not JSON") from None
            out.append(d)
        return out


class _txn:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error): one writer at a time, all or nothing."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        return False
