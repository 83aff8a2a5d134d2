"""Aggregation of the Inan et al. runs: Table 1 beside the paper, the tau x gamma ablation, Figure 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from replicate import io as rio
from replicate.errors import ReplicateError
from replicate.finite import require_finite
from replicate.inan.readings import fmt
from replicate.inan.shape import beta_shape, tau_effect
from replicate.inan.subspace import METRICS
from replicate.inan.train import VARIANTS

SIZES = ("small", "medium", "large")
RANK = {v: i for i, v in enumerate((*SIZES, *VARIANTS))}  # the tables' order of sizes and variants


RUN_METRICS = ("train_ppl", "valid_ppl", "test_ppl")
POINT_METRICS = ("distance_mean", "distance_std", "angle_distance_mean", "angle_distance_std")


def _load(paths) -> list[dict[str, Any]]:
    out = []
    for p in paths:
        m = rio.read_json(p)
        if "inan" not in m:
            raise ReplicateError(f"{p} is not an Inan run's metrics.json (no 'inan' block)",
                                 "pass the metrics.json files written by `python -m replicate train inan ...`")
        require_finite(m, RUN_METRICS, p, f"delete {Path(p).parent} and train the run again with a lower lr or clip")
        out.append(m)
    return out


def _load_point(path) -> dict[str, Any]:
    """A section 6.2 point JSON, its distances finite."""
    d = rio.read_json(path)
    require_finite(d, POINT_METRICS, path, f"delete {path} and its seeds' records (runs/...) and run the point again")
    return d


def _mean(values) -> float:
    """Mean of ``values``, NaN when one is undefined (None: W exactly 0 at init)."""
    values = [float("nan") if v is None else v for v in values]
    return sum(values) / len(values)


def run_hours(run: dict[str, Any]) -> float:
    """A run's wall hours: training and per-epoch validation over its epoch history (each epoch once)."""
    return sum(r["seconds"] + r.get("eval_seconds", 0.0) for r in run["history"]) / 3600


def protocol_label(protocol: str, run: dict[str, Any]) -> str:
    """'full' / 'reduced: ...' / 'smoke: ...' with the settings that differ from the paper config."""
    info = run["inan"]
    extra = [f"{run['resolved']['train']['epochs']} epochs", f"seed {info['seed']}"]
    if info.get("reduction"):
        extra.insert(0, info["reduction"])
    return f"{protocol} ({'; '.join(extra)})"


def _row(m: dict[str, Any], protocol: str) -> dict[str, Any]:
    """A run's settings and perplexities as the Inan tables name them."""
    info, train, model = m["inan"], m["resolved"]["train"], m["resolved"].get("model", {})
    return {"dataset": info.get("dataset"), "size": info.get("size"), "model": VARIANTS[info["variant"]]["label"],
            "variant": info["variant"], **{k: info.get(k) for k in SETTINGS},
            "dropout_rate": model.get("dropout_rate"), "embedding_dropout": model.get("embedding_dropout"),
            "epochs": train["epochs"], "hours": run_hours(m), "train_ppl": m.get("train_ppl"),
            "valid_ppl": m["valid_ppl"], "test_ppl": m["test_ppl"], "protocol": protocol_label(protocol, m)}


SETTINGS = ("tau", "gamma", "alpha", "soft_target_grad", "prediction_bias", "target_norm")


def table1(metrics_paths, paper_csv, protocol: str) -> pd.DataFrame:
    """Our valid/test perplexities beside the paper's (difference = ours - paper; relative = / paper)."""
    paper = pd.read_csv(paper_csv)
    # +AL / +REAL: how informative y~ ended up (its training writes it; runs from before: none)
    rows = [_row(m, protocol) | {"params": m.get("num_parameters")}
            | {new: (m.get("soft_target") or {}).get(old) for old, new in TABLE1_SOFT.items()}
            for m in _load(metrics_paths)]
    ours = pd.DataFrame(rows)
    merged = ours.merge(paper.rename(columns={"valid_ppl": "paper_valid_ppl", "test_ppl": "paper_test_ppl",
                                              "source": "paper_source"}),
                        on=["dataset", "size", "model"], how="left")
    for split in ("valid", "test"):
        merged[f"{split}_diff"] = merged[f"{split}_ppl"] - merged[f"paper_{split}_ppl"]
        merged[f"{split}_rel_diff"] = merged[f"{split}_diff"] / merged[f"paper_{split}_ppl"]
    merged = merged.sort_values(["dataset", "size", "variant"], key=lambda c: c if c.name == "dataset" else c.map(RANK))
    cols = ["dataset", "size", "model", "valid_ppl", "paper_valid_ppl", "valid_diff", "valid_rel_diff",
            "test_ppl", "paper_test_ppl", "test_diff", "test_rel_diff", "train_ppl", "params", *SETTINGS,
            *TABLE1_SOFT.values(), "dropout_rate", "embedding_dropout", "epochs", "hours", "protocol",
            "paper_source", "variant"]
    return merged[cols].reset_index(drop=True)


def ablation(metrics_paths, protocol: str) -> pd.DataFrame:
    cols = ["dataset", "size", "model", "tau", "gamma", "alpha", "soft_target_grad", "valid_ppl", "test_ppl",
            "train_ppl", "epochs", "hours", "protocol"]
    rows = [{k: _row(m, protocol)[k] for k in cols} for m in _load(metrics_paths)]
    df = pd.DataFrame(rows).sort_values(["tau", "gamma"]).reset_index(drop=True)
    df["best_valid"] = df["valid_ppl"] == df["valid_ppl"].min()
    return df


SOFT_COLUMNS = {"token_entropy_ratio": "soft_entropy_ratio", "token_target_mass": "soft_target_mass",
                "token_top_mass": "soft_top_mass", "embedding_norm_mean": "embedding_norm", "loss_al_share": "al_share"}
TABLE1_SOFT = {k: SOFT_COLUMNS[k] for k in ("token_entropy_ratio", "token_target_mass")}


def _soft_target_stats(paths) -> dict[Path, dict[str, float]]:
    """{run folder: its y~ statistics} from ``inan soft-target`` CSVs, the row at the run's own tau and target_norm."""
    out = {}
    for path in paths or []:
        df = pd.read_csv(path)
        own = df[(df["tau"] == df["trained_tau"])
                 & (df["target_norm"].fillna(0) == df["trained_target_norm"].fillna(0))]
        if len(own) != 1:
            raise ReplicateError(f"{path}: {len(own)} rows at the run's own tau and target_norm, not 1",
                                 "make it with `inan soft-target` without --tau / --target-norm")
        row = own.iloc[0]
        out[Path(row["run"]).resolve()] = {new: row.get(old) for old, new in SOFT_COLUMNS.items()}
    return out


def screen(metrics_paths, protocol: str, runs_config: list[dict] | None = None, soft_target_paths=None) -> pd.DataFrame:
    """The short-scale screen: one row per run, its settings and its gain over its VD-LSTM baseline (valid ppl,
    last and best epoch; NaN without one), beside its y~ statistics (``inan soft-target`` CSVs)."""
    from replicate.inan.screen import budget_key, pair_baselines, run_name

    config = {run_name(r["variant"], r["tag"]): r for r in runs_config or []}
    soft = _soft_target_stats(soft_target_paths)
    rows = []
    for path, m in zip(metrics_paths, _load(metrics_paths)):
        variant, train = m["inan"]["variant"], m["resolved"]["train"]
        history = Path(path).parent / "history.csv"
        tag = m["run"].rsplit(f"_{variant}_", 1)[-1]
        name, sched = run_name(variant, tag), train["schedule"]
        rows.append(_row(m, protocol) | {
            "tag": tag, "name": name, "baseline": config.get(name, {}).get("baseline"), "key": budget_key(train),
            "schedule": sched, "decay": train["decay"],
            "decay_after": (train["decay_interval"] if sched == "interval" else train["max_epoch"]),
            "train_tokens": train.get("max_train_tokens"),
            "best_valid_ppl": pd.read_csv(history)["valid_ppl"].min() if history.is_file() else None,
            **soft.get(Path(path).parent.resolve(), dict.fromkeys(SOFT_COLUMNS.values())),
            "why": config.get(name, {}).get("why", "")})
    pairs = pair_baselines(rows)
    df = pd.DataFrame(rows)
    df["baseline"] = df["name"].map(pairs)
    by_name = df.set_index("name")
    for col, out in (("valid_ppl", "gain_over_vd"), ("best_valid_ppl", "best_gain_over_vd")):
        df[out] = df["baseline"].map(by_name[col]) - df[col]
    df = df.sort_values(["variant", "schedule", "tag"], key=lambda c: c.map(RANK) if c.name == "variant" else c)
    cols = ["model", "tag", "baseline", "schedule", "decay_after", "decay", "dropout_rate", "embedding_dropout",
            "soft_target_grad", "prediction_bias", "tau", "target_norm", "alpha", "valid_ppl", "gain_over_vd",
            "best_valid_ppl", "best_gain_over_vd", *SOFT_COLUMNS.values(), "test_ppl", "train_ppl", "epochs",
            "hours", "train_tokens", "why", "protocol", "variant"]
    return df[cols].reset_index(drop=True)


def figure1_frames(point_paths, panels: list[tuple[str, float, float]], paper_csv, protocol: str):
    """(per-point summary, per-run rows) of Figure 1 from the point JSONs."""
    points = _points(point_paths)
    summary, runs = [], []
    for panel, tau, beta in panels:
        if (tau, beta) not in points:
            raise ReplicateError(f"Figure 1{panel}: no result for tau={tau}, beta={beta}",
                                 "pass every point JSON of the panel")
        d = points[(tau, beta)]
        summary.append({"reading": d.get("reading"), "panel": panel, "tau": tau, "beta": beta, "n_seeds": d["n_seeds"],
                        "distance_mean": d["distance_mean"], "distance_std": d["distance_std"],
                        "distance_min": d["distance_min"], "distance_max": d["distance_max"],
                        "distance_at_init_mean": _mean([r["distance_by_epoch"]["0"] for r in d["runs"]]),
                        "angle_distance_mean": d["angle_distance_mean"], "angle_distance_std": d["angle_distance_std"],
                        "metric": METRICS["residual"], "protocol": protocol})
        for r in d["runs"]:
            runs.append({"panel": panel, "tau": tau, "beta": beta, "seed": r["seed"], "distance": r["distance"],
                         "angle_distance": r["angle_distance"],
                         "distance_at_init": r["distance_by_epoch"]["0"], "slice_start": r["slice_start"],
                         "train_ppl": r["train_ppl"], "valid_ppl": r["valid_ppl"], "protocol": protocol})
    summary = pd.DataFrame(summary)
    paper = pd.read_csv(paper_csv).astype({"tau": float, "beta": float})
    summary = summary.merge(paper[["panel", "tau", "beta", "distance", "source"]].rename(
        columns={"distance": "paper_distance_approx", "source": "paper_source"}),
        on=["panel", "tau", "beta"], how="left")
    summary["diff_vs_paper"] = summary["distance_mean"] - summary["paper_distance_approx"]
    return summary, pd.DataFrame(runs)


def _points(point_paths) -> dict[tuple[float, float], dict]:
    """The point JSONs of Figure 1, keyed by (tau, beta)."""
    return {(float(d["tau"]), float(d["beta"])): d for d in map(_load_point, point_paths)}


def readings_table(point_paths, panels: list[tuple[str, float, float]], paper_csv, protocol: str) -> pd.DataFrame:
    """One row per section 6.2 reading: its Figure 1 points (relative residual) and whether it has the paper's
    shape (``replicate.inan.shape``), beside the paper's ~0.06 at beta = 1."""
    by_reading: dict[str, dict] = {}
    for d in map(_load_point, point_paths):
        by_reading.setdefault(d["reading"], {})[(float(d["tau"]), float(d["beta"]))] = d
    paper = pd.read_csv(paper_csv)
    paper_end = float(paper.loc[(paper.panel == "a") & (paper.beta == 1.0), "distance"].iloc[0])
    rows = []
    for reading, pts in by_reading.items():
        a = sorted((beta, pts[(tau, beta)]["distance_mean"]) for panel, tau, beta in panels
                   if panel == "a" and (tau, beta) in pts)
        b = sorted((tau, pts[(tau, beta)]["distance_mean"]) for panel, tau, beta in panels
                   if panel == "b" and (tau, beta) in pts)
        settings = next(iter(pts.values()))["runs"][0]["settings"]
        row = {"reading": reading, "embedding_norm": settings.get("embedding_norm", "word_vectors"),
               "optimizer": settings.get("optimizer"), "output_init": settings.get("output_init", "uniform"),
               "output_bias": settings.get("output_bias", True), "lr": settings.get("lr"),
               "epochs": settings.get("epochs"),
               "n_seeds": min(p["n_seeds"] for p in pts.values())}
        row.update({f"beta{fmt(beta)}": dist for beta, dist in a})
        row.update({f"tau{fmt(tau)}_beta1": dist for tau, dist in b})
        if len(a) >= 3:
            shape = beta_shape(a)
            row.update(fall_0_to_1=shape["fall"], first_step_share=shape["first_step_share"],
                       rapid_in_beta=shape["rapid"], distance_beta1=shape["end"])
            end = pts[(next(t for p, t, _ in panels if p == "a"), a[-1][0])]
            row["angle_distance_beta1"] = end["angle_distance_mean"]
        if len(b) >= 2:
            effect = tau_effect(b)
            row.update(tau_effect=effect["effect"], lower_at_larger_tau=effect["lower_at_larger_tau"])
        row["paper_distance_beta1_approx"] = paper_end
        row["metric"] = METRICS["residual"]
        row["protocol"] = protocol
        rows.append(row)
    return pd.DataFrame(rows)


def figure1_epochs(point_paths, panels: list[tuple[str, float, float]], protocol: str) -> pd.DataFrame:
    """Both distances after every epoch (0 = at init) of every run of Figure 1 (long)."""
    points = _points(point_paths)
    rows = [{"panel": panel, "tau": tau, "beta": beta, "seed": r["seed"], "epoch": int(epoch), "distance": dist,
             "angle_distance": r["angle_distance_by_epoch"][epoch], "protocol": protocol}
            for panel, tau, beta in panels if (tau, beta) in points
            for r in points[(tau, beta)]["runs"] for epoch, dist in r["distance_by_epoch"].items()]
    return pd.DataFrame(rows).sort_values(["panel", "tau", "beta", "seed", "epoch"]).reset_index(drop=True)


def figure1_plot(summary: pd.DataFrame, runs: pd.DataFrame, stem: str | Path) -> list[Path]:
    import matplotlib.pyplot as plt

    from replicate.plotting import save_figure, use_style

    use_style()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, panel, x, title in ((axes[0], "a", "beta", "(a) tau = {tau:g}: distance vs beta"),
                                (axes[1], "b", "tau", "(b) beta = {beta:g}: distance vs tau")):
        s = summary[summary.panel == panel].sort_values(x)
        r = runs[runs.panel == panel]
        if s.empty:
            ax.set_visible(False)
            continue
        ax.scatter(r[x], r["distance"], s=10, alpha=0.35, color="grey", label="single runs")
        ax.errorbar(s[x], s["distance_mean"], yerr=s["distance_std"], marker="o", capsize=3,
                    label=f"ours: mean ± sd ({int(s['n_seeds'].min())} seeds)")
        ref = s.dropna(subset=["paper_distance_approx"])
        if not ref.empty:
            ax.scatter(ref[x], ref["paper_distance_approx"], marker="x", s=60, color="C3", zorder=5,
                       label="paper (approx.)")
        if panel == "b":
            ax.set_xscale("log")
            ax.set_xticks(s[x], [f"{v:g}" for v in s[x]])  # the swept taus, no overlapping minor labels
            ax.minorticks_off()
        ax.set_xlabel(x)
        ax.set_title(title.format(tau=s["tau"].iloc[0], beta=s["beta"].iloc[0]))
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("relative residual of W off span(L^T)")
    fig.suptitle(f"Inan et al. 2017, section 6.2 replication — reading {summary['reading'].iloc[0]}, "
                 f"protocol: {summary['protocol'].iloc[0]}", fontsize=10)
    return save_figure(fig, stem)
