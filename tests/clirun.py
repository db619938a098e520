"""Running ``attlens.cli.main`` in-process with its own stdout/stderr, and the
invariant every run must keep on any input (docs/exit-codes.md): a documented
exit code (never 1), no traceback, with ``--json`` stdout empty or one whole
JSON document. Much faster than a subprocess, with the same exit code and the
same bytes on stdout/stderr."""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import dataclass

from attlens import errors

# Every exit code docs/exit-codes.md documents for a user-caused failure.
DOCUMENTED = {
    v for k, v in vars(errors).items() if k.startswith("EXIT_") and isinstance(v, int) and v != errors.EXIT_INTERNAL
} | {130}


@dataclass
class Outcome:
    argv: list
    code: int
    out: str
    err: str

    def describe(self) -> str:
        return f"attlens {' '.join(map(str, self.argv))}\nexit {self.code}\n--- stdout ---\n{self.out[-3000:]}\n--- stderr ---\n{self.err[-3000:]}"

    def json(self):
        return json.loads(self.out)


def run_main(*argv) -> Outcome:
    """``attlens ARGV`` in this process; stdout/stderr as a terminal-less user sees them."""
    from attlens.cli import main

    args = [os.fspath(a) if isinstance(a, os.PathLike) else a for a in argv]
    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", write_through=True)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    env_debug = os.environ.pop("ATTLENS_DEBUG", None)
    try:
        code = main(list(args))
    finally:
        for s in (out, err):
            s.flush()
        sys.stdout, sys.stderr = saved
        if env_debug is not None:
            os.environ["ATTLENS_DEBUG"] = env_debug
    return Outcome(args, code, out_b.getvalue().decode("utf-8", "replace"), err_b.getvalue().decode("utf-8", "replace"))


def assert_clean(o: Outcome, *, as_json: bool | None = None) -> None:
    """The invariant: documented exit code, never 1, no traceback, one line
    per error, and with --json a stdout that is empty or one JSON document."""
    assert o.code in DOCUMENTED, o.describe()
    for stream in (o.out, o.err):
        assert "Traceback" not in stream, o.describe()
        assert "internal error" not in stream, o.describe()
    if as_json is None:
        as_json = "--json" in o.argv
    if as_json and o.out.strip():
        doc = json.loads(o.out)  # raises on truncated or concatenated output
        assert isinstance(doc, dict) and doc.get("schema", "").startswith("attlens."), o.describe()
        if o.code not in WITH_RESULT:
            assert doc["schema"] == "attlens.error" and doc["error"]["exit_code"] == o.code, o.describe()
    if o.code not in (errors.EXIT_OK, errors.EXIT_PARTIAL, errors.EXIT_REGRESSION, 130):
        assert "error:" in o.err, o.describe()


# Exit codes whose --json document is the command's result, not an attlens.error:
# a partial analysis, a regression, a gate refused on partial input (check).
WITH_RESULT = {errors.EXIT_OK, errors.EXIT_PARTIAL, errors.EXIT_REGRESSION, errors.EXIT_GATE_PARTIAL}
