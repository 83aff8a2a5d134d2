"""Markdown blocks of the report: tables from data frames, figures, notices, bullets, details."""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from replicate.reportkit import labels
from replicate.reportkit.labels import NOT_RUN, fmt_number, fmt_percent, missing_label


@dataclass(frozen=True)
class Link:
    """A result file as the report names it (``label``) and links it (``href``, relative to report.md)."""
    label: str
    href: str


def link(label: str, target: Path, md_dir: Path) -> Link:
    return Link(label, Path(os.path.relpath(target, md_dir)).as_posix())


_SPECIAL = re.compile(r"([\\`*\[\]<>|])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def escape(text: str) -> str:
    """Plain text as Markdown inline text (no emphasis, links, HTML or cell breaks)."""
    return _SPECIAL.sub(lambda m: "\\" + m.group(0), " ".join(str(text).split()))


def code(text: str) -> str:
    """Text as an inline code span (any backticks inside kept)."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _destination(href: str) -> str:
    return f"<{href}>" if re.search(r"[\s()<>]", href) else href


def cell(value, col: str, digits: int = 2, percent: bool = False, share: bool = False) -> tuple[str, str]:
    """(Markdown text, kind: number | text | missing) of one value of column ``col``: ``percent`` a signed
    relative difference, ``share`` a plain percentage; a coded text value by its readable label."""
    if value is None or (not isinstance(value, str) and bool(pd.isna(value))):
        label = missing_label(col)
        return (f"*{label}*" if label == NOT_RUN else label), "missing"
    if pd.api.types.is_bool(value):
        return ("yes" if value else "no"), "text"
    if pd.api.types.is_integer(value):
        return fmt_number(int(value)), "number"
    if pd.api.types.is_float(value):
        if percent or share:
            return fmt_percent(float(value), signed=percent), "number"
        return fmt_number(float(value), digits), "number"
    return escape(labels.value(str(value))), "text"


SECTION_LEVEL = ("protocol",)  # stated once per section (sections.protocols_line), not in a column


def table(frame: pd.DataFrame, columns: dict[str, str] | Sequence[str] | None = None, *, keep: Sequence[str] = (),
          partial: Sequence[str] = (), digits: dict[str, int] | None = None, percent: Sequence[str] = (),
          share: Sequence[str] = (), markdown: Sequence[str] = (), caption: str = "",
          source: Link | None = None, drop: Sequence[str] = SECTION_LEVEL) -> str:
    """A Markdown table of ``frame``, ``columns`` mapping its columns to headers (default: all, by their labels).
    Values common to all rows (but ``keep``; ``partial``: where used) are stated once above it; ``percent``
    columns read as signed %, ``share`` as plain %; ``markdown`` ones are formatted; ``drop`` ones never shown."""
    if not isinstance(columns, dict):
        columns = {c: labels.column(c) for c in (frame.columns if columns is None else columns)}
    columns = {k: v for k, v in columns.items()
               if k in frame.columns and k not in drop and not frame[k].isna().all()}  # an empty column says nothing
    digits = dict(digits or {})
    for col in columns:  # a column of whole numbers reads as such: tau 5, not 5.00
        if col in labels.SETTINGS and col not in digits:
            digits[col] = -1
        values = pd.to_numeric(frame[col], errors="coerce").dropna() if frame[col].dtype != bool else []
        if col not in digits and len(values) and frame[col].dtype.kind == "f" and (values == values.round()).all():
            digits[col] = 0

    def fmt(value, col):
        if col in markdown and isinstance(value, str):
            return value, "number"
        return cell(value, col, digits.get(col, 2), col in percent, col in share)

    def stated(col):
        values = frame[col].dropna()
        text = fmt(values.iloc[0] if len(values) else None, col)[0]
        where = " (where used)" if col in partial and 0 < len(values) < len(frame) else ""
        return f"{escape(columns[col])} **{text}**{where}"

    def same(col):  # one value in every row (a ``partial`` column: in the rows that have one)
        values = frame[col].dropna()
        return values.nunique() <= 1 and (col in partial or len(values) in (0, len(frame)))

    common = [c for c in columns if c not in keep and same(c)] if len(frame) > 1 else []
    shown = [c for c in columns if c not in common]
    parts = [caption] if caption else []
    if common:
        parts.append("Same in every row: " + "; ".join(stated(c) for c in common) + ".")
    rows = [[fmt(rec[c], c) for c in shown] for _, rec in frame.iterrows()]
    kinds = [{r[i][1] for r in rows} for i in range(len(shown))]
    numeric = ["number" in k and "text" not in k for k in kinds]
    lines = ["| " + " | ".join(escape(columns[c]) for c in shown) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(text for text, _ in r) + " |" for r in rows]
    parts.append("\n".join(lines))
    if source is not None:
        parts.append(f"Full table: [{escape(source.label)}]({_destination(source.href)})")
    return "\n\n".join(parts)


def figure(png: Path, caption: str, md_dir: Path) -> str:
    """The PNG (the HTML embeds it) linked to its full-size file (the SVG beside it, else the PNG), captioned."""
    href = Path(os.path.relpath(png, md_dir)).as_posix()
    svg = png.with_suffix(".svg")
    full = Path(os.path.relpath(svg, md_dir)).as_posix() if svg.is_file() else href
    return (f"[![{escape(png.stem.replace('_', ' '))}]({_destination(href)})]({_destination(full)})\n\n"
            f"*{escape(caption)}* **[Full-size figure]({_destination(full)})**")


def notice(text: str) -> str:
    return f"> **{escape(text)}**"


def bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def details(summary: str, body: str) -> str:
    """A collapsed block of preformatted text (e.g. a run's JSON config)."""
    fence = "~~~~" if "```" in body else "```"
    return details_md(summary, f"{fence}\n{body}\n{fence}")


def details_md(summary: str, body: str) -> str:
    """A collapsed block of Markdown (tables, lists) under its visible ``summary``."""
    return f"<details><summary>{html.escape(summary)}</summary>\n\n{body}\n\n</details>"


def join(blocks: Sequence[str]) -> str:
    return "\n\n".join(b for b in blocks if b)
