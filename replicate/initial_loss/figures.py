"""Figures of the initial-loss experiment (style: ``replicate.plotting``)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator, ScalarFormatter
from matplotlib.transforms import Bbox

from replicate.llama import resolve_std
from replicate.plotting import DISPLAY_PX, DPI, MIN_FONT_PT
from replicate.initial_loss.tables import NORM_EPS
from replicate.initial_loss.theory import initial_loss

STD_LABELS = {"0.02": "σ = 0.02", "inv_sqrt_d": "σ = 1/√d", "log_n_over_d": "σ = (log n)/d"}


def _std_label(std: str) -> str:
    return STD_LABELS.get(std, f"σ = {std}")


def _width_axis(ax, widths) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(widths)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(w) for w in sorted(widths)], rotation=45)
    ax.set_xlabel("model width d")


def _loss_axis(ax, losses) -> None:
    """Log y axis (plain numbers) when the losses span more than a factor 2, else linear."""
    if losses.max() > 2 * losses.min():
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ticks = [t for t in (5, 10, 20, 50, 100, 200) if losses.min() / 1.5 <= t <= losses.max() * 1.5]
        ax.yaxis.set_major_locator(FixedLocator(ticks))


def _uniform(summary: pd.DataFrame) -> pd.DataFrame:
    dist = "uniform" if (summary["token_dist"] == "uniform").any() else summary["token_dist"].iloc[0]
    return summary[summary["token_dist"] == dist]


def loss_vs_width(summary: pd.DataFrame):
    """Zero-branch model: measured initial loss (mean ± sd over seeds) per head variant and std,
    with the closed-form theory (tied; tied + rescale) and log n."""
    s = _uniform(summary)
    s = s[s["branches"] == "zero"]
    if s.empty:
        return _empty("no zero-branch configuration in this config (initial_loss.trunks)")
    s = s[s["init"] == ("normal" if (s["init"] == "normal").any() else s["init"].iloc[0])]
    stds = list(dict.fromkeys(s["std"]))
    heads = list(dict.fromkeys(s.sort_values(["tied", "mixer", "rescale"], ascending=[False, True, True])["head"]))
    colors = dict(zip(heads, sns.color_palette(n_colors=len(heads))))
    n = int(s["n"].iloc[0])
    fig, axes = plt.subplots(1, len(stds), figsize=(4.6 * len(stds), 4.4), sharey=True, squeeze=False)
    widths = sorted(s["d"].unique())
    grid = np.geomspace(min(widths), max(widths), 200)
    for ax, std in zip(axes[0], stds):
        part = s[s["std"] == std]
        sig = np.array([resolve_std(_num(std), d, n) for d in grid])
        ax.plot(grid, initial_loss(grid, sig, n), color="black", ls="--", lw=1.2,
                label="theory: log(exp(dσ)+n−1)")
        ax.plot(grid, initial_loss(grid, sig, n, rescale=True), color="grey", ls=":", lw=1.6,
                label="theory, rescaled: log(exp(σ√d)+n−1)")
        ax.plot(grid, initial_loss(grid, sig, n, eps=NORM_EPS, spread=True), color="black", ls="-.", lw=0.8,
                alpha=0.7, label="refined theory (RMSNorm ε, spread of other logits)")
        ax.axhline(math.log(n), color="tab:red", lw=0.8, alpha=0.6, label=f"log n = {math.log(n):.2f}")
        for head in heads:
            h = part[part["head"] == head].sort_values("d")
            ax.errorbar(h["d"], h["loss_mean"], yerr=h["loss_sd"].fillna(0), marker="o", ms=4, lw=1,
                        capsize=2, color=colors[head], label=f"measured: {head}")
        _loss_axis(ax, s["loss_mean"])
        ax.set_title(_std_label(std))
        _width_axis(ax, widths)
    axes[0][0].set_ylabel("initial loss (nats" + (", log scale)" if axes[0][0].get_yscale() == "log" else ")"))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize="small")
    fig.suptitle(f"Initial loss with zero-initialised residual branches ({int(s['n_layers'].iloc[0])} layers, "
                 f"n = {n:,}, random tokens)", y=1.02)
    fig.tight_layout()
    return fig


def standard_init(summary: pd.DataFrame):
    """Non-zero residual branches (every matrix N(0, σ²) or truncated): loss vs width per head."""
    s = _uniform(summary)
    s = s[(s["branches"] == "normal") & (s["mixer"] == "none")]
    if s.empty:
        return _empty("no normal-branch configuration in this config (initial_loss.trunks)")
    stds = list(dict.fromkeys(s["std"]))
    n = int(s["n"].iloc[0])
    fig, axes = plt.subplots(1, len(stds), figsize=(5.2 * len(stds), 4.2), sharey=True, squeeze=False)
    for ax, std in zip(axes[0], stds):
        part = s[s["std"] == std]
        sns.lineplot(data=part, x="d", y="loss_mean", hue="head", style="init", markers=True, dashes=True,
                     ax=ax, err_style=None)
        ax.axhline(math.log(n), color="tab:red", lw=0.8, alpha=0.7, label=f"log n = {math.log(n):.2f}")
        _width_axis(ax, sorted(part["d"].unique()))
        ax.set(title=f"all matrices {_std_label(std)} ({int(s['n_layers'].iloc[0])} layers)",
               ylabel="initial loss (nats)")
        if ax is axes[0][-1]:
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
        else:
            ax.get_legend().remove()
    fig.tight_layout()
    return fig


def embedding_share(families: pd.DataFrame):
    """Embedding share of parameters against model size, tied vs untied; a model's name where it fits (every
    model is in the table beside the figure)."""
    f = families.copy()
    f["output layer"] = f["tied"].map({True: "tied", False: "untied"})
    fig, ax = plt.subplots(figsize=(DISPLAY_PX / DPI, 4.8))  # drawn at its shown size: labels are placed as shown
    sns.scatterplot(data=f, x="total_params", y="embedding_share", hue="output layer", style="architecture",
                    s=60, ax=ax)
    sns.move_legend(ax, "upper right")  # fixed, so that the names placed below stay clear of it
    ax.set(xscale="log", xlabel="total parameters (log scale)", ylabel="embedding share of parameters")
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.set(ylim=(0, max(1.0, f["embedding_share"].max() * 1.05)),
           xlim=(f["total_params"].min() / 2, f["total_params"].max() * 8),  # room for the largest model's name
           title="Embedding matrices are a shrinking share of model parameters")
    fig.tight_layout()
    f = f.sort_values("total_params")
    _label_points(ax, list(zip(f["total_params"], f["embedding_share"], f["model"])))
    return fig


# where a point's name may go, in points from the point: right above, right below, left above, left below, beside
LABEL_OFFSETS = ((5, 4, "left"), (5, -12, "left"), (-5, 4, "right"), (-5, -12, "right"), (7, -4, "left"),
                 (-7, -4, "right"))


def _label_points(ax, points: list[tuple[float, float, str]], marker_px: float = 5.0) -> list[str]:
    """Name each (x, y, name) point at the first offset whose box stays inside the axes and clears the markers,
    the legend and the names placed so far; returns the names with no such place (left unlabelled)."""
    ax.figure.canvas.draw()  # the legend and the axes where they are drawn
    renderer = ax.figure.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    taken = [Bbox.from_extents(x - marker_px, y - marker_px, x + marker_px, y + marker_px)
             for x, y in ax.transData.transform([(x, y) for x, y, _ in points])]
    if ax.get_legend() is not None:
        taken.append(ax.get_legend().get_window_extent(renderer))
    left_out = []
    for x, y, name in points:
        for dx, dy, ha in LABEL_OFFSETS:
            text = ax.annotate(name, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=MIN_FONT_PT, ha=ha)
            box = text.get_window_extent(renderer)
            if inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1) and not any(
                    box.overlaps(t) for t in taken):
                taken.append(box)
                break
            text.remove()
        else:
            left_out.append(name)
    return left_out


def _empty(message: str):
    """A placeholder figure that says why there is nothing to plot (the rule still has its output)."""
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return fig


def _num(std: str):
    try:
        return float(std)
    except ValueError:
        return std
