"""The SLURM profile against a real SLURM: a local single-node cluster, started by the script named in
REPLICATE_SLURM_START (CI sets it).

Runs a subset of the smoke DAG through `--profile profiles/slurm` (the real profile; only the
local-cluster keys come from tests/profiles/slurm-local): the PTB data stage, one Press & Wolf training
cell and the initial-loss sweep (its first width only) with its table, which is a `localrule` and must
run here, not in SLURM: 4 SLURM jobs + 1 local job. Checks that every remote job is COMPLETED in `sacct`, that the SLURM requests are the
resource estimates of workflow/rules/resources.smk, and that the outputs equal a local run's of the same
targets (deterministic content; timings, hosts and provenance excluded). The local run is the test's own
(same targets, --cores 2), not the session's whole-DAG `smoke_run`: that costs many minutes on a loaded
2-core machine and would make this test depend on every experiment.

Skips only when the cluster cannot be started (not root, no start script, the start script fails);
set REPLICATE_REQUIRE_SLURM=1 to make that a failure instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from support.workflow import REPO_ROOT, SMOKE_RESULTS, SNAKEMAKE, data_dir, run_snakemake, workflow_copy
from replicate import compare

pytestmark = pytest.mark.slurm

START_SCRIPT = Path(os.environ.get("REPLICATE_SLURM_START", "")).expanduser()  # starts (or reuses) the cluster
TEST_PROFILE = REPO_ROOT / "tests" / "profiles" / "slurm-local"
SLURM_RULES = {"prepare_data", "press_wolf_train", "initial_loss_sweep"}
LOCAL_RULES = {"initial_loss_tables"}
TIMEOUT_S = 900  # hard limit of the SLURM snakemake run (timeout -k); ~2-4 min normally


def _cannot_start(reason: str):
    if os.environ.get("REPLICATE_REQUIRE_SLURM") == "1":
        pytest.fail(f"local SLURM cannot start (REPLICATE_REQUIRE_SLURM=1): {reason}")
    pytest.skip(f"local SLURM cannot start: {reason}")


def test_ci_makes_the_cluster_required(monkeypatch):
    """CI (.ci/run) exports REPLICATE_REQUIRE_SLURM=1, under which a cluster that cannot start fails."""
    assert re.search(r"^export REPLICATE_REQUIRE_SLURM=1$", (REPO_ROOT / ".ci/run").read_text(), flags=re.M)
    monkeypatch.setenv("REPLICATE_REQUIRE_SLURM", "1")
    with pytest.raises(pytest.fail.Exception, match="cannot start"):
        _cannot_start("no start script")


@pytest.fixture(scope="module")
def local_slurm():
    """Start (or reuse) the local cluster; returns the seconds the start script took."""
    if not os.environ.get("REPLICATE_SLURM_START") or not START_SCRIPT.is_file():
        _cannot_start(f"no start script: set REPLICATE_SLURM_START to a script that starts a local SLURM "
                      f"(now {os.environ.get('REPLICATE_SLURM_START')!r})")
    if os.geteuid() != 0:
        _cannot_start("the start script must run as root")
    t0 = time.monotonic()
    for _ in range(18):  # another apt/dpkg (e.g. a package install of a parallel job) may hold the lock
        proc = subprocess.run(["bash", str(START_SCRIPT)], capture_output=True, text=True, timeout=600)
        if proc.returncode == 0 or "lock" not in (proc.stdout + proc.stderr).lower():
            break
        time.sleep(10)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        _cannot_start(f"start script exited {proc.returncode}: {(proc.stdout + proc.stderr)[-1500:]}")
    print(f"local SLURM ready after {seconds:.1f} s")
    return seconds


def _smoke_subset() -> tuple[list[str], str, int, dict]:
    """Targets, the training cell and seed, and the config overrides (on top of config/smoke.yaml) of the
    subset: the first smoke cell and only the first sweep width (fewer SLURM jobs on 2 cores)."""
    smoke = yaml.safe_load((REPO_ROOT / "config" / "smoke.yaml").read_text())
    pw = smoke["press_wolf"]
    cell, seed = pw["cells"][0], pw.get("seeds", [1])[0]
    targets = [
        f"{SMOKE_RESULTS}/data/{pw.get('dataset', 'ptb')}/stats.json",
        f"{SMOKE_RESULTS}/press_wolf/{cell}/seed{seed}/metrics.json",
        f"{SMOKE_RESULTS}/tables/initial_loss_summary.csv",
    ]
    overrides = {"initial_loss": {"widths": smoke["initial_loss"]["widths"][:1]}}
    return targets, cell, seed, overrides


def _start_slurm_run(wd: Path, targets: list[str]) -> subprocess.Popen:
    env = dict(os.environ)
    env["REPLICATE_DATA_DIR"] = str(Path(env.get("REPLICATE_DATA_DIR") or data_dir()).resolve())
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = ["timeout", "-k", "10", str(TIMEOUT_S), SNAKEMAKE, *targets,
           "--profile", "profiles/slurm", "--workflow-profile", str(TEST_PROFILE),
           "--configfile", "config/smoke.yaml", "subset.yaml"]
    # output to a file: a pipe nobody reads while the local run goes on would fill up and stall snakemake
    with open(wd / "slurm-run.log", "w") as log:
        return subprocess.Popen(cmd, cwd=wd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


def _finish_slurm_run(proc: subprocess.Popen, wd: Path) -> str:
    proc.wait(timeout=TIMEOUT_S + 60)
    out = (wd / "slurm-run.log").read_text()
    if proc.returncode != 0:  # do not leave our jobs queued behind a failed or killed run
        ids = re.findall(r"SLURM jobid (\d+)", out)
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True)
    return out


def _submitted(output: str) -> dict[str, str]:
    """SLURM job id -> rule, from the plugin's 'submitted with SLURM jobid N (log: .../rule_X/...)' lines."""
    return {jid: rule for jid, rule in
            re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*?/slurm_logs/rule_([A-Za-z0-9_]+)/", output)}


def _sacct(ids: list[str]) -> dict[str, dict[str, str]]:
    """State, requested memory and time limit of the jobs; waits a little for slurmdbd to catch up."""
    rows: dict[str, dict[str, str]] = {}
    for _ in range(30):
        out = subprocess.run(["sacct", "-X", "-n", "-P", "-j", ",".join(ids), "-o", "JobID,State,ReqMem,Timelimit"],
                             capture_output=True, text=True, check=True).stdout
        rows = {}
        for line in out.splitlines():
            jid, state, mem, limit = line.split("|")
            rows[jid] = {"state": state, "mem": mem, "limit": limit}
        if set(rows) >= set(ids) and all(r["state"] == "COMPLETED" for r in rows.values()):
            break
        time.sleep(1)
    return rows


def _minutes(limit: str) -> int:
    days, _, hms = limit.rpartition("-")
    h, m, s = (int(x) for x in hms.split(":"))
    return (int(days) if days else 0) * 1440 + h * 60 + m + (1 if s else 0)


def _compare_results(slurm_dir: Path, local_dir: Path) -> list[str]:
    """Compare every JSON and CSV result of the SLURM run with the local run's (replicate.compare: timings
    and provenance aside); returns what was compared."""
    compared = []
    for rel in sorted(compare.files(slurm_dir / SMOKE_RESULTS)):
        if not rel.endswith((".json", ".csv")):
            continue
        path, other = slurm_dir / SMOKE_RESULTS / rel, local_dir / SMOKE_RESULTS / rel
        assert other.is_file(), f"{SMOKE_RESULTS}/{rel} exists in the SLURM run but not in the local run"
        why = compare.difference(path, other)
        assert why is None, f"{SMOKE_RESULTS}/{rel} differs between SLURM and local run: {why}"
        compared.append(f"{SMOKE_RESULTS}/{rel}")
    return compared


def test_smoke_subset_through_slurm_equals_local_run(local_slurm, tmp_path):
    from replicate import resources as res
    from replicate.data import load_corpus
    from replicate.lstm.config import resolve
    from replicate.press_wolf.cells import cell_settings

    targets, cell, seed, overrides = _smoke_subset()
    local, wd = tmp_path / "local", tmp_path / "slurm"
    for folder in (local, wd):
        folder.mkdir()
        workflow_copy(folder)
        (folder / "subset.yaml").write_text(yaml.safe_dump(overrides))
    # the SLURM run mostly waits (queue, status polls): run the local reference beside it
    t0 = time.monotonic()
    slurm = _start_slurm_run(wd, targets)
    try:
        run_snakemake(["--cores", "2", *targets, "--configfile", "config/smoke.yaml", "subset.yaml"], cwd=local,
                      timeout=900)
        print(f"local run of {targets}: {time.monotonic() - t0:.0f} s")
    finally:
        out = _finish_slurm_run(slurm, wd)
    seconds = time.monotonic() - t0
    assert slurm.returncode == 0, f"SLURM run failed ({slurm.returncode}, 124/137 = timeout):\n{out[-8000:]}"
    print(f"SLURM run of {targets}: {seconds:.0f} s (cluster start {local_slurm:.1f} s)")

    # every heavy job went through SLURM, the localrule did not
    jobs = _submitted(out)
    assert set(jobs.values()) == SLURM_RULES, f"rules submitted to SLURM: {sorted(set(jobs.values()))}\n{out[-4000:]}"
    for rule in LOCAL_RULES:
        assert f"localrule {rule}:" in out, f"{rule} should run locally (localrules)"
        assert rule not in jobs.values()

    # ... and sacct lists them all as COMPLETED
    acct = _sacct(list(jobs))
    assert set(acct) == set(jobs), f"sacct lacks jobs: {set(jobs) - set(acct)}"
    assert all(r["state"] == "COMPLETED" for r in acct.values()), acct

    # the training job asked SLURM for the model-size estimate (resources.smk -> replicate/resources.py)
    smoke = yaml.safe_load((wd / "config" / "smoke.yaml").read_text())["press_wolf"]
    dataset = smoke.get("dataset", "ptb")
    shape = res.corpus_shape(dataset)
    model, train = resolve(cell_settings(cell, smoke.get("overrides", {}), seed=seed), shape["vocab"])
    (train_job,) = [j for j, r in jobs.items() if r == "press_wolf_train"]
    threads = smoke.get("threads", 2)
    est = res.lstm_estimate(model, train, shape, "cpu", threads)
    assert acct[train_job]["mem"] == f"{est.mem_mb}M", (acct[train_job], est)
    assert _minutes(acct[train_job]["limit"]) == est.runtime_min, (acct[train_job], est)

    # the outputs equal the local run's
    compared = _compare_results(wd, local)
    for target in targets:
        assert target in compared, f"{target} not compared ({compared})"
    a, b = load_corpus(wd / SMOKE_RESULTS / f"data/{dataset}/corpus.pt"), load_corpus(local / SMOKE_RESULTS / f"data/{dataset}/corpus.pt")
    assert a.vocab == b.vocab
    for split in ("train", "valid", "test"):
        assert getattr(a, split).equal(getattr(b, split)), split
    print(f"compared with the local run: {compared} + corpus.pt", file=sys.stderr)
