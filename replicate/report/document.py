"""A tiny document model rendered twice: Markdown (report.md) and one self-contained HTML page.

Blocks: Heading, Para (inline Markdown subset), Table, Figure, Notice, Details, Bullets.
Inline Markdown understood: `code`, **bold**, *italic*, [text](url). Everything else is text,
escaped for HTML. Figures are PNG files: the Markdown links them relatively, the HTML embeds them
as base64 data URIs (no network, no sibling files needed).
"""

from __future__ import annotations

import base64
import html
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

NOT_RUN = "not run in this protocol"


# ----------------------------------------------------------------------------------------- blocks
@dataclass
class Heading:
    level: int
    text: str
    anchor: str = ""


@dataclass
class Para:
    text: str


@dataclass
class Notice:
    """A highlighted line, e.g. the 'not run in this protocol' marker of a missing result."""
    text: str
    kind: str = "missing"  # missing | info | warning


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Cell:
    text: str          # what is shown
    raw: str = ""      # the value as read from the source (kept in data-value for tests/audits)
    numeric: bool = False
    css: str = ""      # extra class, e.g. a verdict


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Cell]]
    caption: str = ""
    source: str = ""   # file the numbers come from (shown, and in data-source)


@dataclass
class Figure:
    png: Path
    caption: str
    svg: Path | None = None


@dataclass
class Details:
    summary: str
    body: str          # preformatted text (e.g. JSON)


Block = Heading | Para | Notice | Bullets | Table | Figure | Details


# ------------------------------------------------------------------------------------ formatting
def fmt_number(value: Any, digits: int = 2) -> str:
    """Display form of one number: integers with thousands separators, floats with ``digits``
    decimals (more for small magnitudes), a missing value as the 'not run' marker."""
    if value is None:
        return NOT_RUN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return NOT_RUN
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) >= 1000:
        return f"{int(x):,}"
    if x != 0 and abs(x) < 0.01:
        return f"{x:.3g}"
    return f"{x:,.{digits}f}"


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "section"


# --------------------------------------------------------------------------------------- inline
_INLINE = re.compile(r"(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))")


def inline_html(text: str) -> str:
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[pos:m.start()]))
        tok = m.group(0)
        if tok.startswith("`"):
            out.append(f"<code>{html.escape(tok[1:-1])}</code>")
        elif tok.startswith("**"):
            out.append(f"<strong>{html.escape(tok[2:-2])}</strong>")
        elif tok.startswith("*"):
            out.append(f"<em>{html.escape(tok[1:-1])}</em>")
        else:
            label, url = re.match(r"\[([^\]]+)\]\(([^)\s]+)\)", tok).groups()
            out.append(f'<a href="{html.escape(url, quote=True)}">{html.escape(label)}</a>')
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# ------------------------------------------------------------------------------------- markdown
def to_markdown(blocks: Sequence[Block], md_path: Path) -> str:
    parts: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            parts.append(f"{'#' * b.level} {b.text}")
        elif isinstance(b, Para):
            parts.append(b.text)
        elif isinstance(b, Notice):
            parts.append(f"> **{b.text}**" if b.kind == "missing" else f"> {b.text}")
        elif isinstance(b, Bullets):
            parts.append("\n".join(f"- {item}" for item in b.items))
        elif isinstance(b, Table):
            lines = []
            if b.caption:
                lines.append(f"*{b.caption}*" + (f" (source: `{b.source}`)" if b.source else ""))
                lines.append("")
            lines.append("| " + " | ".join(_md_cell(c) for c in b.columns) + " |")
            lines.append("|" + "|".join("---:" if _numeric_col(b, i) else "---" for i in range(len(b.columns))) + "|")
            for row in b.rows:
                lines.append("| " + " | ".join(_md_cell(c.text) for c in row) + " |")
            parts.append("\n".join(lines))
        elif isinstance(b, Figure):
            rel = os.path.relpath(b.png, md_path.parent)
            parts.append(f"![{_md_cell(b.caption)}]({rel})\n\n*{b.caption}*")
        elif isinstance(b, Details):
            parts.append(f"<details><summary>{html.escape(b.summary)}</summary>\n\n```\n{b.body}\n```\n\n</details>")
    return "\n\n".join(parts) + "\n"


def _numeric_col(table: Table, i: int) -> bool:
    shown = [row[i] for row in table.rows if row[i].text not in (NOT_RUN, NOT_PUBLISHED, NO_VALUE)]
    return bool(shown) and all(c.numeric for c in shown)


# ----------------------------------------------------------------------------------------- html
_CSS = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#ffffff; --accent:#0b57d0; }
* { box-sizing: border-box; }
body { font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); background: var(--bg); margin: 0; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 64px; }
nav.toc { background:#f6f8fa; border:1px solid var(--line); border-radius:6px; padding:8px 16px; margin:16px 0; }
nav.toc ul { margin: 4px 0; padding-left: 20px; }
h1 { font-size: 28px; border-bottom: 1px solid var(--line); padding-bottom: 6px; }
h2 { font-size: 22px; border-bottom: 1px solid var(--line); padding-bottom: 4px; margin-top: 40px; }
h3 { font-size: 18px; margin-top: 28px; }
code { background:#eff1f3; padding: 1px 4px; border-radius: 4px; font-size: 90%; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 13.5px; display:block; overflow-x:auto; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; }
th { background: #f6f8fa; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.missing { color: var(--muted); font-style: italic; }
td.holds { background: #e6f4ea; font-weight: 600; }
td.does-not-hold { background: #fce8e6; font-weight: 600; }
td.inconclusive { background: #fef7e0; font-weight: 600; }
td.not-run { background: #f1f3f4; color: var(--muted); font-style: italic; }
.caption { color: var(--muted); font-size: 13px; margin: 2px 0 16px; }
.notice { border-left: 4px solid #9aa0a6; background:#f8f9fa; padding: 6px 12px; margin: 10px 0; }
.notice.missing { font-style: italic; }
.notice.warning { border-color: #e37400; background: #fef7e0; }
figure { margin: 16px 0; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 13px; }
details { margin: 6px 0; }
details pre { background:#f6f8fa; padding: 8px; overflow-x: auto; font-size: 12px; }
"""


def to_html(blocks: Sequence[Block], title: str) -> str:
    body: list[str] = []
    toc = [b for b in blocks if isinstance(b, Heading) and b.level == 2]
    for b in blocks:
        if isinstance(b, Heading):
            anchor = b.anchor or slug(b.text)
            body.append(f'<h{b.level} id="{html.escape(anchor, quote=True)}">{inline_html(b.text)}</h{b.level}>')
            if b.level == 1 and toc:
                items = "".join(f'<li><a href="#{html.escape(h.anchor or slug(h.text), quote=True)}">'
                                f"{inline_html(h.text)}</a></li>" for h in toc)
                body.append(f'<nav class="toc"><strong>Contents</strong><ul>{items}</ul></nav>')
        elif isinstance(b, Para):
            body.append(f"<p>{inline_html(b.text)}</p>")
        elif isinstance(b, Notice):
            body.append(f'<div class="notice {b.kind}">{inline_html(b.text)}</div>')
        elif isinstance(b, Bullets):
            body.append("<ul>" + "".join(f"<li>{inline_html(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            body.append(_html_table(b))
        elif isinstance(b, Figure):
            data = base64.b64encode(Path(b.png).read_bytes()).decode("ascii")
            body.append(f'<figure data-figure="{html.escape(Path(b.png).stem, quote=True)}">'
                        f'<img alt="{html.escape(b.caption, quote=True)}" src="data:image/png;base64,{data}">'
                        f"<figcaption>{inline_html(b.caption)}</figcaption></figure>")
        elif isinstance(b, Details):
            body.append(f"<details><summary>{html.escape(b.summary)}</summary><pre>{html.escape(b.body)}</pre></details>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def _html_table(t: Table) -> str:
    src = f' data-source="{html.escape(t.source, quote=True)}"' if t.source else ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    rows = []
    for row in t.rows:
        cells = []
        for c in row:
            cls = [c.css] if c.css else []
            if c.text in (NOT_RUN, NOT_PUBLISHED, NO_VALUE):
                cls.append("missing")
            elif c.numeric:
                cls.append("num")
            attr = f' class="{" ".join(cls)}"' if cls else ""
            raw = f' data-value="{html.escape(c.raw, quote=True)}"' if c.raw else ""
            cells.append(f"<td{attr}{raw}>{inline_html(c.text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cap = ""
    if t.caption or t.source:
        cap = f'<div class="caption">{inline_html(t.caption)}' + \
              (f" (source: <code>{html.escape(t.source)}</code>)" if t.source else "") + "</div>"
    return f"<table{src}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{cap}"


# ------------------------------------------------------------------------------ table from frame
def frame_table(frame, caption: str = "", source: str = "", columns: dict[str, str] | None = None,
                digits: dict[str, int] | None = None, percent: Sequence[str] = ()) -> Table:
    """A Table from a DataFrame: ``columns`` maps frame columns to shown headers (and order);
    numbers are formatted by ``fmt_number``; columns in ``percent`` hold fractions shown as %.
    A column missing from the frame, or an empty value, shows the 'not run' marker. Each cell keeps
    the source value in ``raw``."""
    import pandas as pd

    columns = columns or {c: c for c in frame.columns}
    digits = digits or {}
    rows = []
    for _, rec in frame.iterrows():
        row = []
        for col in columns:
            v = rec[col] if col in frame.columns else None
            if v is None or (not isinstance(v, str) and pd.isna(v)):
                row.append(Cell(missing_label(col)))
            elif pd.api.types.is_bool(v):
                row.append(Cell("yes" if v else "no", raw=str(bool(v))))
            elif pd.api.types.is_integer(v):
                row.append(Cell(fmt_number(int(v)), raw=str(int(v)), numeric=True))
            elif pd.api.types.is_float(v):
                x = float(v)
                shown = fmt_percent(x) if col in percent else fmt_number(x, digits.get(col, 2))
                row.append(Cell(shown, raw=repr_number(x), numeric=True))
            else:
                row.append(Cell(str(v), raw=str(v)))
        rows.append(row)
    return Table(list(columns.values()), rows, caption, source)


NO_VALUE = "—"
NOT_PUBLISHED = "not published"


def missing_label(col: str) -> str:
    """What an empty cell means: our result not produced ('not run in this protocol') in a column of
    ours, a number the paper did not publish in a paper column, else no value (e.g. the sd of 1 seed)."""
    if col.endswith("_ours") or col in ("valid_ppl", "test_ppl", "train_ppl"):
        return NOT_RUN
    if "paper" in col:
        return NOT_PUBLISHED
    return NO_VALUE


def fmt_percent(x: float) -> str:
    return f"{x * 100:+.1f}%"


def repr_number(x: float) -> str:
    """Shortest exact text of a float (what a CSV reader gives back)."""
    return repr(float(x))
