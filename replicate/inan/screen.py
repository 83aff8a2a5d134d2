"""The screen's run list: names ``<variant>_<tag>`` that read one way only, and each run's VD-LSTM baseline (the one
it names, else the unnamed VD-LSTM run with the same lr path and data budget, ``budget_key``)."""

from __future__ import annotations

import re
from typing import Any, Iterable

from replicate.errors import ReplicateError
from replicate.inan.train import VARIANTS

TAG = re.compile(r"[a-z0-9]+(_[a-z0-9]+)*")
BUDGET_KEYS = ("schedule", "max_epoch", "decay_interval", "decay", "epochs", "max_train_tokens", "eval_max_tokens")


def run_name(variant: str, tag: str) -> str:
    return f"{variant}_{tag}"


def read_name(name: str) -> tuple[str, str] | None:
    """(variant, tag) of a run name as the workflow reads its path: the longest variant name that fits first."""
    for v in sorted(VARIANTS, key=len, reverse=True):
        if name.startswith(v + "_") and TAG.fullmatch(name[len(v) + 1:]):
            return v, name[len(v) + 1:]
    return None


def check_runs(runs: Iterable[dict[str, Any]]) -> None:
    """Refuse names that collide or read as another run (``re`` + ``bias_x`` as ``re_bias`` + ``x``), and a
    ``baseline`` that names no VD-LSTM run of the list."""
    runs = list(runs)
    names = [run_name(r["variant"], r["tag"]) for r in runs]
    vd_tags = {r["tag"] for r in runs if r["variant"] == "vd"}
    fix = "rename the run's tag in inan.screen.runs"
    for run, name in zip(runs, names):
        if names.count(name) > 1:
            raise ReplicateError(f"inan.screen.runs: two runs are named {name}", fix)
        if read_name(name) != (run["variant"], run["tag"]):
            raise ReplicateError(f"inan.screen.runs: the path of run {run['variant']} + {run['tag']} reads as "
                                 f"{' + '.join(read_name(name))}", fix)
        if run.get("baseline") is not None and run["baseline"] not in vd_tags:
            raise ReplicateError(f"inan.screen.runs: {name} names baseline {run['baseline']!r}, which is not the tag "
                                 f"of a VD-LSTM run of the list ({', '.join(sorted(vd_tags)) or 'none'})",
                                 "name a vd run's tag, or add that run")


def budget_key(train: dict[str, Any]) -> tuple:
    """The learning-rate path and data budget of a run's resolved train settings."""
    return tuple(train.get(k) for k in BUDGET_KEYS)


def pair_baselines(rows: list[dict[str, Any]]) -> dict[str, str | None]:
    """{run name: its VD-LSTM baseline's name or None} of ``rows`` (variant, tag, baseline, key)."""
    by_name = {run_name(r["variant"], r["tag"]): r for r in rows}
    out: dict[str, str | None] = {}
    for name, r in by_name.items():
        if r.get("baseline") is not None:
            base = by_name.get(run_name("vd", r["baseline"]))
            if base is None:
                raise ReplicateError(f"screen run {name}: its baseline vd_{r['baseline']} is not among the runs",
                                     "pass the baseline run's metrics.json too")
            if base["key"] != r["key"]:
                raise ReplicateError(f"screen run {name}: baseline vd_{r['baseline']} has another learning-rate path "
                                     f"or data budget ({dict(zip(BUDGET_KEYS, base['key']))} against "
                                     f"{dict(zip(BUDGET_KEYS, r['key']))})",
                                     "name a baseline trained on the same schedule, epochs and budget")
            out[name] = run_name("vd", r["baseline"])
        elif r["variant"] == "vd":
            out[name] = name
        else:
            found = [n for n, b in by_name.items()
                     if b["variant"] == "vd" and b.get("baseline") is None and b["key"] == r["key"]]
            if len(found) > 1:
                raise ReplicateError(f"screen run {name}: several VD-LSTM runs could be its baseline "
                                     f"({', '.join(found)})", "set its baseline in inan.screen.runs")
            out[name] = found[0] if found else None
    return out
