"""attlens pmc from the command line, on the real vcopy outputs."""

import json
import subprocess
import sys

from conftest import require_shared

MIB8 = 8 * 1024 * 1024


def run(*args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stdout + p.stderr
    assert p.returncode == code, p.stderr
    return p


def test_pmc_reads_vcopy_and_detects_targets():
    shared = require_shared()
    for gpu in ("MI300X_A1", "MI350"):
        doc = json.loads(run("pmc", shared / f"rocprofv3-samples/rocprof-compute-vcopy/{gpu}", "--ideal-bytes", MIB8, "--json").stdout)
        assert doc["schema"] == "attlens.pmc" and len(doc["dispatches"]) == 3
        for d in doc["dispatches"]:
            assert d["write"]["bytes"] == MIB8
            r = d["read"]
            lo, hi = r["bytes_range"] if r["bytes"] is None else (r["bytes"], r["bytes"])
            assert MIB8 <= hi <= MIB8 * 1.005


def test_pmc_plan_and_usage_errors():
    doc = json.loads(run("pmc", "--plan", "--target", "gfx950", "--json").stdout)
    assert doc["passes"] and all(sum(1 for c in p if c.startswith("TCC")) <= 4 for p in doc["passes"])
    assert "needs --target" in run("pmc", "--plan", code=2).stderr
    assert "give a counter_collection" in run("pmc", code=2).stderr
    assert run("pmc", "/nonexistent/x.csv", code=3).stderr.startswith("attlens: error:")
