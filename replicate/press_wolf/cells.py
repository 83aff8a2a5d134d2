"""Press & Wolf's cells: the rows of their Tables 5 and 6 (plus Zaremba's medium) as engine settings.

A cell name may carry overrides, ``base@key=value@...``: the one-command ablation with its own result folder.
"""

from __future__ import annotations

from typing import Any

from replicate.errors import ReplicateError
from replicate.lstm.config import OVERRIDABLE

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


def parse_cell(cell: str) -> tuple[str, dict[str, Any]]:
    """Split a cell name ``base`` or ``base@key=value@key=value`` into (base, overrides).

    The ``@`` form is the one-command ablation: e.g. ``small_wt_pr@pr_lambda=0.05`` is the
    small+WT+PR row with lambda 0.05, written to its own result folder. Values are parsed as
    int, float, bool or string."""
    base, *items = cell.split("@")
    if base not in CELLS:
        raise ReplicateError(f"unknown Press & Wolf cell {base!r}", f"use one of {sorted(CELLS)}")
    overrides = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or key not in OVERRIDABLE:
            raise ReplicateError(f"bad cell override {item!r} in {cell!r}",
                                 f"write key=value with a key in {OVERRIDABLE}")
        overrides[key] = _parse_value(raw)
    return base, overrides


def cell_settings(cell: str, common: dict[str, Any] | None = None, seed: int | None = None) -> dict[str, Any]:
    """Settings of one run: the cell's row < config-wide overrides < the cell's @overrides < seed."""
    base, overrides = parse_cell(cell)
    settings = {**CELLS[base], **(common or {}), **overrides}
    if seed is not None:
        settings["seed"] = int(seed)
    return settings


def _parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw
