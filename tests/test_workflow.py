"""The Snakemake workflow itself: lint, dry runs of every preset, bad config and data errors."""

from __future__ import annotations

import json
import os
import re

import pytest

from conftest import REPO_ROOT, run_snakemake

# Lints we keep on purpose (justified in docs/reproducibility.md, "Lints we accept"). Anything else fails the test.
ACCEPTED_LINTS = {"Specify a conda environment or container for each rule."}


def test_lint_only_justified(tmp_path):
    proc = run_snakemake(["--lint"], cwd=REPO_ROOT, check=False)
    titles = set(re.findall(r"^\s+\* (.+?):\s*$", proc.stdout + proc.stderr, flags=re.M))
    assert titles <= ACCEPTED_LINTS, f"unexpected lints: {titles - ACCEPTED_LINTS}\n{proc.stdout}{proc.stderr}"
    justified = (REPO_ROOT / "docs" / "reproducibility.md").read_text()
    for title in ACCEPTED_LINTS:
        assert title.rstrip(".") in justified, f"accepted lint not justified in docs/reproducibility.md: {title}"


@pytest.mark.parametrize("preset", ["config/config.yaml", "config/paper.yaml", "config/smoke.yaml"])
def test_dry_run(preset, workflow_dir):
    proc = run_snakemake(["-n", "all", "--configfile", preset], cwd=workflow_dir)
    out = proc.stdout + proc.stderr
    assert "rule all" in out or "all" in out
    assert "prepare_data" in out  # the data stage is always planned on a fresh folder
    assert not (workflow_dir / "results").exists(), "a dry run must not write results"


def test_dry_run_imports_no_torch(workflow_dir, tmp_path):
    """Building the DAG imports nothing heavy: `snakemake -n all` works where `import torch` fails."""
    shim = tmp_path / "no_torch" / "torch"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("torch is blocked in this test")\n')
    env = {"PYTHONPATH": os.pathsep.join([str(shim.parent), str(REPO_ROOT)])}
    proc = run_snakemake(["-n", "all", "--configfile", "config/smoke.yaml"], cwd=workflow_dir, env=env)
    assert "report" in proc.stdout + proc.stderr


def _inan_train_specs(workflow_dir, *configfiles) -> dict[str, dict]:
    """variant -> the spec the dry run would hand to `python -m replicate inan train`."""
    args = ["-n", "-p", "--forceall", "results/tables/inan_table1.csv", "--configfile", *configfiles]
    out = run_snakemake(args, cwd=workflow_dir).stdout
    specs = [json.loads(m) for m in re.findall(r"inan train --spec '(\{.*?\})' --corpus", out)]
    return {s["variant"]: s for s in specs}


def test_soft_target_grad_per_variant(workflow_dir):
    """`inan.soft_target_grad` reaches each Table 1 job: a mapping per variant, a boolean for every variant."""
    specs = _inan_train_specs(workflow_dir, "config/config.yaml")
    assert set(specs) == {"vd", "al", "re", "real"}
    grad = {v: s["size_settings"]["soft_target_grad"] for v, s in specs.items()}
    assert grad == {"vd": False, "al": False, "re": False, "real": True}  # the default preset's mapping
    (workflow_dir / "all_on.yaml").write_text("inan:\n  soft_target_grad: true\n")
    specs = _inan_train_specs(workflow_dir, "config/config.yaml", "all_on.yaml")
    assert all(s["size_settings"]["soft_target_grad"] for s in specs.values())


def test_bad_config_stops_with_cause(workflow_dir):
    (workflow_dir / "bad.yaml").write_text("protocol: reduced\ndata:\n  download_timeout: -1\n")
    proc = run_snakemake(["-n", "all", "--configfile", "bad.yaml"], cwd=workflow_dir, check=False)
    assert proc.returncode != 0
    assert "download_timeout" in proc.stderr + proc.stdout or "-1" in proc.stderr + proc.stdout


def test_missing_local_data_names_fix(workflow_dir, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_snakemake(["--cores", "1", "results/data/ptb/stats.json", "--configfile", "config/smoke.yaml"],
                         cwd=workflow_dir, env={"REPLICATE_DATA_DIR": str(empty)}, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "local data file missing" in out and "ptb.train.txt" in out and "REPLICATE_DATA_DIR" in out
    assert not (workflow_dir / "results/data/raw/ptb").exists(), "failed fetch must not leave an output"


@pytest.mark.slow
def test_smoke_data_stage(smoke_run):
    stats = json.loads((smoke_run / "results/data/ptb/stats.json").read_text())
    assert stats["tokens"]["train"] == 929_589
    assert stats["provenance"]["config"] == {"dataset": "ptb"}
    assert "git" in stats["provenance"] and "packages" in stats["provenance"]
    summary = (smoke_run / "results/data/summary.md").read_text()
    assert "| ptb | 10,000 | 929,589 |" in summary and "| wikitext2 | 33,278 |" in summary


@pytest.mark.slow
def test_code_change_reruns_dependent_rules(smoke_run):
    """Editing package code changes the `code` params of the rules that run it (rerun trigger)."""
    proc = run_snakemake(["-n", "all", "--configfile", "config/smoke.yaml"], cwd=smoke_run)
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
