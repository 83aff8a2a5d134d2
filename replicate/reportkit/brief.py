"""How a section of the report opens: its paper (``Paper``) and ``answer``, what its claims come to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

from replicate.reportkit import blocks as B
from replicate.reportkit import effects as E
from replicate.reportkit.labels import fmt_percent


@dataclass(frozen=True)
class Paper:
    """How a paper's experiment opens the report (``PAPER`` of its section module)."""
    key: str                    # its claims' source starts with this ("Press & Wolf")
    name: str                   # "Press & Wolf 2017"
    arxiv: str                  # its arXiv id
    table: str                  # the result table whose rows are held to the bar, its name in the paper, the bar
    table_name: str
    bar: float                  # a row reproduces when its valid and test ppl are this close to the paper's
    headline: tuple[tuple[str, str], ...] = ()  # (claim id, what its first effect is) stated in the brief
    baselines: tuple[str, str] | None = None    # (name, arXiv id) of the paper its baselines come from
    not_run: Callable[[object], str] = lambda res: ""  # what the results lack of the paper's tables


def table_line(res, paper: Paper) -> str:
    """'Table 1: 2 of 4 rows within 5 % of the paper's valid and test perplexity; more than that: small +AL
    (valid +7.6%, test +7.5%)' ('' without the table; variant cells are no paper rows)."""
    bar, name = paper.bar, paper.table_name
    frame = res.raw.get(paper.table)
    cols = [c for c in (frame.columns if frame is not None else []) if c in ("valid_rel_diff", "test_rel_diff")]
    part = frame.dropna(subset=cols, how="all") if cols else None
    if part is not None and "cell" in part.columns:
        part = part[~part["cell"].astype(str).str.contains("@")]
    if part is None or part.empty:
        return ""
    far = []
    for _, row in part.iterrows():
        over = [f"{c.split('_')[0]} {fmt_percent(row[c])}" for c in cols if pd.notna(row[c]) and abs(row[c]) > bar]
        if over:
            far.append(f"{row['row'] if 'row' in row else row['size'] + ' ' + row['model']} ({', '.join(over)})")
    within = len(part) - len(far)
    return (f"{name}: {within} of {len(part)} rows within {bar:.0%} of the paper's valid and test perplexity"
            + (f"; more than that: {'; '.join(far)}" if far else ""))


def _claim_phrase(claim, v) -> str:
    """The claim and, in brackets, why its verdict, else its first effect, else its evidence."""
    detail = v.why or ("; ".join(E.describe(e) for e in v.effects[:1]) if v.effects else v.evidence)
    return B.escape(claim.statement.rstrip(".")) + (f" ({B.escape(detail)})" if detail else "")


def answer(ctx, section: str, paper: Paper | None = None) -> str:
    """What the claims of a report section come to, and by how much: its opening lines."""
    verdicts = [(c, v) for c, v in ctx.verdicts if c.section == section]
    parts = [table_line(ctx.results, paper)] if paper else []
    for status in E.VERDICTS[:-1]:  # all but "not run"
        named = [_claim_phrase(c, v) for c, v in verdicts if v.verdict == status]
        parts.append(f"**{status[0].upper() + status[1:]}**: " + "; ".join(named) if named else "")
    parts = [p for p in parts if p]
    return "**In brief.** " + ". ".join(p[0].upper() + p[1:] for p in parts) + "." if parts else ""
