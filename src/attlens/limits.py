"""Bounds every integer and time option shares: the command line
(:mod:`attlens.cli.common`), the Python API (:mod:`attlens.api`, ``to_dict``)
and the MCP tools. A value past them is a usage error, one line, never an
overflow deep inside NumPy or the JSON writer (``--top 2**64`` made orjson
fail with "Integer exceeds 64-bit range"). No import: the CLI loads this at
start-up."""

MAX_COUNT = 1_000_000_000  # rows, events, pcs, lines, waves, iterations: far beyond any capture
MAX_SECONDS = 30 * 24 * 3600  # timeouts and backoffs: 30 days (a longer wait overflows timers)
MAX_RETRIES = 100  # extra attempts of a sweep job (sweep.schema.json says the same)
MAX_WORKERS = 4096  # processes or threads attlens starts at once
MAX_CACHED_CAPTURES = 1024  # analyzed captures an MCP server keeps in memory
# records a plan replays for its findings' predictions: the replay holds ~100 bytes per record (30x
# softmax, 41 M records: report peak RSS 2.9 -> 6.3 GiB, +24 s); above it `attlens whatif` replays on request
MAX_REPLAY_RECORDS_IN_PLAN = 8_000_000
MAX_WAVES_PER_SIMD = 64  # whatif --waves-per-simd: far above any target's (16 on RDNA, 8-10 on CDNA)
MAX_PATH_CHARS = 4096  # a path a client names (PATH_MAX on Linux)
MAX_NAME_BYTES = 255  # one component of such a path (NAME_MAX)
