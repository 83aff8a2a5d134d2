"""What the experiments' sections (``replicate/<experiment>/section.py``) share: the context they read, how a section
opens (its ``Paper`` and ``answer``, what its claims come to), figures, the protocol line, the configuration's
changes, ours beside the paper's."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from replicate.reportkit import blocks as B
from replicate.reportkit import effects as E
from replicate.reportkit.labels import NOT_RUN, fmt_percent
from replicate.reportkit.sources import Results

SMOKE_MARK = "SMOKE RUN (tiny settings, a pipeline check; says nothing about the papers): "


@dataclass
class Context:
    results: Results
    verdicts: list
    figures_dir: Path
    captions_dir: Path | None
    md_path: Path
    used_figures: set = field(default_factory=set)
    sections: dict | None = None        # this run's config sections (press_wolf, inan, ...)
    tolerances: dict | None = None      # the report config's claim tolerances
    full_protocol: dict | None = None   # the same sections in config/paper.yaml (schema defaults filled)

    def source(self, key: str) -> B.Link:
        """The link to a result file read by ``sources``."""
        label = self.results.paths[key]
        return B.link(label, self.results.root.parent / label, self.md_path.parent)


def figure_stems(figures_dir: Path) -> list[str]:
    return sorted(p.stem for p in figures_dir.glob("*.png")) if figures_dir.is_dir() else []


def caption(ctx: Context, stem: str, own: dict[str, str]) -> str:
    """The figure's Snakemake-report caption (workflow/report/[*_]<stem>.rst) as plain text, else ``own``'s, else
    its name."""
    if ctx.captions_dir is not None and ctx.captions_dir.is_dir():
        for path in [ctx.captions_dir / f"{stem}.rst", *sorted(ctx.captions_dir.glob(f"*_{stem}.rst"))]:
            if path.is_file():
                text = " ".join(path.read_text(encoding="utf-8").split())
                if "{{" in text or "{%" in text:  # a Jinja template for Snakemake's report only
                    continue
                return re.sub(r"(``|\*\*|\*|`)([^`*]+)\1", r"\2", text)
    return own.get(stem) or stem.replace("_", " ").capitalize() + "."


def distinct(frame: pd.DataFrame, col: str) -> list[str]:
    """The values of a column, each once, in order (none without the column)."""
    return list(dict.fromkeys(frame[col].dropna().astype(str))) if col in frame.columns else []


def protocols(res: Results) -> list[str]:
    """Every protocol label (smoke, reduced, full; without a table's detail in brackets) the tables carry."""
    return list(dict.fromkeys(p.split(" (")[0] for f in res.raw.values() for p in distinct(f, "protocol")))


def figures(ctx: Context, stems: list[str], own: dict[str, str] | None = None) -> list[str]:
    """The figures not shown yet, captioned (a smoke run's captions open with SMOKE_MARK)."""
    out, mark = [], SMOKE_MARK if "smoke" in protocols(ctx.results) else ""
    for stem in stems:
        if stem in ctx.used_figures:
            continue
        ctx.used_figures.add(stem)
        text = mark + caption(ctx, stem, own or {})
        out.append(B.figure(ctx.figures_dir / f"{stem}.png", text, ctx.md_path.parent))
    return out


def section_figures(ctx: Context, what: str, explicit: Sequence[str] = (), prefixes: Sequence[str] = (),
                    captions: dict[str, str] | None = None) -> str:
    """A section's figures not shown yet: ``explicit`` stems first, then those starting with one of ``prefixes``."""
    stems = figure_stems(ctx.figures_dir)
    chosen = [s for s in explicit if s in stems]
    chosen += [s for s in stems if any(s.startswith(p) for p in prefixes) and s not in chosen]
    return B.join(figures(ctx, chosen, captions)) or missing(what)


def flatten(obj, leaf=lambda v: ", ".join(map(str, v)) if isinstance(v, list) else v, prefix: str = "") -> dict:
    """Nested JSON -> {"a.b[0].c": leaf(value)}; a list of scalars is one leaf (by default comma-separated)."""
    if isinstance(obj, dict) or (isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj)):
        out = {}
        for k, v in (obj.items() if isinstance(obj, dict) else enumerate(obj)):
            out |= flatten(v, leaf, f"{prefix}[{k}]" if isinstance(obj, list) else f"{prefix}.{k}" if prefix else str(k))
        return out
    return {prefix: leaf(obj)}


def config_diff(ctx: Context, section: str) -> str:
    """Every config key of ``section`` whose value differs from the papers' full protocol."""
    if not ctx.sections or not ctx.full_protocol or section not in ctx.sections:
        return ""
    ours, full = (flatten(ctx.sections[section], json.dumps), flatten(ctx.full_protocol.get(section) or {}, json.dumps))
    keys = sorted(k for k in set(ours) | set(full) if ours.get(k, "—") != full.get(k, "—"))
    if not keys:
        return f"Configuration: identical to the papers' full protocol (`config/paper.yaml`, `{section}`)."
    return B.join([f"What this configuration changes from the full protocol (`config/paper.yaml`, section "
                   f"`{section}`):",
                   B.bullets([f"{B.code(k)}: {B.code(ours.get(k, '—'))} (full protocol: {B.code(full.get(k, '—'))})"
                              for k in keys])])


def protocols_line(ctx: Context, parts: dict[str, str]) -> str:
    """The section's protocol line: per part (label -> result key) the protocols its table carries."""
    by: dict[str, list[str]] = {}
    for label, key in parts.items():
        for p in distinct(ctx.results.raw.get(key, pd.DataFrame()), "protocol"):
            by.setdefault(p, []).append(label)
    if not by:
        return ""
    if len(by) == 1:
        return f"Protocol of this section: {B.code(next(iter(by)))}."
    return "Protocol of this section: " + "; ".join(f"{', '.join(v)}: {B.code(p)}" for p, v in by.items()) + "."


def missing(what: str) -> str:
    return B.notice(f"{what}: {NOT_RUN}.")


def ours_paper(frame: pd.DataFrame, splits: Sequence[str] = ("valid", "test")) -> dict[str, str]:
    """Column map 'ours | paper | rel. diff' per split (``valid_ours``/``valid_paper`` or ``valid_ppl``/...)."""
    cols: dict[str, str] = {}
    for split in splits:
        for names, what in (((f"{split}_ours", f"{split}_ppl"), "ours"),
                            ((f"{split}_paper", f"paper_{split}_ppl"), "paper"),
                            ((f"{split}_rel_diff",), "rel. diff")):
            col = next((n for n in names if n in frame.columns), None)
            if col is not None:
                cols[col] = f"{split} {what}"
    return cols


def rel_cols(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.endswith("rel_diff")]


def listed(frame: pd.DataFrame, col: str, label: str) -> str:
    """The distinct values of a long text column as one sentence, not a column that repeats them."""
    values = distinct(frame, col)
    return f"{label}: " + "; ".join(B.escape(v) for v in values) + "." if values else ""


def other_figures(ctx: Context) -> str:
    rest = [s for s in figure_stems(ctx.figures_dir) if s not in ctx.used_figures]
    return B.join(figures(ctx, rest)) or "None: every figure appears in its experiment's section."


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
