"""What each `attlens mcp` tool costs an agent on the largest shared capture:
the bytes of the text content a client hands to the model, and an estimate of
its tokens (bytes / 4, the usual rule of thumb for JSON; a tokenizer is used
instead when ``tiktoken`` is installed).

Run by hand (not in CI; needs attlens[mcp]):
    python benchmarks/bench_mcp_tokens.py [CAPTURE_DIR]
Target (issue #22): `summary` at most ~4k tokens; every tool's default call
well under the 20k tokens the old `summary` cost.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ATTLENS_SHARED", REPO.parent / "shared"))
DEFAULT = SHARED / "traces/softmax/big/ui_output_agent_47920_dispatch_13"


def calls(cap: Path) -> list[tuple[str, str, dict]]:
    c = str(cap)
    return [
        ("list_captures", "list_captures", {"path": str(cap.parent.parent)}),
        ("summary", "summary", {"capture": c}),
        ("summary detail=full", "summary", {"capture": c, "detail": "full"}),
        ("hotspots", "hotspots", {"capture": c}),
        ("plan", "plan", {"capture": c}),
        ("asm pc=10", "asm", {"capture": c, "pc": 10}),
        ("deps pc=10", "deps", {"capture": c, "pc": 10}),
        ("waits", "waits", {"capture": c}),
        ("waves", "waves", {"capture": c}),
        ("occupancy", "occupancy", {"capture": c}),
        ("diff (self)", "diff", {"before": c, "after": c}),
        ("check (self)", "check", {"capture": c, "baseline": c}),
        ("kernels", "kernels", {"path": str(cap.parent.parent / "rocprofv3")}),
        ("rules", "rules", {}),
        ("schema analyze", "schema", {"name": "analyze"}),
    ]


def tokens(text: str) -> tuple[int, str]:
    try:
        import tiktoken

        return len(tiktoken.get_encoding("cl100k_base").encode(text)), "cl100k_base"
    except ImportError:
        return (len(text.encode()) + 3) // 4, "bytes/4"


async def measure(cap: Path) -> list[dict]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {"PYTHONPATH": str(REPO / "src"), "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "attlens", "mcp", "--root", str(cap.parent.parent)], env=env)
    rows = []
    async with stdio_client(params, errlog=sys.stderr) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            listed = {t.name: t for t in (await s.list_tools()).tools}
            rows.append({"call": "tools/list", "bytes": len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.values()]))})
            for label, tool, args in calls(cap):
                if tool not in listed or ("detail" in args and "detail" not in listed[tool].input_schema.get("properties", {})):
                    rows.append({"call": label, "bytes": None})
                    continue
                res = await s.call_tool(tool, args)
                text = "".join(getattr(c, "text", "") for c in res.content)
                rows.append({"call": label, "bytes": len(text.encode()), "error": bool(res.is_error),
                             "structured_bytes": len(json.dumps(res.structured_content)) if res.structured_content is not None else 0})
    return rows


def main() -> None:
    import anyio

    cap = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    rows = anyio.run(measure, cap.resolve())
    _n, method = tokens("")
    print(f"{'call':<22} {'text bytes':>11} {'~tokens':>8}  ({method})")
    for r in rows:
        if r["bytes"] is None:
            print(f"{r['call']:<22} {'(no such tool or argument)':>30}")
            continue
        print(f"{r['call']:<22} {r['bytes']:>11,} {(r['bytes'] + 3) // 4:>8,}" + ("  (error)" if r.get("error") else ""))


if __name__ == "__main__":
    main()
