# Inan et al. 2017: config views, target lists and run-spec functions used by inan.smk.
from replicate.inan.readings import fmt as inan_fmt, points as inan_points, reading_names, reading_seeds, reading_settings
from replicate.inan.screen import check_runs as inan_check_screen_runs
from replicate.inan.train import VARIANTS as INAN_VARIANTS, run_settings as inan_run_settings
from replicate.run_checks import check_engine_settings

INAN = config["inan"]
INAN_T1 = INAN["table1"]
INAN_AB = INAN["ablation"]
INAN_SUB = INAN["subspace"]
INAN_SC = INAN["screen"]
# A training job's math: the augmented loss and its trainer over the engine, the version its metrics.json
# records (editing the tables, figures or readings code retrains nothing).
INAN_CODE = code_version("inan.train", "inan.trainer")

INAN_TABLE1_RUNS = expand(R(paths.INAN_TABLE1_METRICS),
                          dataset=INAN_T1["datasets"], size=INAN_T1["sizes"], variant=INAN_T1["variants"])
INAN_ABLATION_RUNS = expand(
    R(paths.INAN_ABLATION_METRICS),
    dataset=INAN_AB["dataset"], size=INAN_AB["size"], variant=INAN_AB["variant"],
    tau=[inan_fmt(t) for t in INAN_AB["taus"]], gamma=[inan_fmt(g) for g in INAN_AB["gammas"]])
inan_check_screen_runs(INAN_SC["runs"])  # names that read one way only, baselines that exist
INAN_SCREEN_BY_NAME = {(r["variant"], r["tag"]): r for r in INAN_SC["runs"]}
INAN_SCREEN_RUNS = [R(paths.INAN_SCREEN_METRICS.format(dataset=INAN_SC["dataset"], size=INAN_SC["size"],
                                                       variant=v, tag=t)) for v, t in INAN_SCREEN_BY_NAME]
INAN_SCREEN_SOFT = [R(paths.INAN_SCREEN_SOFT.format(dataset=INAN_SC["dataset"], size=INAN_SC["size"],
                                                    variant=v, tag=t))
                    for v, t in INAN_SCREEN_BY_NAME if INAN_VARIANTS[v]["al"]]
# the longest variant name first, so that a path <size>_re_bias_<tag> is read as re_bias, not re + bias_<tag>
# (as replicate.inan.screen.read_name, which check_runs holds every run to)
INAN_SCREEN_VARIANT_RE = "|".join(sorted(INAN_VARIANTS, key=len, reverse=True))
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

def inan_soft_target_grad(variant):
    """``inan.soft_target_grad`` for one variant: a boolean applies to every variant, a mapping per variant."""
    switch = INAN["soft_target_grad"]
    return bool(switch.get(variant, False)) if isinstance(switch, dict) else bool(switch)


def inan_size_settings(dataset, size, variant):
    """The size block, with the data set's ``dataset_overrides`` and the variant's AL switches."""
    overrides = INAN["dataset_overrides"].get(dataset, {}).get(size, {})
    return {**INAN["sizes"][size], **overrides, "soft_target_grad": inan_soft_target_grad(variant),
            "prediction_bias": INAN["prediction_bias"]}


def inan_table1_spec(wc):
    return {"dataset": wc.dataset, "size": wc.size, "variant": wc.variant, "seed": INAN_T1["seed"],
            "size_settings": inan_size_settings(wc.dataset, wc.size, wc.variant), "reduction": INAN_T1["reduction"]}


def inan_ablation_spec(wc):
    spec = {"dataset": wc.dataset, "size": wc.size, "variant": wc.variant, "seed": INAN_AB["seed"],
            "size_settings": inan_size_settings(wc.dataset, wc.size, wc.variant), "reduction": INAN_AB["reduction"],
            "overrides": {**INAN_AB["overrides"], "tau": float(wc.tau), "gamma": float(wc.gamma)},
            "tag": f"tau{wc.tau}_gamma{wc.gamma}"}
    return spec


def inan_screen_run(wc):
    """The ``inan.screen.runs`` entry of a screening path (a SettingError names the defined runs)."""
    where = f"Inan screening run {wc.dataset}/{wc.size}_{wc.variant}_{wc.tag}"
    run = INAN_SCREEN_BY_NAME.get((wc.variant, wc.tag))
    if run is None:
        names = [f"{v}_{t}" for v, t in INAN_SCREEN_BY_NAME]
        raise SettingError(f"{where}: no run {wc.variant}_{wc.tag!s} under inan.screen.runs"
                           f"{nearest(f'{wc.variant}_{wc.tag}', names)}",
                           f"use one of {', '.join(names) or '(none defined)'}, or add it to inan.screen.runs")
    if (wc.dataset, wc.size) != (INAN_SC["dataset"], INAN_SC["size"]):
        raise SettingError(f"{where}: the screen is defined on {INAN_SC['dataset']}/{INAN_SC['size']}",
                           "set inan.screen.dataset / size, or ask for that path")
    return run


def inan_screen_spec(wc):
    run = inan_screen_run(wc)
    return {"dataset": wc.dataset, "size": wc.size, "variant": wc.variant, "seed": INAN_SC["seed"], "tag": wc.tag,
            "size_settings": inan_size_settings(wc.dataset, wc.size, wc.variant),
            "reduction": run.get("reduction", INAN_SC["reduction"]),
            "overrides": {**INAN_SC["overrides"], **run.get("overrides", {})}, "why": run.get("why", "")}


def inan_screen_check(wc):
    """Plan-time check of a screening run: defined in the config, engine settings in range, memory."""
    where = f"Inan screening run {wc.dataset}/{wc.size}_{wc.variant}_{wc.tag}"
    check_lstm_memory(check_engine_settings(_engine_settings(inan_screen_spec)(wc), where), wc.dataset,
                      INAN["threads"], where)


def _with_config(spec_of):
    def spec(wc):
        s = spec_of(wc)
        return spec_json({**s, "config": run_config(None, inan_run=s)})
    return spec


def _engine_settings(spec_of):
    def settings(wc):
        s = spec_of(wc)
        return inan_run_settings(s["size_settings"], s["size"], s["variant"], s["seed"], s.get("overrides"))[0]
    return settings


def inan_table1_check(wc):
    """Plan-time check of a Table 1 run: engine settings in range, memory estimate."""
    where = f"Inan Table 1 run {wc.dataset}/{wc.size}_{wc.variant}"
    spec = inan_table1_spec(wc)
    engine, al = inan_run_settings(spec["size_settings"], spec["size"], spec["variant"], spec["seed"])
    check_lstm_memory(check_engine_settings(engine, where), wc.dataset, INAN["threads"], where)
    metrics = R(paths.INAN_TABLE1_METRICS).format(dataset=wc.dataset, size=wc.size, variant=wc.variant)
    al_state = al.state_dict() if al else {}
    refuse_to_overwrite(metrics, {**engine, **al_state},
                        lambda m: {**m["settings"], **{k: m["inan"][k] for k in al_state}}, where,
                        forced("inan_train", metrics))


def inan_ablation_check(wc):
    """Plan-time check of an ablation run: tau and gamma of its path against the size block's schema, memory."""
    where = f"Inan ablation run {wc.dataset}/{wc.size}_{wc.variant}_tau{wc.tau}_gamma{wc.gamma}"
    for key in ("tau", "gamma"):
        check_wildcard(wc, key, f"inan.schema.yaml#/$defs/size/properties/{key}", where,
                       "ask for e.g. .../small_real_tau10_gamma0.5/metrics.json, or list the value under "
                       "inan.ablation.taus / gammas")
    check_lstm_memory(check_engine_settings(_engine_settings(inan_ablation_spec)(wc), where), wc.dataset,
                      INAN["threads"], where)


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
