"""Shared fixtures: paths, the data folder, and a Snakemake runner for end-to-end tests (the helpers
behind them: support/workflow.py)."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest
import torch

from support.workflow import REPO_ROOT, SMOKE_RESULTS, data_dir, run_snakemake, workflow_copy  # noqa: F401


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session", name="data_dir")
def data_dir_fixture() -> Path:
    return data_dir()


@pytest.fixture(params=["compiled", "torch"])
def row_path(request, monkeypatch):
    """Run the output layer's row passes one way: compiled for the CPU (kernels.cpp; skipped on a CPU
    without AVX2) or as torch operations (the path a GPU takes)."""
    from replicate.lstm import kernels

    if request.param == "torch":
        monkeypatch.setattr(kernels, "_cpu_rows_usable", lambda z: False)
    elif not kernels._cpu_rows_usable(torch.zeros(1)):
        pytest.skip("the compiled row passes need a CPU with AVX2")
    return request.param


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
    check an experiment's outputs. Returns the workflow folder (SMOKE_RESULTS inside).

    Under pytest-xdist (`pytest -n auto`) the workers share it too: the first worker that needs it runs it
    under a file lock in the session's temporary folder, the others wait for it and reuse it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # each worker's folder sits in the session's folder
    wd, done = root / "smoke", root / "smoke.done"
    with open(root / "smoke.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.is_file():
            shutil.rmtree(wd, ignore_errors=True)  # a worker's failed attempt
            wd.mkdir()
            run_snakemake(["--cores", "2", "all", "--configfile", "config/smoke.yaml"], cwd=workflow_copy(wd),
                          timeout=1200)
            done.touch()
    return wd
