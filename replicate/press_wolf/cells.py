"""Press & Wolf's cells: the rows of their Tables 5 and 6 (plus Zaremba's medium) as engine settings.

A cell name may carry overrides, ``base@key=value@...``: the one-command ablation with its own result folder.
A name is its folder, so one run has one spelling: no whitespace, each key once, each value as ``spell``
writes it back (``lr=1``, not ``lr=1.0``; ``pr_lambda=0.05``, not ``5e-2``); the order of the keys is free.
"""

from __future__ import annotations

import math
import re
from typing import Any

from replicate.lstm.config import OVERRIDABLE
from replicate.validate import SettingError, nearest, parse_text

# Named cells: rows of Press & Wolf Table 6 (small, no dropout; TF scripts: one zero bias per gate) and
# Table 5 (large; Zaremba's Torch and the Lua BD scripts: two uniform biases per gate), plus medium.
CELLS: dict[str, dict[str, Any]] = {
    "small": dict(size="small", gate_bias="tf"),
    "small_wt": dict(size="small", tying="tied", gate_bias="tf"),
    "small_pr": dict(size="small", projection=True, gate_bias="tf"),
    "small_wt_pr": dict(size="small", tying="tied", projection=True, gate_bias="tf"),
    "medium": dict(size="medium"),
    "medium_wt": dict(size="medium", tying="tied"),
    "large": dict(size="large"),
    "large_wt": dict(size="large", tying="tied"),
    "large_bd_wd": dict(size="large_bd"),
    "large_bd_wt": dict(size="large_bd", tying="tied", weight_decay=0.0),
}


CELL_KEYS = [k for k in OVERRIDABLE if k != "seed"]  # = the keys of workflow/schemas/lstm.schema.yaml


def spell(value: Any) -> str:
    """The one spelling of a parsed value in a cell name (true, null, 3, 0.05, 1 for 1.0, a word)."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def parse_cell(cell: str) -> tuple[str, dict[str, Any]]:
    """Split a cell name ``base`` or ``base@key=value@...`` into (base, overrides parsed by ``parse_text``; the
    schema checks them). ``seed`` is the folder's, not an override; a name not in its one spelling is refused."""
    if re.search(r"\s", cell):
        raise SettingError(f"cell {cell!r} contains whitespace", f"write it without: {''.join(cell.split())!r}")
    base, *items = cell.split("@")
    if base not in CELLS:
        raise SettingError(f"unknown Press & Wolf cell {base!r}{nearest(base, CELLS)}", f"use one of {sorted(CELLS)}")
    overrides = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise SettingError(f"cell {cell!r}: override {item!r} is not key=value", "write e.g. @pr_lambda=0.05")
        if key == "seed":
            raise SettingError(f"cell {cell!r}: seed is not a cell override",
                               "ask for the seed's folder (.../<cell>/seed<N>/...) or list it under press_wolf.seeds")
        if key not in CELL_KEYS:
            raise SettingError(f"cell {cell!r}: unknown key {key!r}{nearest(key, CELL_KEYS)}",
                               f"use one of {', '.join(CELL_KEYS)}")
        if key in overrides:
            raise SettingError(f"cell {cell!r}: {key} is given twice", f"keep one @{key}=... (a name is one run)")
        if not raw:
            raise SettingError(f"cell {cell!r}: {key} has an empty value", f"write e.g. @{key}=<value>")
        value = parse_text(raw)
        finite = not (isinstance(value, float) and not math.isfinite(value))  # nan, inf: the schema names them
        if finite and spell(value) != raw:
            raise SettingError(f"cell {cell!r}: {key}={raw} is not the one spelling of its value",
                               f"write {key}={spell(value)} (one run, one folder)")
        overrides[key] = value
    return base, overrides


def cell_settings(cell: str, common: dict[str, Any] | None = None, seed: int | None = None) -> dict[str, Any]:
    """Settings of one run: the cell's row < config-wide overrides < the cell's @overrides < seed."""
    base, overrides = parse_cell(cell)
    settings = {**CELLS[base], **(common or {}), **overrides}
    if seed is not None:
        settings["seed"] = int(seed)
    return settings


def check_cell_lists(pw: dict[str, Any]) -> None:
    """Refuse tables listing an untrained cell, and two spellings of one run."""
    trained = [*pw["cells"], *pw["ablations"]]
    runs: dict[tuple, str] = {}
    for name in trained:
        base, overrides = parse_cell(name)
        run = (base, tuple(sorted(overrides.items(), key=lambda kv: kv[0])))
        if run in runs and runs[run] != name:
            raise SettingError(f"config: press_wolf cells {runs[run]!r} and {name!r} are the same run",
                               "keep one of them (the order of the @keys is free, the folder is the name)")
        runs[run] = name
    for table, cells in pw["tables"].items():
        missing = [c for c in cells if c not in trained]
        if missing:
            raise SettingError(f"config: press_wolf.tables.{table} lists {', '.join(map(repr, missing))}, which "
                               f"neither press_wolf.cells nor press_wolf.ablations trains (cells: {pw['cells']})",
                               f"add them to press_wolf.cells, or remove them from press_wolf.tables.{table} "
                               "(no Press & Wolf runs: cells: [] and tables: {})")
