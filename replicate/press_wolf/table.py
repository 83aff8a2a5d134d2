"""Press & Wolf tables: our perplexities (mean, sd over seeds, seeds per cell) beside the paper's, with
differences. ``train_ours``: the running train perplexity of the last epoch (TF scripts, Table 6);
``train_clean_ours``: the clean one after training (Lua BD scripts, Table 5's BD rows)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from replicate import io as rio
from replicate.errors import ReplicateError
from replicate.finite import require_finite

METRICS = ("train", "valid", "test")


def collect(metrics_paths: list[str | Path]):
    """One row per run from metrics.json files: cell, seed, perplexities, parameters. A run with a non-finite
    perplexity (written before results were checked) is refused, named."""
    rows = []
    for path in metrics_paths:
        m = rio.read_json(path)
        require_finite(m, ("train_ppl", "train_clean_ppl", "valid_ppl", "test_ppl"), path,
                       f"delete {Path(path).parent} and train the run again with a lower lr or clip (a cell's @lr=...), "
                       "or leave its cell out of press_wolf.tables")
        cell, _, seed = m["run"].rpartition("/seed")
        model, train = m["resolved"]["model"], m["resolved"]["train"]
        rows.append({"cell": cell, "seed": int(seed), "train": m["train_ppl"], "train_clean": m["train_clean_ppl"],
                     "valid": m["valid_ppl"], "test": m["test_ppl"], "params_m": m["num_parameters"] / 1e6,
                     "epochs": m["epochs_completed"], "schedule": train.get("schedule"),
                     "gate_bias": model.get("gate_bias"),
                     "pr_form": train.get("pr_form") if model.get("projection") else "",
                     "pr_lambda": train.get("pr_lambda") if model.get("projection") else None,
                     "code_version": m.get("code_version")})
    return pd.DataFrame(rows)


def build_table(runs, paper, protocol: str):
    """Join per-cell means of ``runs`` with the ``paper`` rows (by ``cell``)."""
    missing = set(runs["cell"]) - set(paper["cell"])
    agg = runs.groupby("cell", sort=False).agg(
        n_seeds=("seed", "count"), epochs=("epochs", "first"), params_m_ours=("params_m", "first"),
        train_ours=("train", "mean"), train_clean_ours=("train_clean", "mean"),
        valid_ours=("valid", "mean"), test_ours=("test", "mean"),
        **{f"{k}_sd": (k, "std") for k in METRICS}, schedule=("schedule", "first"),
        gate_bias=("gate_bias", "first"), pr_form=("pr_form", "first"), pr_lambda=("pr_lambda", "first"),
        code_version=("code_version", "first")).reset_index()
    ref = paper.rename(columns={f"{k}_ppl": f"{k}_paper" for k in METRICS} | {"params_m": "params_m_paper"})
    table = agg.merge(ref, on="cell", how="left")
    for k in METRICS:
        table[f"{k}_diff"] = table[f"{k}_ours"] - table[f"{k}_paper"]
        table[f"{k}_rel_diff"] = table[f"{k}_diff"] / table[f"{k}_paper"]
    table["protocol"] = protocol
    table = table[["cell", "row", "protocol", "n_seeds", "epochs", "params_m_ours", "params_m_paper",
                   *(f"{k}_{c}" for k in METRICS for c in ("ours", "paper", "diff", "rel_diff")),
                   *(f"{k}_sd" for k in METRICS), "train_clean_ours", "schedule", "gate_bias", "pr_form", "pr_lambda",
                   "code_version", "source"]]
    if missing:  # cells without a published row (e.g. medium_wt) keep empty paper columns
        table.loc[table["cell"].isin(missing), "source"] = "no published number"
    return table


def write_table(metrics_paths, paper_csv, out_csv, protocol: str, table: str) -> None:
    if not Path(paper_csv).is_file():
        raise ReplicateError(f"paper reference table missing: {paper_csv}",
                             f"restore paper/reference/press_wolf_{table}.csv from git")
    frame = build_table(collect(metrics_paths), pd.read_csv(paper_csv), protocol)
    rio.write_csv(out_csv, frame)
    print(frame.to_string(index=False))
