"""Readable names for the result files' column names and coded values, read from their one list: the table
"Names in the report" of docs/glossary.md. A name not listed reads with spaces for underscores."""

from __future__ import annotations

import re

from replicate.provenance import PROJECT_ROOT

GLOSSARY = PROJECT_ROOT / "docs" / "glossary.md"  # its table "Names in the report" is the one list of labels
ROW = re.compile(r"^\| `(\w+)` \((column|value|embedding matrix)[^)]*\) \| (.*) \|$", re.M)


def read_glossary(text: str) -> dict[str, dict[str, str]]:
    """{kind (column, value, embedding matrix): {name: label}} from the glossary's rows, in their order."""
    out: dict[str, dict[str, str]] = {"column": {}, "value": {}, "embedding matrix": {}}
    for name, kind, label in ROW.findall(text):
        out[kind][name] = label.replace("\\|", "|")
    return out


_LABELS = read_glossary(GLOSSARY.read_text(encoding="utf-8"))
COLUMNS, VALUES = _LABELS["column"], _LABELS["value"]
MATRICES = _LABELS["embedding matrix"]  # the parts of an embedding-similarity comparison <a>_vs_<b>


# settings (not measurements): shown in their shortest form, 0.5 not 0.50
SETTINGS = {"tau", "gamma", "alpha", "beta", "lr", "dropout_rate", "dropout", "sigma", "pr_lambda", "init_scale"}


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
    """A Press & Wolf cell id as the paper names the row: small_wt_pr -> small + WT + PR; its overrides in
    words (small_wt_pr@gate_bias=torch@epochs=2 -> small + WT + PR (gate bias torch, epochs 2))."""
    base, *overrides = name.split("@")
    first, *parts = base.split("_")
    words = ", ".join(column(k) + " " + value(v) for k, _, v in (o.partition("=") for o in overrides))
    return " + ".join([first, *(p.upper() for p in parts)]) + (f" ({words})" if words else "")
