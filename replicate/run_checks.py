"""The checks of one run's values that every entry point shares, against workflow/schemas/.

The workflow calls them while it builds the DAG (workflow/rules/*_common.smk, the experiments' runs.py);
``python -m replicate`` calls them through ``check_command`` before a sweep or scale command starts, so a
``--spec`` or a ``--width`` typed by hand is refused with the same named message as a value in a target's path.
Imports nothing heavy.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from replicate.cli_common import load_spec
from replicate.lstm.config import PRESETS
from replicate.validate import SCHEMA_DIR, Schemas, SettingError, parse_text

SCHEMAS = Schemas(SCHEMA_DIR)
ENGINE_FIX = ("change the value (a cell's @key=value, or the config's overrides); every engine key "
              "and its range: config/README.md, section lstm")


def check_engine_settings(settings: dict[str, Any], where: str) -> dict[str, Any]:
    """Settings of one LSTM run (``replicate.lstm.runner.train_run``): a known size preset, a seed >= 0, every
    other key known to lstm.schema.yaml and in its range."""
    if settings.get("size") not in PRESETS:
        raise SettingError(f"{where}: size={settings.get('size')!r} is not a size preset",
                           f"use one of {', '.join(PRESETS)}")
    seed = settings.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SettingError(f"{where}: seed={seed!r} is not an integer >= 0", "give the run's seed as 0, 1, 2, ...")
    engine = {k: v for k, v in settings.items() if k not in ("size", "seed")}
    SCHEMAS.check_mapping(engine, "lstm.schema.yaml", where=where, fix=ENGINE_FIX)
    return settings


def refuse_to_overwrite(metrics: str, wanted: dict[str, Any], recorded: Callable[[dict], dict[str, Any]],
                        where: str, forced: bool) -> None:
    """A finished run is never replaced by a run of other settings without being asked: if ``metrics`` (a run's
    metrics.json) exists and ``recorded(its JSON)`` differs from ``wanted``, stop the plan, naming the folder,
    each setting that differs (recorded -> wanted) and the three ways on. ``forced``: the command asked for
    this run to be replaced (--forcerun / -R / --forceall / -f)."""
    import json
    import os

    if forced or not os.path.isfile(metrics):
        return
    try:
        with open(metrics, encoding="utf-8") as fh:
            old = recorded(json.load(fh))
    except (OSError, ValueError, KeyError, TypeError):
        return  # a result this cannot read is Snakemake's to judge (incomplete, corrupt: it reruns)
    def shown(d: dict, key: str) -> str:
        return repr(d[key]) if key in d else "its preset's"

    changed = [f"{key}: {shown(old, key)} -> {shown(wanted, key)}"
               for key in sorted(set(old) | set(wanted)) if old.get(key) != wanted.get(key)]
    if changed:
        folder = os.path.dirname(metrics)
        raise SettingError(f"{where}: {folder} holds a finished run whose settings differ from this plan's "
                           f"({'; '.join(changed)}); it would be overwritten",
                           "keep it and run the new settings beside it as an ablation cell (e.g. small@epochs=3) "
                           "or in another results folder (--config results_dir=results_mine); or replace it on "
                           f"purpose: snakemake --forcerun {metrics} (before --config/--configfile)")


def check_sweep_width(width: Any, head_dim: int, where: str) -> int:
    """A width of the initial-loss sweep: in range, and split into heads of even width (as
    ``replicate.llama.ModelConfig`` requires)."""
    width = SCHEMAS.check(width, "initial_loss.schema.yaml#/$defs/width", key="width", where=where,
                          fix="use a width from 2 to 65536 (results/initial_loss/runs/d<width>.csv, "
                              "initial_loss.widths)")
    heads = max(1, width // head_dim)
    if width % heads or (width // heads) % 2:
        raise SettingError(f"{where}: width {width} does not split into {heads} heads of even width "
                           f"(initial_loss.head_dim = {head_dim})",
                           "use a multiple of head_dim, or change initial_loss.head_dim")
    return width


def _initial_loss_sweep(spec: dict[str, Any], args: argparse.Namespace) -> None:
    if args.width is None:
        return  # argparse of the command names the missing --width
    where = f"initial-loss sweep point d={args.width}"
    head_dim = SCHEMAS.check(spec.get("initial_loss", {}).get("head_dim"), "initial_loss.schema.yaml#/properties/head_dim",
                             key="head_dim", where=where, fix="pass the rule's --spec (initial_loss.head_dim)")
    check_sweep_width(parse_text(args.width), head_dim, where)


def _scale_train(spec: dict[str, Any], args: argparse.Namespace) -> None:
    from replicate.scale.study import run_settings

    where = f"scale train {spec.get('name', '--spec')}"
    fix = "pass the rule's --spec (scale section: config/README.md)"
    SCHEMAS.check(spec.get("pct"), "scale.schema.yaml#/properties/model/properties/pct", key="pct", where=where, fix=fix)
    hidden = SCHEMAS.check(spec.get("hidden"), "scale.schema.yaml#/properties/model/properties/hiddens/items",
                           key="hidden", where=where, fix=fix)
    for key, node in (("patience", "lstm/properties/patience"), ("dropout", "lstm/properties/dropouts/items")):
        if spec.get(key) is not None:
            SCHEMAS.check(parse_text(str(spec[key])), f"scale.schema.yaml#/properties/{node}", key=key, where=where, fix=fix)
    if not isinstance(spec.get("record"), bool):
        raise SettingError(f"{where}: record={spec.get('record')!r} is not true or false (whether the run records "
                           "its embeddings for the analysis)", fix)
    lstm = spec.get("lstm", {})
    check_engine_settings(run_settings({"size": lstm.get("size"), "overrides": lstm.get("overrides", {})}, hidden,
                                       spec.get("variant"), spec.get("seed", 0), None), where)


def _scale_transformer(spec: dict[str, Any], args: argparse.Namespace) -> None:
    from replicate.scale.study import TRANSFORMER_KEYS

    node = "scale.schema.yaml#/properties/transformer"
    SCHEMAS.check_mapping({k: spec[k] for k in TRANSFORMER_KEYS if k in spec}, node,
                          where=f"scale transformer {spec.get('name', '--spec')}",
                          fix="pass the rule's --spec (scale.transformer: config/README.md)")
    SCHEMAS.check(parse_text(str(spec.get("std"))), f"{node}/properties/stds/items", key="std",
                  where=f"scale transformer {spec.get('name', '--spec')}", fix="use a number or inv_sqrt_d / log_n_over_d")
    SCHEMAS.check(spec.get("lr"), f"{node}/properties/lrs/items", key="lr",
                  where=f"scale transformer {spec.get('name', '--spec')}", fix="use a number in (0, 1]")


CHECKS: dict[tuple[str, str], Callable[[dict[str, Any], argparse.Namespace], None]] = {
    ("initial-loss", "sweep"): _initial_loss_sweep,
    ("scale", "train"): _scale_train,
    ("scale", "transformer"): _scale_transformer,
}


def check_command(argv: list[str]) -> None:
    """Refuse ``python -m replicate <command> <action> --spec ...`` whose values the workflow would refuse at
    plan time (nothing for commands without a check, or without a --spec: their own parser names it)."""
    check = CHECKS.get(tuple(argv[:2]))
    if check is None:
        return
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--spec")
    parser.add_argument("--width")
    args, _ = parser.parse_known_args(argv[2:])
    if args.spec is not None:
        check(load_spec(args.spec), args)
