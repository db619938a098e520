"""JUnit XML of ``attlens check`` (``--junit FILE``): one test case per
check, a failure when the metric regressed beyond the limit, so CI systems
that read JUnit show the gate like any other test."""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from attlens.report.controls import safe_text


def junit_xml(res) -> str:
    """The JUnit XML document of a :class:`~attlens.analysis.diff.CheckResult`."""
    # a kernel name from the capture may hold control characters XML 1.0 cannot carry
    case = f'<testcase classname="attlens.check" name={quoteattr(safe_text(f"{res.kernel} {res.metric}"))} time="0">'
    if not res.passed:
        kind = "partial-input" if getattr(res, "partial", None) else "regression"
        case += f"<failure message={quoteattr(safe_text(res.message))} type=\"{kind}\"></failure>"
    out = f"before={res.baseline:.3f} after={res.current:.3f} change={res.change_percent} limit={res.max_regression_percent}"
    case += f"<system-out>{quoteattr(out)[1:-1]}</system-out></testcase>"
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="attlens" tests="1" failures="{0 if res.passed else 1}" errors="0">{case}</testsuite>\n')
