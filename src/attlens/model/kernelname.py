"""Kernel names as profilers write them, reduced for matching.

rocprofiler-compute and rocprof v1 append the kernel-descriptor suffix
(``vecCopy(double*, ...) [clone .kd]``, ``... (.kd)``), rocprofv3 writes the
plain name, the ATT listing the mangled symbol (``_Z7vecCopyPdS_S_ii``):
:func:`normalize_kernel_name` drops the descriptor suffix and
:func:`kernel_base_name` keeps the unqualified name without arguments,
templates or return type, so all of them compare equal.
"""

from __future__ import annotations

import re

_MANGLED_PART = re.compile(r"(\d+)")
_KD_SUFFIX = re.compile(r"(\s*\[clone \.kd\]|\s*\(\.kd\)|\.kd)\s*$")


def normalize_kernel_name(name: str | None) -> str | None:
    """The name without surrounding quotes and the ``.kd`` descriptor suffix
    (``[clone .kd]``, ``(.kd)``, ``.kd``)."""
    if name is None:
        return None
    s = name.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1].strip()
    return _KD_SUFFIX.sub("", s)


def kernel_base_name(name: str | None) -> str | None:
    """The unqualified kernel name without arguments, templates or return
    type: ``void ns::k<4>(float*, int)`` → ``k``; ``_ZN2ns1kEPfi`` → ``k``;
    ``_Z7vecCopyPdS_S_ii`` → ``vecCopy``; ``vecCopy(double*) [clone .kd]`` → ``vecCopy``."""
    s = normalize_kernel_name(name)
    if not s:
        return None
    if s.startswith("_Z"):
        i = 2
        nested = s[i:i + 1] == "N"
        i += nested
        while i < len(s) and s[i] in "KVrO":  # cv / ref qualifiers of a member function
            i += 1
        parts = []
        while i < len(s) and s[i].isdigit():
            m = _MANGLED_PART.match(s, i)
            n = int(m.group(1))
            parts.append(s[m.end():m.end() + n])
            i = m.end() + n
            if not nested:
                break
        if parts and all(parts):
            return parts[-1]
    # demangled: cut the argument list and template arguments at depth 0
    s = s.replace("(anonymous namespace)", "{anonymous}")
    depth, out = 0, []
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0:
            if out and "".join(out).strip():
                break
        elif depth == 0:
            out.append(ch)
    base = "".join(out).strip().split("::")[-1].split()
    return base[-1] if base else s


def same_kernel(a: str | None, b: str | None) -> bool | None:
    """True/False when both names are known, None when one is missing."""
    if not a or not b:
        return None
    na, nb = normalize_kernel_name(a), normalize_kernel_name(b)
    return na == nb or kernel_base_name(na) == kernel_base_name(nb)
