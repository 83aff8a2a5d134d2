# Press & Wolf: config view and target lists used by press_wolf.smk (its runs: replicate/press_wolf/runs.py,
# trained by runs.smk's press_wolf_train).
from replicate.press_wolf.cells import parse_cell

PW = config["press_wolf"]


def press_wolf_runs(cells, path=paths.PW_METRICS):
    """Each cell's runs: the paper's cells at press_wolf.seeds, an ablation at press_wolf.ablation_seeds."""
    return [run for cell in cells
            for run in expand(R(path), cell=cell, seed=PW["seeds"] if cell in PW["cells"] else PW["ablation_seeds"])]


PW_RUNS = press_wolf_runs(PW["cells"] + PW["ablations"])


def press_wolf_targets():
    return [*PW_RUNS, *expand(R(paths.PW_TABLE), table=list(PW["tables"]))]


def press_wolf_histories():
    """The per-epoch histories of this configuration's runs (the report's learning curves)."""
    return press_wolf_runs(PW["cells"] + PW["ablations"], paths.PW_HISTORY)
