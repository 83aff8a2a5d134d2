"""Finite numbers only: what keeps a NaN or an inf (a diverged run's perplexity) out of results, tables, the bundle."""

from __future__ import annotations

import math
from typing import Any, Iterable

from replicate.errors import ReplicateError


def not_finite(value: Any) -> bool:
    """A number that is NaN or infinite. None (a value not measured) and text are not numbers."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isfinite(value)


def nonfinite_keys(record: dict[str, Any], keys: Iterable[str]) -> list[str]:
    """``key = value`` for each of ``keys`` whose value in ``record`` is not finite."""
    return [f"{k} = {record.get(k)}" for k in keys if not_finite(record.get(k))]


def require_finite(record: dict[str, Any], keys: Iterable[str], source: Any, fix: str) -> None:
    """Raise a ReplicateError naming ``source`` and the keys of ``record`` that are not finite."""
    bad = nonfinite_keys(record, keys)
    if bad:
        raise ReplicateError(f"{source}: {', '.join(bad)} is not finite (a diverged or unfinished run); "
                             "a table is built from finite numbers only", fix)
