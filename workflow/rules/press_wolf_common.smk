# Press & Wolf: config view, target list and run-spec functions used by press_wolf.smk.
from replicate.press_wolf.cells import cell_settings, check_cell_lists, parse_cell
from replicate.run_checks import check_engine_settings

PW = config["press_wolf"]
check_cell_lists(PW)  # tables only of trained cells, one spelling per run


def press_wolf_runs(cells, path=paths.PW_METRICS):
    """Each cell's runs: the paper's cells at press_wolf.seeds, an ablation at press_wolf.ablation_seeds."""
    return [run for cell in cells
            for run in expand(R(path), cell=cell, seed=PW["seeds"] if cell in PW["cells"] else PW["ablation_seeds"])]


PW_RUNS = press_wolf_runs(PW["cells"] + PW["ablations"])


def press_wolf_settings(wildcards):
    return cell_settings(wildcards.cell, PW["overrides"], seed=int(wildcards.seed))


def press_wolf_check(wildcards):
    """Plan-time check of one run: its settings (the cell's name and @overrides included) against
    lstm.schema.yaml, as `python -m replicate press-wolf train` checks them; its memory estimate."""
    where = f"Press & Wolf run {wildcards.cell}/seed{wildcards.seed}"
    settings = check_engine_settings(press_wolf_settings(wildcards), where)
    check_lstm_memory(settings, PW["dataset"], PW["threads"], where)
    metrics = R(paths.PW_METRICS).format(cell=wildcards.cell, seed=wildcards.seed)
    refuse_to_overwrite(metrics, settings, lambda m: m["settings"], where, forced("press_wolf_train", metrics))


def press_wolf_spec(wildcards):
    """The run's own resolved config only (not the whole section: adding a cell or an ablation to the
    config must not rerun the other runs)."""
    settings = press_wolf_settings(wildcards)
    return spec_json({"name": f"{wildcards.cell}/seed{wildcards.seed}", "settings": settings,
                      "config": run_config(None, dataset=PW["dataset"], settings=settings)})


def press_wolf_targets():
    return [*PW_RUNS, *expand(R(paths.PW_TABLE), table=list(PW["tables"]))]


def press_wolf_histories():
    """The per-epoch histories of this configuration's runs (the report's learning curves)."""
    return press_wolf_runs(PW["cells"] + PW["ablations"], paths.PW_HISTORY)
