"""The JSON Schemas (draft 2020-12) of every ``--json`` object.

One file per object, ``<name>.schema.json`` for the object ``attlens.<name>``,
shipped as package data; ``defs.schema.json`` holds the types they share.
Each schema's ``$id`` is ``urn:attlens:schema:<name>`` and cross-file
references use those ids. :func:`bundle` gives one self-contained document
(the referenced schemas embedded under ``$defs``, each keeping its ``$id``),
which is what ``attlens schema NAME`` prints and any 2020-12 validator
accepts. docs/json-schema.md is generated from these files
(:mod:`attlens.schemas.docs`).

Rules the schemas hold (tests validate every command's output against them):
every object carries ``schema``, ``schema_version`` and ``attlens_version``;
objects of ours allow no key the schema does not name
(``additionalProperties: false``), so a renamed or retyped key fails; a value
that can be unavailable is typed with ``null``, never 0.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

PREFIX = "urn:attlens:schema:"
DEFS = "defs"


def _files():
    return resources.files("attlens.schemas")


@lru_cache(maxsize=None)
def names() -> tuple[str, ...]:
    """Short names of the output schemas (``analyze``, ``plan``, ...), sorted;
    ``defs`` (shared types) is not an output."""
    found = [f.name[: -len(".schema.json")] for f in _files().iterdir() if f.name.endswith(".schema.json")]
    return tuple(sorted(n for n in found if n != DEFS))


def short_name(name: str) -> str:
    """``attlens.plan`` → ``plan``; ``plan`` stays."""
    return name[len("attlens."):] if name.startswith("attlens.") else name


@lru_cache(maxsize=None)
def _load(short: str) -> str:
    return _files().joinpath(f"{short}.schema.json").read_text(encoding="utf-8")


def load(name: str) -> dict:
    """The schema of ``attlens.<name>`` as stored (references not resolved).
    Raises KeyError for an unknown name."""
    short = short_name(name)
    if short not in names() and short != DEFS:
        raise KeyError(name)
    return json.loads(_load(short))


def _refs(node) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith(PREFIX):
            out.add(r[len(PREFIX):].split("#", 1)[0])
        for v in node.values():
            out |= _refs(v)
    elif isinstance(node, list):
        for v in node:
            out |= _refs(v)
    return out


def dependencies(name: str) -> list[str]:
    """Every schema ``name`` references, directly or not (short names, sorted)."""
    seen: set[str] = set()
    todo = [short_name(name)]
    while todo:
        for dep in _refs(load(todo.pop())):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    seen.discard(short_name(name))
    return sorted(seen)


def require(name: str) -> str:
    """The short name of a known schema; a usage error naming the known ones otherwise."""
    short = short_name(name.strip())
    if short not in names():
        from attlens.errors import UsageError

        raise UsageError(f"no schema {name!r}; known: {', '.join(names())}")
    return short


def bundle(name: str) -> dict:
    """One self-contained schema document: ``name``'s schema with every
    schema it references embedded under ``$defs`` by ``$id`` (JSON Schema
    2020-12 compound document)."""
    doc = load(name)
    deps = dependencies(name)
    if deps:
        doc.setdefault("$defs", {})
        for dep in deps:
            embedded = load(dep)
            embedded.pop("$schema", None)
            doc["$defs"][PREFIX + dep] = embedded
    return doc


def registry():
    """A ``referencing`` registry of every schema by ``$id`` (needs the
    ``jsonschema`` package: the ``test`` extra)."""
    from referencing import Registry, Resource

    return Registry().with_resources((PREFIX + n, Resource.from_contents(load(n))) for n in (*names(), DEFS))


def validator(name: str):
    """A ``jsonschema`` Draft 2020-12 validator of ``attlens.<name>``."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load(name), registry=registry())


def validate(obj: dict) -> None:
    """Validate an attlens JSON object against the schema its ``schema`` key
    names; raises ``jsonschema.ValidationError`` (or KeyError for an unknown
    schema id)."""
    validator(obj["schema"]).validate(obj)
