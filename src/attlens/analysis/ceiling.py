"""The one bandwidth-ceiling threshold (trace and counters) and the physical
check that keeps an impossible figure from being printed as a measurement.

A leaf module: ``analysis/bandwidth.py`` (trace bytes) and
``analysis/pmc.py`` (counter bytes) both import it, so neither imports the
other for a constant.
"""

from __future__ import annotations

# What a rule may call "at the bandwidth ceiling" (trace and PMC alike).
CEILING_FRACTION = 0.70


def over_peak(bytes_moved: float | None, duration_ns: float | None, peak_gbps: float | None) -> str | None:
    """Why ``bytes_moved`` in ``duration_ns`` cannot be a measurement (it would
    be more than the physical peak), or None when it can. bytes / ns = GB/s."""
    if bytes_moved is None or not duration_ns or not peak_gbps or duration_ns <= 0:
        return None
    gbps = bytes_moved / duration_ns
    if gbps <= peak_gbps:
        return None
    return (f"{bytes_moved / 1e9:,.3f} GB in {duration_ns:,.0f} ns would be {gbps:,.0f} GB/s, {gbps / peak_gbps:,.1f}x the "
            f"{peak_gbps:,.1f} GB/s peak: the duration cannot be this dispatch's (timestamps of another pass, dispatch "
            "or run), so the timing is unusable")
