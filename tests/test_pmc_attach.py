"""report --pmc: counters are attached only to the capture they describe
(kernel, target, dispatch), or with --force and a label saying what differs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from attlens.analysis.pmc import PmcCounters
from attlens.analysis.pmc_attach import attach_pmc, kernel_base_name
from attlens.errors import Incomparable
from conftest import require_shared

VEC = "traces/vec_add/big/ui_output_agent_14705_dispatch_25"
HEAD = ["Correlation_Id", "Dispatch_Id", "Agent_Id", "Process_Id", "Kernel_Name", "Counter_Name", "Counter_Value", "Start_Timestamp", "End_Timestamp"]


def run(*args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stdout + p.stderr
    assert p.returncode == code, p.stderr
    return p


def page_data(html_path) -> dict:
    html = html_path.read_text()
    block = re.search(r'<script type="application/json" id="attlens-data">(.*?)</script>', html, re.S).group(1)
    return json.loads(block)


def counters(tmp_path, shared, kernel="vecAddKernel_0", dispatch=25, hits=300, misses=100):
    """A rocprofv3 counter_collection.csv of one dispatch, with the run's agent_info.csv (gfx950) beside it."""
    d = tmp_path / f"pmc-{kernel}-{dispatch}"
    d.mkdir()
    rows = [[1, dispatch, "Agent 2", 77, kernel, name, value, 1000, 21000] for name, value in (("TCC_HIT_sum", hits), ("TCC_MISS_sum", misses))]
    (d / "77_counter_collection.csv").write_text("\n".join(",".join(map(str, r)) for r in [HEAD, *rows]) + "\n")
    shutil.copy(shared / "traces/vec_add/rocprofv3/big_agent_info.csv", d / "77_agent_info.csv")
    return d


def test_kernel_base_names():
    for name in ("vecCopy(double*, double*, double*, int, int)", "_Z7vecCopyPdS_S_ii", "vecCopy", "void vecCopy<4>(double*)",
                 "vecCopy(double*, double*, double*, int, int) (.kd)", "ns::detail::vecCopy"):
        assert kernel_base_name(name) == "vecCopy", name
    assert kernel_base_name("_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT0_") == "vectorized_elementwise_kernel"
    assert kernel_base_name("void at::native::(anonymous namespace)::distribution_kernel<float>(int)") == "distribution_kernel"
    assert kernel_base_name("vecAddKernel_0") != kernel_base_name("vecCopy")
    assert kernel_base_name(None) is None


def test_mi300x_copy_counters_are_refused_on_a_gfx950_add_report(tmp_path):
    """The issue's case: the shared MI300X vecCopy counters on the gfx950 vec_add capture."""
    shared = require_shared()
    pmc = shared / "rocprofv3-samples/rocprof-compute-vcopy/MI300X_A1"
    p = run("report", shared / VEC, "--pmc", pmc, "-o", tmp_path / "r.html", code=21)
    err = p.stderr
    assert "do not belong to this capture" in err and "vecAddKernel_0" in err and "vecCopy" in err
    assert "target gfx950 (capture) vs gfx942 (counters)" in err and "dispatch 25 (capture) vs 0 (counters)" in err and "--force" in err
    assert not (tmp_path / "r.html").exists()
    p = run("report", shared / VEC, "--pmc", pmc, "-o", tmp_path / "r.html", "--force", "--json")
    assert "counters attached to" in p.stderr and "with --force" in p.stderr
    label = json.loads(p.stdout)["captures"][0]["pmc"]
    assert label["forced"] and {c["field"]: c["match"] for c in label["checks"]} == {"kernel": False, "target": False, "dispatch": False}
    block = page_data(tmp_path / "r.html")["pmc"]
    assert block["attached"] == label and block["target"]["name"] == "gfx942" and block["dispatch_id"] == 0


def test_matching_counters_are_attached_and_labelled(tmp_path):
    shared = require_shared()
    good = counters(tmp_path, shared)
    doc = json.loads(run("report", shared / VEC, "--pmc", good, "-o", tmp_path / "ok.html", "--json").stdout)
    label = doc["captures"][0]["pmc"]
    assert not label["forced"] and all(c["match"] for c in label["checks"])
    assert label["kernel"] == "vecAddKernel_0" and label["dispatch_id"] == 25 and label["target"] == "gfx950"
    block = page_data(tmp_path / "ok.html")["pmc"]
    assert block["l2"]["hit_rate"] == 0.75 and "counter_collection.csv" in block["attached"]["source"]
    # the same kernel and GPU, another dispatch: refused too
    other = counters(tmp_path, shared, dispatch=26)
    assert "dispatch 25 (capture) vs 26 (counters)" in run("report", shared / VEC, "--pmc", other, "-o", tmp_path / "x.html", code=21).stderr


def test_index_attaches_only_where_counters_match(tmp_path):
    shared = require_shared()
    good = counters(tmp_path, shared)
    rms = shared / "traces/rmsnorm/big/ui_output_agent_19276_dispatch_18"
    p = run("report", shared / VEC, rms, "--pmc", good, "-o", tmp_path / "site" / "index.html", "--json")
    caps = {c["kernel"]: c for c in json.loads(p.stdout)["captures"]}
    assert caps["vecAddKernel_0"]["pmc"]["dispatch_id"] == 25 and caps["vecAddKernel_0"]["pmc_refused"] is None
    rms_entry = next(c for k, c in caps.items() if k != "vecAddKernel_0")
    assert rms_entry["pmc"] is None and "do not belong" in rms_entry["pmc_refused"]
    assert f"no counters attached to {rms}" in p.stderr
    assert page_data(tmp_path / "site" / rms_entry["report"].rsplit("/", 1)[-1])["pmc"] is None


def test_attach_prefers_the_matching_dispatch_and_unknown_is_not_a_mismatch():
    from attlens.analysis.pmc import PmcResult

    def res(did, kernel, target="gfx950"):
        return PmcResult(target=target, product="MI350X", xcc=8, peak_hbm_gbps=8000.0, peak_source="x", l2_line_bytes=128, dispatch_id=did, kernel=kernel)

    c = PmcCounters([res(3, "other"), res(7, "k(int)"), res(9, "k(int)")], "f.csv", "gfx950")
    att = attach_pmc(c, "k", "gfx950", 9)
    assert att.result.dispatch_id == 9 and not att.mismatches
    att = attach_pmc(PmcCounters([res(4, None)], "f.csv", "gfx950"), "k", None, None)
    assert [ch["match"] for ch in att.checks] == [None, None, None], "nothing to compare: attached, and the label says so"
    with pytest.raises(Incomparable, match="counter dispatches: 3, 7, 9"):
        attach_pmc(c, "k", "gfx950", 8)
    forced = attach_pmc(c, "k", "gfx950", 8, force=True)
    assert forced.result.dispatch_id == 7 and [m["field"] for m in forced.mismatches] == ["dispatch"]
