"""The figure the report draws itself: Press & Wolf's learning curves (train and valid perplexity per epoch
of every run at its cell's paper settings, the paper's final valid perplexity marked)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def _pw_variant(cell: str) -> tuple[str, str]:
    base = cell.split("@", 1)[0]
    tying = "tied (WT)" if "_wt" in base else "untied"
    extra = [p for p in ("pr", "bd") if f"_{p}" in base]
    size = base.split("_", 1)[0]
    return tying, size + (" + " + " + ".join(e.upper() for e in extra) if extra else "")


def learning_curves(histories: pd.DataFrame, paper: pd.DataFrame | None = None):
    """One panel per model (small, small + PR, ...); ``paper``: the reference table (cell, valid_ppl)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    h = histories[~histories["cell"].str.contains("@")].copy()  # variants are not the paper's curves
    h["output layer"], h["model"] = zip(*h["cell"].map(_pw_variant))
    long = h.melt(id_vars=["cell", "seed", "epoch", "output layer", "model"], value_vars=["train_ppl", "valid_ppl"],
                  var_name="split", value_name="perplexity")
    long["split"] = long["split"].map({"train_ppl": "train (running)", "valid_ppl": "valid"})
    models = list(dict.fromkeys(h.sort_values("cell")["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(4.5 * len(models), 4.4), sharey=True, squeeze=False)
    for ax, model in zip(axes[0], models):
        part = long[long["model"] == model]
        sns.lineplot(data=part, x="epoch", y="perplexity", hue="output layer", style="split", markers=True,
                     hue_order=["untied", "tied (WT)"], style_order=["train (running)", "valid"],
                     errorbar=("pi", 100) if part["seed"].nunique() > 1 else None, ax=ax)
        ax.set_yscale("log")
        ax.set_title(model)
        ax.set_xlabel("epoch")
        ax.set_ylabel("perplexity (log scale)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        _mark_paper(ax, part, paper)
        handles, labels = ax.get_legend_handles_labels()
        ax.get_legend().remove()
    fig.suptitle("Press & Wolf LSTMs: train vs valid perplexity per epoch", y=1.02)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), 4))
    return fig


def _mark_paper(ax, part: pd.DataFrame, paper: pd.DataFrame | None) -> None:
    """The paper's final valid perplexity of each cell in the panel, at our last epoch, as a black cross."""
    if paper is None:
        return
    label = "paper: final valid"
    for cell, runs in part.groupby("cell"):
        row = paper[paper["cell"] == cell]
        if len(row) and pd.notna(row["valid_ppl"].iloc[0]):
            ax.scatter([runs["epoch"].max()], [float(row["valid_ppl"].iloc[0])], marker="x", s=60, color="black",
                       zorder=5, label=label)
            label = None


def read_histories(paths) -> pd.DataFrame:
    """press_wolf/<cell>/seed<k>/history.csv files -> one frame with their cell and seed."""
    return pd.concat([pd.read_csv(p).assign(cell=Path(p).parent.parent.name,
                                            seed=int(Path(p).parent.name.removeprefix("seed"))) for p in paths],
                     ignore_index=True)


def write_learning_curves(paths, stem: str | Path, paper_csv: str | Path | None = None) -> list[Path]:
    from replicate.plotting import save_figure, use_style

    use_style()
    paper = pd.read_csv(paper_csv) if paper_csv else None
    return save_figure(learning_curves(read_histories(paths), paper), stem)
