"""A claim, its verdict (its check's ``status`` and ``effects``, judged by effects.py), and the helpers the
experiments' checks (``replicate/<experiment>/claims.py``) share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from replicate.reportkit import effects as E
from replicate.reportkit import noise
from replicate.reportkit.labels import NOT_RUN

HOLDS, FAILS, INCONCLUSIVE, STATUSES, VERDICTS = E.HOLDS, E.FAILS, E.INCONCLUSIVE, E.STATUSES, E.VERDICTS


@dataclass
class Verdict:
    status: str
    evidence: str
    effects: list = field(default_factory=list)   # effects.Effect, paper's beside ours
    scope: str = ""                               # what part of the claim's scope was run, when not all

    def __post_init__(self):
        assert self.status in STATUSES, self.status

    @property
    def verdict(self) -> str:
        return E.judge(self.status, self.effects)[0]

    @property
    def why(self) -> str:
        """Why the verdict is not a plain 'reproduced' or 'holds', and what part of the claim was run."""
        return "; ".join(p for p in (E.judge(self.status, self.effects)[1], self.scope) if p)


@dataclass
class Claim:
    id: str
    statement: str
    paper: str
    section: str
    check: Callable[..., Verdict]
    tolerances: dict | None = None  # a check that takes tolerances: its defaults (the report config's override them)

    def evaluate(self, results, tolerances: dict | None = None) -> Verdict:
        if self.tolerances is None:
            return self.check(results)
        return self.check(results, {**self.tolerances, **(tolerances or {})})


def not_run(why: str) -> Verdict:
    return Verdict(NOT_RUN, why)


def checked(ok: bool, evidence: str, *effects, scope: str = "") -> Verdict:
    """Holds or fails on ``evidence``, with its ``effects`` (a None one left out) and ``scope``."""
    return Verdict(HOLDS if ok else FAILS, evidence, [e for e in effects if e is not None], scope)


def rows_of(frame: pd.DataFrame | None, key: str, names: list[str], cols: list[str]) -> dict | None:
    """{name: {col: value}} for the rows whose ``key`` is each name, or None if any is missing/empty."""
    if frame is None or key not in frame.columns:
        return None
    out = {}
    for name in names:
        part = frame[frame[key] == name]
        if part.empty or any(c not in part.columns or part[c].isna().all() for c in cols):
            return None
        out[name] = {c: float(part[c].mean()) for c in cols}
    return out


def f2(x: float) -> str:
    return f"{x:.2f}"


def row_of(frame: pd.DataFrame | None, key: str, name: str) -> pd.Series | None:
    if frame is None or key not in frame.columns:
        return None
    part = frame[frame[key] == name]
    return None if part.empty else part.iloc[0]


def num(row: pd.Series | None, col: str) -> float | None:
    v = None if row is None else row.get(col)
    return float(v) if v is not None and pd.notna(v) else None


def n_seeds(row: pd.Series | None) -> int:
    v = num(row, "n_seeds")
    return int(v) if v else 1


def pair_effect(r, frame, before: str, after: str, what: str, keys: list[str], metric: str = "valid_ppl",
                sign: int = 1, key: str = "model") -> E.Effect | None:
    """before − after (× sign) in ``metric``, ours and the paper's, with the seed-noise allowance."""
    a, b = row_of(frame, key, before), row_of(frame, key, after)
    if num(a, metric) is None or num(b, metric) is None:
        return None
    ours = sign * (num(a, metric) - num(b, metric))
    pa, pb = num(a, f"paper_{metric}"), num(b, f"paper_{metric}")
    paper = sign * (pa - pb) if pa is not None and pb is not None else None
    level = (num(a, metric) + num(b, metric)) / 2
    al = noise.allowance(r.pools, keys, level, n_seeds(a), n_seeds(b), metric)
    return E.Effect(what, paper, ours, "ppl", (n_seeds(a), n_seeds(b)), al.value, al.note, flag=al.flag, dof=al.dof)


def split_effects(r, frame, before: str, after: str, what: str, keys: list[str], key: str = "model") -> list:
    """The valid and the test effect of before − after: a claim about both splits rests on both."""
    return [pair_effect(r, frame, before, after, f"{split} ppl, {what}", keys, f"{split}_ppl", key=key)
            for split in ("valid", "test")]


def scope_note(run: list[str], claimed: tuple[str, ...], what: str) -> str:
    """'ran small only of small, medium, large' when the claim covers more than was run."""
    if set(claimed) <= set(run):
        return ""
    return f"ran {', '.join(run) or 'none'} only of the claimed {what} {', '.join(claimed)}"

