"""How one value reads in the report: numbers, percentages, and the markers of an empty cell."""

from __future__ import annotations

import math
from typing import Any

NOT_RUN = "not run in this protocol"
NO_VALUE = "—"

# From this magnitude on, every number reads with 3 significant digits: a word for millions, billions and
# trillions (4.69 M, 540 B), scientific notation beyond (3.78e+35), whether it is a whole number or not.
LARGE = 1e6
SCIENTIFIC_ABOVE = 1e15
SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"))


def fmt_number(value: Any, digits: int = 2) -> str:
    """Display form of one number: below a million, integers with thousands separators and floats with
    ``digits`` decimals (a negative ``digits``: a setting, in its shortest form; 3 significant digits for
    small magnitudes); from a million on 3 significant digits (``LARGE``); a missing value as the 'not run'
    marker."""
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
    if abs(x) >= SCIENTIFIC_ABOVE:
        return f"{x:.2e}"
    if abs(x) >= LARGE:
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


def fmt_hours(seconds: float) -> str:
    """A duration: minutes below an hour, else hours with one decimal."""
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def missing_label(col: str) -> str:
    """What an empty cell means: our result not produced ('not run in this protocol') in a column of
    ours, else no value (a number the paper does not give, the sd of one seed, ...)."""
    if col.endswith("_ours") or col in ("valid_ppl", "test_ppl", "train_ppl"):
        return NOT_RUN
    return NO_VALUE
