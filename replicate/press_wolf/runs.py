"""Press & Wolf's runs: one per cell and seed, run id ``<cell>/seed<N>`` (e.g. ``small_wt/seed1``, or the ablation
cell ``small_wt_pr@pr_lambda=0.05/seed1``), trained by the engine alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replicate.experiments import Kind, Run, check_engine_settings, memory_limit_gib, run_config, seed_of
from replicate.press_wolf.cells import cell_settings, check_cell_lists
from replicate.validate import SettingError

KINDS = [Kind("press_wolf_train", "press_wolf", "{cell}/seed{seed}", {"cell": r"[a-z_]+(@[a-z_]+=[^/@]+)*",
                                                                     "seed": r"\d+"},
              code=("lstm.train",), outputs={"metrics": "/metrics.json", "history": "/history.csv"})]


def runs(config: dict[str, Any]) -> dict[str, Run]:
    """The configured runs: the paper's cells at ``press_wolf.seeds``, the ablations at ``ablation_seeds``."""
    pw = config["press_wolf"]
    check_cell_lists(pw)  # tables only of trained cells, one spelling per run
    ids = [f"{cell}/seed{seed}" for cell in pw["cells"] + pw["ablations"]
           for seed in (pw["seeds"] if cell in pw["cells"] else pw["ablation_seeds"])]
    return {run_id: run(config, run_id) for run_id in ids}


def run(config: dict[str, Any], run_id: str) -> Run:
    """One run: the cell's row < ``press_wolf.overrides`` < the cell's @overrides < the seed of its folder."""
    where = f"Press & Wolf run {run_id}"
    cell, sep, seed_dir = run_id.rpartition("/")
    if not sep or not seed_dir.startswith("seed"):
        raise SettingError(f"{where}: not <cell>/seed<N>", "write e.g. small_wt/seed1")
    pw = config["press_wolf"]
    settings = check_engine_settings(cell_settings(cell, pw["overrides"], seed=seed_of(seed_dir[4:], where)), where)
    record = run_config(config, dataset=pw["dataset"], settings=settings)
    result = Run(KINDS[0], run_id, where, name=run_id, dataset=pw["dataset"], settings=settings,
                 spec={"name": run_id, "settings": settings, "config": record}, config=record,
                 threads=pw["threads"], device=config["device"], guarded=settings)
    result.check_memory(memory_limit_gib(config), where)
    return result


def train(run: Run, corpus, results: Path, log, **job) -> None:
    """Train (or resume) the run with the engine; ``job``: threads, device, allow_tf32."""
    from replicate.lstm.runner import train_run

    train_run(run.spec, corpus, Path(results) / run.folder, log=log, **job)
