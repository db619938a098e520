"""Shared fixtures. Real captures live in ../shared/traces (never copied into
the repository). Under CI (CI=true) a missing ../shared is a failure; for a
user without it, the tests that need it skip with a message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Capture digests (docs/cache.md) of this test session go to a private folder,
# never into the user's cache; subprocesses inherit it.
if "ATTLENS_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["ATTLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="attlens-test-cache-")
    atexit.register(shutil.rmtree, os.environ["ATTLENS_CACHE_DIR"], True)


def pytest_collection_modifyitems(config, items):
    """The browser tests last: Playwright leaves asyncio threads running for
    the rest of the session, and a process with a second thread never forks
    (attlens.forked.can_fork), so every test after them would run the
    two-process paths (parse halves, report, write-behind digests) in one."""
    browser = REPO / "tests" / "browser"
    items.sort(key=lambda item: Path(str(item.fspath)).is_relative_to(browser))


def require_fork() -> None:
    """Tests of the two-process paths: under CI (Linux, 2 cores) fork must be
    possible here, else the test fails; elsewhere it skips."""
    from attlens.forked import can_fork

    if not can_fork():
        import threading

        why = f"needs fork, two cores and no other thread (threads: {[t.name for t in threading.enumerate()]})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why)
        pytest.skip(why)


def shared_dir() -> Path | None:
    env = os.environ.get("ATTLENS_SHARED")
    cand = Path(env) if env else REPO.parent / "shared"
    return cand if (cand / "traces").is_dir() else None


def require_shared() -> Path:
    d = shared_dir()
    if d is None:
        msg = "../shared/traces not found (set ATTLENS_SHARED to the shared folder)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + ": CI must run the real-capture tests")
        pytest.skip(msg)
    return d


def trace_dirs() -> list[Path]:
    d = shared_dir()
    if d is None:
        return []
    return sorted(p.parent for p in (d / "traces").glob("*/*/ui_output_agent_*/filenames.json"))


def trace_id(p: Path) -> str:
    return f"{p.parent.parent.name}/{p.parent.name}/{p.name[-22:]}"


@pytest.fixture(scope="session")
def shared() -> Path:
    return require_shared()


@pytest.fixture(scope="session")
def traces(shared) -> list[Path]:
    return trace_dirs()


_LOADED: dict = {}


def loaded(path: Path):
    """Load and analyze a capture once per test session."""
    key = str(path)
    if key not in _LOADED:
        import attlens

        d = attlens.load(path)
        _LOADED[key] = (d, attlens.analyze(d))
    return _LOADED[key]
