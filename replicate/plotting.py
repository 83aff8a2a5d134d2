"""One figure style for the report: ``use_style()`` before plotting; ``save_figure(fig, stem)`` writes ``stem.png``
and ``stem.svg`` atomically, drawn at the width the report shows it (``DISPLAY_PX``, text at least ``MIN_FONT_PT``:
the browser shows the PNG at its own size), and closes the figure."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from PIL import Image  # noqa: E402

from replicate.io import atomic_path  # noqa: E402

PALETTE = "colorblind"
DISPLAY_PX = 1100         # a figure paragraph of the report (replicate/report/render.py: .figure max-width)
DPI = 100                 # pixels per inch of the PNG: DISPLAY_PX / DPI inches wide
MIN_FONT_PT = 9.5
SLACK_PX = 20             # a PNG this much narrower than DISPLAY_PX is shown at its own size too


def use_style(font_scale: float = 1.0) -> None:
    """Seaborn 'whitegrid' + 'notebook' context, colour-blind palette, deterministic SVG output."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE, font_scale=font_scale)
    matplotlib.rcParams.update({
        "figure.dpi": DPI,
        "savefig.dpi": DPI,
        "savefig.bbox": "tight",
        "axes.titleweight": "bold",
        "legend.frameon": False,
        "svg.hashsalt": "replicate",   # stable ids: identical figures give identical SVG files
        "svg.fonttype": "none",        # text stays text (searchable, small)
    })


def fit_to_display(fig, width_px: int = DISPLAY_PX, min_pt: float = MIN_FONT_PT) -> None:
    """Resize ``fig`` (height kept) so that its tight PNG at ``DPI`` is ``width_px - SLACK_PX`` to ``width_px``
    wide, with no text below ``min_pt``."""
    for text in fig.findobj(matplotlib.text.Text):
        if text.get_text() and text.get_fontsize() < min_pt:
            text.set_fontsize(min_pt)
    height = fig.get_size_inches()[1]
    fig.set_size_inches(width_px / DPI, height)
    for _ in range(8):
        if not fig.get_constrained_layout():
            try:
                fig.tight_layout()
            except (ValueError, RuntimeError):
                pass
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI)
        written = Image.open(buf).size[0]
        if width_px - SLACK_PX <= written <= width_px:
            return
        fig.set_size_inches(fig.get_size_inches()[0] * (width_px - SLACK_PX / 2) / written, height)


def save_figure(fig, stem: str | Path, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    """Write ``fig`` as ``stem.<fmt>`` for each format, atomically, drawn at the report's display width
    (``fit_to_display``); close it; return the paths."""
    stem = Path(stem)
    fit_to_display(fig)
    paths = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=DPI, metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    plt.close(fig)
    return paths
