"""What a publish checks in the tables it ships: every number finite, and no row built from a run it skips.

A table is built when all its runs have finished; a run of it that is skipped now (unfinished: being run
again, or its result changed since) means the table holds numbers the bundle would not hold the run of.
Rows are matched to runs for the run kinds whose tables (``RunKind.tables``) name their runs (``ROWS``); NaN
(an empty cell) is a value not measured or not published, an infinite number is a diverged run.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Callable

import pandas as pd

from replicate.publish.catalogue import EXPERIMENTS, Scan

_SHOWN = 4


def nonfinite_cells(path: Path) -> list[str]:
    """``column row N = inf`` for each infinite number of a CSV (row numbers 1-based, header not counted)."""
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError):
        return []
    out = []
    for col in frame.select_dtypes("number").columns:
        for i in frame.index[frame[col].map(lambda v: isinstance(v, float) and math.isinf(v))]:
            out.append(f"{col} row {i + 1} = {frame.at[i, col]}")
    return out


def _pw_row(name: str) -> dict:
    return {"cell": name.rpartition("/seed")[0]}


def _size_variant(name: str) -> tuple[str, str, str]:
    dataset, _, rest = name.partition("/")
    size, _, variant = rest.partition("_")
    return dataset, size, variant


def _table1_row(name: str) -> dict:
    dataset, size, variant = _size_variant(name)
    return {"dataset": dataset, "size": size, "variant": variant}


def _ablation_row(name: str) -> dict:
    dataset, size, rest = _size_variant(name)
    found = re.search(r"_tau([^_]+)_gamma([^_]+)$", rest)
    return {"dataset": dataset, "size": size, "tau": float(found[1]), "gamma": float(found[2])} if found else {}


def _screen_row(name: str) -> dict:
    from replicate.inan.screen import read_name

    _, _, rest = _size_variant(name)
    read = read_name(rest)
    return {"variant": read[0], "tag": read[1]} if read else {}


# (experiment, run kind) -> the row values of a run name in the tables built from the kind's runs
ROWS: dict[tuple[str, str], Callable[[str], dict]] = {
    ("press_wolf", "lstm"): _pw_row, ("inan", "table1"): _table1_row, ("inan", "ablation"): _ablation_row,
    ("inan", "screen"): _screen_row}


def rows_of_skipped(scan: Scan, root: Path) -> list[str]:
    """``<table>: row of <run> (<why skipped>)`` for each published table row built from a run ``scan`` skips."""
    out = []
    for run in scan.skipped:
        kind = next(k for k in EXPERIMENTS[scan.experiment].kinds if k.name == run.kind)
        row_of = ROWS.get((scan.experiment, run.kind))
        values = row_of(run.id.removeprefix(kind.run.format(name=""))) if row_of else {}
        if not values:
            continue
        for rel in (r for r in scan.other if r.endswith(".csv") and kind.builds(r)):
            try:
                frame = pd.read_csv(root / rel)
            except (OSError, ValueError, pd.errors.ParserError):
                continue
            if not set(values) <= set(frame.columns):
                continue
            hit = pd.Series(True, index=frame.index)
            for col, value in values.items():
                hit &= frame[col] == value
            if hit.any():
                out.append(f"{rel} has a row of {run.id}, which is skipped ({run.missing})")
    return out


def problems(scan: Scan, root: Path) -> list[str]:
    """Every table problem of one experiment's publishable files."""
    found = []
    for rel in scan.other:
        if rel.endswith(".csv"):
            cells = nonfinite_cells(root / rel)
            if cells:
                more = f" and {len(cells) - _SHOWN} more" if len(cells) > _SHOWN else ""
                found.append(f"{rel} holds non-finite numbers ({', '.join(cells[:_SHOWN])}{more})")
    return found + rows_of_skipped(scan, root)
