# Inan et al. 2017: config views, target lists and the section 6.2 point functions used by inan.smk (its training
# runs: replicate/inan/runs.py, trained by runs.smk's inan_train, inan_ablation_train and inan_screen_train).
from replicate.inan.readings import fmt as inan_fmt, points as inan_points, reading_names, reading_seeds, reading_settings
from replicate.inan.train import VARIANTS as INAN_VARIANTS

INAN = config["inan"]
INAN_T1 = INAN["table1"]
INAN_AB = INAN["ablation"]
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
    if INAN_AB["enabled"]:
        out.append(R(paths.INAN_ABLATION))
    if INAN_SC["enabled"] and INAN_SCREEN_RUNS:
        out.append(R(paths.INAN_SCREEN))
    if INAN_SUB["enabled"]:
        out += R(paths.INAN_FIGURE1, paths.png(paths.INAN_FIGURE1_FIGURE))
        if len(INAN_READINGS) > 1:
            out.append(R(paths.INAN_READINGS))
    return out

def inan_point_check(wc):
    """Plan-time check of a section 6.2 point: a defined reading, tau and beta of its path in range."""
    where = f"Inan section 6.2 point {wc.reading}/tau{wc.tau}_beta{wc.beta}"
    readings = INAN_SUB["readings"]
    if wc.reading not in readings:
        raise SettingError(f"{where}: unknown reading {wc.reading!r}{nearest(wc.reading, readings)}",
                           f"use one of {', '.join(sorted(readings))}, or define it under inan.subspace.readings")
    fix = "ask for e.g. .../zero_w_sgd/tau10_beta0.5.json, or list the value under inan.subspace.panel_a / panel_b"
    check_wildcard(wc, "tau", "inan.schema.yaml#/properties/subspace/properties/panel_b/properties/taus/items",
                   where, fix)
    check_wildcard(wc, "beta", "inan.schema.yaml#/properties/subspace/properties/panel_a/properties/betas/items",
                   where, fix)


def inan_point_spec(wc):
    """One point of one reading: that reading's settings and seeds only (editing another reading, or the
    list of compared readings, reruns nothing here)."""
    settings = reading_settings(INAN_SUB, wc.reading)
    spec = {"reading": wc.reading, "subspace": settings, "tau": float(wc.tau), "beta": float(wc.beta),
            "seeds": reading_seeds(INAN_SUB, wc.reading)}
    return spec_json({**spec, "config": run_config(None, inan_subspace=settings, reading=wc.reading,
                                                   tau=float(wc.tau), beta=float(wc.beta))})
