"""The Slurm engine against a real single-node Slurm started here: Debian's
slurm-wlm and munge (.ci/run installs them), munged + slurmctld + slurmd in the
foreground with their configuration, state and sockets in a temporary folder,
on 127.0.0.1 and free ports; four fake GPUs as a gpu gres backed by character
devices (/dev/null's numbers). Stopped at the end."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sweep_helpers import assert_exclusive, attempt_intervals, attlens, fake_runs, sweep_env, write_sweep

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _which(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)


class LocalSlurm:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="attlens-slurm-", dir="/tmp"))  # short: the munge socket path has a length limit
        self.procs: list[subprocess.Popen] = []
        self.node = socket.gethostname().split(".")[0]
        self.conf = self.dir / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self) -> None:
        d = self.dir
        for sub in ("run", "log", "ctld", "spool", "dev"):
            (d / sub).mkdir()
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        sock = d / "run" / "munge.sock"
        self._spawn([_which("munged"), "-F", "-f", f"--socket={sock}", f"--key-file={key}", f"--log-file={d / 'log/munged.log'}",
                     f"--pid-file={d / 'run/munged.pid'}", f"--seed-file={d / 'run/munged.seed'}"])
        self._until(sock.exists, "munged did not create its socket", d / "log/munged.log")
        for i in range(4):
            os.mknod(d / "dev" / f"gpu{i}", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        ctl, nd = _free_port(), _free_port()
        self.conf.write_text("\n".join([
            "ClusterName=attlenstest", f"SlurmctldHost={self.node}(127.0.0.1)", f"SlurmctldPort={ctl}", f"SlurmdPort={nd}",
            "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={sock}",
            f"StateSaveLocation={d / 'ctld'}", f"SlurmdSpoolDir={d / 'spool'}", f"SlurmctldPidFile={d / 'run/slurmctld.pid'}",
            f"SlurmdPidFile={d / 'run/slurmd.pid'}", f"SlurmctldLogFile={d / 'log/slurmctld.log'}", f"SlurmdLogFile={d / 'log/slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none", "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "MpiDefault=none", "MailProg=/bin/true", "ReturnToService=2",
            "GresTypes=gpu", "SlurmdParameters=config_overrides",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 Gres=gpu:4 State=UNKNOWN",
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP", ""]))
        (d / "gres.conf").write_text(f"NodeName={self.node} Name=gpu File={d / 'dev'}/gpu[0-3]\n")
        self._spawn([_which("slurmctld"), "-D", "-f", str(self.conf)])
        self._spawn([_which("slurmd"), "-D", "-f", str(self.conf), "-N", self.node])

        def idle():
            p = subprocess.run([_which("sinfo"), "-h", "-o", "%T"], capture_output=True, text=True, env=self.env)
            return p.returncode == 0 and p.stdout.strip() == "idle"

        self._until(idle, "the node did not become idle", d / "log/slurmctld.log")

    def _spawn(self, argv) -> None:
        self.procs.append(subprocess.Popen(argv, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL))

    def _until(self, pred, what: str, log: Path, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if pred():
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.2)
        tail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
        raise RuntimeError(f"local Slurm: {what}\n{tail}")

    def stop(self) -> None:
        subprocess.run([_which("scancel"), "--full", "-u", "root"], env=self.env, capture_output=True)
        for p in reversed(self.procs):
            p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm():
    why = [b for b in BINARIES if _which(b) is None]
    msg = None
    if why:
        msg = f"Slurm/munge not installed ({', '.join(why)} missing; apt-get install slurm-wlm munge)"
    elif os.geteuid() != 0:
        msg = "the local Slurm runs its daemons as root (SlurmUser=root) and makes gres device nodes: run as root"
    if msg:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + ": CI must run the Slurm engine test")
        pytest.skip(msg)
    s = LocalSlurm()
    try:
        s.start()
        yield s
    finally:
        s.stop()


def test_slurm_engine_runs_a_job_array(slurm, tmp_path):
    env = sweep_env(tmp_path)
    env["SLURM_CONF"] = str(slurm.conf)
    jobs = [{"name": f"g{i}"} for i in range(1, 5)] + [
        {"name": "flaky", "env": {"FAKE_ROCPROF_FAIL_TIMES": "1", "FAKE_ROCPROF_FAIL_STATE": str(tmp_path / "flaky.state")}},
        {"name": "nokernel", "kernel": "no_such_kernel"},
    ]
    sweep = write_sweep(tmp_path / "sweep.toml", jobs, {"argv": ["true"], "kernel": "vecAdd", "retries": 1, "backoff": 0.2,
                                                        "env": {"FAKE_ROCPROF_SLEEP": "0.3"}})
    out = tmp_path / "out"
    doc = json.loads(attlens(env, "sweep", "run", sweep, "--out", out, "--engine", "slurm", "--max-parallel", "3", "--wait", "--json",
                             code=31, timeout=600).stdout)
    assert doc["engine"] == "slurm" and doc["counts"] == {"pending": 0, "running": 0, "done": 5, "failed": 1}
    j = {x["job"]: x for x in doc["jobs"]}
    arrays = {x["slurm_job"].split("_")[0] for x in doc["jobs"]}
    assert len(arrays) == 1 and [x["slurm_job"].split("_")[1] for x in doc["jobs"]] == [str(i) for i in range(6)]
    assert [(a["outcome"], a["exit_code"]) for a in j["flaky"]["attempt_history"]] == [("retry", 14), ("done", 0)]
    assert j["nokernel"]["state"] == "failed" and j["nokernel"]["exit_code"] == 12 and j["nokernel"]["attempts"] == 1
    for name in ("g1", "g2", "g3", "g4", "flaky"):
        assert j[name]["state"] == "done" and (out / j[name]["report"]).is_file() and j[name]["summary"]["waves"] == 632

    script = (out / "slurm" / "array-1.sh").read_text()
    assert "#SBATCH --array=0-5%3" in script and "#SBATCH --gres=gpu:1" in script and "attlens.sweep.worker slurm-task" in script
    t = subprocess.run([shutil.which("sbatch") or "sbatch", "--test-only", str(out / "slurm" / "array-1.sh")], capture_output=True, text=True,
                       env=env)
    assert t.returncode == 0 and "to start at" in t.stderr, t.stderr

    # Slurm pinned every task to one GPU of its gres (attlens left its variables alone), one task per GPU at a time, ≤ 3 at once
    runs = fake_runs(tmp_path)
    assert runs and all(r["ROCR_VISIBLE_DEVICES"] in ("0", "1", "2", "3") and r["SLURM_JOB_GPUS"] == r["ROCR_VISIBLE_DEVICES"] for r in runs)
    iv = attempt_intervals(runs)
    assert_exclusive(iv)
    events = sorted([(v["start"], 1) for v in iv.values()] + [(v["end"], -1) for v in iv.values()], key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, d in events:
        level += d
        peak = max(peak, level)
    assert peak <= 3
    for name, info in j.items():
        for a in info["attempt_history"]:
            seen = iv.get((name, f"attempt-{a['attempt']}"))
            assert a["engine"] == "slurm" and (seen is None or seen["gpus"] == {a["gpu"]})

    # status reads the array's state; the tasks have left the queue
    st = json.loads(attlens(env, "sweep", "status", out, "--json").stdout)
    assert all(x["slurm_state"] in ("ENDED", "COMPLETED", "FAILED") for x in st["jobs"])

    # resume: only the failed job is submitted again, in a new array
    again = json.loads(attlens(env, "sweep", "run", sweep, "--out", out, "--engine", "slurm", "--json").stdout)
    assert again["submitted"]["tasks"] == 1 and again["submitted"]["array_id"] not in arrays
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        st = json.loads(attlens(env, "sweep", "status", out, "--json").stdout)
        k = {x["job"]: x for x in st["jobs"]}["nokernel"]
        if k["state"] == "failed" and k["attempts"] == 2:
            break
        time.sleep(0.5)
    assert k["state"] == "failed" and k["attempts"] == 2 and k["slurm_job"] == f"{again['submitted']['array_id']}_0"
    assert {x["job"]: x["attempts"] for x in st["jobs"] if x["job"] != "nokernel"} == {n: x["attempts"] for n, x in j.items() if n != "nokernel"}
