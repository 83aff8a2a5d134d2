"""Why no rule writes a requested path: the rule whose output pattern the path resembles, and the part of
the path that does not fit it (an unknown size, data set or variant, an empty value, a character the rule
does not allow, ``seed-1``).

The workflow calls ``explain`` for a target that no rule produces, so that a user gets this instead of
Snakemake's bare "No rule to produce". Patterns are Snakemake's output patterns with their constraints
written in, ``results/press_wolf/{cell,[a-z_]+...}/seed{seed,\\d+}/metrics.json``. Imports nothing heavy.
"""

from __future__ import annotations

import difflib
import re
from typing import Callable, Iterable

from replicate.validate import SettingError, nearest

WILDCARD = re.compile(r"\{(\w+)(?:,((?:[^{}]|\{[^{}]*\})*))?\}")
WORDS = re.compile(r"[\w.]+(\|[\w.]+)+")  # a constraint that lists its values: ptb|wikitext2


def plain(pattern: str) -> str:
    """The pattern as a user reads it: ``{name}`` without the constraint."""
    return WILDCARD.sub(lambda m: "{" + m.group(1) + "}", pattern)


def wildcard_values(target: str, pattern: str) -> dict[str, tuple[str, str]] | None:
    """{name: (value, constraint)} when ``target`` has the pattern's fixed parts, whatever its values; else None."""
    regex, constraints, pos = "", {}, 0
    for match in WILDCARD.finditer(pattern):
        name = match.group(1)
        regex += re.escape(pattern[pos:match.start()])
        regex += f"(?P={name})" if name in constraints else f"(?P<{name}>[^/]*?)"
        constraints.setdefault(name, match.group(2) or ".+")
        pos = match.end()
    found = re.fullmatch(regex + re.escape(pattern[pos:]), target)
    if found is None:
        return None
    return {name: (found.group(name), constraint) for name, constraint in constraints.items()}


def allowed(constraint: str, value: str) -> str:
    """What a constraint allows, in words (with the nearest listed value)."""
    if constraint == r"\d+":
        return "digits only, e.g. 1"
    if WORDS.fullmatch(constraint):
        return "one of " + ", ".join(constraint.split("|")) + nearest(value, constraint.split("|"))
    return f"it must match {constraint}"


def _faults(values: dict[str, tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [(name, value, constraint) for name, (value, constraint) in values.items()
            if not re.fullmatch(constraint, value)]


def explain(target: str, outputs: Iterable[tuple[str, str]],
            checkers: dict[str, Callable[[str], object]] | None = None) -> SettingError:
    """The error for ``target``, which none of ``outputs`` ((rule, pattern) pairs) produces. ``checkers``:
    a function per wildcard name whose own SettingError says more than the constraint (a cell name)."""
    outputs = list(outputs)
    candidates = []
    for rule, pattern in outputs:
        values = wildcard_values(target, pattern)
        if values is not None:
            candidates.append((len(_faults(values)), rule, pattern, values))
    if not candidates:
        shapes = {plain(p): r for r, p in outputs}
        close = difflib.get_close_matches(target, list(shapes), n=1, cutoff=0.5)
        hint = f"; the closest path a rule writes is {close[0]} (rule {shapes[close[0]]})" if close else ""
        return SettingError(f"no rule writes {target}{hint}",
                            "ask for a path of results/ that a rule writes (docs/reproducibility.md#outputs)")
    _, rule, pattern, values = min(candidates, key=lambda c: c[0])
    where = f"{target} (rule {rule} writes {plain(pattern)})"
    for name, value, constraint in _faults(values):
        if not value:
            return SettingError(f"{where}: {name} is empty", f"write a {name} between its separators")
        if name in (checkers or {}):
            try:
                checkers[name](value)
            except SettingError as exc:
                return SettingError(f"{where}: {exc.cause}", exc.fix)
        return SettingError(f"{where}: {name}={value!r} is not allowed: {allowed(constraint, value)}",
                            f"change the {name} part of the path")
    return SettingError(f"no rule writes {target}, though it has the shape of {plain(pattern)} (rule {rule})",
                        "ask for the path as the rule writes it")
