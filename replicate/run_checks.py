"""The checks of one run's values that the experiments' run declarations (``replicate/<experiment>/runs.py``)
share, against workflow/schemas/: the workflow calls them while it builds the DAG, ``python -m replicate train``
before a run starts. Imports nothing heavy.
"""

from __future__ import annotations

from typing import Any, Callable

from replicate.lstm.config import PRESETS
from replicate.validate import SCHEMA_DIR, Schemas, SettingError

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
