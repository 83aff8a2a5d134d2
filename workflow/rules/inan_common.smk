# Inan et al. 2017: config views and target lists used by inan.smk (its runs: replicate/inan/runs.py, trained by
# runs.smk's inan_train, inan_ablation_train, inan_screen_train and inan_subspace_point).
from replicate.inan.readings import fmt as inan_fmt, points as inan_points, reading_names
from replicate.inan.train import VARIANTS as INAN_VARIANTS

INAN = config["inan"]
INAN_SUB = INAN["subspace"]
INAN_SC = INAN["screen"]
INAN_TABLE1_RUNS = run_targets("inan", "table1/")
INAN_ABLATION_RUNS = run_targets("inan", "ablation/")
# the screen's runs, asked for even when inan.screen.enabled is false (then its target is not in `all`)
INAN_SCREEN_IDS = [(r["variant"], f"screen/{INAN_SC['dataset']}/{INAN_SC['size']}_{r['variant']}_{r['tag']}")
                   for r in INAN_SC["runs"]]
INAN_SCREEN_RUNS = [R(f"inan/{run_id}/metrics.json") for _, run_id in INAN_SCREEN_IDS]
INAN_SCREEN_SOFT = [R(f"inan/{run_id}/soft_target.csv") for v, run_id in INAN_SCREEN_IDS if INAN_VARIANTS[v]["al"]]
INAN_READINGS = reading_names(INAN_SUB)  # Figure 1's reading first


def inan_reading_points(reading):
    return sorted({R(paths.INAN_POINT.format(reading=reading, tau=inan_fmt(t), beta=inan_fmt(b)))
                   for _, t, b in inan_points(INAN_SUB)})


INAN_POINTS = inan_reading_points(INAN_SUB["figure_reading"])
INAN_READING_POINTS = [p for r in INAN_READINGS for p in inan_reading_points(r)]


def inan_targets():
    out = [R(paths.INAN_TABLE1)]
    if INAN["ablation"]["enabled"]:
        out.append(R(paths.INAN_ABLATION))
    if INAN_SC["enabled"] and INAN_SCREEN_RUNS:
        out.append(R(paths.INAN_SCREEN))
    if INAN_SUB["enabled"]:
        out += R(paths.INAN_FIGURE1, f"{paths.INAN_FIGURE1_FIGURE}.png")
        if len(INAN_READINGS) > 1:
            out.append(R(paths.INAN_READINGS))
    return out
