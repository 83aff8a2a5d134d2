"""Press & Wolf's cells: the rows of their Tables 5 and 6 (plus Zaremba's medium) as engine settings.

A cell name may carry overrides, ``base@key=value@...``: the one-command ablation with its own result folder.
"""

from __future__ import annotations

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


def parse_cell(cell: str) -> tuple[str, dict[str, Any]]:
    """Split a cell name ``base`` or ``base@key=value@key=value`` into (base, overrides).

    The ``@`` form is the one-command ablation: e.g. ``small_wt_pr@pr_lambda=0.05`` is the
    small+WT+PR row with lambda 0.05, written to its own result folder. Values are parsed as
    true/false, null, int, float or string (``replicate.validate.parse_text``); their types and
    bounds are checked by the workflow against workflow/schemas/lstm.schema.yaml. ``seed`` is
    not a cell override: the run's ``seed<N>`` folder sets it."""
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
        overrides[key] = parse_text(raw)
    return base, overrides


def cell_settings(cell: str, common: dict[str, Any] | None = None, seed: int | None = None) -> dict[str, Any]:
    """Settings of one run: the cell's row < config-wide overrides < the cell's @overrides < seed."""
    base, overrides = parse_cell(cell)
    settings = {**CELLS[base], **(common or {}), **overrides}
    if seed is not None:
        settings["seed"] = int(seed)
    return settings
