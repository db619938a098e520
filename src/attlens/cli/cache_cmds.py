"""Commands that manage capture digests (docs/cache.md): cache info, cache clear."""

from __future__ import annotations

from attlens.cli.common import EPILOG, emit


def register(sub) -> None:
    p = sub.add_parser("cache", help="show or clear the digests of decoded captures (kept per user, rebuilt when a capture changes)", epilog=EPILOG)
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION")
    for name, helptext, func in (
        ("info", "where digests are kept, their size and the captures they belong to", cmd_cache_info),
        ("clear", "remove every digest (captures are never touched)", cmd_cache_clear),
    ):
        q = csub.add_parser(name, help=helptext, epilog=EPILOG)
        q.add_argument("--cache-dir", metavar="DIR", help="the cache directory (default $XDG_CACHE_HOME/attlens)")
        q.add_argument("--json", action="store_true", help="print one JSON object")
        q.set_defaults(func=func)
    p.set_defaults(func=_cache_usage, cache_parser=p)


def _cache_usage(args) -> int:
    args.cache_parser.print_help()
    return 2


def _store(args):
    from attlens.cache import default_cache_dir, open_cache

    return open_cache(args.cache_dir or default_cache_dir())


def cmd_cache_info(args) -> int:
    from attlens.cache import max_bytes

    store = _store(args)
    entries = store.entries()
    total = sum(e["bytes"] for e in entries)
    if args.json:
        from attlens.cli.common import emit_json
        from attlens.jsondoc import header

        emit_json({**header("attlens.cache"), "cache_dir": str(store.root), "bytes": total,
                     "max_bytes": max_bytes(), "digests": [
                         {"capture": e["capture"], "bytes": e["bytes"], "last_used": e["last_used"], "folder": e["folder"]}
                         for e in entries]})
        return 0
    import time

    lines = [f"cache directory: {store.root}",
             f"digests: {len(entries)}, {total / 2**20:.1f} MiB of {max_bytes() / 2**30:.1f} GiB allowed (ATTLENS_CACHE_MAX_BYTES)"]
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e["last_used"])) if e["last_used"] else "?"
        lines.append(f"  {e['bytes'] / 2**20:8.1f} MiB  last used {when}  {e['capture'] or '(unreadable digest)'}")
    emit("\n".join(lines))  # capture paths are the user's and may hold control characters
    return 0


def cmd_cache_clear(args) -> int:
    from attlens.errors import OutputRefused

    store = _store(args)
    done = store.clear()
    told = f"removed {done['removed']} digest(s), {done['bytes'] / 2**20:.1f} MiB, from {store.root}"
    if done["errors"]:
        # what could not be removed is an error, never reported as removed
        raise OutputRefused(f"{told}; {done['left']} could not be removed ({done['errors'][0]})",
                            hint="check the permissions of the cache directory, or remove it yourself")
    if args.json:
        from attlens.cli.common import emit_json
        from attlens.jsondoc import header

        emit_json({**header("attlens.cache_clear"), "cache_dir": str(store.root),
                   "digests_removed": done["removed"], "bytes_freed": done["bytes"]})
    else:
        emit(told)
    return 0
