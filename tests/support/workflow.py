"""Running Snakemake on a copy of the workflow and reading what it printed."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pooch

from replicate import console, data

REPO_ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
SMOKE_RESULTS = "results_smoke"  # config/smoke.yaml's results_dir: a smoke run never writes to results/


@functools.cache
def data_dir() -> Path:
    """The raw data sets: the folder in REPLICATE_DATA_DIR if set, otherwise the pipeline's own verified
    download into the user cache folder (done once; later sessions find the verified files there)."""
    if os.environ.get(data.ENV_LOCAL_DIR):
        return Path(os.environ[data.ENV_LOCAL_DIR]).expanduser().resolve()
    cache = Path(pooch.os_cache("replicate-tying")) / "data"
    for name, src in data.DATASETS.items():
        data.fetch(name, cache / src.folder)
    return cache


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
    if data.ENV_LOCAL_DIR not in (env or {}):
        # absolute: Snakemake runs in a temporary copy of the workflow
        full_env[data.ENV_LOCAL_DIR] = str(data_dir())
    full_env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    # tests read the printed commands whole; tests/test_plan_lines.py checks the short plan
    full_env[console.ENV_FULL_PLAN] = "1"
    if env:
        full_env.update(env)
    proc = subprocess.run([SNAKEMAKE, *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")
    return proc


def inan_specs(*configfiles: str, kind: str = "table1") -> list[dict]:
    """The spec (its training rule's `spec` param) of each Inan run of ``kind`` (table1 | ablation | screen) that
    the config files define, as replicate/inan/runs.py resolves it."""
    from replicate import experiments

    config = experiments.load_config([str(REPO_ROOT / f) for f in configfiles])
    sc = config["inan"]["screen"]
    ids = ([f"screen/{sc['dataset']}/{sc['size']}_{r['variant']}_{r['tag']}" for r in sc["runs"]] if kind == "screen"
           else [i for i in experiments.declaration("inan").runs(config) if i.startswith(kind + "/")])
    return [experiments.resolve_run(config, "inan", i).spec for i in ids]


def train_command(corpus: Path, root: Path, settings: dict, run_id: str = "small/seed1") -> list[str]:
    """`python -m replicate train press_wolf <run_id>`, to run in ``root``, on a test corpus (copied to the PTB
    corpus of ``root/results``) with ``settings`` as press_wolf.overrides over the default preset."""
    (root / "results" / "data" / "ptb").mkdir(parents=True, exist_ok=True)
    shutil.copy(corpus, root / "results" / "data" / "ptb" / "corpus.pt")
    overlay = root / "overlay.yaml"
    overlay.write_text(json.dumps({"results_dir": "results", "press_wolf": {"overrides": settings}}))
    return [sys.executable, "-m", "replicate", "train", "press_wolf", run_id, "--configfile",
            str(REPO_ROOT / "config" / "config.yaml"), str(overlay), "--threads", "1", "--device", "cpu"]


def job_counts(output: str) -> dict[str, int]:
    """Rule -> number of jobs from the first "Job stats" table Snakemake printed (without the total);
    empty when it planned nothing."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Job stats:"), None)
    if start is None:
        return {}
    counts = {}
    for line in lines[start + 3:]:  # after "job  count" and the dashes
        m = re.fullmatch(r"(\S+)\s+(\d+)", line.strip())
        if m is None or m.group(1) == "total":
            break
        counts[m.group(1)] = int(m.group(2))
    return counts
