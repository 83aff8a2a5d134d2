"""One verdict per claim by one fixed rule (``judge``; ``RULE`` as printed) over its own check and its ``Effect``s,
signed so that positive is the claimed way, the paper's beside ours (docs/report.md, "The verdict rule")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from replicate.reportkit.labels import NOT_RUN

REPRODUCED = "reproduced"
SMALLER = "holds, smaller than reported"
LARGER = "holds, larger than reported"
HOLDS = "holds"                                      # the claimed way outside the noise; the paper gives no size
NOT_REPRODUCED = "not reproduced: smaller than reported"
NOT_REPRODUCED_LARGER = "not reproduced: larger than reported"   # a level above the paper's (or a paper effect < 0)
INCONCLUSIVE = "inconclusive"
FAILS = "does not hold"
STATUSES = (HOLDS, FAILS, INCONCLUSIVE, NOT_RUN)     # a claim's own check
# every verdict the report shows, from the best news to the worst (the order of the counts)
VERDICTS = (REPRODUCED, SMALLER, LARGER, HOLDS, INCONCLUSIVE, NOT_REPRODUCED, NOT_REPRODUCED_LARGER, FAILS, NOT_RUN)
FACTOR = 2.0   # a level measured once: the paper's value must lie within this factor of ours

RULE = (f"Verdict rule (fixed, replicate/reportkit/effects.py; docs/report.md). Each effect is signed so that a "
        f"positive value points the claimed way, and has our 95 % t interval (ours ± allowance). Two questions: "
        f"does the interval exclude 0 on the claimed side, and does it contain the paper's value (as replication "
        f"studies judge by small telescopes and equivalence tests)? "
        f"**{REPRODUCED}**: both yes; **{SMALLER}** / **{LARGER}**: the direction holds, the paper's value lies "
        f"above / below our interval; **{HOLDS}**: the direction holds and the paper gives no size; "
        f"**{NOT_REPRODUCED}**: the interval includes 0 and lies below the paper's value; **{INCONCLUSIVE}**: the "
        f"interval includes both 0 and the paper's value, or our noise is not measured (one seed); **{FAILS}**: "
        f"the interval lies wholly on the other side of 0, or the claim's own check fails. A level (a value to "
        f"reach, such as a distance) asks only the second question: **{REPRODUCED}** or **not reproduced: "
        f"smaller / larger than reported**; measured once, its interval is ours ÷ {FACTOR:g} to ours × {FACTOR:g}. "
        f"A claim with several effects takes the verdict of its weakest; a claim without an effect size (a "
        f"tolerance, a shape, a count) is judged by its own stated test. **{NOT_RUN}**: a table it needs is "
        f"missing.")


@dataclass
class Effect:
    what: str                          # e.g. "valid ppl, small − small+WT"
    paper: float | None
    ours: float | None
    unit: str = "ppl"
    seeds: tuple[int, ...] = (1,)      # seeds behind each of our numbers
    allowance: float | None = None     # seed-noise allowance on ``ours`` (same unit): the 95 % half-width
    noise: str = ""                    # where the allowance comes from (one line)
    level: bool = False                # a value to reach, not a difference
    flag: str = ""                     # shown at the allowance: "borrowed", "one pair"
    dof: int | None = None             # degrees of freedom behind the allowance


def _finite(x) -> bool:
    return x is not None and math.isfinite(x)


def interval(e: Effect) -> tuple[float, float] | None:
    """Our interval on the effect: ours ± allowance; a level measured once, ours ÷ FACTOR to ours × FACTOR."""
    if _finite(e.allowance):
        return e.ours - e.allowance, e.ours + e.allowance
    if e.level and e.ours > 0:
        return e.ours / FACTOR, e.ours * FACTOR
    return None


def _sized(e: Effect) -> bool:
    """The paper gives a size to compare with (0 is a tie the paper reports, not a size)."""
    return _finite(e.paper) and e.paper != 0


def _span(e: Effect) -> str:
    lo, hi = interval(e)
    band = "" if _finite(e.allowance) else f" (measured once: ours ÷ {FACTOR:g} to × {FACTOR:g})"
    return f"our interval {fmt_effect(lo, '')} to {fmt_effect(hi, '')}{band}"


UNMEASURED, CHECK = "unmeasured", "check"   # ranks: an effect without a number or an interval; the own check


def _one(e: Effect) -> tuple[str, str]:
    """(rank, why) of one effect by ``RULE``: its verdict, or UNMEASURED (inconclusive, ranked apart)."""
    if not _finite(e.ours):
        return UNMEASURED, f"{e.what}: not measured"
    span = interval(e)
    if span is None:
        return UNMEASURED, f"{e.what}: seed noise not measured ({e.noise or 'one seed'})"
    (lo, hi), paper = span, e.paper
    if e.level:
        if not _sized(e):
            return UNMEASURED, f"{e.what}: no paper value to reach"
        if lo <= paper <= hi:
            return REPRODUCED, ""
        return (NOT_REPRODUCED_LARGER if paper < lo else NOT_REPRODUCED), f"{describe(e)}: the paper's value lies outside {_span(e)}"
    if hi < 0:
        return FAILS, f"{describe(e)}: outside the noise, the other way"
    if lo > 0:
        if not _sized(e):
            return HOLDS, ""
        if lo <= paper <= hi:
            return REPRODUCED, ""
        return (SMALLER, f"{describe(e)}: the paper's value lies above {_span(e)}") if paper > hi else (
            LARGER, f"{describe(e)}: the paper's value lies below {_span(e)}")
    if _sized(e) and not lo <= paper <= hi:
        return ((NOT_REPRODUCED, f"{describe(e)}: {_span(e)} includes 0 and lies below the paper's value")
                if paper > hi else
                (NOT_REPRODUCED_LARGER, f"{describe(e)}: {_span(e)} includes 0 and lies above the paper's value"))
    return INCONCLUSIVE, f"{describe(e)}: within the noise" + (", as is the paper's value" if _sized(e) else "")


def judge_one(e: Effect) -> tuple[str, str]:
    """(verdict, why) of one effect by ``RULE``."""
    rank, why = _one(e)
    return (INCONCLUSIVE if rank == UNMEASURED else rank), why


# a claim takes the verdict of its weakest effect: the first rank any effect has (its own check between)
WEAKEST = (FAILS, UNMEASURED, NOT_REPRODUCED, NOT_REPRODUCED_LARGER, INCONCLUSIVE, CHECK, SMALLER, LARGER,
           REPRODUCED, HOLDS)


def judge(check: str, effects: list[Effect]) -> tuple[str, str]:
    """(verdict, why) by ``RULE``; ``check`` is the status of the claim's own check."""
    if check == NOT_RUN:
        return NOT_RUN, ""
    found = [_one(e) for e in effects]
    for rank in WEAKEST:
        if rank == CHECK and check != HOLDS:
            return check, "its own check fails" if check == FAILS else ""
        why = next((w for r, w in found if r == rank), None)
        if why is not None:
            return (INCONCLUSIVE if rank == UNMEASURED else rank), why
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
