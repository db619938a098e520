"""The sdist and the wheel `python -m build` makes from a clone carry every
file the installed package reads at run time: the report templates, the JSON
Schemas, the agent skill and the sweep's schema and example files. The wheel,
installed on its own into a fresh virtual environment (no editable path, no
source tree beside it), must find them."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

SRC = REPO / "src" / "attlens"
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def package_data() -> set[str]:
    """The data files of the source tree the package needs, as ``attlens/...`` paths."""
    globs = ["py.typed", "report/templates/*", "schemas/*.json", "skill/SKILL.md", "sweep/*.json", "sweep/*.toml", "sweep/*.yaml"]
    found = {f"attlens/{p.relative_to(SRC).as_posix()}" for g in globs for p in SRC.glob(g) if p.is_file()}
    assert any(f.startswith("attlens/report/templates/") for f in found) and "attlens/skill/SKILL.md" in found
    return found


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    try:
        import build  # noqa: F401
        import setuptools  # noqa: F401
        import wheel  # noqa: F401
    except ImportError as exc:
        if CI:
            pytest.fail(f"{exc.name} is missing: pip install -e '.[test]'")
        pytest.skip(f"{exc.name} is not installed (the test extras have it)")
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build backend of this environment (the test extras
    # pin setuptools and wheel), so the test runs without a network.
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(out), str(REPO)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_wheel_carries_the_package_data(dist):
    whl = next(dist.glob("attlens-*.whl"))
    names = set(zipfile.ZipFile(whl).namelist())
    missing = package_data() - names
    assert not missing, f"not in {whl.name}: {sorted(missing)}"
    # every module too, and nothing from tests/ or docs/
    modules = {f"attlens/{p.relative_to(SRC).as_posix()}" for p in SRC.rglob("*.py")}
    assert not modules - names
    assert not [n for n in names if n.startswith(("tests/", "docs/"))]
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(whl).read(meta).decode()
    for extra in ("mcp", "pandas", "perfetto", "ray", "test"):
        assert f"Provides-Extra: {extra}" in text


def test_sdist_carries_the_package_data(dist):
    sdist = next(dist.glob("attlens-*.tar.gz"))
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    want = {f"src/{f}" for f in package_data()} | {"pyproject.toml", "README.md"}
    assert not want - names, f"not in {sdist.name}: {sorted(want - names)}"


def test_installed_wheel_finds_its_files(dist, tmp_path):
    """The wheel alone, unpacked by pip into a folder of its own that comes
    first on the path (ahead of this environment's editable install, whose
    dependencies it uses): no source tree beside it."""
    whl = next(dist.glob("attlens-*.whl"))
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(site), str(whl)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    probe = (
        "import attlens, pathlib, sys\n"
        "from attlens import schemas\n"
        "from attlens.report import html\n"
        "root = pathlib.Path(attlens.__file__).parent\n"
        "assert str(root).startswith(sys.argv[1]), root\n"
        "assert schemas.bundle('plan')['title'] == 'attlens.plan'\n"
        "assert (root / 'report/templates/report.html').is_file()\n"
        "assert (root / 'skill/SKILL.md').read_text().startswith('---')\n"
        "assert (root / 'sweep/sweep.schema.json').is_file() and (root / 'sweep/example.toml').is_file()\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    r = subprocess.run([sys.executable, "-c", probe, str(site)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    r = subprocess.run([sys.executable, "-m", "attlens", "skill", "--path"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().startswith(str(site)), r.stdout + r.stderr


def quickstart(n: int) -> str:
    lines = (REPO / "README.md").read_text().splitlines()
    i = lines.index(f"<!-- quickstart:{n} -->")
    assert lines[i + 1] == "```sh" and lines[i + 3] == "```"
    return lines[i + 2]


def test_readme_quick_start_is_what_ci_runs():
    one, two = quickstart(1), quickstart(2)
    # (1) a virtual environment, the core alone (no extras), the demo
    assert one.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    assert "pip install -e . " in one and "[" not in one and one.endswith("attlens demo")
    # (2) the test extras into the same environment, then the tests
    assert two.startswith(". .venv/bin/activate && ") and "pip install -e '.[test]'" in two and "pytest" in two
    ci = (REPO / ".ci" / "run").read_text()
    assert 'quickstart 1' in ci and 'quickstart 2' in ci and 'bash -euo pipefail -c "$step1"' in ci and 'bash -euo pipefail -c "$step2"' in ci
    # .ci/run extracts exactly these lines (its awk program, run here on the README)
    awk = next(line for line in ci.splitlines() if line.strip().startswith("awk "))
    for n, want in ((1, one), (2, two)):
        got = subprocess.run(["bash", "-c", f"quickstart() {{ {awk.strip()}\n}}; quickstart {n}"], cwd=REPO, capture_output=True, text=True)
        assert got.stdout.strip() == want


def test_every_install_line_works_from_a_clone():
    """attlens is not on a package index: no `pip install attlens` or
    `'attlens[extra]'`; an extra after the quick start keeps the editable
    install (`pip install -e '.[extra]'`, never a plain `'.[extra]'`)."""
    import re

    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "skills/attlens/SKILL.md", *sorted(SRC.rglob("*.py")), SRC / "skill/SKILL.md"]
    bad = []
    for f in files:
        for k, line in enumerate(f.read_text().splitlines(), 1):
            if re.search(r"pip install\s+(-U\s+)?['\"]?attlens\b", line) or re.search(r"pip install\s+['\"]?\.\[", line):
                bad.append(f"{f.relative_to(REPO)}:{k}: {line.strip()}")
    assert not bad, "\n".join(bad)
