"""Every snakemake command in a bash block of README.md and docs/*.md plans (`-n`) and exits 0, so that
no documented command rots (a recipe with its targets after --configfile once failed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support.workflow import REPO_ROOT, SNAKEMAKE, data_dir, workflow_copy

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
# the command word: snakemake, or a path to it (.venv/bin/snakemake), after any VAR=value assignments
_SNAKEMAKE = re.compile(r"^((?:[A-Z_][A-Z0-9_]*=\S*\s+)*)(?:\S*/)?snakemake(?=\s|$)")


def bash_commands(path: Path) -> list[tuple[int, str]]:
    """(line number, command) of every command in the page's ```bash blocks, continuation lines joined."""
    out, in_bash, pending, start = [], False, "", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^\s*(```|~~~)\s*(\w*)", line)
        if fence:
            in_bash = not in_bash and fence.group(2) in ("bash", "sh", "shell")
            continue
        if not in_bash:
            continue
        if not pending:
            start = number
        pending += line.strip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        out.append((start, pending))
        pending = ""
    return out


def documented_snakemake_commands() -> list[tuple[str, str]]:
    """(page:line, command) of every documented command whose command word is snakemake."""
    found = []
    for page in PAGES:
        for number, cmd in bash_commands(page):
            if _SNAKEMAKE.match(cmd):
                found.append((f"{page.relative_to(REPO_ROOT)}:{number}", cmd))
    return found


def as_dry_run(cmd: str) -> str:
    """The command with `-n` after the snakemake word (this environment's), the data folder taken from
    the test environment and a trailing `&` dropped."""
    cmd = re.sub(r"\s*&\s*(#.*)?$", "", cmd)
    cmd = re.sub(r"\bREPLICATE_DATA_DIR=\S+\s+", "", cmd)
    return _SNAKEMAKE.sub(lambda m: f'{m.group(1)}"$SNAKEMAKE" -n', cmd, count=1)


def test_the_pages_document_snakemake_commands():
    """The scan itself finds the commands (a changed fence style would otherwise pass everything)."""
    where = {w.split(":")[0] for w, _ in documented_snakemake_commands()}
    assert {"README.md", "docs/cluster.md", "docs/press_wolf.md"} <= where
    assert as_dry_run("CUDA_VISIBLE_DEVICES=0 .venv/bin/snakemake --cores 4 x &") == \
        'CUDA_VISIBLE_DEVICES=0 "$SNAKEMAKE" -n --cores 4 x'


@pytest.fixture(scope="module")
def docs_workflow(tmp_path_factory) -> Path:
    wd = workflow_copy(tmp_path_factory.mktemp("doc_commands"))
    # docs/cluster.md makes this copy (`cp -r profiles/slurm profiles/mysite`) before it uses it
    shutil.copytree(wd / "profiles" / "slurm", wd / "profiles" / "mysite")
    return wd


# `snakemake --report` reads a finished run (Snakemake ignores -n there): on a fresh folder the most it can do
# is load the workflow and find the files missing. tests/test_report_build.py runs it on the smoke run.
NEEDS_A_FINISHED_RUN = "marked for report but does not exist"


# `snakemake --cores N TARGET ...` and nothing else (most of the recipes): planned together in one dry run,
# since a union of targets plans iff each target does; a failure falls back to planning each alone.
_TARGETS_ONLY = re.compile(r"^snakemake --cores (\d+)((?: [^\s#-][^\s#]*)+)\s*(#.*)?$")


def _dry_run(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SNAKEMAKE": SNAKEMAKE, "REPLICATE_DATA_DIR": str(data_dir()),
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(["bash", "-c", as_dry_run(cmd)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_targets_only_commands_are_recognised():
    assert _TARGETS_ONLY.match("snakemake --cores 2 results/tables/x.csv 'a@b=1/seed2/m.json'   # a comment")
    assert not _TARGETS_ONLY.match("snakemake --cores 2 --forcerun prepare_data all")
    assert not _TARGETS_ONLY.match("snakemake --cores 2 results/x.csv --set-threads r=1")


@pytest.fixture(scope="module")
def targets_only_plan(docs_workflow) -> subprocess.CompletedProcess:
    """One dry run of every targets-only command's targets together."""
    targets = [m.group(2).strip() for _, cmd in documented_snakemake_commands() if (m := _TARGETS_ONLY.match(cmd))]
    assert len(targets) >= 10, "the pages' simple recipes were not found"
    return _dry_run(f"snakemake --cores 2 {' '.join(targets)}", docs_workflow)


@pytest.mark.parametrize(("where", "cmd"), documented_snakemake_commands(), ids=lambda v: v if ":" in v else "")
def test_documented_command_plans(where, cmd, docs_workflow, request):
    if _TARGETS_ONLY.match(cmd) and request.getfixturevalue("targets_only_plan").returncode == 0:
        return  # planned with the other targets-only commands
    proc = _dry_run(cmd, docs_workflow)
    out = proc.stdout + proc.stderr
    if " --report " in f" {cmd} " and NEEDS_A_FINISHED_RUN in out:
        return
    assert proc.returncode == 0, f"{where}: `{cmd}` does not plan:\n{out[-6000:]}"
