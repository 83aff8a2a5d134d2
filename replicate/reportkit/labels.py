"""How one name or value reads in the report: column names and coded values by their labels (the table "Names
in the report" of docs/glossary.md; an unlisted name reads with spaces for underscores), numbers, empty cells."""

from __future__ import annotations

import math
import re
from typing import Any

from replicate.provenance import PROJECT_ROOT

NOT_RUN = "not run in this protocol"
NO_VALUE = "—"
GLOSSARY = PROJECT_ROOT / "docs" / "glossary.md"
ROW = re.compile(r"^\| `(\w+)` \((column|value|embedding matrix)[^)]*\) \| (.*) \|$", re.M)
# settings (not measurements): shown in their shortest form, 0.5 not 0.50
SETTINGS = {"tau", "gamma", "alpha", "beta", "lr", "dropout_rate", "dropout", "sigma", "pr_lambda", "init_scale"}
SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"))  # from a million on: 3 significant digits and a word


def read_glossary(text: str) -> dict[str, dict[str, str]]:
    """{kind (column, value, embedding matrix): {name: label}} from the glossary's rows, in their order."""
    out: dict[str, dict[str, str]] = {"column": {}, "value": {}, "embedding matrix": {}}
    for name, kind, label in ROW.findall(text):
        out[kind][name] = label.replace("\\|", "|")
    return out


_LABELS = read_glossary(GLOSSARY.read_text(encoding="utf-8"))
COLUMNS, VALUES = _LABELS["column"], _LABELS["value"]
MATRICES = _LABELS["embedding matrix"]  # the parts of an embedding-similarity comparison <a>_vs_<b>


def column(name: str) -> str:
    if name in COLUMNS:
        return COLUMNS[name]
    m = re.fullmatch(r"beta([\d.]+)", name) or re.fullmatch(r"tau([\d.]+)_beta1", name)
    if m:
        return f"β = {m.group(1)}" if name.startswith("beta") else f"τ = {m.group(1)}, β = 1"
    return name.replace("_", " ")


def value(text: str) -> str:
    return VALUES.get(text, text)


def cell(name: str) -> str:
    """A Press & Wolf cell id as the paper names the row, its overrides in words: small_wt_pr@epochs=2 ->
    small + WT + PR (epochs 2)."""
    base, *overrides = name.split("@")
    first, *parts = base.split("_")
    words = ", ".join(column(k) + " " + value(v) for k, _, v in (o.partition("=") for o in overrides))
    return " + ".join([first, *(p.upper() for p in parts)]) + (f" ({words})" if words else "")


def fmt_number(value: Any, digits: int = 2) -> str:
    """One number: below a million integers with thousands separators, floats with ``digits`` decimals (negative:
    a setting, shortest form); from a million on 3 significant digits (4.69 M, 3.78e+35); missing: NOT_RUN."""
    if value is None:
        return NOT_RUN
    if isinstance(value, bool):
        return "yes" if value else "no"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return NOT_RUN
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if abs(x) >= 1e15:
        return f"{x:.2e}"
    if abs(x) >= 1e6:
        scale, word = next((s, w) for s, w in SUFFIXES if abs(x) >= s)
        return f"{x / scale:.3g} {word}"
    if isinstance(value, int) or (x == int(x) and (abs(x) >= 1000 or digits == 0)):
        return f"{int(x):,}"
    if digits < 0:  # a setting: as short as it was written (alpha 2.5, gamma 0.5, lr 0.003)
        return f"{x:.4g}"
    if x != 0 and abs(x) < 0.01:
        return f"{x:.3g}"
    return f"{x:,.{digits}f}"


def fmt_percent(x: float, signed: bool = True, digits: int = 1) -> str:
    """A fraction as a percentage: signed for relative differences, plain for shares."""
    return f"{x * 100:{'+' if signed else ''}.{digits}f}%"


def listed(items: list[str], shown: int = 4, sep: str = ", ") -> str:
    """The first ``shown`` of ``items`` joined by ``sep``, and how many more there are."""
    return sep.join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def fmt_hours(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def missing_label(col: str) -> str:
    """An empty cell: NOT_RUN in a column of ours, else NO_VALUE (a number the paper does not give, ...)."""
    if col.endswith("_ours") or col in ("valid_ppl", "test_ppl", "train_ppl"):
        return NOT_RUN
    return NO_VALUE
