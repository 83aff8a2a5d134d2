"""``python -m replicate compare-results DIR_A DIR_B``: are two results trees the same, timings and provenance aside?
Logs and benchmarks skipped; JSON, torch files and CSV without volatile keys or columns (provenance, code versions,
times, memory, hosts), text with timestamps and hashes masked (the report's Compute and Provenance sections left
out), the rest byte for byte. Exit status 1 when they differ, one line per difference."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from pathlib import Path

SKIPPED_DIRS = {"logs", "benchmarks", ".snakemake"}
# a key or column is volatile when one of its '_'-separated words is one of these (or it ends in per_s)
VOLATILE = re.compile(r"(^|_)(provenance|code|versions?|started|finished|timestamp|time|seconds|elapsed|host"
                      r"|hostname|git|commit|wall|load|duration|rss)(_|$)|per_s$", re.I)
# the report's sections of timings and provenance (Markdown and HTML headings), up to the next section
VOLATILE_SECTION = re.compile(r'^(## (Compute|Provenance)\s*$|<h2 id="(compute|provenance)">)')
NEXT_SECTION = re.compile(r"^(## |<h2[ >])")
TEXT_SUFFIXES = {".md", ".html", ".svg", ".txt", ".rst"}
MASKS = (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?"),  # timestamps
         re.compile(r"\b[0-9a-f]{10,64}\b"))  # commits, code versions, sha256


def files(root: Path) -> set[str]:
    """Every file under ``root`` (relative, '/'-separated) outside the skipped folders and logs."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and not SKIPPED_DIRS & set(p.relative_to(root).parts) and p.suffix != ".log"}


def _same(a, b) -> bool:
    """Equal, volatile keys aside (JSON values, or what torch.load returns)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = [k for k in a if not VOLATILE.search(str(k))]
        return keys == [k for k in b if not VOLATILE.search(str(k))] and all(_same(a[k], b[k]) for k in keys)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if hasattr(a, "dtype") and hasattr(a, "shape"):  # tensors, arrays (NaN equals NaN)
        return (type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
                and bool(((a == b) | ((a != a) & (b != b))).all()))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    return type(a) is type(b) and a == b


def _csv_rows(text: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return rows
    keep = [i for i, name in enumerate(rows[0]) if not VOLATILE.search(name)]
    return [[r[i] if i < len(r) else "" for i in keep] for r in rows]


def _masked(text: str) -> list[str]:
    lines, skipping = [], False
    for line in text.splitlines():
        if NEXT_SECTION.match(line):
            skipping = bool(VOLATILE_SECTION.match(line))
        if not skipping:
            lines.append(line)
    text = "\n".join(lines)
    for mask in MASKS:
        text = mask.sub("#", text)
    return text.splitlines()


def difference(a: Path, b: Path) -> str | None:
    """Why two files differ (None when they are the same, volatile content aside)."""
    raw_a, raw_b = a.read_bytes(), b.read_bytes()
    if raw_a == raw_b:
        return None
    suffix = a.name.rsplit(".", 1)[-1] if "." in a.name else ""
    try:
        if suffix == "json":
            return None if _same(json.loads(raw_a), json.loads(raw_b)) else "JSON differs (volatile keys aside)"
        if suffix == "pt":
            import torch  # only when a tree has torch files

            same = _same(*(torch.load(p, map_location="cpu", weights_only=False) for p in (a, b)))
            return None if same else "torch file differs (volatile keys aside)"
        if suffix == "csv":
            ra, rb = _csv_rows(raw_a.decode()), _csv_rows(raw_b.decode())
            if ra == rb:
                return None
            row = next((i for i, (x, y) in enumerate(zip(ra, rb)) if x != y), min(len(ra), len(rb)))
            return f"CSV differs from row {row} ({len(ra)} vs {len(rb)} rows)"
        if a.suffix in TEXT_SUFFIXES:
            la, lb = _masked(raw_a.decode()), _masked(raw_b.decode())
            diff = [i for i, (x, y) in enumerate(zip(la, lb)) if x != y]
            if not diff and len(la) == len(lb):
                return None
            first = diff[0] if diff else min(len(la), len(lb))
            return f"text differs in {len(diff) + abs(len(la) - len(lb))} line(s), first line {first + 1}"
    except (UnicodeDecodeError, json.JSONDecodeError, csv.Error) as exc:
        return f"cannot compare as {suffix}: {exc}"
    return "bytes differ"


def compare(a: Path, b: Path) -> list[str]:
    """One line per difference between the trees ``a`` and ``b``."""
    fa, fb = files(a), files(b)
    out = [f"only in {a}: {p}" for p in sorted(fa - fb)] + [f"only in {b}: {p}" for p in sorted(fb - fa)]
    for rel in sorted(fa & fb):
        why = difference(a / rel, b / rel)
        if why:
            out.append(f"differs: {rel}: {why}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m replicate compare-results", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", type=Path, help="a results folder")
    p.add_argument("b", type=Path, help="another results folder")
    args = p.parse_args(argv)
    for d in (args.a, args.b):
        if not d.is_dir():
            print(f"error: {d} is not a folder", file=sys.stderr)
            return 2
    lines = compare(args.a, args.b)
    n = len(files(args.a) & files(args.b))
    print("\n".join(lines) if lines else f"same: {n} files compared, timings and provenance aside")
    return 1 if lines else 0
