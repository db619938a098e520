"""Bulk NumPy work split between this thread and one helper thread.

Copies, ufunc loops and concatenations of large arrays run without the GIL,
and on a fresh array most of their time is the first touch of its pages,
which two threads do at nearly twice the rate of one (the parse child's rows
moved down, 100 MB: 0.07 s on one thread, 0.04 s on two). Below
``min_bytes`` of work a thread costs more than it saves: everything then
runs here. No thread is left running when a call returns (the command may
fork again: attlens.forked.can_fork), and an error in the helper is raised
here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

MIN_BYTES = 8 << 20  # below this much work (bytes written) one thread does it all


def split(weights: Sequence[int]) -> tuple[list[int], list[int]]:
    """Job indices in two groups of about equal weight (the heaviest first, each to the lighter group)."""
    groups: tuple[list[int], list[int]] = ([], [])
    load = [0, 0]
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        g = load.index(min(load))
        groups[g].append(i)
        load[g] += weights[i]
    return groups


def run(jobs: Sequence[Callable[[], object]], weights: Sequence[int], min_bytes: int | None = None) -> list:
    """Every job's result, in the jobs' order; on two threads when the
    weights (bytes each job writes) add up to ``min_bytes`` (default
    :data:`MIN_BYTES`) or more."""
    out: list = [None] * len(jobs)
    min_bytes = MIN_BYTES if min_bytes is None else min_bytes

    def do(indices) -> None:
        for i in indices:
            out[i] = jobs[i]()

    if sum(weights) < min_bytes or len(jobs) < 2:
        do(range(len(jobs)))
        return out
    import threading

    mine, theirs = split(weights)
    failed: list = []

    def helper_work() -> None:
        try:
            do(theirs)
        except BaseException as exc:  # raised again in the thread that waits
            failed.append(exc)

    helper = threading.Thread(target=helper_work, name="attlens-two")
    helper.start()
    try:
        do(mine)
    finally:
        helper.join()
    if failed:
        raise failed[0]
    return out
