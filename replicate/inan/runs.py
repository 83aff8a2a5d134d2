"""Inan et al.'s runs: the Press & Wolf engine plus the augmented loss (``replicate.inan.train``). Run ids:
``table1/<dataset>/<size>_<variant>``, ``ablation/<dataset>/<size>_<variant>_tau<tau>_gamma<gamma>``,
``screen/<dataset>/<size>_<variant>_<tag>`` and ``subspace/<reading>/tau<tau>_beta<beta>`` (a 6.2 point, all seeds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replicate import devices, paths, provenance
from replicate import io as rio
from replicate.experiments import SCHEMAS, Kind, Run, canonical, check_engine_settings, memory_limit_gib, run_config
from replicate.inan.readings import fmt, points, reading_names, reading_seeds, reading_settings
from replicate.inan.screen import check_runs as check_screen_runs
from replicate.inan.train import VARIANTS, run_settings
from replicate.resources import AUGMENTED_LOSS_SLOWDOWN
from replicate.validate import SettingError, nearest

_ROW = {"dataset": "ptb|wikitext2", "size": "small|medium|large"}
CODE = ("inan.train", "inan.trainer")  # the augmented loss and its trainer over the engine: what metrics.json records
_HISTORY = {"metrics": "/metrics.json", "history": "/history.csv"}
KINDS = [Kind("inan_train", "inan", "table1/{dataset}/{size}_{variant}", {**_ROW, "variant": "vd|al|re|real"},
              code=CODE, outputs=_HISTORY),
         Kind("inan_ablation_train", "inan", "ablation/{dataset}/{size}_{variant}_tau{tau}_gamma{gamma}",
              {**_ROW, "variant": "al|real", "tau": r"[0-9.e+-]+", "gamma": r"[0-9.e+-]+"}, code=CODE),
         # the longest variant name first: <size>_re_bias_<tag> reads as re_bias, not re + bias_<tag>
         # (as replicate.inan.screen.read_name, which check_runs holds every run to)
         Kind("inan_screen_train", "inan", "screen/{dataset}/{size}_{variant}_{tag}",
              {**_ROW, "variant": "|".join(sorted(VARIANTS, key=len, reverse=True)), "tag": "[a-z0-9]+(_[a-z0-9]+)*"},
              code=CODE, keep_checkpoint=True),  # inan_screen_soft_target reads the weights
         # section 6.2: every seed of one (tau, beta) point of one reading (a point reuses seeds of unchanged math)
         Kind("inan_subspace_point", "inan", "subspace/{reading}/tau{tau}_beta{beta}",
              {"reading": r"[a-z0-9_]+", "tau": r"[0-9.e+-]+", "beta": r"[0-9.e+-]+"}, code=("inan.subspace_exp",),
              outputs={"point": ".json"}, keep_checkpoint=True, attempt_log=False,
              work=paths.INAN_POINT_WORK.removeprefix("inan/"))]  # its per-seed records and checkpoints
POINT = KINDS[3]


def runs(config: dict[str, Any]) -> dict[str, Run]:
    """The configured runs: Table 1's datasets x sizes x variants, the ablation's grid, the screen's runs and
    the section 6.2 points of every reading (each if enabled)."""
    t1, ab, sc, sub = (config["inan"][k] for k in ("table1", "ablation", "screen", "subspace"))
    check_screen_runs(sc["runs"])  # names that read one way only, baselines that exist
    ids = [f"table1/{d}/{s}_{v}" for d in t1["datasets"] for s in t1["sizes"] for v in t1["variants"]]
    if ab["enabled"]:
        ids += [f"ablation/{ab['dataset']}/{ab['size']}_{ab['variant']}_tau{fmt(t)}_gamma{fmt(g)}"
                for t in ab["taus"] for g in ab["gammas"]]
    if sc["enabled"]:
        ids += [f"screen/{sc['dataset']}/{sc['size']}_{r['variant']}_{r['tag']}" for r in sc["runs"]]
    if sub["enabled"]:
        ids += [f"subspace/{r}/tau{fmt(t)}_beta{fmt(b)}" for r in reading_names(sub) for _, t, b in points(sub)]
    return {run_id: run(config, run_id) for run_id in ids}


def run(config: dict[str, Any], run_id: str) -> Run:
    """One Table 1 row, ablation point, screening run or section 6.2 point, resolved from the config's ``inan``."""
    inan = config["inan"]
    kind, match = next(((k, m) for k in KINDS if (m := k.regex().fullmatch(run_id))), (None, None))
    if kind is None:
        raise SettingError(f"Inan run {run_id!r} is not table1/<dataset>/<size>_<variant>, "
                           "ablation/<dataset>/<size>_<variant>_tau<tau>_gamma<gamma>, "
                           "screen/<dataset>/<size>_<variant>_<tag> or subspace/<reading>/tau<tau>_beta<beta>",
                           "write e.g. table1/ptb/small_real or ablation/ptb/small_real_tau5_gamma0.5 "
                           "(variants vd, al, re, real; an ablation's al or real)")
    w = match.groupdict()
    if kind is POINT:
        return _point(config, run_id, w)
    if kind.rule == "inan_train":
        spec = _spec(inan, w, inan["table1"])
        where = f"Inan Table 1 run {w['dataset']}/{w['size']}_{w['variant']}"
    elif kind.rule == "inan_ablation_train":
        where = f"Inan ablation run {w['dataset']}/{w['size']}_{w['variant']}_tau{w['tau']}_gamma{w['gamma']}"
        point = {key: _ablation_value(w[key], key, where) for key in ("tau", "gamma")}
        spec = {**_spec(inan, w, inan["ablation"]), "overrides": {**inan["ablation"]["overrides"], **point},
                "tag": f"tau{w['tau']}_gamma{w['gamma']}"}
    else:
        where = f"Inan screening run {w['dataset']}/{w['size']}_{w['variant']}_{w['tag']}"
        sc = inan["screen"]
        entry = _screen_entry(sc, w, where)
        spec = {**_spec(inan, w, sc), "tag": w["tag"], "reduction": entry.get("reduction", sc["reduction"]),
                "overrides": {**sc["overrides"], **entry.get("overrides", {})}, "why": entry.get("why", "")}
    return from_spec(config, kind, run_id, spec, where)


def _point(config: dict[str, Any], run_id: str, w: dict[str, str]) -> Run:
    """One section 6.2 point: a defined reading, tau and beta in range; that reading's settings and seeds only."""
    sub = config["inan"]["subspace"]
    where = f"Inan section 6.2 point {w['reading']}/tau{w['tau']}_beta{w['beta']}"
    if w["reading"] not in sub["readings"]:
        raise SettingError(f"{where}: unknown reading {w['reading']!r}{nearest(w['reading'], sub['readings'])}",
                           f"use one of {', '.join(sorted(sub['readings']))}, or define it under "
                           "inan.subspace.readings")
    fix = "ask for e.g. .../zero_w_sgd/tau10_beta0.5.json, or list the value under inan.subspace.panel_a / panel_b"
    tau, beta = (float(SCHEMAS.check(canonical(w[key], fmt, key, where), f"inan.schema.yaml#/properties/subspace/"
                                     f"properties/{node}/items", key=key, where=where, fix=fix))
                 for key, node in (("tau", "panel_b/properties/taus"), ("beta", "panel_a/properties/betas")))
    settings = reading_settings(sub, w["reading"])
    record = run_config(config, inan_subspace=settings, reading=w["reading"], tau=tau, beta=beta)
    spec = {"reading": w["reading"], "subspace": settings, "tau": tau, "beta": beta,
            "seeds": reading_seeds(sub, w["reading"]), "config": record}
    # each seed trains the engine on a slice of slice_words training words (replicate.inan.subspace_exp.run_one)
    known = SCHEMAS.node("lstm.schema.yaml")["properties"]
    engine = {k: v for k, v in settings.items() if k in known and v is not None}
    engine.update(size="small", tying="untied", dropout="none", weight_decay=0.0, valid_batch_size=1,
                  max_train_tokens=settings["slice_words"])
    result = Run(POINT, run_id, where, name=run_id, dataset="ptb", spec=spec, config=record, threads=sub["threads"],
                 device=config["device"], settings=engine, repeats=len(spec["seeds"]))
    result.check_memory(memory_limit_gib(config), where)
    return result


def _spec(inan: dict[str, Any], w: dict[str, str], section: dict[str, Any]) -> dict[str, Any]:
    """The run's slice of the config: its size block (with ``dataset_overrides`` and AL switches), seed, reduction."""
    if w["size"] not in inan["sizes"]:
        raise SettingError(f"Inan run {w['dataset']}/{w['size']}_{w['variant']}: no size {w['size']!r} under "
                           "inan.sizes", f"define inan.sizes.{w['size']}, or use one of {', '.join(inan['sizes'])}")
    grad = inan["soft_target_grad"]
    size_settings = {**inan["sizes"][w["size"]], **inan["dataset_overrides"].get(w["dataset"], {}).get(w["size"], {}),
                     "soft_target_grad": bool(grad.get(w["variant"], False) if isinstance(grad, dict) else grad),
                     "prediction_bias": inan["prediction_bias"]}
    return {"dataset": w["dataset"], "size": w["size"], "variant": w["variant"], "seed": section["seed"],
            "size_settings": size_settings, "reduction": section["reduction"]}


def _screen_entry(sc: dict[str, Any], w: dict[str, str], where: str) -> dict[str, Any]:
    """The ``inan.screen.runs`` entry of a screening run (a SettingError names the defined runs)."""
    entries = {f"{r['variant']}_{r['tag']}": r for r in sc["runs"]}
    name = f"{w['variant']}_{w['tag']}"
    if name not in entries:
        raise SettingError(f"{where}: no run {name} under inan.screen.runs{nearest(name, entries)}",
                           f"use one of {', '.join(entries) or '(none defined)'}, or add it to inan.screen.runs")
    if (w["dataset"], w["size"]) != (sc["dataset"], sc["size"]):
        raise SettingError(f"{where}: the screen is defined on {sc['dataset']}/{sc['size']}",
                           "set inan.screen.dataset / size, or ask for that path")
    return entries[name]


def _ablation_value(raw: str, key: str, where: str) -> float:
    value = canonical(raw, fmt, key, where)
    return float(SCHEMAS.check(value, f"inan.schema.yaml#/$defs/size/properties/{key}", key=key, where=where,
                               fix="ask for e.g. .../small_real_tau10_gamma0.5/metrics.json, or list the value "
                                   "under inan.ablation.taus / gammas"))


def from_spec(config: dict[str, Any], kind: Kind, run_id: str, spec: dict[str, Any], where: str) -> Run:
    """The Run of an Inan run's spec (``_spec`` + the run's overrides and tag): engine settings checked, memory."""
    engine, al = run_settings(spec["size_settings"], spec["size"], spec["variant"], spec["seed"], spec.get("overrides"))
    check_engine_settings(engine, where)
    al_state = al.state_dict() if al else {}
    record = run_config(config, inan_run=spec)
    name = f"inan/{spec['dataset']}/{spec['size']}_{spec['variant']}" + (f"_{spec['tag']}" if spec.get("tag") else "")
    result = Run(kind, run_id, where, name=name, dataset=spec["dataset"], settings=engine,
                 spec={**spec, "config": record}, config=record,
                 threads=config["inan"]["threads"], device=config["device"], guarded={**engine, **al_state},
                 recorded=lambda m: {**m["settings"], **{k: m["inan"][k] for k in al_state}},
                 slowdown=AUGMENTED_LOSS_SLOWDOWN.get(spec["variant"], 1.0))
    result.check_memory(memory_limit_gib(config), where)
    return result


def train(run: Run, corpus, results: Path, log, **job) -> None:
    """Train (or resume) the run with the augmented loss as the engine's extra loss; metrics.json also records the
    AL settings and, for an AL run, its final y~ statistics (a 6.2 point: ``train_point``)."""
    from replicate.inan.trainer import AugmentedTrainer
    from replicate.lstm.runner import train_run

    if run.kind is POINT:
        return train_point(run, corpus, Path(results), log, **job)
    spec, out_dir = run.spec, Path(results) / run.folder
    _, al = run_settings(spec["size_settings"], spec["size"], spec["variant"], spec["seed"], spec.get("overrides"))
    hooks = {"extra_loss": al, "trainer_cls": AugmentedTrainer} if al is not None else {}
    # the numbers come from the engine AND the augmented loss: the run's code version covers both, read
    # before training (a source edited while the run trains must not be stamped on its numbers)
    code_version = provenance.code_version(run_settings, AugmentedTrainer)
    result = train_run({"name": run.name, "settings": run.settings, "config": run.config}, corpus, out_dir,
                       log=log, **job, **hooks)
    result["code_version"] = code_version
    if al is not None:  # how informative its y~ ended up, with the run (a restore brings no weights)
        result["soft_target"] = final_soft_target(out_dir, corpus.valid[1:], al)
    keys = ("tau", "gamma", "alpha", "tau_power", "soft_target_grad", "prediction_bias", "target_norm")
    result["inan"] = {**{k: spec[k] for k in ("dataset", "size", "variant", "seed")},
                      **{k: getattr(al, k) if al else None for k in keys}, "reduction": spec.get("reduction")}
    rio.write_json(out_dir / "metrics.json", result)


def train_point(run: Run, corpus, results: Path, log, threads: int, device: str, allow_tf32: bool) -> None:
    """All seeds of one section 6.2 point: its JSON, per-seed records and checkpoints under ``runs/`` (resume)."""
    from replicate.inan.subspace_exp import run_point

    spec, started = run.spec, provenance.now()
    dev = devices.resolve_device(device)
    devices.setup(threads, allow_tf32)
    names = {"reading": spec["reading"], "tau": fmt(spec["tau"]), "beta": fmt(spec["beta"])}
    result = run_point(spec, corpus, results / "inan" / POINT.work.format(**names), device=str(dev), log=log)
    result["provenance"] = provenance.collect(spec["config"], started, str(dev))
    rio.write_json(results / f"{run.folder}.json", result)
    log(f"[6.2 tau={spec['tau']} beta={spec['beta']}] distance {result['distance_mean']:.4f} "
        f"+- {result['distance_std']:.4f} over {result['n_seeds']} seeds")


def final_soft_target(run: Path, targets, al) -> dict:
    """``soft_target.summarise`` of a finished run's own y~ over the valid split's targets."""
    from replicate.inan.soft_target import checkpoint_state, summarise

    embedding = checkpoint_state(run)["model"]["embedding.weight"]
    return summarise(embedding, al.tau, targets, min(10, embedding.shape[0]), target_norm=al.target_norm)
