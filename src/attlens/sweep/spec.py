"""The sweep file: a list of jobs, each one ``attlens profile`` run.

TOML (``.toml``) or YAML (``.yaml``/``.yml``), checked against the JSON Schema
shipped beside this module (``sweep.schema.json``, docs/sweep.md). Every job
inherits ``defaults`` (its own value wins; ``env`` and ``profile`` are merged
key by key, ``tags`` joined). A job's identity is its ``name``; its *spec
hash* covers what changes the measurement (program, working dir, environment,
kernel, iteration, profile options) and not the labels (shape, tags) or the
run policy (timeout, retries, backoff).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

from attlens.errors import SweepFileError

MAX_FILE_BYTES = 16 * 1024 * 1024  # a sweep file is hand-written; anything bigger is a mistake
MAX_JOBS = 100_000  # checked on the parsed list before anything else (the schema says the same)
MAX_SECONDS = 30 * 24 * 3600.0  # a job's timeout, a retry's backoff: at most 30 days (the schema says the same)
MAX_MESSAGE = 300  # characters of a schema message: it may quote the offending value whole
DEFAULT_TIMEOUT = 3600.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF = 30.0

# profile option -> attlens profile flag (booleans: the flag is given when the value is False)
PROFILE_FLAGS = {
    "target_cu": "--target-cu",
    "se_mask": "--se-mask",
    "simd_select": "--simd-select",
    "buffer_size": "--buffer-size",
    "att_library_path": "--att-library-path",
    "rocprofv3": "--rocprofv3",
    "exclude": "--exclude",
    "noise_check": "--no-noise-check",
    "source_env": "--no-source-env",
    "pc_sampling_interval": "--pc-sampling-interval",
    "pc_sampling_host_trap_us": "--pc-sampling-host-trap-us",
}
# profile switches given when the value is True
PROFILE_SWITCHES = {"pc_sampling": "--pc-sampling"}


@dataclass
class Job:
    name: str
    argv: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    kernel: str | None = None
    iteration: int | None = None
    shape: str | None = None
    tags: list[str] = field(default_factory=list)
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    backoff: float = DEFAULT_BACKOFF
    profile: dict = field(default_factory=dict)

    def measured(self) -> dict:
        """What the spec hash covers."""
        return {"argv": self.argv, "cwd": self.cwd, "env": self.env, "kernel": self.kernel, "iteration": self.iteration,
                "profile": self.profile}

    @property
    def spec_hash(self) -> str:
        text = json.dumps(self.measured(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Job:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    def profile_args(self) -> list[str]:
        """The ``attlens profile`` options of this job (output folder and --json excluded)."""
        args: list[str] = []
        if self.kernel is not None:
            args += ["--kernel", self.kernel]
        if self.iteration is not None:
            args += ["--iteration", str(self.iteration)]
        for key, flag in PROFILE_FLAGS.items():
            if key not in self.profile:
                continue
            v = self.profile[key]
            if isinstance(v, bool):
                if not v:
                    args.append(flag)
            else:
                args += [flag, str(v)]
        for key, flag in PROFILE_SWITCHES.items():
            if self.profile.get(key) is True:
                args.append(flag)
        return args


@dataclass
class Sweep:
    path: Path
    jobs: list[Job]
    sha256: str


def schema() -> dict:
    return json.loads(resources.files("attlens.sweep").joinpath("sweep.schema.json").read_text(encoding="utf-8"))


def _parse(path: Path, raw: bytes):
    suffix = path.suffix.lower()
    if suffix == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib
        try:
            return tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SweepFileError(f"{path}: not valid TOML: {exc}") from None
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.load(raw.decode("utf-8"), Loader=_no_alias_loader())  # noqa: S506 (a SafeLoader without aliases)
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            first = str(exc).strip().splitlines()
            raise SweepFileError(f"{path}: not valid YAML: {' '.join(x.strip() for x in first[:3])}") from None
    raise SweepFileError(f"{path}: unknown sweep file type {suffix or '(no extension)'!r}",
                         hint="name it *.toml or *.yaml (attlens sweep init writes an example)")


_NO_ALIAS_LOADER = None


def _no_alias_loader():
    """PyYAML's SafeLoader refusing anchors' aliases (``*x``): an alias lets a
    few lines expand to billions of nodes (the "billion laughs"), and a sweep
    file has ``defaults`` for what anchors would share."""
    global _NO_ALIAS_LOADER
    if _NO_ALIAS_LOADER is None:
        import yaml

        class NoAliasLoader(yaml.SafeLoader):
            def compose_node(self, parent, index):
                if self.check_event(yaml.AliasEvent):
                    event = self.peek_event()
                    raise yaml.composer.ComposerError(None, None, f"an alias (*{event.anchor}) is not accepted in a sweep file; "
                                                      "write the value out, or put it in defaults", event.start_mark)
                return super().compose_node(parent, index)

        _NO_ALIAS_LOADER = NoAliasLoader
    return _NO_ALIAS_LOADER


def _finite(node, where: str = "") -> None:
    """Refuse nan and infinities anywhere in the document (TOML allows them,
    and a JSON Schema comparison lets nan through: a timeout of nan never
    ended a hung job, a backoff of nan never retried)."""
    import math

    stack = [(node, where)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            raise SweepFileError(f"{at or '(top level)'}: {v} is not a finite number",
                                 hint="see docs/sweep.md for the format (attlens sweep init writes an example)")
        if isinstance(v, dict):
            stack.extend((x, f"{at}.{k}" if at else str(k)) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{at}[{i}]") for i, x in enumerate(v))


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _where(err) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
    return path.lstrip(".") or "(top level)"


def validate(doc, path: Path | str = "sweep file") -> None:
    """Raise :class:`SweepFileError` with the first schema violation, in words
    (one line, at most a few hundred characters)."""
    import jsonschema

    if isinstance(doc, dict):
        jobs = doc.get("jobs")
        if isinstance(jobs, list) and len(jobs) > MAX_JOBS:  # before the schema walks every job
            raise SweepFileError(f"{path}: {len(jobs):,} jobs; a sweep file holds at most {MAX_JOBS:,}",
                                 hint="split it into several sweeps (each with its own --out folder)")
    _finite(doc)

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(list(e.absolute_path)), list(map(str, e.absolute_path))))
    if not errors:
        return
    # A failing subschema also makes its keys "unevaluated": report the real
    # violation first, unknown keys only when nothing else is wrong.
    real = [e for e in errors if e.validator != "unevaluatedProperties"]
    err = jsonschema.exceptions.best_match(real or errors)
    if err.validator == "not":
        msg = "give argv or command, not both"
    elif err.validator == "unevaluatedProperties":
        m = re.search(r"\((.*) (?:was|were) unexpected\)", err.message)
        msg = f"unknown key(s): {m.group(1) if m else err.message}"
    else:
        msg = err.message
    raise SweepFileError(f"{path}: {_short(_where(err))}: {_short(msg)}",
                         hint="see docs/sweep.md for the format (attlens sweep init writes an example)")


def _merge(defaults: dict, job: dict) -> dict:
    out = {k: v for k, v in defaults.items() if k not in ("env", "profile", "tags")}
    if "argv" in job or "command" in job:
        out.pop("argv", None)
        out.pop("command", None)
    out.update({k: v for k, v in job.items() if k not in ("env", "profile", "tags")})
    out["env"] = {**defaults.get("env", {}), **job.get("env", {})}
    out["profile"] = {**defaults.get("profile", {}), **job.get("profile", {})}
    out["tags"] = list(dict.fromkeys([*defaults.get("tags", []), *job.get("tags", [])]))
    return out


def normalize(doc: dict, base_dir: Path, where: str = "sweep file") -> list[Job]:
    """Jobs of a validated document, defaults applied, paths made absolute."""
    defaults = doc.get("defaults") or {}
    jobs: list[Job] = []
    seen: set[str] = set()
    for i, raw in enumerate(doc["jobs"]):
        j = _merge(defaults, raw)
        name = j["name"]
        if name in seen:
            raise SweepFileError(f"{where}: jobs[{i}]: job name {name!r} is used twice", hint="every job needs its own name")
        seen.add(name)
        if "argv" in j:
            argv = list(j["argv"])
        elif "command" in j:
            try:
                argv = shlex.split(j["command"])
            except ValueError as exc:
                raise SweepFileError(f"{where}: jobs[{i}] ({name}): command cannot be split: {exc}") from None
            if not argv:
                raise SweepFileError(f"{where}: jobs[{i}] ({name}): command is empty")
        else:
            raise SweepFileError(f"{where}: jobs[{i}] ({name}): no program", hint="give argv = [...] or command = \"...\" (here or in defaults)")
        if j.get("kernel") is not None:
            try:
                re.compile(j["kernel"])
            except re.error as exc:
                raise SweepFileError(f"{where}: jobs[{i}] ({name}): kernel is not a valid regular expression: {exc}") from None
        cwd = Path(j.get("cwd", "."))
        cwd = cwd if cwd.is_absolute() else base_dir / cwd
        jobs.append(
            Job(
                name=name,
                argv=argv,
                cwd=str(cwd.resolve()),
                env=dict(j["env"]),
                kernel=j.get("kernel"),
                iteration=j.get("iteration"),
                shape=j.get("shape"),
                tags=j["tags"],
                timeout=float(j.get("timeout", DEFAULT_TIMEOUT)),
                retries=int(j.get("retries", DEFAULT_RETRIES)),
                backoff=float(j.get("backoff", DEFAULT_BACKOFF)),
                profile=dict(j["profile"]),
            )
        )
        why = policy_problem(jobs[-1])
        if why:
            raise SweepFileError(f"{where}: jobs[{i}] ({name}): {why}", hint="see docs/sweep.md for the format")
    return jobs


def policy_problem(job: Job) -> str | None:
    """What the schema checks, checked again on the normalized job (a job may
    also come from a caller or a manifest): finite, bounded run policy; no
    NUL byte where the program, its environment or its folder is named."""
    import math

    for key, lo, hi, lo_open in (("timeout", 0.0, MAX_SECONDS, True), ("backoff", 0.0, MAX_SECONDS, False)):
        v = getattr(job, key)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v > hi or v < lo or (lo_open and v == lo):
            return f"{key} must be a finite number in {'(' if lo_open else '['}{lo:g}, {hi:g}], not {v!r}"
    if not isinstance(job.retries, int) or isinstance(job.retries, bool) or not 0 <= job.retries <= 100:
        return f"retries must be an integer in [0, 100], not {job.retries!r}"
    texts = [("argv", x) for x in job.argv] + [("cwd", job.cwd)] + [("env", k) for k in job.env] + [("env", v) for v in job.env.values()]
    for where, t in texts:
        if not isinstance(t, str) or "\0" in t:
            return f"{where}: a NUL byte (or a value that is not text) cannot be passed to a program"
    return None


def load_sweep(path: str | Path) -> Sweep:
    """Read, validate and normalize a sweep file."""
    p = Path(path)
    if not p.is_file():
        raise SweepFileError(f"{p}: no such sweep file" if not p.exists() else f"{p}: not a file",
                             hint="attlens sweep init writes an example")
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SweepFileError(f"{p}: {size:,} bytes; a sweep file is at most {MAX_FILE_BYTES:,}")
        raw = p.read_bytes()
    except OSError as exc:
        raise SweepFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = _parse(p, raw)
        if not isinstance(doc, dict):
            raise SweepFileError(f"{p}: the top level must be a table/mapping with a jobs list", hint="see docs/sweep.md")
        validate(doc, p)
        jobs = normalize(doc, p.resolve().parent, str(p))
    except RecursionError:  # the parsers and the schema walk nesting recursively
        raise SweepFileError(f"{p}: values nested too deeply", hint="see docs/sweep.md for the format") from None
    return Sweep(path=p.resolve(), jobs=jobs, sha256=hashlib.sha256(raw).hexdigest())


def example(fmt: str = "toml") -> str:
    """The commented example ``attlens sweep init`` writes."""
    name = {"toml": "example.toml", "yaml": "example.yaml"}[fmt]
    return resources.files("attlens.sweep").joinpath(name).read_text(encoding="utf-8")
