"""One verdict per claim, by one fixed rule over the claim's own check and its effects (``judge``; ``RULE``
is the rule as the report prints it). An ``Effect`` is one number a claim is about (for example "valid ppl,
small − small+WT"), signed so that a positive value points the way the claim says, the paper's beside ours,
with the seed-noise allowance on ours (``replicate.report.noise``: a 95 % t interval).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from replicate.report.format import NOT_RUN

HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive"
STATUSES = (HOLDS, FAILS, INCONCLUSIVE, NOT_RUN)
FACTOR = 2.0

RULE = (f"Verdict rule (fixed, replicate/report/effects.py): a claim **{HOLDS}** when each effect it is about "
        f"points the claimed way outside its seed-noise allowance, its own check passes (e.g. valid and test "
        f"both lower) and no effect falls short of half the paper's; it is **{INCONCLUSIVE}** when an effect "
        f"lies within its allowance, or rests on one seed where the rule needs a repeat to measure the noise; "
        f"it **{FAILS}** when an effect lies outside its allowance in the other direction, its own check fails, "
        f"or it falls short of 1/{FACTOR:g} of the paper's effect (a value to reach, such as a distance, off "
        f"the paper's by more than {FACTOR:g}×); **{NOT_RUN}** when a table it needs is missing. A claim "
        f"without an effect size (a tolerance or a trend test) is judged by its own stated test.")


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
    flag: str = ""                     # shown at the allowance: "borrowed", "one pair"


def _short(e: Effect) -> bool:
    """Ours far from the paper's size: a difference under 1/FACTOR of it, a level off by more than FACTOR."""
    if e.paper is None or not math.isfinite(e.paper) or e.paper == 0:
        return False
    ratio = e.ours / e.paper
    return not 1 / FACTOR <= ratio <= FACTOR if e.level else ratio < 1 / FACTOR


def judge(check: str, effects: list[Effect]) -> tuple[str, str]:
    """(verdict, why) by ``RULE``, in its order; ``check`` is the status of the claim's own check."""
    if check == NOT_RUN:
        return NOT_RUN, ""
    measured = [e for e in effects if e.ours is not None and math.isfinite(e.ours)]
    if effects and not measured:
        return INCONCLUSIVE, f"{effects[0].what}: not measured"
    diffs = [e for e in measured if not e.level]
    known = [e for e in diffs if e.allowance is not None and math.isfinite(e.allowance)]
    against = [e for e in known if e.ours < -e.allowance]
    if against:
        return FAILS, f"{describe(against[0])}: outside the noise, the other way"
    unknown = [e for e in diffs if e not in known]
    if unknown:
        return INCONCLUSIVE, f"{unknown[0].what}: seed noise not measured ({unknown[0].noise or 'one seed'})"
    within = [e for e in known if abs(e.ours) <= e.allowance]
    if within:
        return INCONCLUSIVE, f"{describe(within[0])}: within the noise"
    if check == FAILS:
        return FAILS, "its own check fails"
    short = [e for e in measured if _short(e)]
    if short:
        e = short[0]
        return FAILS, f"{describe(e)}: {'more than ' + format(FACTOR, 'g') + '× off' if e.level else 'under half'}"
    return check, ""


def describe(e: Effect) -> str:
    """'<what> <ours> ± <allowance> against the paper's <paper>': an effect in one phrase."""
    allow = f" ± {fmt_effect(e.allowance, '')}" if e.allowance is not None else ""
    paper = f" against the paper's {fmt_effect(e.paper, e.unit)}" if e.paper is not None else ""
    return f"{e.what} {fmt_effect(e.ours, e.unit)}{allow}{paper}"


def fmt_effect(x: float | None, unit: str) -> str:
    """An effect as shown: 3 significant digits, the unit once."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:.3g} {unit}".strip()
