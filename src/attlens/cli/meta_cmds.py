"""Commands about attlens itself: schema (the JSON Schemas of every --json object)."""

from __future__ import annotations

from attlens.cli.common import EPILOG


def register(sub) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema (draft 2020-12) of a --json object, or list them", epilog=EPILOG)
    p.add_argument("name", nargs="?", metavar="NAME", help="a schema id (attlens.plan) or its short name (plan); omit to list them")
    p.add_argument("--json", action="store_true", help="list the schemas as one JSON object (attlens.schemas)")
    p.set_defaults(func=cmd_schema)


def cmd_schema(args) -> int:
    from attlens import schemas
    from attlens.cli.common import emit_json
    from attlens.jsondoc import header

    if args.name:
        emit_json(schemas.bundle(schemas.require(args.name)))
        return 0
    rows = [{"name": s["title"], "id": s["$id"], "title": s["description"], "commands": s.get("x-attlens-commands", [])}
            for s in map(schemas.load, schemas.names())]
    if args.json:
        emit_json({**header("attlens.schemas"), "schemas": rows})
        return 0
    for r in rows:
        print(f"{r['name']:<22} {', '.join(r['commands'])}")
    print("\nattlens schema NAME prints one (self-contained, JSON Schema draft 2020-12, every key described).")
    return 0
