"""The result files as one ``Results`` object, each experiment's read by its section with ``read_table``: a result
not produced is ``None``; a file that lacks a column the report reads is an error (never silently less)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from replicate.errors import ReplicateError


@dataclass
class Results:
    """The frames the claims read, by name (docs/report.md, "The claims' input"), and those the sections show."""
    root: Path = Path("results")
    frames: dict[str, pd.DataFrame | None] = field(default_factory=dict)  # the claims' input (None: not produced)
    raw: dict[str, pd.DataFrame] = field(default_factory=dict)      # name -> the CSV as written (or runs' settings)
    paths: dict[str, str] = field(default_factory=dict)             # name -> path relative to the root's parent
    benchmarks: pd.DataFrame | None = None
    speed: pd.DataFrame | None = None                               # the engine vs a plain loop
    throughput: list[dict] = field(default_factory=list)
    provenance: list[dict] = field(default_factory=list)            # {"path": ..., "provenance": {...}}
    pools: dict[str, Any] = field(default_factory=dict)             # protocol -> noise.Pool (repeated runs)


def _need(frame: pd.DataFrame, cols, path: Path) -> None:
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ReplicateError(f"{path} lacks the column(s) {missing} the report reads "
                             f"(it has {list(frame.columns)})",
                             "rebuild it with the current pipeline, or update replicate/reportkit/sources.py "
                             "if the format changed on purpose")


def _read_csv(path: Path, **kw) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ReplicateError(f"cannot read {path}: {exc}", "rerun the rule that writes it") from exc


def relative(root: Path, path: Path) -> str:
    return str(path.relative_to(root.parent) if path.is_relative_to(root.parent) else path)


def read_table(res: "Results", key: str, rel: str, cols, **read_kw) -> pd.DataFrame | None:
    """``<results>/rel`` with its ``cols`` checked, registered as ``res.raw[key]``; None when not produced."""
    path = res.root / rel
    if not path.is_file():
        return None
    frame = _read_csv(path, **read_kw)
    _need(frame, cols, path)
    res.raw[key], res.paths[key] = frame, relative(res.root, path)
    return frame


def load_benchmarks(root: Path) -> pd.DataFrame | None:
    """One row per Snakemake ``benchmark:`` file (mean over its repeats), with the job it times."""
    rows = []
    for path in sorted(root.glob("benchmarks/**/*.tsv")):
        frame = _read_csv(path, sep="\t")
        _need(frame, ["s", "max_rss", "cpu_time", "mean_load"], path)
        for col in ("s", "max_rss", "cpu_time", "mean_load"):
            frame[col] = pd.to_numeric(frame[col], errors="coerce")  # "-" when not measurable
        rel = path.relative_to(root / "benchmarks")
        rows.append({"experiment": rel.parts[0] if len(rel.parts) > 1 else "-",
                     "job": str(rel.with_suffix("")), "path": relative(root, path),
                     "wall_s": frame["s"].mean(), "cpu_s": frame["cpu_time"].mean(),
                     "mean_load": frame["mean_load"].mean(), "max_rss_mib": frame["max_rss"].max()})
    return pd.DataFrame(rows) if rows else None


def load_provenance(root: Path) -> list[dict[str, Any]]:
    """Every provenance block under ``root`` (result JSONs' ``provenance`` and ``*.provenance.json`` sidecars)."""
    out = []
    for path in sorted(root.rglob("*.json")):
        rel = path.relative_to(root)
        if rel.parts[0] == "report" or any(p.startswith(".") for p in rel.parts):
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ReplicateError(f"cannot read {path}: {exc}", "rerun the rule that writes it") from exc
        if isinstance(data, dict) and isinstance(data.get("provenance"), dict):
            block = data["provenance"]
        elif path.name.endswith(".provenance.json") and isinstance(data, dict) and "git" in data:
            block = data
        else:
            continue
        out.append({"path": relative(root, path), "provenance": block})
    return out


def run_label(path: str) -> str:
    """A short label for a result path: results/press_wolf/small/seed1/metrics.json -> press_wolf/small/seed1."""
    return re.sub(r"(/metrics)?\.json$|\.provenance\.json$", "", re.sub(r"^results/", "", path))
