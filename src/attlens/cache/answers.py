"""Answers kept with a capture's digest: the ``--json`` document of a question
asked before, in the same state of everything it depends on.

A *question* is a command and its arguments (``analyze`` with ``--top 0``,
``deps --pc 973``, ...). Its answer depends on the capture's files and
attlens' code (the digest key, :func:`attlens.cache.keys.capture_key`), on the
rocprofv3 files beside the capture (:func:`attlens.cache.keys.context_key`)
and on the arguments; all three are in the answer's name, so a changed input
is a different question, never a stale answer. An answer is stored as
``answer-<hash>.json`` in the digest folder — a CRC-32 line, then the
document and the command's exit code — written atomically; one that does not
match its checksum is removed with a note and computed again.

Reading an answer costs two directory scans (the keys) and one small file:
no NumPy, no parse, no analysis. That is how the second question about a
capture takes milliseconds from the command line.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path

import orjson

from attlens.cache import cache_root, inside_capture, note, private


def _folder(root: Path, capture: Path, key: str) -> Path | None:
    """The digest folder of the capture in state ``key`` (None: no digest, or
    a folder on the way that is not private: attlens.cache.private)."""
    from attlens.cache.keys import TOP, path_hash

    parts = [TOP, path_hash(capture), key]
    folder = root.joinpath(*parts)
    if not os.path.lexists(folder / "capture.json"):
        return None
    why = private.chain_problem(root, parts)
    if why:
        private.refuse_note(root, why)
        return None
    return folder


def _name(capture: Path, rocprof_dir, question) -> str:
    from attlens.cache.keys import context_key

    key = orjson.dumps([question, context_key(capture, rocprof_dir)], option=orjson.OPT_SORT_KEYS)
    return "answer-" + hashlib.blake2b(key, digest_size=12).hexdigest() + ".json"


def _plausible(doc, code) -> bool:
    """What attlens stores: one attlens result object and the exit code its
    command gave (0, or 8 for a partly read capture), or the text a command
    printed (stored text answers). Anything else was not written by attlens
    (a CRC is no signature: docs/cache.md)."""
    if isinstance(doc, str):
        return type(code) is int and code in (0, 8)
    if not (isinstance(doc, dict) and isinstance(doc.get("schema"), str) and doc["schema"].startswith("attlens.")
            and doc["schema"] != "attlens.error" and type(code) is int and code in (0, 8)):
        return False
    try:
        orjson.dumps(doc)  # what --json prints must be printable (a 1,000-deep value is not)
    except TypeError:
        return False
    return True


def answer(capture: Path, rocprof_dir, question, build) -> tuple[dict, int]:
    """``(document, exit code)`` answering ``question`` about ``capture``:
    the stored answer, or ``build()`` (which loads the capture, so its digest
    exists afterwards) stored beside the digest for the next time."""
    root = cache_root()
    if root is None or inside_capture(root, capture):
        return build()  # the loader says why it stores nothing inside a capture
    why = private.chain_problem(root)
    if why:
        private.refuse_note(root, why)
        return build()
    from attlens.cache.keys import capture_key  # computed once per command (keys.command_scope): the loader reuses it

    try:
        name = _name(capture, rocprof_dir, question)
        key = capture_key(capture)
        folder = _folder(root, capture, key)
    except (OSError, TypeError, ValueError):  # unreadable folder, a question JSON cannot hold
        return build()
    if folder is not None:
        path = folder / name
        why = "checksum mismatch"
        try:
            raw = private.read_bytes(path)  # a regular file of this user, never a FIFO waited on
        except FileNotFoundError:
            raw = None
        except OSError as exc:  # not a regular file of this user, unreadable: damaged
            raw, why = b"", str(exc) if isinstance(exc, private.NotPrivate) else (exc.strerror or str(exc))
        if raw is not None:
            head, _, body = raw.partition(b"\n")
            try:
                if len(head) == 8 and int(head, 16) == zlib.crc32(body):
                    stored = orjson.loads(body)
                    doc, code = stored["document"], stored["exit_code"]
                    if _plausible(doc, code):
                        return doc, code
                    why = "not an answer attlens wrote"
            except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
                why = "not a stored answer"
            note(f"{capture}: a stored answer is damaged ({why}); computing it again")
            private.remove_tree(path)
    doc, code = build()
    from attlens.cache import behind

    behind.settle()  # the digest build() parsed the capture into may still be being written
    try:
        # The answer belongs to the state the loader read: the digest it wrote
        # (or opened) for this key, if the capture did not change meanwhile.
        folder = _folder(root, capture, key)
        if folder is not None:
            body = orjson.dumps({"document": doc, "exit_code": code})
            private.write_file(folder / name, [b"%08x\n" % zlib.crc32(body), body])  # no temporary file left on failure
            from attlens.cache.store import DigestStore

            DigestStore(root).evict(keep=folder)  # an answer counts towards the size cap like any write
    except (OSError, TypeError):  # a full or read-only cache; a value JSON cannot hold
        pass
    return doc, code
