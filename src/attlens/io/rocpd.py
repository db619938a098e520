"""rocpd SQLite databases (``<prefix>_results.db``), rocprofv3-interfaces.md §4.

Every table of a rocpd database carries the database's UUID as a suffix
(``rocpd_kernel_dispatch_00000450_565d_765d_bc41_19a2073d19ee``) and an alias
view without it (``rocpd_kernel_dispatch``); rows carry the UUID in ``guid``.
This reader only queries the un-suffixed names:

- One file is opened read-only (``file:…?mode=ro`` URI; ``immutable=1`` as a
  fallback for read-only media). If an alias view is missing, a TEMP view of
  that name is made over the suffixed table(s) found in ``sqlite_master``.
- Several files are ATTACHed (read-only) to an in-memory connection as
  ``db0``, ``db1``, … and each base name becomes a TEMP ``UNION ALL`` view over
  the columns every file has — what ``rocpd.connect([...])`` does. Ids collide
  between files, so every join also matches ``guid``. Beyond SQLite's ATTACH
  limit the files are read in groups and the rows concatenated.

Dispatches are read from ``rocpd_kernel_dispatch`` LEFT JOINed with
``rocpd_info_kernel_symbol`` and ``rocpd_info_agent`` (the ``kernels`` view
uses INNER JOINs and silently drops a dispatch whose event, region string or
thread row is missing; it is only the fallback when the base views are
absent). Rows come back in the dict shape of
:func:`attlens.io.rocprof_csv.read_kernel_trace`; ``lds_bytes`` is the
dispatch ``group_segment_size`` (not rounded to 512 B as in kernel_trace.csv).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from attlens.errors import CorruptCapture, InputNotFound, NotACapture

SUFFIXED = re.compile(r"^(rocpd_[a-z_]+?)_([0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12})$", re.I)

# Base tables this reader uses (all exist in schema 3, ROCm 7.0+).
BASES = (
    "rocpd_metadata",
    "rocpd_string",
    "rocpd_info_process",
    "rocpd_info_agent",
    "rocpd_info_kernel_symbol",
    "rocpd_kernel_dispatch",
)

_DEFAULT_ATTACH_LIMIT = 10


@dataclass
class RocpdFile:
    path: Path
    guid: str | None
    schema_version: str | None


@dataclass
class RocpdData:
    files: list[RocpdFile]
    dispatches: list[dict]
    agents: list[dict]
    notes: list[str] = field(default_factory=list)


def _uri(path: Path, immutable: bool = False) -> str:
    return path.resolve().as_uri() + ("?immutable=1" if immutable else "?mode=ro")


def _check(path) -> Path:
    path = Path(path)
    if not path.exists():
        raise InputNotFound(f"{path}: file not found")
    if not path.is_file():
        raise InputNotFound(f"{path}: not a file")
    from attlens.io.confine import RefusedPath, read_head, resolve_inside

    try:
        # a regular file inside its own folder (a FIFO would block SQLite too)
        magic = read_head(resolve_inside(path.parent, path.name), 16)
    except RefusedPath as exc:
        raise CorruptCapture(f"{path.name}: not read ({exc.reason})") from None
    except OSError as exc:
        raise CorruptCapture(f"{path}: cannot read ({exc.strerror or exc})") from None
    if magic != b"SQLite format 3\x00":
        raise CorruptCapture(f"{path.name}: not an SQLite database (expected a rocprofv3 results.db)")
    return path


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class _Db:
    """A connection on which every name of BASES resolves, unsuffixed."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        self.single = len(paths) == 1
        self.conn = self._connect()
        self.schemas = ["main"] if self.single else [f"db{i}" for i in range(len(paths))]
        self.available: set[str] = set()
        try:
            self._views()
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise CorruptCapture(f"{self._names()}: unreadable rocpd database ({exc})") from None
        except BaseException:
            self.conn.close()
            raise

    def _names(self) -> str:
        return ", ".join(p.name for p in self.paths)

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.single:
                try:
                    conn = sqlite3.connect(_uri(self.paths[0]), uri=True)
                    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                except sqlite3.OperationalError:
                    conn = sqlite3.connect(_uri(self.paths[0], immutable=True), uri=True)
                    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            conn = sqlite3.connect("file::memory:", uri=True)
            for i, p in enumerate(self.paths):
                try:
                    conn.execute(f"ATTACH DATABASE ? AS db{i}", (_uri(p),))
                    conn.execute(f"SELECT count(*) FROM db{i}.sqlite_master").fetchone()
                except sqlite3.OperationalError:
                    try:
                        conn.execute(f"DETACH DATABASE db{i}")
                    except sqlite3.OperationalError:
                        pass
                    conn.execute(f"ATTACH DATABASE ? AS db{i}", (_uri(p, immutable=True),))
                    conn.execute(f"SELECT count(*) FROM db{i}.sqlite_master").fetchone()
            return conn
        except sqlite3.DatabaseError as exc:
            raise CorruptCapture(f"{self._names()}: cannot open as SQLite ({exc})") from None

    def _objects(self, schema: str) -> dict[str, list[str]]:
        """base name → the names to read in ``schema``: the alias view if it
        exists, else every suffixed table of that base."""
        rows = self.conn.execute(f"SELECT name, type FROM {schema}.sqlite_master WHERE type IN ('table', 'view')").fetchall()
        names = {r[0] for r in rows}
        found: dict[str, list[str]] = {}
        for n in sorted(names):
            m = SUFFIXED.match(n)
            if m:
                found.setdefault(m.group(1).lower(), []).append(n)
        out = {}
        for base in BASES:
            if base in names:
                out[base] = [base]
            elif base in found:
                out[base] = found[base]
        # analysis views (fallback only)
        if "kernels" in names:
            out["kernels"] = ["kernels"]
        return out

    def columns(self, schema: str, name: str) -> list[str]:
        return [r[1] for r in self.conn.execute(f"PRAGMA {schema}.table_info({_q(name)})").fetchall()]

    def _views(self) -> None:
        per_schema = [self._objects(s) for s in self.schemas]
        for i, objs in enumerate(per_schema):
            if "rocpd_kernel_dispatch" not in objs and "kernels" not in objs:
                from attlens.errors import UnsupportedLayout
                from attlens.io.legacy import is_v1_tables, legacy_message

                names = [r[0] for r in self.conn.execute(f"SELECT name FROM {self.schemas[i]}.sqlite_master").fetchall()]
                if is_v1_tables(names):
                    raise UnsupportedLayout(legacy_message(self.paths[i], "results.db (a KERN table)"))
                raise NotACapture(f"{self.paths[i].name}: not a rocpd database (no rocpd_kernel_dispatch table)")
        for base in BASES + ("kernels",):
            if not all(base in objs for objs in per_schema):
                continue
            if self.single and per_schema[0][base] == [base]:
                self.available.add(base)
                continue
            parts = []
            common: list[str] | None = None
            for schema, objs in zip(self.schemas, per_schema):
                for name in objs[base]:
                    cols = self.columns(schema, name)
                    common = cols if common is None else [c for c in common if c in cols]
            if not common:
                continue
            sel = ", ".join(_q(c) for c in common)
            for schema, objs in zip(self.schemas, per_schema):
                for name in objs[base]:
                    parts.append(f"SELECT {sel} FROM {schema}.{_q(name)}")
            self.conn.execute(f"CREATE TEMP VIEW {_q(base)} AS " + " UNION ALL ".join(parts))
            self.available.add(base)

    def cols(self, name: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({_q(name)})").fetchall()}

    def close(self) -> None:
        self.conn.close()


def _sel(alias: str, have: set[str], col: str, as_: str | None = None) -> str:
    out = as_ or col
    return f"{alias}.{_q(col)} AS {_q(out)}" if col in have else f"NULL AS {_q(out)}"


def _int(v) -> int | None:
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        try:
            return int(float(v))
        except (TypeError, ValueError):
            return None


def _xyz(r: dict, prefix: str) -> tuple[int, int, int]:
    return tuple(_int(r.get(f"{prefix}_{a}")) or 1 for a in "xyz")  # type: ignore[return-value]


# A dispatch table without these is not rocpd's (a table of that name with a
# column ``a`` gave one kernel named ""): refused, not read as empty rows.
DISPATCH_COLUMNS = ("dispatch_id", "kernel_id", "start", "end")


def _dispatches(db: _Db) -> list[dict]:
    if "rocpd_kernel_dispatch" in db.available:
        k = db.cols("rocpd_kernel_dispatch")
        missing = [c for c in DISPATCH_COLUMNS if c not in k]
        if missing:
            raise CorruptCapture(f"{db._names()}: rocpd_kernel_dispatch has no {', '.join(missing)} column(s): not a rocpd kernel dispatch table")
        s = db.cols("rocpd_info_kernel_symbol") if "rocpd_info_kernel_symbol" in db.available else set()
        a = db.cols("rocpd_info_agent") if "rocpd_info_agent" in db.available else set()
        fields = [
            _sel("K", k, "guid"), _sel("K", k, "pid"), _sel("K", k, "tid"), _sel("K", k, "dispatch_id"),
            _sel("K", k, "kernel_id"), _sel("K", k, "agent_id"), _sel("K", k, "queue_id"), _sel("K", k, "stream_id"),
            _sel("K", k, "start"), _sel("K", k, "end"), _sel("K", k, "private_segment_size"), _sel("K", k, "group_segment_size"),
            *(_sel("K", k, f"workgroup_size_{x}") for x in "xyz"), *(_sel("K", k, f"grid_size_{x}") for x in "xyz"),
            _sel("S", s, "display_name"), _sel("S", s, "kernel_name", "mangled_name"), _sel("S", s, "arch_vgpr_count"),
            _sel("S", s, "accum_vgpr_count"), _sel("S", s, "sgpr_count"),
            _sel("A", a, "logical_index"), _sel("A", a, "absolute_index"), _sel("A", a, "type_index"), _sel("A", a, "type", "agent_type"),
        ]
        joins = []
        if s:
            cond = "S.id = K.kernel_id" + (" AND S.guid = K.guid" if "guid" in s and "guid" in k else "")
            joins.append(f"LEFT JOIN rocpd_info_kernel_symbol S ON {cond}")
        if a:
            cond = "A.id = K.agent_id" + (" AND A.guid = K.guid" if "guid" in a and "guid" in k else "")
            joins.append(f"LEFT JOIN rocpd_info_agent A ON {cond}")
        sql = f"SELECT {', '.join(fields)} FROM rocpd_kernel_dispatch K {' '.join(joins)}"
        cur = db.conn.execute(sql)
        names = [d[0] for d in cur.description]
        out = []
        for t in cur:
            r = dict(zip(names, t))
            kind = r["agent_type"] if r["agent_type"] in ("GPU", "CPU") else None
            out.append(
                {
                    "dispatch_id": _int(r["dispatch_id"]),
                    "kernel_id": _int(r["kernel_id"]),
                    "kernel_name": r["display_name"] or r["mangled_name"] or "",
                    "agent": _int(r["logical_index"]) if r["logical_index"] is not None else _int(r["agent_id"]),
                    "agent_kind": "Agent",
                    "agent_type": kind,
                    "agent_id": _int(r["agent_id"]),
                    "start_ns": _int(r["start"]),
                    "end_ns": _int(r["end"]),
                    "lds_bytes": _int(r["group_segment_size"]),
                    "scratch_bytes": _int(r["private_segment_size"]),
                    "vgpr_count": _int(r["arch_vgpr_count"]),
                    "agpr_count": _int(r["accum_vgpr_count"]),
                    "sgpr_count": _int(r["sgpr_count"]),
                    "workgroup": _xyz(r, "workgroup_size"),
                    "grid": _xyz(r, "grid_size"),
                    "pid": _int(r["pid"]),
                    "tid": _int(r["tid"]),
                    "queue_id": _int(r["queue_id"]),
                    "stream_id": _int(r["stream_id"]),
                    "guid": r["guid"],
                }
            )
        return out
    # Fallback: the ``kernels`` analysis view (INNER JOINs; may drop dispatches).
    c = db.cols("kernels")
    fields = [_sel("K", c, x) for x in (
        "guid", "pid", "tid", "dispatch_id", "kernel_id", "name", "agent_log_index", "agent_abs_index", "agent_type",
        "queue_id", "stream_id", "start", "end", "lds_size", "scratch_size", "vgpr_count", "accum_vgpr_count", "sgpr_count",
        "grid_x", "grid_y", "grid_z", "workgroup_x", "workgroup_y", "workgroup_z",
    )]
    cur = db.conn.execute(f"SELECT {', '.join(fields)} FROM kernels K")
    names = [d[0] for d in cur.description]
    out = []
    for t in cur:
        r = dict(zip(names, t))
        out.append(
            {
                "dispatch_id": _int(r["dispatch_id"]),
                "kernel_id": _int(r["kernel_id"]),
                "kernel_name": r["name"] or "",
                "agent": _int(r["agent_log_index"]),
                "agent_kind": "Agent",
                "agent_type": r["agent_type"] if r["agent_type"] in ("GPU", "CPU") else None,
                "agent_id": _int(r["agent_abs_index"]),
                "start_ns": _int(r["start"]),
                "end_ns": _int(r["end"]),
                "lds_bytes": _int(r["lds_size"]),
                "scratch_bytes": _int(r["scratch_size"]),
                "vgpr_count": _int(r["vgpr_count"]),
                "agpr_count": _int(r["accum_vgpr_count"]),
                "sgpr_count": _int(r["sgpr_count"]),
                "workgroup": _xyz({"w_x": r["workgroup_x"], "w_y": r["workgroup_y"], "w_z": r["workgroup_z"]}, "w"),
                "grid": _xyz({"g_x": r["grid_x"], "g_y": r["grid_y"], "g_z": r["grid_z"]}, "g"),
                "pid": _int(r["pid"]),
                "tid": _int(r["tid"]),
                "queue_id": _int(r["queue_id"]),
                "stream_id": _int(r["stream_id"]),
                "guid": r["guid"],
            }
        )
    return out


def _agents(db: _Db) -> list[dict]:
    if "rocpd_info_agent" not in db.available:
        return []
    c = db.cols("rocpd_info_agent")
    fields = [_sel("A", c, x) for x in (
        "guid", "pid", "id", "type", "absolute_index", "logical_index", "type_index", "name", "product_name", "model_name", "extdata",
    )]
    cur = db.conn.execute(f"SELECT {', '.join(fields)} FROM rocpd_info_agent A")
    names = [d[0] for d in cur.description]
    out = []
    for t in cur:
        r = dict(zip(names, t))
        ext = {}
        if isinstance(r["extdata"], (str, bytes)):
            try:
                ext = json.loads(r["extdata"])
            except ValueError:
                ext = {}
        if not isinstance(ext, dict):
            ext = {}
        out.append(
            {
                "guid": r["guid"],
                "pid": _int(r["pid"]),
                "id": _int(r["id"]),
                "node_id": _int(r["absolute_index"]),
                "logical_node_id": _int(r["logical_index"]),
                "type_index": _int(r["type_index"]),
                "type": (r["type"] or "").upper(),
                "name": r["name"] or "",
                "product_name": r["product_name"] or r["model_name"] or "",
                "gfx_target_version": _int(ext.get("gfx_target_version")),
                "cu_count": _int(ext.get("cu_count")),
                "simd_per_cu": _int(ext.get("simd_per_cu")),
                "max_waves_per_simd": _int(ext.get("max_waves_per_simd")),
                "wave_front_size": _int(ext.get("wave_front_size")),
                "lds_size_kb": _int(ext.get("lds_size_in_kb")),
                "num_xcc": _int(ext.get("num_xcc")),
                "num_shader_banks": _int(ext.get("num_shader_banks")),
                "max_engine_clk_mhz": _int(ext.get("max_engine_clk_fcompute")),
                "handle": _int((ext.get("id") or {}).get("handle")) if isinstance(ext.get("id"), dict) else None,
            }
        )
    return out


def _files(db: _Db) -> list[RocpdFile]:
    out = []
    for schema, path in zip(db.schemas, db.paths):
        meta: dict[str, str] = {}
        objs = db._objects(schema)
        for name in objs.get("rocpd_metadata", []):
            try:
                for tag, value in db.conn.execute(f"SELECT tag, value FROM {schema}.{_q(name)}"):
                    meta.setdefault(str(tag), str(value))
            except sqlite3.DatabaseError:
                pass
        guid = meta.get("guid") or meta.get("uuid")
        if guid is None:
            for name in objs.get("rocpd_kernel_dispatch", []):
                m = SUFFIXED.match(name)
                if m:
                    guid = m.group(2).replace("_", "-")
        out.append(RocpdFile(path=path, guid=guid, schema_version=meta.get("schema_version")))
    return out


def _attach_limit() -> int:
    try:
        conn = sqlite3.connect(":memory:")
        try:
            return max(1, conn.getlimit(sqlite3.SQLITE_LIMIT_ATTACHED))  # Python ≥ 3.11
        finally:
            conn.close()
    except AttributeError:
        return _DEFAULT_ATTACH_LIMIT


def _read_group(paths: list[Path]) -> RocpdData:
    db = _Db(paths)
    try:
        files = _files(db)
        dispatches = _dispatches(db)
        agents = _agents(db)
    except sqlite3.DatabaseError as exc:
        raise CorruptCapture(f"{db._names()}: unreadable rocpd database ({exc})") from None
    finally:
        db.close()
    order = {f.guid: i for i, f in enumerate(files)}
    dispatches.sort(key=lambda r: (order.get(r["guid"], len(order)), r["dispatch_id"] if r["dispatch_id"] is not None else -1))
    return RocpdData(files=files, dispatches=dispatches, agents=agents)


def read_rocpd(path_or_paths) -> RocpdData:
    """Dispatches and agents of one or several ``results.db`` files (see module doc)."""
    paths = [path_or_paths] if isinstance(path_or_paths, (str, Path)) else list(path_or_paths)
    if not paths:
        raise InputNotFound("no results.db given")
    paths = [_check(p) for p in paths]
    seen, unique = set(), []
    for p in paths:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    limit = _attach_limit()
    if len(unique) <= 1:
        return _read_group(unique)
    data = RocpdData(files=[], dispatches=[], agents=[])
    for i in range(0, len(unique), limit):
        part = _read_group(unique[i : i + limit])
        data.files += part.files
        data.dispatches += part.dispatches
        data.agents += part.agents
    guids = [f.guid for f in data.files if f.guid]
    if len(set(guids)) != len(guids):
        data.notes.append("several databases share one guid: their ids cannot be told apart")
    return data


def read_rocpd_dispatches(path_or_paths) -> list[dict]:
    """Kernel dispatch rows (read_kernel_trace shape, plus pid/tid/guid/queue_id/stream_id)."""
    return read_rocpd(path_or_paths).dispatches


def read_rocpd_agents(path_or_paths) -> list[dict]:
    """Agents (read_agent_info keys, plus guid/pid/id/handle)."""
    return read_rocpd(path_or_paths).agents
