"""The report's first screen (``banner``, ``glance``: the plain answer per paper) and its verdict table
(``section_summary``: one row per claim, our effect and its interval beside the paper's, the noise pools)."""

from __future__ import annotations

import re

import pandas as pd

from replicate.report import experiments
from replicate.reportkit import blocks as B
from replicate.reportkit import claims as C
from replicate.reportkit import effects as E
from replicate.reportkit.brief import table_line
from replicate.reportkit.format import NOT_RUN, fmt_hours, fmt_percent
from replicate.reportkit.sections import protocols

DIRTY = "uncommitted tree"      # the mark of a verdict resting on runs made from a tree with uncommitted changes


def arxiv(name: str, ident: str) -> str:
    return f"{name} ([arXiv:{ident}](https://arxiv.org/abs/{ident}))"


# ------------------------------------------------------------------------------------ the banner
def plain(res) -> bool:
    """Whether verdicts may be shown as results: one protocol, and not the smoke preset's."""
    labels = protocols(res)
    return len(labels) <= 1 and "smoke" not in labels


SMOKE_TITLE = "smoke run (a pipeline check, not a replication)"


def heading(res, title: str) -> str:
    """The report's title as shown: a smoke run's calls itself one, in place of 'replication report'."""
    if "smoke" not in protocols(res):
        return title
    subject = re.sub(r"[:,]?\s*replication report\s*$", "", title, flags=re.I).strip()
    return f"{subject}: {SMOKE_TITLE}"


def banner(res) -> str:
    """'' for a report of one real protocol; else a banner that no reader can miss."""
    labels = protocols(res)
    if plain(res):
        return ""
    what = ("SMOKE RUN: tiny settings that only exercise the pipeline. Its numbers say nothing about the papers"
            if "smoke" in labels else f"MIXED PROTOCOLS ({', '.join(labels)}): the tables mix runs made under "
                                      "different protocols")
    return f'<div class="banner">\n\n**{B.escape(what)}; the verdicts below are shown without colour.**\n\n</div>'


# -------------------------------------------------------------------------------- the verdicts
def shown(claim, v, res) -> str:
    """The verdict as the report shows it, marked when it rests on runs from an uncommitted tree."""
    dirty = v.verdict != NOT_RUN and experiments.dirty_runs(res, claim.id)
    return f"{v.verdict} ({DIRTY})" if dirty else v.verdict


def _ours(e: E.Effect) -> str:
    """Our effect with its 95 % interval: '1.37 ± 1.76 ppl'; a level measured once with the band it is given."""
    if e.allowance is not None:
        return f"{E.fmt_effect(e.ours, '')} ± {E.fmt_effect(e.allowance, e.unit)}"
    text, span = E.fmt_effect(e.ours, e.unit), E.interval(e)
    if span is None:
        return f"{text} (noise not measured)"
    return f"{text} ({E.fmt_effect(span[0], '')} to {E.fmt_effect(span[1], '')}: one seed, ÷ or × {E.FACTOR:g})"


def _noise(e: E.Effect) -> str:
    """The seeds behind each of our numbers and the dof behind the interval: 'n = 1 / 1, 8 dof, borrowed'."""
    seeds = " / ".join(map(str, e.seeds))
    dof = f"{e.dof} dof" if e.dof is not None else "no interval" if e.allowance is None else ""
    return ", ".join(p for p in (f"n = {seeds}", dof, e.flag) if p)


def _cells(v: C.Verdict) -> dict:
    es = v.effects if v.status != NOT_RUN else []
    join = "; ".join
    return {"effect": join(e.what for e in es) or None, "paper": join(E.fmt_effect(e.paper, e.unit) for e in es) or None,
            "ours": join(_ours(e) for e in es) or None, "seeds": join(_noise(e) for e in es) or None}


def claims_frame(ctx) -> pd.DataFrame:
    """One row per claim, as the summary table shows it (written beside the report as claims.csv: the README
    reads its verdicts from there)."""
    return pd.DataFrame([{"section": claim.section, "claim_id": claim.id, "claim": claim.statement,
                          "source": claim.paper, "verdict": shown(claim, v, ctx.results), **_cells(v)}
                         for claim, v in ctx.verdicts])


def pools_table(res) -> str:
    """The repeated runs the allowances come from: protocol, runs, pooled seed sd per split, cost."""
    rows = [{"protocol": pool.label(), "runs": pool.cells(), "dof": pool.dof(),
             **{f"{m} sd": pool.rel_sd(f"{m}_ppl") for m in ("valid", "test", "train")},
             "cost": (f"{fmt_hours(pool.wall_s)} wall, {fmt_hours(pool.cpu_s)} CPU ({pool.timed} runs timed)"
                      if pool.timed else "not recorded")}
            for _, pool in sorted(res.pools.items()) if pool.repeated]
    if not rows:
        return B.notice("No repeated run in these results: every verdict that needs the seed noise is inconclusive.")
    frame = pd.DataFrame(rows)
    for col in ("valid sd", "test sd", "train sd"):
        frame[col] = [fmt_percent(x, signed=False, digits=2) if x is not None else None for x in frame[col]]
    return B.table(frame, keep=tuple(frame.columns),
                   caption="Repeated runs (same cell, same settings, several seeds) and the pooled relative seed "
                           "standard deviation they give per split (noise.py); dof = degrees of freedom; cost = "
                           "the runs' Snakemake benchmark times.")


def count_line(verdicts) -> str:
    """'2 reproduced; 1 holds, larger than reported; 4 inconclusive': each verdict given, with how many."""
    n = {s: sum(v.verdict == s for _, v in verdicts) for s in E.VERDICTS}
    return "; ".join(f"{k} {s}" for s, k in n.items() if k) or "none"


def section_summary(ctx) -> str:
    res = ctx.results
    rows = [{"claim": f"{claim.statement} ({claim.paper})", "verdict": shown(claim, v, res), "why": v.why or None,
             **_cells(v)} for claim, v in ctx.verdicts]
    dirty = sum(DIRTY in r["verdict"] for r in rows)
    table = B.table(pd.DataFrame(rows), {"claim": "claim (source)", "verdict": "verdict", "why": "why",
                                         "effect": "effect on", "paper": "paper", "ours": "ours ± 95 % interval",
                                         "seeds": "seeds, dof"},
                    keep=("claim", "verdict"),
                    caption=f"{len(rows)} claims: {count_line(ctx.verdicts)}. Effect: positive = the claimed "
                            "direction; seeds, dof: the seeds behind each of our numbers (n) and the degrees of "
                            "freedom of the noise behind the interval, \"borrowed\" where that noise comes from "
                            "another experiment's repeats."
                            + (f" {dirty} verdicts rest on runs made from a tree with uncommitted changes "
                               f"(marked \"{DIRTY}\"; Provenance lists them)." if dirty else ""))
    noise = ("Our interval: ours ± the 95 % t half-width of the difference, t(dof)·s·L·√(1/n₁ + 1/n₂), with s the "
             "pooled relative seed sd of the repeated runs at the claim's protocol for that split, L the perplexity "
             "level and n each row's seeds. Inan et al.'s Table 1 rows without a repeat borrow Press & Wolf's; a "
             "borrowed allowance, or one resting on one pair of runs (1 dof), says so under \"seeds, dof\". "
             "Sources: " + "; ".join(B.escape(n) for n in sorted(
                 {e.noise for _, v in ctx.verdicts for e in v.effects if e.noise and v.status != NOT_RUN})) + ".")
    evidence = B.bullets([f"{B.escape(c.statement.rstrip('.'))}: {B.escape(v.evidence)}" for c, v in ctx.verdicts])
    return B.join([f'<div class="verdicts">\n\n{table}\n\n</div>', E.RULE, noise, pools_table(res),
                   B.details_md("Evidence for each verdict, from our result tables", evidence)])


# ------------------------------------------------------------------------------ the first screen
def _effect_of(verdicts, claim_id: str) -> str:
    """'3.47 ± 1.31 ppl against the paper's 3.2 ppl: reproduced': a claim's first effect, by the rule on its own."""
    v = next((v for c, v in verdicts if c.id == claim_id), None)
    if v is None or v.status == NOT_RUN or not v.effects or v.effects[0].paper is None:
        return ""
    e = v.effects[0]
    return f"{_ours(e)} against the paper's {E.fmt_effect(e.paper, e.unit)}: {E.judge_one(e)[0]}"


def glance(ctx) -> str:
    """A few lines: per paper, how its table came out, its headline effects with their intervals beside the
    paper's, how many claims got each verdict, and what was not run; the essay's claims in two lines (its
    closed-form checks apart from the scale study's trained runs)."""
    res, verdicts, sections = ctx.results, ctx.verdicts, experiments.SECTIONS
    papers = [m.PAPER for m in sections.values() if hasattr(m, "PAPER")]
    lines = []
    for paper in papers:
        mine = [(c, v) for c, v in verdicts if c.paper.startswith(paper.key)]
        parts = [f"**{arxiv(paper.name, paper.arxiv)}**" + (f", baselines from {arxiv(*paper.baselines)}"
                                                           if paper.baselines else "") + ":",
                 table_line(res, paper) + "."]
        parts += [f"{what}: {_effect_of(mine, cid)}." for cid, what in paper.headline if _effect_of(mine, cid)]
        missing = paper.not_run(res)
        parts += [f"Claims: {count_line(mine)}.", f"Not run here: {missing}." if missing else ""]
        lines.append(" ".join(p for p in parts if p not in ("", ".")))
    rest = [(c, v) for c, v in verdicts if not any(c.paper.startswith(p.key) for p in papers)]
    for section, m in sections.items():
        mine = [(c, v) for c, v in rest if c.section == section]
        lines.append(f"{m.ESSAY}: {count_line(mine)}." if hasattr(m, "ESSAY") and mine else "")
    lines = [line for line in lines if line]
    dirty = sum(DIRTY in shown(c, v, res) for c, v in verdicts)
    if dirty:
        lines.append(f"{dirty} of these verdicts rest on runs made from a tree with uncommitted changes "
                     "(marked in the summary).")
    head = ("**This smoke run in brief** (tiny settings that only exercise the pipeline: its numbers and verdicts "
            "say nothing about the papers)" if "smoke" in protocols(res) else "**The answer in brief**")
    return f'<div class="glance">\n\n{head}\n\n{B.bullets(lines)}\n\n</div>'
