"""report.md -> one self-contained HTML page: figures embedded, CSS inline, no JavaScript; GitHub-style heading ids,
table cells with their header (``data-label``: cards at phone width) and a class (a verdict's colour, a long word)."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML

from replicate.errors import ReplicateError
from replicate.reportkit import effects as E
from replicate.reportkit.labels import NOT_RUN

CELL_CLASSES = {E.REPRODUCED: "reproduced", E.HOLDS: "holds", E.SMALLER: "holds-off", E.LARGER: "holds-off",
                E.INCONCLUSIVE: "inconclusive", E.NOT_REPRODUCED: "not-reproduced",
                E.NOT_REPRODUCED_LARGER: "not-reproduced", E.FAILS: "does-not-hold", NOT_RUN: "not-run"}
LONG_WORD = 24  # characters

CSS = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#ffffff; }
* { box-sizing: border-box; }
body { font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); background: var(--bg); margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 28px 64px; }
main > p, main > ul, main > blockquote, main > details, main > h1, main > h2, main > h3 { max-width: 900px; }
h1 { font-size: 28px; border-bottom: 1px solid var(--line); padding-bottom: 6px; }
h2 { font-size: 22px; border-bottom: 1px solid var(--line); padding-bottom: 4px; margin-top: 40px; }
h3 { font-size: 18px; margin-top: 28px; }
code { background:#eff1f3; padding: 1px 4px; border-radius: 4px; font-size: 90%; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 13.5px; max-width: 100%; }
th, td { border: 1px solid var(--line); padding: 3px 5px; vertical-align: top; overflow-wrap: break-word; }
td.long { overflow-wrap: anywhere; }
th { background: #f6f8fa; text-align: left; font-weight: 600; }
td[style*="right"] { white-space: nowrap; font-variant-numeric: tabular-nums; }
td[style*="right"] em { white-space: normal; }
td em { color: var(--muted); }
td.reproduced, td.holds { background: #e6f4ea; font-weight: 600; }
td.holds-off { background: #f1f7e4; font-weight: 600; }
td.not-reproduced { background: #fdecdc; font-weight: 600; }
td.does-not-hold { background: #fce8e6; font-weight: 600; }
td.inconclusive { background: #fef7e0; font-weight: 600; }
td.not-run { background: #f1f3f4; color: var(--muted); font-style: italic; }
table + p { color: var(--muted); font-size: 13px; margin-top: 2px; }
blockquote { border-left: 4px solid #9aa0a6; background:#f8f9fa; padding: 6px 12px; margin: 10px 0; }
blockquote p { margin: 0; }
img { max-width: 100%; height: auto; border: 1px solid var(--line); }
main > p:has(> a > img) { max-width: 1100px; }  /* figures: drawn 1,100 px wide (replicate/plotting.py) */
.table-wrap { max-width: 100%; overflow-x: auto; }
td.past { background: #fce8e6; }
.glance { border: 1px solid var(--line); border-left: 4px solid #1a73e8; background: #f8fbff; padding: 4px 16px;
          margin: 12px 0 20px; max-width: 900px; }
.glance ul { padding-left: 18px; }
.banner { border: 3px solid #b3261e; background: #fce8e6; color: #8c1d18; padding: 4px 16px; margin: 12px 0;
          font-size: 18px; max-width: 900px; }
.figure-link { font-weight: 600; }
@media (max-width: 600px) {
  body { font-size: 14px; }
  main { padding: 12px 10px 40px; }
  h1 { font-size: 22px; } h2 { font-size: 19px; }
  table { font-size: 12.5px; }
  /* a figure keeps 3/4 of its drawn size, its text legible, and scrolls sideways on its own */
  main > p:has(> a > img) { overflow-x: auto; }
  main > p:has(> a > img) img { max-width: none; width: 825px; }
}
@media (max-width: 480px) {  /* the verdict table as cards: the claim and its verdict first */
  .verdicts table, .verdicts tbody, .verdicts tr, .verdicts td { display: block; width: 100%; }
  .verdicts thead { display: none; }
  .verdicts tr { border: 1px solid var(--line); margin: 0 0 10px; }
  .verdicts td { border: 0; border-top: 1px solid var(--line); white-space: normal; text-align: left !important; }
  .verdicts td:first-child { border-top: 0; font-weight: 600; }
  .verdicts td:not(:first-child)::before { content: attr(data-label) ": "; color: var(--muted); font-weight: 400; }
}
@media print {
  .table-wrap { overflow: visible; } details { display: block; } a { color: inherit; }
  td[class] { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
details { margin: 6px 0; }
details pre { background:#f6f8fa; padding: 8px; overflow-x: auto; font-size: 12px; }
"""


def slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _annotate(state) -> None:
    """Core rule: ids on headings (unique), on table cells their header and a class (verdicts, long words)."""
    seen: dict[str, int] = {}
    tokens = state.tokens
    header: list[str] = []
    column = 0
    for tok, nxt in zip(tokens, tokens[1:]):
        text = nxt.content if nxt.type == "inline" else ""
        if tok.type == "thead_open":
            header = []
        elif tok.type == "th_open":
            header.append(_plain(nxt))
        elif tok.type == "tr_open":
            column = 0
        elif tok.type == "heading_open":
            base = slug(_plain(nxt))
            seen[base] = seen.get(base, 0) + 1
            tok.attrSet("id", base if seen[base] == 1 else f"{base}-{seen[base] - 1}")
        elif tok.type == "td_open":
            tok.attrSet("data-label", header[column] if column < len(header) else "")
            column += 1
            verdict = _verdict_class(text)
            if verdict and state.env.get("colours", True):
                tok.attrSet("class", verdict)
            elif not verdict and re.fullmatch(r"\*\*[^*]+\*\*", text.strip()):
                tok.attrSet("class", "past")
            elif not verdict and max(map(len, text.split()), default=0) > LONG_WORD:
                tok.attrSet("class", "long")


def _verdict_class(text: str) -> str | None:
    """The colour class of a verdict cell: a verdict alone, or followed by a mark in brackets."""
    return CELL_CLASSES.get(re.sub(r" \(.*\)$", "", text.strip("* ")))


def _plain(inline) -> str:
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


def _image(self, tokens, idx, options, env):
    """Embed a local PNG as a data URI (resolved against report.md's folder)."""
    token = tokens[idx]
    path = (env["md_dir"] / unquote(str(token.attrGet("src")))).resolve()  # the parser percent-encodes
    if not path.is_file():
        raise ReplicateError(f"the report links the figure {path}, which does not exist",
                             "rerun the rule that draws it, or rebuild the report")
    token.attrSet("src", "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii"))
    token.attrSet("data-figure", path.stem)
    return RendererHTML.image(self, tokens, idx, options, env)


def _table_open(self, tokens, idx, options, env):
    """Every table in a wrapper that scrolls sideways itself, so that the page never does."""
    return '<div class="table-wrap">\n' + self.renderToken(tokens, idx, options, env)


def _table_close(self, tokens, idx, options, env):
    return self.renderToken(tokens, idx, options, env) + "</div>\n"


def parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.core.ruler.push("report_annotate", _annotate)
    md.add_render_rule("image", _image)
    md.add_render_rule("table_open", _table_open)
    md.add_render_rule("table_close", _table_close)
    return md


def headings(markdown: str, level: int = 2) -> list[tuple[str, str]]:
    """(text, id) of every heading of ``level``, ids as the HTML page gives them."""
    tokens = parser().parse(markdown)
    return [(_plain(tokens[i + 1]), t.attrGet("id")) for i, t in enumerate(tokens)
            if t.type == "heading_open" and t.tag == f"h{level}"]


def to_html(markdown: str, md_dir: Path, title: str, colours: bool = True) -> str:
    """The page: ``markdown`` rendered, figures (relative to ``md_dir``) embedded, CSS inline; ``colours``
    False: verdict cells without their colour (a smoke or mixed-protocol report)."""
    body = parser().render(markdown, {"md_dir": Path(md_dir), "colours": colours})
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
            f"{body}</main>\n</body>\n</html>\n")
