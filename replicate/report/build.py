"""The report, built: every experiment's results read and claims judged, its first screen and verdict table, and
the template filled (a line ``{{name}}``: a generated block; inline ``{{verdict:<claim id>}}``; anything else in
``{{`` an error) -> report.md, rendered -> index.html. A smoke or mixed-protocol report opens with a banner."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from replicate import provenance as prov
from replicate.errors import ReplicateError
from replicate.inan import claims as inan_claims
from replicate.inan import section as inan_section
from replicate.initial_loss import claims as initial_loss_claims
from replicate.initial_loss import section as initial_loss_section
from replicate.press_wolf import claims as press_wolf_claims
from replicate.press_wolf import section as press_wolf_section
from replicate.report.compute import section_compute, section_provenance
from replicate.report.render import headings, to_html
from replicate.reportkit import blocks as B
from replicate.reportkit import claims as C
from replicate.reportkit import effects as E
from replicate.reportkit import noise
from replicate.reportkit.labels import NOT_RUN, fmt_hours, fmt_percent
from replicate.reportkit.sections import Context, other_figures, protocols, table_line
from replicate.reportkit.sources import Results, load_benchmarks, load_provenance
from replicate.scale import claims as scale_claims
from replicate.scale import section as scale_section

SECTIONS = {"press_wolf": press_wolf_section, "inan": inan_section, "initial_loss": initial_loss_section,
            "scale": scale_section}
CLAIM_MODULES = (press_wolf_claims, inan_claims, initial_loss_claims, scale_claims)
CLAIMS = [claim for module in CLAIM_MODULES for claim in module.CLAIMS]
RESTS_ON = {pattern: ids for module in CLAIM_MODULES for pattern, ids in module.RESTS_ON.items()}


def load(root: str | Path = "results") -> Results:
    """Every result the report reads: each experiment's, the benchmark files, provenance blocks and noise pools."""
    res = Results(root=Path(root))
    for section in SECTIONS.values():
        section.read(res)
    res.benchmarks = load_benchmarks(res.root)
    res.provenance = load_provenance(res.root)
    res.pools = noise.scan(res.root)
    return res


def evaluate_all(results, tolerances: dict | None = None) -> list:
    """[(claim, verdict)] for every claim, in the report's order."""
    return [(c, c.evaluate(results, tolerances)) for c in CLAIMS]


def dirty_runs(results, claim_id: str) -> list[str]:
    """The runs (result paths) a claim rests on that were made from a tree with uncommitted changes."""
    pattern = re.compile("|".join(p for p, ids in RESTS_ON.items() if claim_id in ids) or "$^")
    return [p["path"] for p in results.provenance
            if pattern.search("/" + p["path"]) and (p["provenance"].get("git") or {}).get("dirty")]


CLAIMS_CSV = "claims.csv"  # beside report.md: one row per claim with its verdict (the README's block reads it)
DIRTY = "uncommitted tree"      # the mark of a verdict resting on runs made from a tree with uncommitted changes


def arxiv(name: str, ident: str) -> str:
    return f"{name} ([arXiv:{ident}](https://arxiv.org/abs/{ident}))"


def plain(res) -> bool:
    """Whether verdicts may be shown as results: one protocol, and not the smoke preset's."""
    labels = protocols(res)
    return len(labels) <= 1 and "smoke" not in labels


def heading(res, title: str) -> str:
    """The report's title as shown: a smoke run's calls itself one, in place of 'replication report'."""
    if "smoke" not in protocols(res):
        return title
    subject = re.sub(r"[:,]?\s*replication report\s*$", "", title, flags=re.I).strip()
    return f"{subject}: smoke run (a pipeline check, not a replication)"


def banner(res) -> str:
    """'' for a report of one real protocol; else a banner that no reader can miss."""
    labels = protocols(res)
    if plain(res):
        return ""
    what = ("SMOKE RUN: tiny settings that only exercise the pipeline. Its numbers say nothing about the papers"
            if "smoke" in labels else f"MIXED PROTOCOLS ({', '.join(labels)}): the tables mix runs made under "
                                      "different protocols")
    return f'<div class="banner">\n\n**{B.escape(what)}; the verdicts below are shown without colour.**\n\n</div>'


def shown(claim, v, res) -> str:
    """The verdict as the report shows it, marked when it rests on runs from an uncommitted tree."""
    dirty = v.verdict != NOT_RUN and dirty_runs(res, claim.id)
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
    """One row per claim as the summary table shows it (claims.csv, which the README's block reads)."""
    return pd.DataFrame([{"section": claim.section, "claim_id": claim.id, "claim": claim.statement,
                          "source": claim.paper, "verdict": shown(claim, v, ctx.results), **_cells(v)}
                         for claim, v in ctx.verdicts])


def pools_table(res) -> str:
    """The repeated runs the allowances come from: protocol, runs, pooled seed sd per split, cost."""
    rows = [{"protocol": pool.label(), "runs": pool.cells(), "dof": pool.dof(),
             **{f"{m} sd": pool.rel_sd(f"{m}_ppl") for m in ("valid", "test", "train")},
             "cost": "{} wall, {} CPU ({} runs timed)".format(*map(fmt_hours, cost[:2]), cost[2]) if cost[2]
             else "not recorded"}
            for _, pool in sorted(res.pools.items()) if pool.repeated for cost in [pool.cost()]]
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


def _effect_of(verdicts, claim_id: str) -> str:
    """'3.47 ± 1.31 ppl against the paper's 3.2 ppl: reproduced': a claim's first effect, by the rule on its own."""
    v = next((v for c, v in verdicts if c.id == claim_id), None)
    if v is None or v.status == NOT_RUN or not v.effects or v.effects[0].paper is None:
        return ""
    e = v.effects[0]
    return f"{_ours(e)} against the paper's {E.fmt_effect(e.paper, e.unit)}: {E.judge_one(e)[0]}"


def glance(ctx) -> str:
    """Per paper, how its table came out, its headline effects beside the paper's, its verdict counts and what
    was not run; the essay's claims in two lines."""
    res, verdicts, sections = ctx.results, ctx.verdicts, SECTIONS
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


_BLOCK = re.compile(r"^\{\{\s*([a-z_]+)\s*\}\}$")
_INLINE = re.compile(r"\{\{\s*([a-z_]+)(?::([a-z0-9_.]+))?\s*\}\}")   # claim ids may hold a dot: _drop0.3


def fill_template(text: str, ctx: Context) -> str:
    """The template with its comments removed and every directive replaced (Markdown)."""
    blocks = {"summary": section_summary, **{name: module.section for name, module in SECTIONS.items()},
              "other_figures": other_figures, "compute": section_compute, "provenance": section_provenance}
    text = re.sub(r"<!--.*?-->\n?", "", text, flags=re.S)
    verdicts = {c.id: v for c, v in ctx.verdicts}

    def sub(m):
        name, arg = m.group(1), m.group(2)
        if name == "verdict":
            if arg not in verdicts:
                raise ReplicateError(f"report template names an unknown claim {arg!r}",
                                     f"use one of {sorted(verdicts)}")
            return f"**{verdicts[arg].verdict}**"
        raise ReplicateError(f"unknown inline directive {{{{{name}}}}} in the report template",
                             "use {{verdict:<claim id>}}")

    out = []
    for line in text.splitlines():
        m = _BLOCK.match(line.strip())
        if m and m.group(1) not in blocks:
            raise ReplicateError(f"unknown block directive {line.strip()} in the report template",
                                 f"use one of {sorted(blocks)}")
        out.append(f"\n{blocks[m.group(1)](ctx)}\n" if m else _INLINE.sub(sub, line))
    left = [line for line in "\n".join(out).splitlines() if "{{" in line]
    if left:  # a directive the patterns above did not match would be printed as is
        raise ReplicateError(f"the report would print an unfilled directive: {left[0].strip()!r}",
                             "write it as a line {{name}} or inline {{verdict:<claim id>}}")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"


def _front_matter(markdown: str, ctx: Context, stamp: str) -> str:
    """The title (as ``heading`` shows it), then the banner, the build stamp, the plain answer and a table of
    contents."""
    toc = B.bullets([f"[{B.escape(text)}](#{anchor})" for text, anchor in headings(markdown)])
    lines = markdown.split("\n")
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), 0)
    if at:
        lines[at - 1] = "# " + heading(ctx.results, lines[at - 1][2:])
    front = [banner(ctx.results), stamp, glance(ctx), "**Contents**", toc]
    return "\n".join(lines[:at] + [x for block in front if block for x in ("", block)] + [""] + lines[at:])


def build(results_dir: str | Path, template: str | Path, out_md: str | Path, out_html: str | Path,
          figures_dir: str | Path | None = None, captions_dir: str | Path | None = None,
          tolerances: dict | None = None, title: str | None = None, sections: dict | None = None,
          full_protocol: dict | None = None) -> dict:
    """Build both reports; returns {"verdicts": {...}, "shown_figures": [...]} for the CLI/metrics."""
    from replicate import io as rio

    results_dir = Path(results_dir)
    figures_dir = Path(figures_dir) if figures_dir else results_dir / "figures"
    template = Path(template)
    if not template.is_file():
        raise ReplicateError(f"report template {template} not found", "restore paper/report_template.md from git")
    res = load(results_dir)
    verdicts = evaluate_all(res, tolerances)
    ctx = Context(res, verdicts, figures_dir, Path(captions_dir) if captions_dir else None, Path(out_md),
                  sections=sections, full_protocol=full_protocol, tolerances=tolerances)
    git = prov.git_state()
    stamp = (f"Built {prov.now()} from commit {(git.get('commit') or 'unknown')[:10]}"
             f"{' (with uncommitted changes)' if git.get('dirty') else ''}; results folder `{results_dir}`.")
    markdown = _front_matter(fill_template(template.read_text(encoding="utf-8"), ctx), ctx, stamp)
    doc_title = heading(res, title) if title else next((text for text, _ in headings(markdown, level=1)), "Report")
    if not plain(res):
        doc_title = f"{' + '.join(protocols(res)).upper()} RUN: {doc_title}"
    rio.write_text(out_md, markdown)
    rio.write_text(out_html, to_html(markdown, Path(out_md).parent, doc_title, colours=plain(res)))
    rio.write_csv(Path(out_md).parent / CLAIMS_CSV, claims_frame(ctx))
    return {"verdicts": {c.id: v.verdict for c, v in verdicts}, "shown_figures": sorted(ctx.used_figures)}
