"""The report's first screen and its verdict table.

- ``glance``: the plain answer per paper, above the table of contents (3-5 lines, every number from the
  result tables, the papers named with their arXiv links);
- ``summary``: one row per claim: the effect the claim is about, the paper's size beside ours, the seeds
  behind ours, the direction verdict and the size verdict (rule: ``replicate.report.effects``), then the
  seed-noise pools the allowances come from and each verdict's evidence (collapsed).
"""

from __future__ import annotations

import pandas as pd

from replicate.report import blocks as B
from replicate.report import claims as C
from replicate.report import effects as E
from replicate.report.format import NOT_RUN, fmt_hours, fmt_percent

PAPERS = {  # claim-source prefix -> (name, arXiv id)
    "Press & Wolf": ("Press & Wolf 2017", "1608.05859"),
    "Inan": ("Inan et al. 2017", "1611.01462"),
}
ZAREMBA = ("Zaremba et al. 2014", "1409.2329")
PW_BAR, INAN_BAR = 0.03, 0.05   # a row reproduces when its valid and test ppl are this close to the paper's


def arxiv(name: str, ident: str) -> str:
    return f"{name} ([arXiv:{ident}](https://arxiv.org/abs/{ident}))"


# -------------------------------------------------------------------------------- the verdicts
def _seeds(e: E.Effect) -> str:
    return " / ".join(str(n) for n in e.seeds) if len(set(e.seeds)) > 1 else str(e.seeds[0])


def _ours(e: E.Effect) -> str:
    text = E.fmt_effect(e.ours, e.unit)
    return f"{text} (± {E.fmt_effect(e.allowance, '')})" if e.allowance is not None else text


def _cells(verdict: C.Verdict) -> dict:
    es = verdict.effects
    if not es or verdict.status == NOT_RUN:
        return {"effect": None, "paper": None, "ours": None, "seeds": None}
    return {"effect": "; ".join(e.what for e in es), "paper": "; ".join(E.fmt_effect(e.paper, e.unit) for e in es),
            "ours": "; ".join(_ours(e) for e in es), "seeds": "; ".join(_seeds(e) for e in es)}


def _noise_notes(verdicts) -> list[str]:
    notes = {e.noise for _, v in verdicts for e in v.effects if e.noise and v.status != NOT_RUN}
    return sorted(notes)


def pools_table(res) -> str:
    """The repeated runs the allowances come from: protocol, runs, pooled seed sd, cost."""
    rows = []
    for key, pool in sorted(res.pools.items()):
        if not pool.repeated:
            continue
        rows.append({"protocol": pool.label(), "runs": ", ".join(pool.runs()), "dof": pool.dof(),
                     "valid sd": pool.rel_sd("valid_ppl"), "test sd": pool.rel_sd("test_ppl"),
                     "cost": (f"{fmt_hours(pool.wall_s)} wall, {fmt_hours(pool.cpu_s)} CPU ({pool.timed} runs timed)"
                              if pool.timed else "not recorded")})
    if not rows:
        return B.notice("No repeated run in these results: every size verdict on one seed says "
                        f"\"{E.NOISE_UNKNOWN}\".")
    frame = pd.DataFrame(rows)
    for col in ("valid sd", "test sd"):
        frame[col] = [fmt_percent(x, signed=False, digits=2) if x is not None else None for x in frame[col]]
    return B.table(frame, keep=tuple(frame.columns),
                   caption="Repeated runs (same cell, same settings, several seeds) and the pooled relative seed "
                           "standard deviation they give per metric (noise.py); dof = degrees of freedom; cost = "
                           "the runs' Snakemake benchmark times.")


def section_summary(ctx) -> str:
    rows = []
    for claim, v in ctx.verdicts:
        rows.append({"claim": f"{claim.statement} ({claim.paper})", **_cells(v), "verdict": v.status,
                     "size": v.size if v.status != NOT_RUN else None})
    counts = {s: sum(v.status == s for _, v in ctx.verdicts) for s in C.STATUSES}
    table = B.table(pd.DataFrame(rows), {"claim": "claim (source)", "effect": "effect on", "paper": "paper",
                                         "ours": "ours (± allowance)", "seeds": "seeds", "verdict": "direction",
                                         "size": "size"},
                    keep=("claim", "verdict", "size", "effect", "paper", "ours", "seeds"),
                    caption=f"{len(rows)} claims: {counts[C.HOLDS]} hold, {counts[C.FAILS]} do not hold, "
                            f"{counts[C.INCONCLUSIVE]} inconclusive, {counts[NOT_RUN]} not run in this protocol. "
                            "Direction: computed from our numbers only (claims.py). Size: the effect the claim is "
                            "about, the paper's beside ours (positive = the claimed direction), judged by the rule "
                            "below. Seeds: seeds behind each of our numbers.")
    noise = ("Seed-noise allowance: two standard errors of the difference, 2·s·L·√(1/n₁ + 1/n₂), with s the "
             "pooled relative seed standard deviation of the repeated runs at the claim's own protocol, L the "
             "perplexity level and n the seeds of each row. Runs at other settings never lend their noise, "
             "except Inan et al.'s Table 1 rows, which have no repeat and borrow that of Press & Wolf's cells at "
             "their own settings (converged small PTB LSTMs on the same engine) where it exists, and say so. "
             "Where several seeds exist for a point (section 6.2), the allowance is two standard errors of the "
             "difference from its own seeds. The sources used here: "
             + "; ".join(B.escape(n) for n in _noise_notes(ctx.verdicts)) + ".")
    keys = {p: chr(ord("a") + i) for i, p in enumerate(dict.fromkeys(v.protocol for _, v in ctx.verdicts
                                                                      if v.protocol))}
    evidence = B.join([B.bullets([f"{B.escape(c.statement)} ({B.escape(c.id)}): {B.escape(v.evidence)}"
                                  + (f" \\[{keys[v.protocol]}\\]" if v.protocol else "") for c, v in ctx.verdicts]),
                       "Protocols: " + "; ".join(f"\\[{k}\\] {B.code(p)}" for p, k in keys.items()) + "."
                       if keys else ""])
    return B.join([table, E.RULE, noise, pools_table(ctx.results),
                   B.details_md("Evidence for each verdict, from our result tables", evidence)])


# ------------------------------------------------------------------------------ the first screen
def _rows_within(frame: pd.DataFrame | None, bar: float) -> tuple[int, int, float] | None:
    """(rows with valid and test within ``bar`` of the paper's, rows with a paper number, largest |gap|)."""
    if frame is None:
        return None
    cols = [c for c in frame.columns if c.endswith("rel_diff") and c.split("_")[0] in ("valid", "test")]
    part = frame.dropna(subset=cols, how="all") if cols else frame.iloc[0:0]
    if part.empty:
        return None
    gaps = part[cols].abs().max(axis=1)
    return int((gaps <= bar).sum()), len(part), float(gaps.max())


def _size_counts(verdicts) -> str:
    sizes = [v.size.split(";")[0].split(" (")[0] for _, v in verdicts if v.status != NOT_RUN and v.effects]
    counted = {s: sizes.count(s) for s in E.ORDER if sizes.count(s)}
    return ", ".join(f"{n} {s}" for s, n in counted.items())


def _claims_line(verdicts) -> str:
    ran = [(c, v) for c, v in verdicts if v.status != NOT_RUN]
    if not ran:
        return "no claim run here"
    held = sum(v.status == C.HOLDS for _, v in ran)
    sizes = _size_counts(ran)
    return f"{held}/{len(ran)} claims run hold in direction" + (f"; size: {sizes}" if sizes else "")


def _effect_of(verdicts, claim_id: str) -> str:
    v = next((v for c, v in verdicts if c.id == claim_id), None)
    if v is None or v.status == NOT_RUN or not v.effects or v.effects[0].paper is None:
        return ""
    e = v.effects[0]
    return f"{E.fmt_effect(e.ours, e.unit)} vs the paper's {E.fmt_effect(e.paper, e.unit)}"


def glance(ctx) -> str:
    """3-5 lines: per paper, how its tables and claims came out here, and what was not run."""
    res, verdicts = ctx.results, ctx.verdicts
    by = {key: [(c, v) for c, v in verdicts if c.paper.startswith(key)] for key in PAPERS}
    lines = []
    pw = _rows_within(res.raw.get("press_wolf_table6"), PW_BAR)
    parts = [f"**{arxiv(*PAPERS['Press & Wolf'])}**, baselines from {arxiv(*ZAREMBA)}:"]
    if pw:
        parts.append(f"Table 6: {pw[0]}/{pw[1]} rows within {PW_BAR:.0%} of the paper's valid and test perplexity "
                     f"(largest gap {fmt_percent(pw[2], signed=False)}).")
    parts.append(_claims_line(by["Press & Wolf"]) + ".")
    if res.pw_table5 is None:
        parts.append("Not run here: Table 5 (large models, the `paper` preset).")
    lines.append(" ".join(parts))
    inan = _rows_within(res.raw.get("inan_table1"), INAN_BAR)
    parts = [f"**{arxiv(*PAPERS['Inan'])}**:"]
    if inan:
        sizes = ", ".join(dict.fromkeys(res.inan_table1["size"].astype(str)))
        parts.append(f"Table 1 ({sizes}): {inan[0]}/{inan[1]} rows within {INAN_BAR:.0%} (largest gap "
                     f"{fmt_percent(inan[2], signed=False)}).")
    al = _effect_of(verdicts, "inan_al_vd")
    if al:
        parts.append(f"AL gain over VD-LSTM {al} valid.")
    level = _effect_of(verdicts, "inan_subspace")
    if level:
        parts.append(f"Section 6.2: subspace distance at β = 1 {level}.")
    parts.append(_claims_line(by["Inan"]) + ".")
    ran = set(res.inan_table1["size"].astype(str)) if res.inan_table1 is not None else set()
    missing = [s for s in C.INAN_SIZES if s not in ran]
    if missing:
        parts.append(f"Not run here: Table 1 {' and '.join(missing)} (the `paper` preset, a GPU).")
    lines.append(" ".join(parts))
    rest = [(c, v) for c, v in verdicts if not any(c.paper.startswith(k) for k in PAPERS)]
    lines.append(f"**Initial loss, embedding share and the scale study** (the essay's claims): "
                 f"{sum(v.status == C.HOLDS for _, v in rest)} hold, {sum(v.status == C.FAILS for _, v in rest)} do "
                 f"not hold, {sum(v.status == C.INCONCLUSIVE for _, v in rest)} inconclusive, "
                 f"{sum(v.status == NOT_RUN for _, v in rest)} not run.")
    body = B.bullets(lines)
    return f'<div class="glance">\n\n**The answer in brief**\n\n{body}\n\n</div>'
