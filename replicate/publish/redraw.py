"""Redraw a published bundle's figures from its own result files (no rerun), with each figure's own
drawing code, so that they follow the shared style (``replicate.plotting``: drawn at the report's
display width): ``python -m replicate publish --rebuild --redraw``.

A figure whose inputs the bundle lacks is left as it is. Inan et al.'s Figure 1 is redrawn only when the
bundle's table names its metric (column ``metric``): its drawing code labels the axis with the current
metric, which an older table may not hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from replicate.errors import ReplicateError


def _csv(bundle: Path, rel: str, **kw) -> pd.DataFrame | None:
    path = bundle / rel
    return pd.read_csv(path, **kw) if path.is_file() else None


def _protocol(frame: pd.DataFrame) -> str:
    return str(frame["protocol"].iloc[0]) if "protocol" in frame.columns and len(frame) else "unknown"


def _learning_curves(bundle: Path, out: Path) -> list[Path]:
    from replicate.provenance import PROJECT_ROOT
    from replicate.report.figures import write_learning_curves

    histories = sorted(bundle.glob("press_wolf/*/seed*/history.csv"))
    if not histories:
        return []
    return write_learning_curves(histories, out / "report_press_wolf_learning_curves",
                                 PROJECT_ROOT / "paper" / "reference" / "press_wolf_table6.csv")


def _initial_loss(bundle: Path, out: Path) -> list[Path]:
    from replicate.initial_loss import figures
    from replicate.plotting import save_figure, use_style

    summary = _csv(bundle, "tables/initial_loss_summary.csv", dtype={"std": str})
    families = _csv(bundle, "tables/model_families.csv")
    if summary is None or families is None:
        return []
    use_style()
    return (save_figure(figures.loss_vs_width(summary), out / "initial_loss_vs_width")
            + save_figure(figures.standard_init(summary), out / "initial_loss_standard_init")
            + save_figure(figures.embedding_share(families), out / "embedding_share"))


def _scale(bundle: Path, out: Path) -> list[Path]:
    from replicate.scale import figures

    saved: list[Path] = []
    by_seed, gain = _csv(bundle, "scale/gain_by_seed.csv"), _csv(bundle, "tables/scale_gain.csv")
    if by_seed is not None and gain is not None:
        saved += figures.gain_figures(by_seed, gain, out, _protocol(gain))
    upd = _csv(bundle, "scale/update_frequency.csv")
    if upd is not None:
        saved += figures.update_figure(upd, out, _protocol(upd))
    sim = _csv(bundle, "scale/embedding_similarity_epochs.csv")
    if sim is not None:
        saved += figures.similarity_figure(sim, out, _protocol(sim))
    curve, table = _csv(bundle, "scale/transformer_curves.csv"), _csv(bundle, "tables/scale_transformer.csv")
    if curve is not None and table is not None:
        saved += figures.transformer_figures(curve, table, out, _protocol(table))
    return saved


def _inan(bundle: Path, out: Path) -> list[Path]:
    from replicate.inan.report import figure1_plot

    summary, runs = _csv(bundle, "tables/inan_figure1.csv"), _csv(bundle, "tables/inan_figure1_runs.csv")
    if summary is None or runs is None or "metric" not in summary.columns:
        return []
    return figure1_plot(summary, runs, out / "inan_figure1")


DRAWERS: dict[str, Callable[[Path, Path], list[Path]]] = {
    "press_wolf": _learning_curves, "initial_loss": _initial_loss, "scale": _scale, "inan": _inan}


def redraw(bundle: str | Path) -> list[Path]:
    """Every figure of ``bundle`` whose inputs it holds, redrawn into ``bundle/figures``; the paths written."""
    bundle = Path(bundle)
    if not (bundle / "figures").is_dir():
        raise ReplicateError(f"{bundle} has no figures/ folder", "pass a published bundle (paper/measured)")
    written: list[Path] = []
    for draw in DRAWERS.values():
        written += draw(bundle, bundle / "figures")
    return written
