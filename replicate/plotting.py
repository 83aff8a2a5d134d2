"""Shared figure style and output: one look for every figure of the report.

``use_style()`` once before plotting; ``save_figure(fig, stem)`` writes ``stem.png`` and
``stem.svg`` atomically (``replicate.io.atomic_path``) and closes the figure.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from replicate.io import atomic_path  # noqa: E402

PALETTE = "colorblind"
DPI = 200


def use_style(font_scale: float = 1.0) -> None:
    """Seaborn 'whitegrid' + 'notebook' context, colour-blind palette, deterministic SVG output."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE, font_scale=font_scale)
    matplotlib.rcParams.update({
        "figure.dpi": 100,
        "savefig.dpi": DPI,
        "savefig.bbox": "tight",
        "axes.titleweight": "bold",
        "legend.frameon": False,
        "svg.hashsalt": "replicate",   # stable ids: identical figures give identical SVG files
        "svg.fonttype": "none",        # text stays text (searchable, small)
    })


def save_figure(fig, stem: str | Path, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    """Write ``fig`` as ``stem.<fmt>`` for each format, atomically; close it; return the paths."""
    stem = Path(stem)
    paths = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    plt.close(fig)
    return paths
