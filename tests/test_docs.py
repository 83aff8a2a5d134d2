"""The documentation: a short README, relative links that resolve, the machine-read markers, and no
references to files a clone does not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.workflow import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
LINKED_PAGES = [README, *DOCS, REPO_ROOT / "config" / "README.md"]
MEASURED_BEGIN, MEASURED_END = "<!-- measured:begin -->", "<!-- measured:end -->"
TEST_MARKER = "<!-- test-command -->"
FORBIDDEN = ("PAPERS.md", "helper-", "../shared")
MAX_README_LINES = 220

_FENCE = re.compile(r"^(```|~~~)")
_INLINE_CODE = re.compile(r"`+[^`]*`+")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code removed (links there are not links)."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(_INLINE_CODE.sub("", line))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, inline markup and punctuation dropped, spaces -> '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link in a heading keeps its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (duplicates get -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def relative_links(path: Path) -> list[str]:
    targets = []
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        targets += _LINK.findall(line)
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, flags=re.I)]  # not http:, mailto:


def test_slug_matches_github():
    assert _slug("Publishing a run: `paper/measured/`") == "publishing-a-run-papermeasured"
    assert _slug("Press & Wolf 2017: LSTM language models") == "press--wolf-2017-lstm-language-models"
    assert _slug("press_wolf") == "press_wolf"


def test_readme_is_short():
    """At most MAX_README_LINES lines written by hand; the generated measured-results block (its length
    depends on what was published) does not count."""
    text = README.read_text(encoding="utf-8")
    start, end = text.index(MEASURED_BEGIN), text.index(MEASURED_END)
    by_hand = text[:start] + text[end:]
    assert len(by_hand.splitlines()) <= MAX_README_LINES


def test_readme_markers():
    text = README.read_text(encoding="utf-8")
    assert TEST_MARKER in text
    after = text[text.index(TEST_MARKER) + len(TEST_MARKER):].lstrip("\n")
    assert after.startswith("```bash\n"), "the test-command marker must be followed by a ```bash block (.ci/run)"
    assert "pytest" in after.split("```", 2)[1]
    assert text.count(MEASURED_BEGIN) == 1 and text.count(MEASURED_END) == 1
    assert text.index(MEASURED_BEGIN) < text.index(MEASURED_END)


def test_docs_pages_exist():
    names = {p.name for p in DOCS}
    for page in ("press_wolf.md", "inan.md", "initial_loss.md", "scale.md", "cluster.md", "report.md",
                 "reproducibility.md"):
        assert page in names, f"docs/{page} missing"


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {dest.relative_to(REPO_ROOT)})")
    assert not broken, f"{page.relative_to(REPO_ROOT)}: broken links: {broken}"


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_no_references_outside_the_clone(page):
    text = page.read_text(encoding="utf-8")
    found = [s for s in FORBIDDEN if s in text]
    assert not found, f"{page.relative_to(REPO_ROOT)} mentions {found}"


def _source_files() -> list[Path]:
    """Code, rules, schemas, configs, tests and the papers' reference numbers (CI's own script aside)."""
    out = [REPO_ROOT / "Snakefile", REPO_ROOT / "pyproject.toml"]
    for folder in ("replicate", "workflow", "config", "tests", "paper/reference", "profiles"):
        out += [p for p in sorted((REPO_ROOT / folder).rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    return [p for p in out if p != Path(__file__).resolve()]


def test_no_references_outside_the_clone_in_code():
    pattern = re.compile("|".join(map(re.escape, FORBIDDEN)) + r"|\bissue \d+\b")
    found = [f"{p.relative_to(REPO_ROOT)}: {m.group(0)}" for p in _source_files()
             for m in [pattern.search(p.read_text(encoding="utf-8", errors="replace"))] if m]
    assert not found, f"references to things a clone does not have: {found}"
