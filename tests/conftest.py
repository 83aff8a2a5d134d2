"""Shared fixtures: paths, the shared data folder, and a Snakemake runner for end-to-end tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO_ROOT / ".." / "shared" / "data").resolve()
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "ptb" / "ptb.train.txt").is_file():
        pytest.fail(f"shared data not found at {SHARED_DATA}; tests need ../shared/data next to the repo")
    return SHARED_DATA


def workflow_copy(dest: Path) -> Path:
    """A copy of the workflow (no results, no .snakemake) to run Snakemake in isolation."""
    for name in ("Snakefile", "workflow", "config", "profiles", "paper"):
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def run_snakemake(args: list[str], cwd: Path, timeout: float = 900, env: dict | None = None,
                  check: bool = True) -> subprocess.CompletedProcess:
    """Run the snakemake CLI of this interpreter's environment in ``cwd``."""
    full_env = dict(os.environ)
    # A relative REPLICATE_DATA_DIR (the README's ../shared/data) is relative to where pytest started;
    # make it absolute because Snakemake runs in a temporary copy of the workflow.
    full_env["REPLICATE_DATA_DIR"] = str(Path(full_env.get("REPLICATE_DATA_DIR", SHARED_DATA)).resolve())
    full_env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    proc = subprocess.run([SNAKEMAKE, *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture
def snakemake_runner():
    return run_snakemake


@pytest.fixture
def workflow_dir(tmp_path) -> Path:
    """An isolated copy of the workflow in a temporary folder."""
    return workflow_copy(tmp_path)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """ONE end-to-end smoke run of the whole DAG (config/smoke.yaml), shared by all tests that
    check an experiment's outputs. Returns the workflow folder (results/ inside)."""
    wd = workflow_copy(tmp_path_factory.mktemp("smoke"))
    run_snakemake(["--cores", "2", "all", "--configfile", "config/smoke.yaml"], cwd=wd, timeout=1200)
    return wd
