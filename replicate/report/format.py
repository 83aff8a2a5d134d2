"""How one value reads in the report: numbers, percentages, and the markers of an empty cell."""

from __future__ import annotations

import math
from typing import Any

NOT_RUN = "not run in this protocol"
NO_VALUE = "—"

# Beyond this magnitude an integer's digits are noise (float precision): scientific notation.
SCIENTIFIC_ABOVE = 1e15
# Non-integer values from this magnitude on: scientific notation (3 significant digits).
SCIENTIFIC_FRACTION_ABOVE = 1e6


def fmt_number(value: Any, digits: int = 2) -> str:
    """Display form of one number: integers with thousands separators, floats with ``digits``
    decimals (a negative ``digits``: a setting, in its shortest form) (3 significant digits for small magnitudes, scientific notation for huge ones), a
    missing value as the 'not run' marker."""
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
    if abs(x) >= SCIENTIFIC_ABOVE or (abs(x) >= SCIENTIFIC_FRACTION_ABOVE and x != int(x)):
        return f"{x:.2e}"
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
