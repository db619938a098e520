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

from attlens.cache import cache_root, inside_capture, note


def _folder_of(root: Path, capture: Path, key: str) -> Path:
    """The digest folder of the capture in state ``key`` (it may not exist)."""
    from attlens.cache.keys import TOP, path_hash

    return root / TOP / path_hash(capture) / key


def _existing(folder: Path) -> Path | None:
    return folder if (folder / "capture.json").is_file() else None


def _name(capture: Path, rocprof_dir, question) -> str:
    from attlens.cache.keys import context_key

    key = orjson.dumps([question, context_key(capture, rocprof_dir)], option=orjson.OPT_SORT_KEYS)
    return "answer-" + hashlib.blake2b(key, digest_size=12).hexdigest() + ".json"


def answer(capture: Path, rocprof_dir, question, build) -> tuple[dict, int]:
    """``(document, exit code)`` answering ``question`` about ``capture``:
    the stored answer, or ``build()`` (which loads the capture, so its digest
    exists afterwards) stored beside the digest for the next time."""
    root = cache_root()
    if root is None or inside_capture(root, capture):
        return build()  # the loader says why it stores nothing inside a capture
    from attlens.cache import known_key
    from attlens.cache.keys import capture_key

    try:
        name = _name(capture, rocprof_dir, question)
        key = capture_key(capture)
        target = _folder_of(root, capture, key)
        folder = _existing(target)
    except (OSError, TypeError, ValueError):  # unreadable folder, a question JSON cannot hold
        return build()
    if folder is not None:
        path = folder / name
        try:
            raw = path.read_bytes()
        except OSError:
            raw = None
        if raw is not None:
            head, _, body = raw.partition(b"\n")
            try:
                if len(head) == 8 and int(head, 16) == zlib.crc32(body):
                    stored = orjson.loads(body)
                    return stored["document"], int(stored["exit_code"])
            except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
                pass
            note(f"{capture}: a stored answer is damaged; computing it again")
            try:
                path.unlink()
            except OSError:
                pass
    with known_key(capture, key):  # the loader needs not scan the capture again for it
        doc, code = build()
    try:
        # The answer belongs to the state the loader read: the digest it wrote
        # (or opened) for this key, if the capture did not change meanwhile.
        folder = _existing(target)
        if folder is not None:
            body = orjson.dumps({"document": doc, "exit_code": code})
            tmp = folder / f".{name}.tmp-{os.getpid()}"
            tmp.write_bytes(b"%08x\n" % zlib.crc32(body) + body)
            os.replace(tmp, folder / name)
            from attlens.cache.store import DigestStore

            DigestStore(root).evict(keep=folder)  # an answer counts towards the size cap like any write
    except (OSError, TypeError):  # a full or read-only cache; a value JSON cannot hold
        pass
    return doc, code
