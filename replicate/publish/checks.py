"""The publish refusals: a dirty tree (unless allowed); a run with a non-finite number, or whose recorded settings
differ from those its protocol's preset (config/<preset>.yaml, defaults filled) gives it, key by key; a table with
a non-finite number or a row of a skipped run; more than one code version per run kind, or protocol, within an
experiment, in what is published and against the bundle."""

from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import yaml

from replicate import provenance
from replicate.errors import ReplicateError
from replicate.publish.catalogue import EXPERIMENTS, Scan, declared, protocol_label, record_config
from replicate.reportkit.labels import listed
from replicate.validate import parse_text

# protocol label -> the preset that sets it: each config/*.yaml with a top-level `protocol` (not an overlay)
PRESETS = {label: f"config/{path.name}" for path in sorted((provenance.PROJECT_ROOT / "config").glob("*.yaml"))
           if (label := protocol_label(yaml.safe_load(path.read_text(encoding="utf-8")).get("protocol")))}
IGNORED = frozenset({"log_every", "checkpoint_minutes", "threads", "name", "allow_tf32"})


@functools.cache
def preset(label: str) -> dict[str, Any]:
    """The preset's config as the Snakefile sees it (checked, the schemas' defaults filled in; cached: read only)."""
    from replicate.experiments import load_config

    return load_config([str(provenance.PROJECT_ROOT / PRESETS[label])])


def differences(recorded: Any, expected: Any, where: str = "") -> list[str]:
    """``key: recorded -> preset`` for every setting that differs (nested keys joined by dots; IGNORED skipped)."""
    if isinstance(recorded, dict) and isinstance(expected, dict):
        return [d for k in sorted(set(recorded) | set(expected), key=str) if k not in IGNORED
                for d in differences(recorded.get(k, "unset"), expected.get(k, "unset"), f"{where}.{k}" if where else k)]
    unset, number = (None, "unset"), (int, float)  # not set = the default
    if (recorded == expected or (recorded in unset and expected in unset)
            or (type(recorded) in number and type(expected) in number and float(recorded) == float(expected))):
        return []
    return [f"{where}: {_show(recorded)} -> {_show(expected)}"]


def _show(value: Any) -> str:
    """A value for a message; a long list as its length, first and last items (a learning-rate schedule)."""
    if isinstance(value, list) and len(value) > 6:
        return f"[{len(value)} values: {', '.join(map(repr, value[:3]))}, ..., {value[-1]!r}]"
    return repr(value)


def _run(run: str, record: dict, p: dict) -> list[str]:
    """A declared run: its dataset, engine settings and Inan's augmented loss against those its declaration
    resolves from the preset for the same run id."""
    from replicate.experiments import resolve_run
    from replicate.lstm.config import resolve

    experiment, _, run_id = run.partition("/")
    expected = resolve_run({**p, "max_job_memory_gib": math.inf}, experiment, run_id)  # not this machine's limit
    resolved, config = record.get("resolved") or {}, record_config(record)
    vocab = (resolved.get("model") or {}).get("vocab_size", 10000)
    al = [k for k in expected.guarded if k not in expected.settings]  # Inan's augmented loss (none: VD, RE)
    info, defaults = record.get("inan") or {}, _al_defaults()  # a record older than a field: its default
    return differences({"dataset": config.get("dataset") or (config.get("inan_run") or {}).get("dataset"),
                        "engine": engine_view(resolved.get("model"), resolved.get("train")),
                        "augmented_loss": {k: info.get(k, defaults.get(k)) for k in al}},
                       {"dataset": expected.dataset,
                        "engine": engine_view(*map(dataclasses.asdict, resolve(expected.settings, vocab))),
                        "augmented_loss": {k: expected.guarded[k] for k in al}})


# the engine's settings that change no number, and those that the schedule's learning rates (``lrs``) replace
ENGINE_SKIPPED = frozenset({"log_every", "checkpoint_minutes", "eval_window", "lr", "schedule", "decay",
                            "decay_interval", "max_epoch"})


def engine_view(model: dict | None, train: dict | None) -> dict:
    """The engine settings a run's numbers depend on, with every epoch's learning rate in place of the schedule's
    parameters (a setting the schedule never reads is no difference)."""
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
    """Why a run's recorded settings are not those of the preset its protocol names (None: they are, or none)."""
    check = CHECKS.get((experiment, kind)) or (_run if declared(experiment, run.partition("/")[2]) else None)
    if protocol not in PRESETS or check is None:
        return None
    try:
        found = check(run, record, preset(protocol))
    except (KeyError, TypeError, ValueError, AttributeError, ReplicateError) as exc:  # a record too old or too odd to rebuild
        found = [f"its settings cannot be rebuilt from the preset ({type(exc).__name__}: {exc})"]
    if not found:
        return None
    return f"{run} is labelled {protocol} but did not train with {PRESETS[protocol]} ({listed(found, 6, '; ')})"


def clean_tree(allow_dirty: bool) -> None:
    """Refuse a tree with uncommitted changes to tracked files, unless ``allow_dirty``."""
    if provenance.git_state()["dirty"] and not allow_dirty:
        raise ReplicateError("the working tree has uncommitted changes: a bundle published from it names a commit "
                             "that does not reproduce it",
                             "commit the changes first, or pass --allow-dirty to publish anyway (MANIFEST.json then "
                             "records the sha256 of `git diff HEAD`)")


def _listing(groups: dict) -> str:
    return "; ".join(f"{label or 'none recorded'}: {listed(ids)}" for label, ids in groups.items())


def within(scan: Scan, where: str) -> list[str]:
    """Mixes inside one folder's results of one experiment."""
    problems = [f"{scan.experiment}: {where} holds {kind} runs of {len(groups)} code versions ({_listing(groups)})"
                for kind, groups in scan.versions().items() if len(groups) > 1]
    if len(scan.protocols) > 1:
        problems.append(f"{scan.experiment}: {where} holds results of {len(scan.protocols)} protocols "
                        f"({_listing(scan.protocols)})")
    return problems


def against(new: Scan, old: Scan, where: str) -> list[str]:
    """Differences between what ``where`` would publish and what the bundle holds for the experiment."""
    problems = []
    old_versions = old.versions()
    for kind, groups in new.versions().items():
        held = old_versions.get(kind, {})
        if held and set(held) != set(groups):
            problems.append(f"{new.experiment}: the bundle's {kind} runs have code version ({_listing(held)}), "
                            f"those in {where} ({_listing(groups)})")
    if old.protocols and new.protocols and set(old.protocols) != set(new.protocols):
        problems.append(f"{new.experiment}: the bundle's results have protocol ({_listing(old.protocols)}), "
                        f"those in {where} ({_listing(new.protocols)})")
    return problems


def wrong(scan: Scan, results: Path) -> dict[str, list[str]]:
    """What must never reach the bundle, by kind (nonfinite, preset, tables)."""
    return {"nonfinite": [f"{r.id} has non-finite numbers ({r.nonfinite})" for r in scan.skipped if r.nonfinite],
            "preset": [found for r in scan.runs
                       if (found := mismatch(scan.experiment, r.kind, r.id, r.protocol, r.record or {}))],
            "tables": [f"{rel} holds non-finite numbers ({listed(cells)})" for rel in scan.other
                       if rel.endswith(".csv") and (cells := nonfinite_cells(results / rel))]
                      + rows_of_skipped(scan, results)}


def _csv(path: Path) -> pd.DataFrame | None:
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError):
        return None


def nonfinite_cells(path: Path) -> list[str]:
    """``column row N = inf`` for each infinite number of a CSV (row numbers 1-based, header not counted)."""
    frame = _csv(path)
    if frame is None:
        return []
    return [f"{col} row {i + 1} = {frame.at[i, col]}" for col in frame.select_dtypes("number").columns
            for i in frame.index[frame[col].map(lambda v: isinstance(v, float) and math.isinf(v))]]


def rows_of_skipped(scan: Scan, root: Path) -> list[str]:
    """Each table row built from a run ``scan`` skips: its columns named by the run id's wildcards hold its values."""
    out = []
    for run in scan.skipped:
        kind = next(k for k in EXPERIMENTS[scan.experiment].kinds if k.name == run.kind)
        values = declared(scan.experiment, run.id.partition("/")[2]) or {}
        for rel in (r for r in scan.other if r.endswith(".csv") and kind.builds(r)):
            frame = _csv(root / rel)
            keys = {col: parse_text(v) for col, v in values.items() if frame is not None and col in frame.columns}
            if keys and any(all(row[c] == v for c, v in keys.items()) for _, row in frame.iterrows()):
                out.append(f"{rel} has a row of {run.id}, which is skipped ({run.missing})")
    return out


FIXES = {"nonfinite": "a diverged run is never published: delete its folder and train it again with a lower "
                        "learning rate or clip value",
         "preset": "train those runs with the preset their protocol label names (snakemake <target> --configfile "
                   "config/<preset>.yaml), or label the settings they used as a protocol of their own (protocol: "
                   "<name> in the config they ran with); a setting of one Press & Wolf run belongs in an @ ablation "
                   "cell (small@lr=0.5)",
         "tables": "build the table again once all its runs have finished (snakemake <table>), or move the table and "
                   "the runs out of {results}"}


def refuse(scans: dict[str, Scan], held: dict[str, Scan], results: Path, bundle: Path) -> None:
    """Raise, naming the runs and the fix, when ``scans`` hold what is ``wrong``, mix code versions or protocols,
    or differ from ``held`` (the bundle's scans of the same experiments; empty with --replace)."""
    bad: dict[str, list[str]] = {}
    for s in scans.values():
        for kind, found in wrong(s, results).items():
            bad.setdefault(kind, []).extend(found)
    problems = [p for s in scans.values() for p in within(s, str(results))]
    clashes = {n: found for n, s in scans.items() if n in held and (found := against(s, held[n], str(results)))}
    bad = {k: v for k, v in bad.items() if v}
    if not problems and not clashes and not bad:
        return
    fixes = [fix.format(results=results) for kind, fix in FIXES.items() if kind in bad]
    if problems:
        fixes.append(f"rerun the runs named above under one code version and protocol (move the others out of "
                     f"{results}, or delete them and rerun their targets)")
    if clashes:
        fixes.append(f"to drop what {bundle} holds for {', '.join(clashes)} and publish {results} instead, "
                     f"add --replace")
        kinds = [f"{n}/{kind}" for n in clashes for kind, groups in scans[n].versions().items()
                 if (old := held[n].versions().get(kind)) and set(old) != set(groups)]
        if kinds:
            fixes.append(f"to replace only the bundle's runs of that kind, add --replace-runs {' '.join(kinds)}")
    problems = [p for found in bad.values() for p in found] + problems
    problems += [p for found in clashes.values() for p in found]
    what = "mixed results" if not bad else "these results"
    raise ReplicateError(f"refusing to publish {what}:\n  - " + "\n  - ".join(problems), "; ".join(fixes))
