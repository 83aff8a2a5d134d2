"""The template (paper/report_template.md) filled -> report.md, rendered -> index.html.

A line ``{{name}}`` alone inserts a generated block (``builders``); inline ``{{verdict:<claim id>}}`` that claim's
verdict; anything else left as ``{{`` is an error, never printed. The plain answer per paper and the table of
contents follow the title; a smoke or mixed-protocol report opens with a banner and shows no verdict colours.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

from replicate import provenance as prov
from replicate.errors import ReplicateError
from replicate.report import experiments
from replicate.report.compute import section_compute, section_provenance
from replicate.report.render import headings, to_html
from replicate.report.summary import banner, claims_frame, glance, heading, plain, section_summary
from replicate.reportkit import blocks as B
from replicate.reportkit.sections import Context, other_figures, protocols

CLAIMS_CSV = "claims.csv"  # beside report.md: one row per claim with its verdict (the README's block reads it)


# ------------------------------------------------------------------------------------ template
_BLOCK = re.compile(r"^\{\{\s*([a-z_]+)\s*\}\}$")
_INLINE = re.compile(r"\{\{\s*([a-z_]+)(?::([a-z0-9_.]+))?\s*\}\}")   # claim ids may hold a dot: _drop0.3


def builders() -> dict:
    """The generated blocks by name: the summary, each experiment's section, and the closing sections."""
    sections = {name: module.section for name, module in experiments.SECTIONS.items()}
    return {"summary": section_summary, **sections, "other_figures": other_figures, "compute": section_compute,
            "provenance": section_provenance}


def fill_template(text: str, ctx: Context) -> str:
    """The template with its comments removed and every directive replaced (Markdown)."""
    blocks = builders()
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


def _front_matter(markdown: str, stamp: str, answer: str, warning: str, retitle=lambda t: t) -> str:
    """The title (``retitle``: a smoke run's says so), then the banner (if any), the build stamp, the plain
    answer and a table of contents (the level-2 headings)."""
    toc = B.bullets([f"[{B.escape(text)}](#{anchor})" for text, anchor in headings(markdown)])
    lines = markdown.split("\n")
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), 0)
    if at:
        lines[at - 1] = "# " + retitle(lines[at - 1][2:])
    front = [warning, stamp, answer, "**Contents**", toc]
    return "\n".join(lines[:at] + [x for block in front if block for x in ("", block)] + [""] + lines[at:])


# -------------------------------------------------------------------------------------- build
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
    res = experiments.load(results_dir)
    verdicts = experiments.evaluate_all(res, tolerances)
    ctx = Context(res, verdicts, figures_dir, Path(captions_dir) if captions_dir else None, Path(out_md),
                  sections=sections, full_protocol=full_protocol, tolerances=tolerances)
    git = prov.git_state()
    stamp = (f"Built {prov.now()} from commit {(git.get('commit') or 'unknown')[:10]}"
             f"{' (with uncommitted changes)' if git.get('dirty') else ''}; results folder `{results_dir}`.")
    markdown = _front_matter(fill_template(template.read_text(encoding="utf-8"), ctx), stamp, glance(ctx), banner(res),
                             partial(heading, res))
    doc_title = heading(res, title) if title else next((text for text, _ in headings(markdown, level=1)), "Report")
    if not plain(res):
        doc_title = f"{' + '.join(protocols(res)).upper()} RUN: {doc_title}"
    rio.write_text(out_md, markdown)
    rio.write_text(out_html, to_html(markdown, Path(out_md).parent, doc_title, colours=plain(res)))
    rio.write_csv(Path(out_md).parent / CLAIMS_CSV, claims_frame(ctx))
    return {"verdicts": {c.id: v.verdict for c, v in verdicts}, "shown_figures": sorted(ctx.used_figures)}
