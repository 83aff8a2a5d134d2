"""Which texts of a matplotlib figure overlap as drawn: tick labels, annotations, titles, legend entries."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text


def _undrawn_ticks(fig: Figure) -> set[int]:
    """Tick labels outside their axis's view (matplotlib keeps them, and does not draw them)."""
    out = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            slack = (hi - lo) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                loc = tick.get_loc()
                if loc is None or not lo - slack <= loc <= hi + slack:
                    out |= {id(tick.label1), id(tick.label2)}
    return out


def overlapping_texts(fig: Figure, pad_px: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of drawn, non-empty texts whose boxes overlap by more than ``pad_px`` (touching is not overlap)."""
    fig.canvas.draw()
    renderer, skip = fig.canvas.get_renderer(), _undrawn_ticks(fig)
    boxes = []
    for text in fig.findobj(Text):
        if id(text) in skip or not (text.get_visible() and text.get_text().strip()):
            continue
        box = text.get_window_extent(renderer)
        if box.width > 0 and fig.bbox.overlaps(box):
            boxes.append((text.get_text(), box.padded(-pad_px)))
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]
