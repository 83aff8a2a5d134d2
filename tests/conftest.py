"""Shared fixtures: paths, the data folder, and a Snakemake runner for end-to-end tests (the helpers
behind them: support/workflow.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.workflow import REPO_ROOT, SMOKE_RESULTS, data_dir, run_snakemake, workflow_copy  # noqa: F401


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session", name="data_dir")
def data_dir_fixture() -> Path:
    return data_dir()


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
    check an experiment's outputs. Returns the workflow folder (SMOKE_RESULTS inside)."""
    wd = workflow_copy(tmp_path_factory.mktemp("smoke"))
    run_snakemake(["--cores", "2", "all", "--configfile", "config/smoke.yaml"], cwd=wd, timeout=1200)
    return wd
