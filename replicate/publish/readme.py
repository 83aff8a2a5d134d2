"""The README's measured-results block, generated from the bundle: one compact table per experiment (ours beside
the paper's) and its claims."""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from replicate import io as rio
from replicate import paths
from replicate.errors import ReplicateError
from replicate.publish.bundle import read_manifest
from replicate.publish.catalogue import EXPERIMENTS

BEGIN, END = "<!-- measured:begin -->", "<!-- measured:end -->"
FIX = f"add the two lines {BEGIN} and {END} where the block belongs, or pass --no-readme"


def dirty_note(entry: dict) -> str:
    """' (uncommitted changes, diff sha256 1a2b3c4d5e)' for a publish from a dirty tree ('' otherwise)."""
    if not entry.get("dirty"):
        return ""
    diff = entry.get("diff_sha256")
    return f" (uncommitted changes{f', diff sha256 `{diff[:10]}`' if diff else ', diff not recorded'})"


def _theory_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Initial loss: the rows compared with the closed form, at the largest width (the full table is linked)."""
    if not {"reference_kind", "d"} <= set(frame.columns):
        return frame
    theory = frame[frame["reference_kind"].astype(str).str.startswith("theory")]
    return theory[theory["d"] == theory["d"].max()]


@dataclass(frozen=True)
class View:
    """Columns of one bundle table shown in the block (those present, in this order)."""
    csv: str                     # glob relative to the bundle
    keys: tuple[str, ...]
    values: tuple[str, ...]
    rows: Callable[[pd.DataFrame], pd.DataFrame] = lambda frame: frame
    note: str = ""                  # one line under the table: what a reader cannot tell from its rows


def _claims(section: str) -> View:
    """The report's claims (report/claims.csv) of one experiment."""
    return View("report/claims.csv", ("claim",), ("ours", "paper", "verdict"), lambda f: f[f["section"] == section])


# One compact table per experiment (ours beside the paper's) and its claims with their verdicts; the full
# tables (speed, ablations, screens, the scale grid) are in the report and the experiment's docs page.
VIEWS = {
    "press_wolf": (View(paths.PW_TABLES["table6"], ("cell",),
                        ("train_ours", "train_paper", "valid_ours", "valid_paper", "test_ours", "test_paper"),
                        note="A cell with `@` is an ablation, not a paper row ([press_wolf.md](docs/press_wolf.md#findings))."),
                   _claims("press_wolf")),
    "inan": (View(paths.INAN_TABLE1, ("dataset", "size", "model"),
                  ("valid_ours", "valid_paper", "test_ours", "test_paper",
                   "valid_ppl", "paper_valid_ppl", "test_ppl", "paper_test_ppl")),
             _claims("inan")),
    "initial_loss": (View(paths.IL_SUMMARY, ("std", "head", "d"),
                          ("loss_mean", "reference_loss", "diff"), _theory_rows),
                     _claims("initial_loss")),
    "scale": (_claims("scale"),),
}


def fmt(value) -> str:
    """A table cell: integers as such, else 1 decimal from 100 up, 2 from 1 up, 3 significant digits below, trailing
    zeros dropped where the value has no more digits (92.6, 150.0)."""
    if isinstance(value, str):
        return value.replace("|", "\\|")
    if value is None or pd.isna(value):
        return "—"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    text = f"{value:.1f}" if abs(value) >= 100 else f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"
    short = text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text
    return short if abs(float(short) - value) <= 1e-9 * max(1.0, abs(value)) else text  # 92.6, but 150.0


def table_versions(name: str, rel: str, runs: dict) -> str:
    """`` (code version `v`)`` of the runs a table is built from (``runs``: its MANIFEST.json entry's), '' for a
    table built from no runs (the claims)."""
    kinds = {k.name for k in EXPERIMENTS[name].kinds if k.builds(rel)}
    if not kinds:
        return ""
    versions = sorted({r.get("code_version") or "none recorded" for r in runs.values() if r.get("kind") in kinds})
    if not versions:
        return " (no runs published)"
    return f" (code version{'s' if len(versions) > 1 else ''} {', '.join(f'`{v}`' for v in versions)})"


def _experiment(bundle: Path, shown: str, name: str, entry: dict) -> list[str]:
    commit = (entry.get("commit") or "unknown")[:10]
    lines = [f"#### {EXPERIMENTS[name].title}", "",
             f"Protocol `{entry.get('protocol') or 'unknown'}`; {len(entry.get('runs', {}))} runs; "
             f"published {entry.get('published')} from commit `{commit}`{dirty_note(entry)}.", ""]
    tables = [(path, view) for view in VIEWS[name] for path in sorted(bundle.glob(view.csv))]
    for path, view in tables:
        frame = pd.read_csv(path, dtype={"std": str})
        cols = [c for c in (*view.keys, *view.values) if c in frame.columns]
        rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols),
                *("| " + " | ".join(map(fmt, row)) + " |" for row in view.rows(frame)[cols].itertuples(index=False))]
        rel = path.relative_to(bundle).as_posix()
        if len(rows) > 2:  # a claims file with no claim of this experiment shows nothing
            lines += [f"From `{shown}/{rel}`{table_versions(name, rel, entry.get('runs', {}))}:", "", *rows, ""]
        if view.note:
            lines += [view.note, ""]
    if not tables:
        lines += ["No final table published yet.", ""]
    return lines


def render(bundle: str | Path, shown: str) -> str:
    """The block's Markdown (without the markers); ``shown`` is how the bundle's path is written."""
    bundle = Path(bundle)
    manifest = read_manifest(bundle)
    lines = ["### Numbers measured so far", ""]
    experiments = manifest.get("experiments", {})
    if not experiments:
        lines += [f"Nothing published yet: after a run, `python -m replicate publish` copies its finished results "
                  f"into `{shown}` and writes this block.", ""]
    else:
        lines += [f"Generated by `python -m replicate publish` (`--rebuild`: from the bundle alone) from the published "
                  f"bundle `{shown}` (every file with its "
                  f"sha256 in `{shown}/MANIFEST.json`; report: `{shown}/report/index.html`). Columns `*_paper` and "
                  f"`paper` are the papers' numbers, everything else ours; each verdict answers two questions (does "
                  f"the effect point the claimed way outside our seed noise, is the paper's value inside our 95 % "
                  f"interval: [docs/report.md](docs/report.md)). Do not edit between the markers.", ""]
    for name in EXPERIMENTS:
        if name in experiments:
            lines += _experiment(bundle, shown, name, experiments[name])
    return "\n".join(lines).rstrip() + "\n"


def check(readme: str | Path) -> None:
    """Raise unless ``readme`` exists and holds the markers."""
    if not Path(readme).is_file():
        raise ReplicateError(f"{readme} not found", "pass --readme <README.md of the checkout>, or --no-readme")
    rio.replace_block(readme, BEGIN, END, None, FIX)


def update(readme: str | Path, bundle: str | Path) -> None:
    """Rewrite the block between the markers of ``readme`` from ``bundle``."""
    shown = Path(os.path.relpath(Path(bundle).resolve(), Path(readme).resolve().parent)).as_posix()
    rio.replace_block(readme, BEGIN, END, render(bundle, shown), FIX)
