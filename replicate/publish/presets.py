"""A published run's settings are those of the preset its protocol label names.

``protocol`` is a label a config sets; a run labelled ``reduced`` must also have trained with the settings of
``config/config.yaml`` (``full``: ``config/paper.yaml``, ``smoke``: ``config/smoke.yaml``), read as the workflow
reads them (the schemas' defaults filled in). A run's recorded settings are rebuilt from the preset by its
experiment's declaration (``replicate/<experiment>/runs.py``: the same run id) or, for the kinds no declaration
trains, by the workflow's own spec functions, and compared key by key: a difference is named as ``key:
recorded -> preset``. A Press & Wolf ``@`` cell's own overrides are part of its name, so they are expected;
every other setting must be the preset's. Settings that do not change a number (``IGNORED``) are not compared. A label
that names no preset is not checked (it does not claim to be one).
"""

from __future__ import annotations

import copy
import functools
import math
from typing import Any, Callable

import yaml

from replicate import provenance
from replicate.errors import ReplicateError
from replicate.publish.catalogue import declared, listed, protocol_label, record_config

# protocol label -> the preset that sets it: each config/*.yaml with a top-level `protocol` (not an overlay)
PRESETS = {label: f"config/{path.name}" for path in sorted((provenance.PROJECT_ROOT / "config").glob("*.yaml"))
           if (label := protocol_label(yaml.safe_load(path.read_text(encoding="utf-8")).get("protocol")))}
IGNORED = frozenset({"log_every", "checkpoint_minutes", "threads", "name", "allow_tf32"})


@functools.cache
def _preset(label: str) -> dict[str, Any]:
    """The preset's config as the Snakefile sees it: the file, checked, the schemas' defaults filled in."""
    from replicate.experiments import load_config

    return load_config([str(provenance.PROJECT_ROOT / PRESETS[label])])


def preset(label: str) -> dict[str, Any]:
    return copy.deepcopy(_preset(label))


def differences(recorded: Any, expected: Any, where: str = "") -> list[str]:
    """``key: recorded -> preset`` for every setting that differs (nested keys joined by dots; IGNORED skipped)."""
    if isinstance(recorded, dict) and isinstance(expected, dict):
        return [d for k in sorted(set(recorded) | set(expected), key=str) if k not in IGNORED
                for d in differences(recorded.get(k, "unset"), expected.get(k, "unset"), f"{where}.{k}" if where else k)]
    unset = (None, "unset")  # not set = the default
    if (recorded == expected or (recorded in unset and expected in unset)
            or (_number(recorded) and _number(expected) and float(recorded) == float(expected))):
        return []
    return [f"{where}: {_show(recorded)} -> {_show(expected)}"]


def _show(value: Any) -> str:
    """A value for a message; a long list as its length, first and last items (a learning-rate schedule)."""
    if isinstance(value, list) and len(value) > 6:
        return f"[{len(value)} values: {', '.join(map(repr, value[:3]))}, ..., {value[-1]!r}]"
    return repr(value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ----------------------------------------------------------------------------- each run kind, rebuilt
def _run(run: str, record: dict, p: dict) -> list[str]:
    """A declared run: its dataset, the engine settings it trained with and Inan's augmented loss against those
    its declaration (``replicate/<experiment>/runs.py``) resolves from the preset for the same run id (a Press &
    Wolf cell's @overrides and an ablation point's tau and gamma are part of it)."""
    from replicate.experiments import resolve_run

    experiment, _, run_id = run.partition("/")
    expected = resolve_run({**p, "max_job_memory_gib": math.inf}, experiment, run_id)  # not this machine's limit
    resolved, config = record.get("resolved") or {}, record_config(record)
    vocab = (resolved.get("model") or {}).get("vocab_size", 10000)
    al = [k for k in expected.guarded if k not in expected.settings]  # Inan's augmented loss (none: VD, RE)
    info, defaults = record.get("inan") or {}, _al_defaults()  # a record older than a field: its default
    return differences({"dataset": config.get("dataset") or (config.get("inan_run") or {}).get("dataset"),
                        "engine": engine_view(resolved.get("model"), resolved.get("train")),
                        "augmented_loss": {k: info.get(k, defaults.get(k)) for k in al}},
                       {"dataset": expected.dataset, "engine": engine_view(*_resolve(expected.settings, vocab)),
                        "augmented_loss": {k: expected.guarded[k] for k in al}})


# the engine's settings that change no number, and those that the schedule's learning rates (``lrs``) replace
ENGINE_SKIPPED = frozenset({"log_every", "checkpoint_minutes", "eval_window", "lr", "schedule", "decay",
                            "decay_interval", "max_epoch"})


def _resolve(settings: dict, vocab_size: int) -> tuple[dict, dict]:
    import dataclasses

    from replicate.lstm.config import resolve

    model, train = resolve(settings, vocab_size)
    return dataclasses.asdict(model), dataclasses.asdict(train)


def engine_view(model: dict | None, train: dict | None) -> dict:
    """The engine settings a run's numbers depend on: its resolved model and training settings, with the
    learning rate of every epoch in place of the schedule's parameters (a ``decay_interval`` that the
    ``later`` schedule never reads is no difference)."""
    from replicate.lstm.config import TrainConfig, lr_at

    if not isinstance(model, dict) or not isinstance(train, dict):
        return {"resolved": "unset"}
    cfg = TrainConfig(**{k: v for k, v in train.items() if k in TrainConfig.__dataclass_fields__})
    return {"model": model, "train": {k: v for k, v in train.items() if k not in ENGINE_SKIPPED},
            "lrs": [round(lr_at(cfg, e), 12) for e in range(int(cfg.epochs))]}


@functools.cache
def _al_defaults() -> dict:
    import inspect

    from replicate.inan.train import AugmentedLoss

    return {k: p.default for k, p in inspect.signature(AugmentedLoss).parameters.items()
            if p.default is not inspect.Parameter.empty}


def _subspace(run: str, record: dict, p: dict) -> list[str]:
    from replicate.inan.readings import reading_settings

    config = record_config(record)
    reading, sub = config.get("reading"), p["inan"]["subspace"]
    if reading not in sub.get("readings", {}):
        return [f"reading: {reading!r} -> one of inan.subspace.readings ({', '.join(sorted(sub.get('readings', {})))})"]
    skip = ("seeds", "panel_a", "panel_b", "enabled")  # the point's own tau and beta, and its seeds (n_seeds)
    expected = {k: v for k, v in reading_settings(sub, reading).items() if k not in skip}
    recorded = {k: v for k, v in (config.get("inan_subspace") or {}).items() if k not in skip}
    return differences(recorded, expected, "inan.subspace")


def _initial_loss(run: str, record: dict, p: dict) -> list[str]:
    recorded = record_config(record).get("initial_loss") or {}
    return differences(recorded, {k: p["initial_loss"].get(k, "unset") for k in recorded}, "initial_loss")


def _scale_lstm(run: str, record: dict, p: dict) -> list[str]:
    from replicate.scale.study import train_spec

    got = record_config(record).get("scale_run") or {}
    wc = {k: str(got.get(k)) for k in ("dataset", "pct", "hidden", "variant", "dropout", "seed")}
    expected = train_spec(p["scale"], wc, {}, bool(got.get("record")))["config"]["scale_run"]
    return differences(got, expected, "scale")


def _scale_transformer(run: str, record: dict, p: dict) -> list[str]:
    from replicate.scale.study import transformer_spec

    got = record_config(record).get("scale_transformer") or {}
    wc = {"variant": got.get("variant"), "std": str(got.get("std")), "lr": str(got.get("lr")), "seed": str(got.get("seed"))}
    return differences(got, transformer_spec(p["scale"], wc, {})["config"]["scale_transformer"], "scale.transformer")


# the run kinds no declaration trains, each with its own rebuild
CHECKS: dict[tuple[str, str], Callable[[str, dict, dict], list[str]]] = {
    ("inan", "subspace"): _subspace, ("initial_loss", "sweep"): _initial_loss,
    ("scale", "lstm"): _scale_lstm, ("scale", "transformer"): _scale_transformer}


def mismatch(experiment: str, kind: str, run: str, protocol: str | None, record: dict) -> str | None:
    """Why a run's recorded settings are not those of the preset its protocol names (None: they are, or the
    label names no preset)."""
    check = CHECKS.get((experiment, kind)) or (_run if declared(experiment, run.partition("/")[2]) else None)
    if protocol not in PRESETS or check is None:
        return None
    try:
        found = check(run, record, _preset(protocol))
    except (KeyError, TypeError, ValueError, AttributeError, ReplicateError) as exc:  # a record too old or too odd to rebuild
        found = [f"its settings cannot be rebuilt from the preset ({type(exc).__name__}: {exc})"]
    if not found:
        return None
    return f"{run} is labelled {protocol} but did not train with {PRESETS[protocol]} ({listed(found, 6, '; ')})"

