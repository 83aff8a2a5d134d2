"""Figures of the scale study and the embedding analysis (style and output: ``replicate.plotting``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from replicate import paths
from replicate.plotting import save_figure, use_style


def _plt():
    import matplotlib.pyplot as plt

    use_style()
    return plt


def _save(fig, out_dir, stem: str) -> list[Path]:
    """Lay ``fig`` out and write it into ``out_dir`` under the file name of ``stem`` (a ``replicate.paths`` name)."""
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / stem.rpartition("/")[2])


def _errorbars(ax, frame, x, y, label, marker="o", color=None):
    """Per-seed points (faint) and mean ± s.e.m. over seeds (error bars) of ``y`` against ``x``."""
    g = frame.groupby(x)[y]
    mean, n = g.mean(), g.count()
    sem = (g.std(ddof=1) / np.sqrt(n)).fillna(0.0)
    line = ax.errorbar(mean.index, mean.values, yerr=sem.values, marker=marker, capsize=3, label=label, color=color)
    ax.scatter(frame[x], frame[y], s=12, alpha=0.35, color=line[0].get_color())
    return line


def gain_figures(by_seed: pd.DataFrame, gain: pd.DataFrame, out_dir, protocol: str) -> list[Path]:
    plt = _plt()
    if "dropout" in by_seed:  # these two: the first regularisation level (answer_figure shows every level)
        first = min(by_seed["dropout"].astype(str), key=float)
        by_seed = by_seed[by_seed["dropout"].astype(str) == first]
    # ---- data scale
    d = by_seed[by_seed["study"] == "data"]
    w = by_seed[by_seed["study"] == "wikitext2"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, col, title in ((axes[0], "gain", "tying gain (valid ppl untied − tied)"),
                           (axes[1], "rel_gain", "relative tying gain (gain / untied)")):
        if not d.empty:
            _errorbars(ax, d, "train_tokens", col, "PTB (nested fractions)")
        if not w.empty:
            _errorbars(ax, w, "train_tokens", col, "WikiText-2", marker="s")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set(xscale="log", xlabel="training tokens", title=title)
    axes[1].yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax = axes[2]
    for frame, ds, marker in ((d, "PTB", "o"), (w, "WikiText-2", "s")):
        if frame.empty:
            continue
        _errorbars(ax, frame, "train_tokens", "untied_valid_ppl", f"{ds} untied", marker=marker)
        _errorbars(ax, frame, "train_tokens", "tied_valid_ppl", f"{ds} tied", marker=marker)
    ax.set(xscale="log", yscale="log", xlabel="training tokens", title="valid perplexity")
    for ax in axes:
        ax.legend(fontsize=8)
    hidden = sorted(set(d["hidden"]) | set(w["hidden"]))
    fig.suptitle(f"When does tying pay off? Data scale (LSTM h={hidden}; {protocol} protocol; "
                 f"mean ± s.e.m. over seeds)")
    saved = _save(fig, out_dir, paths.SCALE_GAIN_FIGURES[0])
    # ---- model scale
    m = by_seed[by_seed["study"] == "model"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    if not m.empty:
        _errorbars(axes[0], m, "non_embedding_params", "rel_gain", "relative gain")
        _errorbars(axes[1], m, "embedding_share_untied", "rel_gain", "relative gain")
        _errorbars(axes[2], m, "hidden", "untied_valid_ppl", "untied")
        _errorbars(axes[2], m, "hidden", "tied_valid_ppl", "tied")
        for h, r in m.groupby("hidden")[["non_embedding_params", "embedding_share_untied", "rel_gain"]].mean().iterrows():
            for ax, x in ((axes[0], r.non_embedding_params), (axes[1], r.embedding_share_untied)):
                ax.annotate(f"h={h}", (x, r.rel_gain), fontsize=8, xytext=(4, 4), textcoords="offset points")
    axes[0].set(xscale="log", xlabel="non-embedding parameters")
    axes[1].set_xlabel("embedding share of parameters (untied model)")
    axes[1].xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    for ax in axes[:2]:
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_ylabel("relative tying gain")
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    axes[2].set(xlabel="hidden size", ylabel="valid perplexity")
    axes[2].legend(fontsize=8)
    pct = sorted(set(m["pct"])) if not m.empty else []
    fig.suptitle(f"When does tying pay off? Model scale (PTB {pct}% of train; {protocol} protocol)")
    return saved + _save(fig, out_dir, paths.SCALE_GAIN_FIGURES[1])


def update_figure(upd: pd.DataFrame, out_dir, protocol: str) -> list[Path]:
    plt = _plt()
    u = upd[upd["bucket"] >= 0]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for (variant, matrix), g in u.groupby(["variant", "matrix"]):
        label = readable(variant if matrix == "tied" else f"{variant} {matrix}")
        m = g.groupby("bucket")[["mean_count", "update_fraction", "update_norm_mean"]].mean()
        style = "--" if variant.endswith("_pr") else "-"
        axes[0].plot(m["mean_count"], m["update_fraction"], style, marker="o", label=label)
        axes[1].plot(m["mean_count"], m["update_norm_mean"], style, marker="o", label=label)
    inp = u.groupby("bucket")[["mean_count", "input_fraction"]].mean()
    axes[0].plot(inp["mean_count"], inp["input_fraction"], ":", color="black", label="word is an input (predicted)")
    axes[0].set_ylabel("fraction of steps the row changes")
    axes[1].set(ylabel="mean update norm per step", yscale="log")
    for ax in axes:
        ax.set(xscale="log", xlabel="word frequency in the training data (bucket mean)")
        ax.legend(fontsize=7)
    fig.suptitle(f"Embedding row updates vs word frequency (Press & Wolf's argument; {protocol} protocol)")
    return _save(fig, out_dir, paths.SCALE_EMBEDDING_FIGURES[0])


def readable(name: str) -> str:
    """A variant or comparison name in words: tied_pr_vs_untied_pr_input -> tied + PR vs untied + PR input."""
    return name.replace("_vs_", " vs ").replace("_pr", " + PR").replace("_", " ")


MAIN_COMPARISONS = ("tied_vs_untied_input", "tied_vs_untied_output", "untied_input_vs_untied_output",
                    "tied_pr_vs_untied_pr_input", "tied_pr_vs_untied_pr_output", "tied_vs_tied")


def similarity_figure(sim: pd.DataFrame, out_dir, protocol: str) -> list[Path]:
    plt = _plt()
    independent = sim[~sim["shared_init"].astype(bool)]
    use = independent if not independent.empty else sim
    kind = "independent initial draws" if not independent.empty else "shared initial draws"
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for comp in MAIN_COMPARISONS:
        g = use[use["comparison"] == comp]
        if g.empty:
            continue
        m = g.groupby("epoch")[["spearman", "knn_overlap"]].mean()
        axes[0].plot(m.index, m["spearman"], marker="o", label=readable(comp))
        axes[1].plot(m.index, m["knn_overlap"], marker="o", label=readable(comp))
    if not use.empty:
        axes[1].axhline(use["knn_chance"].iloc[0], color="grey", ls=":", label="chance")
    axes[0].set_ylabel("Spearman of cosine-similarity structure")
    axes[1].set_ylabel(f"k-NN overlap (k={int(use['knn_k'].iloc[0]) if not use.empty else '?'})")
    for ax in axes:
        ax.set_xlabel("epoch (0 = initialisation)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=7)
    top_k = int(use["top_k"].iloc[0]) if not use.empty else 0
    fig.suptitle(f"How alike are the embedding matrices? top {top_k} words, {kind}; {protocol} protocol")
    return _save(fig, out_dir, paths.SCALE_EMBEDDING_FIGURES[1])


def transformer_figures(curve: pd.DataFrame, table: pd.DataFrame, out_dir, protocol: str) -> list[Path]:
    plt = _plt()
    if "selected" in table and "peak_lr" in curve:  # a learning-rate sweep: every variant at its own best
        table = table[table["selected"].astype(bool)]
        curve = curve.merge(table[["variant", "std", "lr"]].drop_duplicates().rename(columns={"lr": "peak_lr"}))
    fig, axes = plt.subplots(1, 3, figsize=(11, 4.6))
    window = max(1, int(curve["step"].max() // 50))
    for (variant, std), g in curve.groupby(["variant", "std"]):
        lr = f", lr {g['peak_lr'].iloc[0]:g}" if "peak_lr" in g else ""  # each variant's own learning rate
        label = f"{variant.replace('_', ' + ')} (std {std}{lr})"
        m = g.groupby("step")[["train_loss", "grad_norm"]].mean()
        line, = axes[0].plot(m.index, m["train_loss"].rolling(window, min_periods=1).mean(), label=label)
        v = g.dropna(subset=["valid_loss"]).groupby("step")["valid_loss"].mean()
        axes[0].plot(v.index, v.values, "o", color=line.get_color(), ms=3)
        axes[1].plot(m.index, m["grad_norm"], color=line.get_color(), lw=0.8, label=label)
    axes[0].set(xlabel="step", ylabel="loss (nats)", title="train (line, smoothed), valid (dots)")
    axes[1].set(xlabel="step", ylabel="gradient norm", title="global, before clipping", yscale="log")
    t = table.groupby(["variant", "std"])[["step0_loss", "theory_step0_loss", "spread_step0_loss",
                                            "log_n"]].mean().reset_index()
    # a dot plot around the references (bars from 0 would hide differences of a few hundredths of a nat)
    y = np.arange(len(t))
    axes[2].plot(t["step0_loss"], y, "o", color="black", label="measured")
    axes[2].plot(t["theory_step0_loss"], y, "|", color="tab:red", ms=14, mew=2, label="closed form (zero branches)")
    axes[2].plot(t["spread_step0_loss"], y, "|", color="tab:blue", ms=14, mew=2,
                 label="with the other logits' spread")
    if len(t):
        axes[2].axvline(t["log_n"].iloc[0], color="grey", ls=":", label="log n")
    axes[2].set_yticks(y, [a.replace("_", " + ") for a in t["variant"]])
    axes[2].xaxis.set_major_locator(plt.MaxNLocator(3))
    axes[2].set(title="step 0", ylim=(-0.7, len(t) - 0.3), xlabel="loss at step 0 (nats)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.33, 0.02), ncol=3)  # the variants
    axes[2].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2))
    d = int(table["d_model"].iloc[0]) if len(table) else 0
    fig.suptitle(f"Small Llama-style LM on WikiText-2 (d={d}), {protocol} protocol")
    return _save(fig, out_dir, paths.SCALE_TRANSFORMER_FIGURE)


def answer_figure(by_seed: pd.DataFrame, out_dir, protocol: str) -> list[Path]:
    """The figure that answers the essay: tying gain against embedding share and training tokens, per dropout
    level, means with 95 % t intervals, the claims' fits dotted, the essay's direction as a dashed arrow."""
    from replicate.scale.study import slope_test, t_interval

    plt = _plt()
    df = by_seed.copy()
    df["log_ratio"] = np.log(df["untied_valid_ppl"] / df["tied_valid_ppl"])
    df["dropout"] = df["dropout"].astype(str) if "dropout" in df else "0"
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    panels = ((axes[0], "model", "embedding_share_untied", False, "embedding share of parameters (untied model)"),
              (axes[1], "data", "train_tokens", True, "training tokens (PTB prefix)"))
    for ax, study, x, logx, xlabel in panels:
        part = df[df["study"] == study]
        for drop, g in part.groupby("dropout", sort=True):
            rows = [(k, t_interval(s["log_ratio"])) for k, s in g.groupby(x)]
            xs = np.array([k for k, _ in rows], float)
            mean = np.array([np.expm1(c["mean"]) for _, c in rows])
            lo = np.array([np.expm1(c["lo"]) if np.isfinite(c["lo"]) else np.expm1(c["mean"]) for _, c in rows])
            hi = np.array([np.expm1(c["hi"]) if np.isfinite(c["hi"]) else np.expm1(c["mean"]) for _, c in rows])
            line = ax.errorbar(xs, mean, yerr=[mean - lo, hi - mean], marker="o", capsize=3,
                               label=f"dropout {drop} (n = {g.groupby(x).size().min()} seeds)")
            fx = np.log10(g[x].astype(float)) if logx else g[x].astype(float)
            fit = slope_test(fx, g["log_ratio"])
            if np.isfinite(fit["slope"]):
                grid = np.linspace(fx.min(), fx.max(), 20)
                yfit = g["log_ratio"].mean() + fit["slope"] * (grid - fx.mean())
                ax.plot(10 ** grid if logx else grid, np.expm1(yfit), ":", color=line[0].get_color())
        if logx:
            ax.set_xscale("log")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set(xlabel=xlabel, ylabel="tying gain (untied / tied valid ppl − 1)")
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{100 * v:.3g}%"))
        if study == "model":
            ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
        # the essay's direction: gain falls as the share falls (right to left), as the data grows (left to right)
        start, end = ((0.9, 0.85), (0.15, 0.2)) if study == "model" else ((0.1, 0.85), (0.85, 0.2))
        ax.annotate("", xy=end, xytext=start, xycoords="axes fraction",
                    arrowprops=dict(arrowstyle="->", ls="--", color="grey", lw=1.2))
        ax.text(0.5, 0.94, "essay: " + ("smaller share, smaller gain" if study == "model" else "more data, smaller gain"),
                transform=ax.transAxes, ha="center", fontsize=8, color="grey")
        if len(part):
            ax.legend(fontsize=8, loc="lower center")
        ax.set_title("model scale" if study == "model" else "data scale")
    fig.suptitle(f"When does tying pay off? Means over seeds with 95 % t intervals; dotted: fits; dashed arrow: "
                 f"the essay's expected direction ({protocol} protocol)", fontsize=10)
    return _save(fig, out_dir, paths.SCALE_ANSWER_FIGURE)
