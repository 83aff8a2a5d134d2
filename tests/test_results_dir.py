"""A preset's results folder (config key results_dir): the smoke preset writes nothing under results/."""

from __future__ import annotations

import re

from support.workflow import SMOKE_RESULTS, run_snakemake


def planned_paths(dry_run_output: str) -> list[str]:
    """Every output, log and benchmark file of a full `snakemake -n` plan (REPLICATE_FULL_PLAN set)."""
    found = []
    for m in re.finditer(r"^\s+(?:output|log|benchmark): (.+)$", dry_run_output, flags=re.M):
        found += [p.strip() for p in m.group(1).split(",")]
    return found


def test_smoke_plan_writes_only_under_its_own_folder(workflow_dir):
    proc = run_snakemake(["-n", "all", "--configfile", "config/smoke.yaml"], cwd=workflow_dir)
    planned = planned_paths(proc.stdout + proc.stderr)
    assert len(planned) > 50, "the plan should list the whole smoke DAG's files"
    outside = [p for p in planned if not p.startswith(f"{SMOKE_RESULTS}/")]
    assert not outside, f"the smoke preset would write outside {SMOKE_RESULTS}/: {outside[:5]}"


def test_default_preset_keeps_results(workflow_dir):
    proc = run_snakemake(["-n", "results/tables/press_wolf_table6.csv"], cwd=workflow_dir)
    planned = planned_paths(proc.stdout + proc.stderr)
    assert planned and all(p.startswith("results/") for p in planned), planned[:5]
