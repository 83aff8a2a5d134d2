"""Effect sizes: the paper's effect beside ours, and a second verdict on size by one fixed rule.

An ``Effect`` is one number a claim is about (for example "valid ppl, small − small+WT"), signed so
that a positive value points the way the claim says, measured by the paper and by us. ``size_verdict``
judges it:

1. no number of ours: not run; no number of the paper's: ``NO_PAPER`` (the size is not judged), unless
   ours is within the seed-noise allowance (``TIE``); a paper effect of exactly zero: ``PAPER_TIE``
   unless ours is within the allowance;
2. ours within the seed-noise allowance (|ours| <= allowance): ``TIE``;
3. ours of the opposite sign to the paper's: ``OPPOSITE``;
4. ours / paper within [1/FACTOR, FACTOR]: ``SAME``; otherwise ``DIRECTION_ONLY``.

A ``level`` effect (a value the claim says should be reached, e.g. a distance near 0.06) skips 2-3 and
compares the two values by step 4. When no allowance could be measured the verdict says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FACTOR = 2.0
SAME = f"same direction, within a factor of {FACTOR:g}"
DIRECTION_ONLY = "direction only"
TIE = "tie"
OPPOSITE = "opposite direction"
NO_PAPER = "no paper number"
PAPER_TIE = "the paper shows a tie"
NOT_MEASURED = "not run"
# worst first: a claim with several effects takes its worst one
ORDER = (OPPOSITE, TIE, DIRECTION_ONLY, SAME, PAPER_TIE, NO_PAPER, NOT_MEASURED)
NOISE_UNKNOWN = "seed noise not measured"

RULE = (f"Size rule (fixed): an effect of ours within the seed-noise allowance is a **{TIE}**; of the "
        f"opposite sign to the paper's, **{OPPOSITE}**; between 1/{FACTOR:g} and {FACTOR:g} times the paper's, "
        f"**{SAME}**; any other size, **{DIRECTION_ONLY}**. A value the claim says should be reached (a "
        f"distance near the paper's) is compared by the same factor. Without a paper number the size is not "
        f"judged (**{NO_PAPER}**); where the paper's own effect is zero, ours is a tie only within the "
        f"allowance (else **{PAPER_TIE}**). Where no allowance could be measured the verdict says "
        f"\"{NOISE_UNKNOWN}\".")


@dataclass
class Effect:
    what: str                          # e.g. "valid ppl, small − small+WT"
    paper: float | None
    ours: float | None
    unit: str = "ppl"
    seeds: tuple[int, ...] = (1,)      # seeds behind each of our numbers
    allowance: float | None = None     # seed-noise allowance on ``ours`` (same unit)
    noise: str = ""                    # where the allowance comes from (one line)
    level: bool = False                # a value to reach, not a difference


def size_verdict(e: Effect) -> str:
    """The fixed rule of the module docstring; the allowance's absence is named."""
    if e.ours is None or not math.isfinite(e.ours):
        return NOT_MEASURED
    noise_known = e.allowance is not None and math.isfinite(e.allowance)
    if not e.level and noise_known and abs(e.ours) <= e.allowance:
        return TIE
    if e.paper is None or not math.isfinite(e.paper):
        return NO_PAPER
    suffix = "" if noise_known or e.level else f" ({NOISE_UNKNOWN})"
    if e.paper == 0:
        return PAPER_TIE + suffix
    if not e.level and e.ours * e.paper < 0:
        return OPPOSITE + suffix
    ratio = e.ours / e.paper
    return (SAME if 1 / FACTOR <= ratio <= FACTOR else DIRECTION_ONLY) + suffix


def worst(verdicts: list[str]) -> str:
    """The worst of several size verdicts (``ORDER``; the noise note kept)."""
    if not verdicts:
        return NOT_MEASURED
    return min(verdicts, key=lambda v: next(i for i, o in enumerate(ORDER) if v.startswith(o)))


def fmt_effect(x: float | None, unit: str) -> str:
    """An effect as shown: 3 significant digits, the unit once."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:.3g} {unit}".strip()
