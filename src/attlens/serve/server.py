"""The MCP server: :class:`attlens.serve.tools.Tools` registered with the
official ``mcp`` SDK (``MCPServer``), served over stdio.

Every tool result is the tool's JSON object twice: as the text content
(exactly what the CLI's ``--json`` prints) and as ``structuredContent`` (the
same object, parsed). A failure is a tool error (``isError``) whose content is
the ``attlens.error`` object; an unexpected exception becomes an
``InternalError`` of that shape and the server keeps serving.
"""

# No `from __future__ import annotations`: the SDK reads the tools' type hints,
# which name objects local to build_server().
import logging
import sys
from typing import Annotated, Literal

from attlens import __version__
from attlens.errors import AttlensError
from attlens.serve.tools import TITLES, TOOLS, Tools

log = logging.getLogger("attlens.serve")

INSTRUCTIONS = (
    "attlens answers questions about AMD GPU thread traces (rocprofv3 ATT captures: ui_output_agent_*_dispatch_* "
    "directories). Start with list_captures(path) to find captures, then summary or plan on one of them; drill down with "
    "hotspots, asm (the ISA around a pc), deps and waits (who waits on what, and how long per execution), waves and "
    "occupancy; whatif predicts the kernel time with changes applied; compare a re-capture with diff and gate it with check; rules lists what the plan checks; pc_sampling reads "
    "PC samples (why instructions stall; summary, hotspots, asm and plan carry the samples found beside a capture). Every "
    "result is a versioned JSON object (schema field; each tool's outputSchema names its top-level keys and types, "
    "schema(name) returns the full JSON Schema); null means unavailable, never zero. Paths must be inside the server's roots. The attlens skill (`attlens "
    "skill`) explains the workflow and the traps."
)


class InternalError(AttlensError):
    """An unexpected exception inside a tool (a bug in attlens)."""


def _missing_sdk():
    from attlens.errors import UsageError

    return UsageError(
        "attlens mcp needs the optional MCP support (the official `mcp` Python SDK, version 2 or later)",
        hint="pip install 'mcp>=2.0' (in the attlens clone: pip install -e '.[mcp]')",
    )


# tool -> the shipped JSON Schema of its result (its outputSchema); schema's result is a JSON Schema itself
# (summary on a PC-sampling-only folder answers as `attlens analyze` does there: attlens.pcsampling)
OUTPUT_SCHEMAS = {
    "list_captures": "captures", "summary": ("summary", "pc_sampling"), "hotspots": "hotspots", "plan": "plan", "asm": "asm",
    "deps": "deps", "waits": "waits", "waves": "waves", "occupancy": "occupancy", "diff": "diff", "check": "check",
    "kernels": "kernels", "rules": "rules", "pc_sampling": "pc_sampling", "whatif": "whatif", "schema": None,
}
SCHEMA_OF_A_SCHEMA = {"type": "object", "description": "a JSON Schema (draft 2020-12) of an attlens object, with the schemas it references embedded"}


def output_schema(tool: str) -> dict:
    """The outputSchema a tool declares: a compact form of the shipped schema
    of its object (of either object, when a tool answers with one of two):
    its top-level keys with their types, which are required, and whether
    others may appear, without nested schemas or ``$ref``. The full schemas
    made tools/list ~160 KB (an agent pays for it on every session); they stay
    one call away: the ``schema`` tool, ``attlens schema NAME``."""
    name = OUTPUT_SCHEMAS[tool]
    if name is None:
        return dict(SCHEMA_OF_A_SCHEMA)
    if isinstance(name, str):
        return compact_schema(name)
    return {"type": "object", "anyOf": [_compact_body(n) for n in name]}


def compact_schema(name: str) -> dict:
    """The compact outputSchema of ``attlens.<name>``: top-level keys and types
    (its ``schema`` key's const names the object; the server's instructions
    say once where the full schemas are)."""
    return {"type": "object", **_compact_body(name)}


def _compact_body(name: str) -> dict:
    from attlens import schemas

    doc = schemas.bundle(name)
    props = {k: _compact_type(v, doc) for k, v in doc.get("properties", {}).items()}
    out: dict = {"properties": props}
    if doc.get("required"):
        out["required"] = list(doc["required"])
    if doc.get("additionalProperties") is False:
        out["additionalProperties"] = False
    return out


def _compact_type(node: dict, doc: dict) -> dict:
    """``{"const": …}``, ``{"enum": …}`` or ``{"type": …}`` of one top-level
    property, references followed (an untyped one: ``{}``, anything)."""
    node = _resolve(node, doc)
    for key in ("const", "enum"):
        if key in node:
            return {key: node[key]}
    if "type" in node:
        return {"type": node["type"]}
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        types: list[str] = []
        for b in branches:
            t = _compact_type(b, doc).get("type")
            if t is None:  # a const, enum or untyped branch: the union is not a plain type
                return {}
            types += [x for x in ([t] if isinstance(t, str) else t) if x not in types]
        return {"type": types[0] if len(types) == 1 else types}
    return {}


def _resolve(node: dict, doc: dict, depth: int = 0) -> dict:
    """Follow ``$ref`` inside a bundled schema (a local ``#/$defs/x``, another
    embedded schema ``urn:attlens:schema:NAME``, or a definition in it)."""
    from attlens import schemas

    ref = node.get("$ref")
    if not isinstance(ref, str) or depth > 20:
        return node
    base, _, pointer = ref.partition("#")
    target = doc["$defs"][base] if base else doc
    if base and not base.startswith(schemas.PREFIX):
        return node
    for part in [p for p in pointer.split("/") if p]:
        target = target[part]
    return _resolve(target, doc, depth + 1)


def _drop_titles(schema: dict) -> None:
    """Remove the titles pydantic derives from names (``"title": "Hide Wait"``)
    from an input schema: the names say it, and tools/list is sent every session."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


def build_server(tools: Tools):
    """An ``MCPServer`` with every attlens tool registered: read-only
    annotations, and the shipped JSON Schema of its result as outputSchema."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.tools import Tool
        from mcp.types import CallToolResult, TextContent, ToolAnnotations
        from pydantic import BaseModel, ConfigDict, Field
    except ImportError as exc:
        raise _missing_sdk() from exc
    import orjson

    from attlens.textsafe import dumps_json

    class _Shipped(BaseModel):
        """The SDK checks structured content against a model; the shipped JSON
        Schema (outputSchema) is the contract, checked by the tests and the client."""

        model_config = ConfigDict(extra="allow")

    def answer(fn, *args) -> CallToolResult:
        try:
            obj = fn(*args)
        except AttlensError as exc:
            err = exc.to_dict()
        except Exception as exc:  # a bug: report it as a tool error, keep serving
            log.exception("tool %s failed", getattr(fn, "__name__", fn))
            err = InternalError(f"internal error: {type(exc).__name__}: {exc}", hint="please report it").to_dict()
        else:
            # compact JSON: the same object as --json, without the indentation an agent pays tokens for
            text = dumps_json(obj, orjson.OPT_NON_STR_KEYS).decode()
            # structuredContent is the text parsed back: the same keys and values as --json.
            return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=orjson.loads(text))
        text = dumps_json(err).decode()
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=err, is_error=True)

    Capture = Annotated[str, Field(description="a ui_output_agent_* capture directory or a folder holding one, inside the roots")]
    Top = Annotated[int, Field(description="rows to return (0 = all)")]
    Pc = Annotated[int | str, Field(description="the instruction: its pc index (as in hotspots, deps, plan), or its address as text '0x1738' (code.json Vaddr)")]
    registered: list = []

    def register(fn):
        name = fn.__name__
        tool = Tool.from_function(fn, name=name, title=TITLES[name], description=TOOLS[name], structured_output=False,
                                  annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                              idempotent_hint=True, open_world_hint=False))
        _drop_titles(tool.parameters)  # pydantic's "Capture", "Top", ... repeat the names: bytes in every tools/list
        # the result's contract is the shipped schema (a permissive model keeps the SDK's own check out of the way)
        tool.fn_metadata.output_model = _Shipped
        tool.fn_metadata.output_schema = output_schema(name)
        registered.append(tool)
        return fn

    @register
    def list_captures(path: Annotated[str, Field(description="folder to search (default: the first root)")] = ".") -> CallToolResult:
        return answer(tools.list_captures, path)

    @register
    def summary(
        capture: Capture,
        top: Annotated[int, Field(description="findings, instructions and source lines to return (at least 1)")] = 10,
        detail: Annotated[Literal["brief", "full"], Field(description="brief: the summary (~2-3k tokens); full: with the whole attlens.analyze object (every ranking, TOP rows each)")] = "brief",
    ) -> CallToolResult:
        return answer(tools.summary, capture, top, detail)

    @register
    def hotspots(
        capture: Capture,
        by: Literal["instruction", "line", "opcode"] = "instruction",
        sort: Literal["stall", "latency", "exposed", "idle"] = "stall",
        top: Top = 10,
    ) -> CallToolResult:
        return answer(tools.hotspots, capture, by, sort, top)

    @register
    def plan(capture: Capture) -> CallToolResult:
        return answer(tools.plan, capture)

    @register
    def asm(capture: Capture, pc: Pc, around: Annotated[int, Field(description="instructions before and after the pc")] = 10) -> CallToolResult:
        return answer(tools.asm, capture, pc, around)

    @register
    def deps(
        capture: Capture,
        pc: Annotated[int | str | None, Field(description="only this instruction (a wait or a memory op; pc index or '0x…' address) and its partners")] = None,
        line: Annotated[str | None, Field(description="only this source line, FILE:LINE (a path suffix is enough)")] = None,
        top: Top = 10,
    ) -> CallToolResult:
        return answer(tools.deps, capture, pc, line, top)

    @register
    def waits(
        capture: Capture,
        steady: Annotated[bool, Field(description="only steady-state executions: loop iterations after the first")] = False,
        top: Top = 10,
    ) -> CallToolResult:
        return answer(tools.waits, capture, steady, top)

    @register
    def waves(
        capture: Capture,
        top: Annotated[int, Field(description="instructions in the per-execution stall table")] = 10,
        per_wave: Annotated[bool, Field(description="include the per-wave list (large: one row per traced wave)")] = False,
    ) -> CallToolResult:
        return answer(tools.waves, capture, top, per_wave)

    @register
    def occupancy(capture: Capture) -> CallToolResult:
        return answer(tools.occupancy, capture)

    @register
    def diff(
        before: Annotated[str, Field(description="capture directory, or an attlens analyze --json --top 0 file")],
        after: Annotated[str, Field(description="capture directory, or an attlens analyze --json --top 0 file")],
        force: Annotated[bool, Field(description="diff even when kernel or target differ")] = False,
        noise_floor: Annotated[float | None, Field(description="relative change in percent below which a change is noise")] = None,
        top: Top = 10,
    ) -> CallToolResult:
        return answer(tools.diff, before, after, force, noise_floor, top)

    @register
    def check(
        capture: Capture,
        baseline: Annotated[str, Field(description="baseline capture directory, or an attlens analyze --json --top 0 file")],
        max_regression: Annotated[float, Field(description="allowed increase in percent")] = 5.0,
        metric: Annotated[str, Field(description="total | stall | class:NAME | line:FILE:LINE (per traced wave)")] = "total",
        force: Annotated[bool, Field(description="compare even when kernel or target differ")] = False,
    ) -> CallToolResult:
        return answer(tools.check, capture, baseline, max_regression, metric, force)

    @register
    def kernels(
        path: Annotated[str, Field(description="kernel_stats.csv, kernel_trace.csv, results.json, results.db, or a folder holding them")],
        exclude: Annotated[str | None, Field(description="regex of runtime-helper kernels to flag (default: HIP blits, PyTorch elementwise/copy/fill/random/reduce)")] = None,
    ) -> CallToolResult:
        return answer(tools.kernels, path, exclude)

    @register
    def whatif(
        capture: Capture,
        apply: Annotated[list[str], Field(description="rule ids of findings to replay together")] = [],  # noqa: B006 (never mutated)
        hide_wait: Annotated[list[int | str], Field(description="s_waitcnt pcs to hide")] = [],  # noqa: B006
        move: Annotated[list[str], Field(description="'PC:BEFORE_PC' each")] = [],  # noqa: B006
        waves_per_simd: Annotated[int | None, Field(description="resident waves per SIMD")] = None,
    ) -> CallToolResult:
        return answer(tools.whatif, capture, apply, hide_wait, move, waves_per_simd)

    @register
    def rules() -> CallToolResult:
        return answer(tools.rules)

    @register
    def schema(name: Annotated[str, Field(description="object name, e.g. 'attlens.waits' or 'waits'")]) -> CallToolResult:
        return answer(tools.schema, name)

    @register
    def pc_sampling(
        path: Annotated[str, Field(description="*_results.json, *_pc_sampling_stochastic.csv / *_pc_sampling_host_trap.csv, or a PC-sampling ui_output folder")],
        kernel: Annotated[str | None, Field(description="only samples of this kernel (a name or part of one)")] = None,
        dispatch: Annotated[int | None, Field(description="only samples of this dispatch id")] = None,
        top: Annotated[int, Field(description="rows per table (0 = all)")] = 20,
    ) -> CallToolResult:
        return answer(tools.pc_sampling, path, kernel, dispatch, top)

    return MCPServer(name="attlens", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING", tools=registered)


def serve(roots: list[str], cache_size: int = 4) -> None:
    """Run the server on stdin/stdout until the client closes the pipe."""
    from attlens.serve.cache import CaptureCache
    from attlens.serve.roots import Roots

    tools = Tools(Roots(roots), CaptureCache(cache_size))
    server = build_server(tools)
    print(f"attlens mcp {__version__}: serving on stdio; roots: {', '.join(str(r) for r in tools.roots.paths)}", file=sys.stderr)
    server.run("stdio")
