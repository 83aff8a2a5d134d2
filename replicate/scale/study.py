"""When does tying pay off? The grid of LSTM runs, the tying-gain tables and the claims.

Three studies share one grid (a cell two studies use is trained once): data (nested PTB fractions at one hidden
size, plus WikiText-2 points), model (hidden sizes at one PTB fraction) and the embedding analysis' runs; each
at every level of ``lstm.dropouts``. Gain = valid ppl untied − tied, paired by seed; the claims test the
least-squares slope of the per-seed ``log_ratio`` = ln(untied / tied) against log10(training tokens) or the
embedding share, with its 95 % t interval (``trend_verdict``).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from replicate import paths
from replicate.errors import ReplicateError
from replicate.lstm.config import resolve

CONFIDENCE = 0.95  # two-sided level of every interval of the study

VARIANTS = {
    "untied": {"tying": "untied", "projection": False},
    "tied": {"tying": "tied", "projection": False},
    "untied_pr": {"tying": "untied", "projection": True},
    "tied_pr": {"tying": "tied", "projection": True},
}
def dropout_name(rate: float) -> str:
    """A dropout rate as it appears in run paths and tables: 0, 0.3, 0.5."""
    return f"{float(rate):g}"


def run_dir(dataset: str, pct: int, hidden: int, variant: str, seed: int, dropout: float | str = 0) -> str:
    return paths.under_results(paths.SCALE_RUN.format(dataset=dataset, pct=int(pct), hidden=int(hidden), variant=variant,
                                                      dropout=dropout_name(dropout), seed=int(seed)))


def dropouts(cfg: dict[str, Any]) -> list[str]:
    """The regularisation levels of the grid (dropout names), in config order."""
    return [dropout_name(d) for d in cfg.get("lstm", {}).get("dropouts", [0.0])]


GRID_KEYS = ("dataset", "pct", "hidden", "variant", "seed", "dropout")


def lstm_grid(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every LSTM run of the scale section ``cfg`` (deduplicated, in a stable order). The data and model
    studies run at every regularisation level; the embedding analysis at the first one."""
    points = []
    data, model = cfg["data"], cfg["model"]
    for drop in dropouts(cfg):
        for seed in data["seeds"]:
            for pct in data["pcts"]:
                points += [("ptb", pct, data["hidden"], v, seed, drop) for v in ("untied", "tied")]
            for pct in data["wikitext2_pcts"]:
                points += [("wikitext2", pct, data["hidden"], v, seed, drop) for v in ("untied", "tied")]
        for seed in model["seeds"]:
            for hidden in model["hiddens"]:
                points += [("ptb", model["pct"], hidden, v, seed, drop) for v in ("untied", "tied")]
    points += [tuple(p[k] for k in GRID_KEYS) for p in analysis_points(cfg)]
    return [dict(zip(GRID_KEYS, p)) for p in dict.fromkeys(points)]


def analysis_points(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs of the embedding analysis: variants x seeds (the _pr variants x ``pr_seeds`` if given)."""
    ana = cfg["analysis"]
    return [dict(dataset="ptb", pct=ana["pct"], hidden=ana["hidden"], variant=v, seed=s, dropout=dropouts(cfg)[0])
            for v in ana["variants"]
            for s in (ana["pr_seeds"] if v.endswith("_pr") and ana.get("pr_seeds") is not None else ana["seeds"])]


def analysis_constraints(points: list[dict[str, Any]]) -> dict[str, str]:
    """Wildcard constraints matching every run of ``points`` (one alternation per wildcard; none: match nothing)."""
    return {key: "|".join(re.escape(str(v)) for v in dict.fromkeys(str(p[key]) for p in points)) or "(?!)"
            for key in GRID_KEYS}


def round_epochs(x: float) -> int:
    """An epoch count to the nearest integer, halves up (6.67 -> 7, 2.5 -> 3)."""
    return int(math.floor(x + 0.5))


def lstm_overrides(lstm: dict[str, Any], pct: int, dropout: float | str = 0) -> dict[str, Any]:
    """``equal_update_overrides`` + this run's Zaremba dropout (0: none) + the epoch cap ``lstm.max_epochs``."""
    overrides = equal_update_overrides(lstm, pct)
    rate = float(dropout)
    overrides.update(dropout="zaremba" if rate > 0 else "none", dropout_rate=rate)
    if lstm.get("max_epochs") is not None:
        overrides["epochs"] = int(lstm["max_epochs"])
    return overrides


def check_stopping(lstm: dict[str, Any]) -> None:
    """Refuse settings that contradict early stopping."""
    if lstm.get("patience") is not None and lstm.get("equal_updates", False):
        raise ReplicateError("scale.lstm.patience with scale.lstm.equal_updates: early stopping trains every "
                             "point to its own best, equal updates fix its length in advance",
                             "set scale.lstm.equal_updates: false (or patience: null for the previous design)")
    if lstm.get("anneal") is not None and lstm.get("patience") is None:
        raise ReplicateError("scale.lstm.anneal without scale.lstm.patience: annealing on plateau is part of "
                             "the early-stopped design", "set patience (or anneal: null)")
    if lstm.get("patience") is not None and lstm.get("max_epochs") is None:
        raise ReplicateError("scale.lstm.patience without scale.lstm.max_epochs", "set max_epochs, the epoch cap")


def equal_update_overrides(lstm: dict[str, Any], pct: int) -> dict[str, Any]:
    """``lstm.overrides`` of a run on ``pct`` % of the data; with ``lstm.equal_updates`` as many updates on the same
    lr path as the 100 % run: with f = 100/pct, epochs and held epochs x f (rounded halves up), decay ** (1/f)."""
    overrides = dict(lstm["overrides"])
    if not lstm.get("equal_updates", False) or int(pct) == 100:
        return overrides
    if overrides.get("max_batches") is not None:
        raise ReplicateError("scale.lstm.equal_updates with lstm.overrides.max_batches: an epoch's updates "
                             "then no longer scale with the data fraction",
                             "drop max_batches, or set equal_updates: false")
    _, cfg = resolve({"size": lstm["size"], **overrides}, vocab_size=1)
    if cfg.schedule == "interval":
        raise ReplicateError("scale.lstm.equal_updates scales the held epochs of schedule r0.8 or later, "
                             "not schedule interval", "use schedule later or r0.8, or set equal_updates: false")
    f = 100 / int(pct)
    first_decayed = 1 if cfg.schedule == "r0.8" else 0  # held epochs = max_epoch + first_decayed
    held = round_epochs((cfg.max_epoch + first_decayed) * f)
    overrides.update(epochs=max(1, round_epochs(cfg.epochs * f)), max_epoch=held - first_decayed,
                     decay=cfg.decay ** (1 / f))
    return overrides


def run_settings(lstm: dict[str, Any], hidden: int, variant: str, seed: int, train_tokens: int | None) -> dict:
    """Settings for ``replicate.lstm.train_run``: the preset + the run's overrides + this cell (checked by its path)."""
    settings = {"size": lstm["size"], **lstm["overrides"], "hidden_size": int(hidden), **VARIANTS[variant],
                "seed": int(seed)}
    if train_tokens is not None:
        settings["max_train_tokens"] = int(train_tokens)
    return settings


def train_tokens_for(n_train: int, pct: int) -> int:
    """Tokens in the first ``pct`` percent (1 to 100, checked by the run's path) of the training split."""
    return n_train if pct == 100 else int(round(n_train * pct / 100))


# ----------------------------------------------------------------------------- tables
def runs_frame(summaries: list[dict], protocol: str) -> pd.DataFrame:
    cols = ["run", "dataset", "pct", "train_tokens", "hidden", "variant", "tying", "projection", "dropout", "seed",
            "epochs", "stop_reason", "patience", "anneal", "max_epochs", "vocab_size", "total_params", "embedding_params",
            "non_embedding_params", "embedding_share", "train_ppl", "train_clean_ppl", "final_valid_ppl",
            "best_valid_ppl", "best_epoch", "test_ppl", "tokens_per_s"]
    rows = [{c: s.get(c) for c in cols} for s in summaries]
    for r in rows:  # runs of the previous design: no dropout, a fixed number of epochs
        r["dropout"] = dropout_name(r["dropout"] or 0)
    return pd.DataFrame(rows, columns=cols).assign(protocol=protocol).sort_values(["dataset", "dropout", "hidden", "pct", "variant", "seed"]).reset_index(drop=True)


def study_membership(cfg: dict[str, Any]) -> list[tuple[str, str, int, int, str]]:
    """(study, dataset, pct, hidden, dropout) for every point of the gain tables."""
    data, model = cfg["data"], cfg["model"]
    out = []
    for drop in dropouts(cfg):
        out += [("data", "ptb", p, data["hidden"], drop) for p in data["pcts"]]
        out += [("wikitext2", "wikitext2", p, data["hidden"], drop) for p in data["wikitext2_pcts"]]
        out += [("model", "ptb", model["pct"], h, drop) for h in model["hiddens"]]
    return out


def gain_by_seed(runs: pd.DataFrame, cfg: dict[str, Any], metric: str, protocol: str) -> pd.DataFrame:
    """Per-seed untied/tied pairs of every study point."""
    col = f"{metric}_ppl"  # best_valid or final_valid (the schema's enum)
    rows = []
    for study, dataset, pct, hidden, drop in study_membership(cfg):
        cell = runs[(runs["dataset"] == dataset) & (runs["pct"] == pct) & (runs["hidden"] == hidden)
                    & (runs["dropout"] == drop)]
        u, t = (cell[cell["variant"] == v].set_index("seed") for v in ("untied", "tied"))
        for seed in sorted(set(u.index) & set(t.index)):
            a, b = u.loc[seed], t.loc[seed]
            uv, tv = float(a[col]), float(b[col])
            rows.append({"study": study, "dataset": dataset, "pct": pct, "train_tokens": int(a["train_tokens"]),
                         "hidden": hidden, "dropout": drop, "seed": int(seed), "epochs": int(a["epochs"]),
                         "untied_valid_ppl": uv, "tied_valid_ppl": tv, "gain": uv - tv, "rel_gain": (uv - tv) / uv,
                         "log_ratio": math.log(uv / tv), "untied_train_ppl": float(a["train_clean_ppl"]),
                         "tied_train_ppl": float(b["train_clean_ppl"]), "untied_best_epoch": a["best_epoch"],
                         "tied_best_epoch": b["best_epoch"], "untied_stop": a["stop_reason"],
                         "tied_stop": b["stop_reason"], "vocab_size": int(a["vocab_size"]),
                         "non_embedding_params": int(a["non_embedding_params"]),
                         "total_params_untied": int(a["total_params"]), "total_params_tied": int(b["total_params"]),
                         "embedding_share_untied": float(a["embedding_share"]),
                         "embedding_share_tied": float(b["embedding_share"])})
    if not rows:
        raise ReplicateError("no untied/tied pairs found for any point of the scale study",
                             "check that the runs finished (results/scale/runs)")
    return pd.DataFrame(rows).assign(metric=metric, protocol=protocol)


def t_interval(values, level: float = CONFIDENCE) -> dict:
    """Mean of ``values`` with its two-sided t interval (n − 1 dof; NaN bounds under two values)."""
    from scipy.stats import t

    v = np.asarray(values, float)
    n = len(v)
    mean = float(v.mean()) if n else float("nan")
    if n < 2:
        return {"mean": mean, "sd": float("nan"), "sem": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": n}
    sd = float(v.std(ddof=1))
    sem = sd / math.sqrt(n)
    half = float(t.ppf(0.5 + level / 2, n - 1)) * sem
    return {"mean": mean, "sd": sd, "sem": sem, "lo": mean - half, "hi": mean + half, "n": n}


def gain_table(by_seed: pd.DataFrame) -> pd.DataFrame:
    """Per study point: means, sd and s.e.m. over seeds of the gains; the log ratio's 95 % t interval, also as
    ``tying_gain_pct*`` = 100 (exp(x) − 1)."""
    keys = ["study", "dataset", "pct", "train_tokens", "hidden", "dropout", "vocab_size", "non_embedding_params",
            "total_params_untied", "total_params_tied", "embedding_share_untied", "embedding_share_tied",
            "metric", "protocol"]
    rows = []
    for key, g in by_seed.groupby(keys, sort=False):
        row = dict(zip(keys, key))
        n = len(g)
        row["n_seeds"] = n
        for c in ("untied_valid_ppl", "tied_valid_ppl"):
            row[f"{c}_mean"] = g[c].mean()
        for c in ("gain", "rel_gain"):
            sd = g[c].std(ddof=1) if n > 1 else float("nan")
            row[f"{c}_mean"], row[f"{c}_sd"], row[f"{c}_sem"] = g[c].mean(), sd, sd / math.sqrt(n)
        ci = t_interval(g["log_ratio"])
        row.update(log_ratio_mean=ci["mean"], log_ratio_lo=ci["lo"], log_ratio_hi=ci["hi"],
                   tying_gain_pct=100 * math.expm1(ci["mean"]), tying_gain_pct_lo=100 * math.expm1(ci["lo"]),
                   tying_gain_pct_hi=100 * math.expm1(ci["hi"]),
                   runs_at_cap=int((g["untied_stop"] == "cap").sum() + (g["tied_stop"] == "cap").sum()))
        rows.append(row)
    order = ["study", "dataset", "pct", "train_tokens", "hidden", "dropout", "vocab_size", "embedding_share_untied",
             "n_seeds", "untied_valid_ppl_mean", "tied_valid_ppl_mean", "gain_mean", "gain_sd", "gain_sem",
             "rel_gain_mean", "rel_gain_sd", "rel_gain_sem", "log_ratio_mean", "log_ratio_lo", "log_ratio_hi",
             "tying_gain_pct", "tying_gain_pct_lo", "tying_gain_pct_hi", "runs_at_cap", "non_embedding_params",
             "total_params_untied", "total_params_tied", "embedding_share_tied", "metric", "protocol"]
    return pd.DataFrame(rows)[order]


def data_table(by_seed: pd.DataFrame) -> pd.DataFrame:
    """The claim's input: nested PTB fractions only, per seed."""
    cols = ["dataset", "pct", "train_tokens", "hidden", "dropout", "seed", "epochs", "untied_valid_ppl",
            "tied_valid_ppl", "gain", "rel_gain", "log_ratio", "untied_best_epoch", "tied_best_epoch", "untied_stop",
            "tied_stop", "untied_train_ppl", "tied_train_ppl", "metric", "protocol"]
    d = by_seed[by_seed["study"] == "data"]
    return d[cols].sort_values(["dropout", "train_tokens", "seed"]).reset_index(drop=True)


def slope_test(x, y, level: float = CONFIDENCE) -> dict:
    """Least-squares slope of y on x, its standard error and t interval (n − 2 dof; NaN when undetermined)."""
    from scipy.stats import t

    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    nan = float("nan")
    if n < 2 or np.ptp(x) == 0:
        return {"slope": nan, "se": nan, "lo": nan, "hi": nan, "n": n}
    xc = x - x.mean()
    slope = float((xc * (y - y.mean())).sum() / (xc ** 2).sum())
    if n < 3:
        return {"slope": slope, "se": nan, "lo": nan, "hi": nan, "n": n}
    resid = y - (y.mean() + slope * xc)
    se = float(math.sqrt((resid ** 2).sum() / (n - 2) / (xc ** 2).sum()))
    half = float(t.ppf(0.5 + level / 2, n - 2)) * se
    return {"slope": slope, "se": se, "lo": slope - half, "hi": slope + half, "n": n}


def trend_verdict(lo: float, hi: float, slope: float, want_negative: bool) -> str:
    """holds / does not hold when the slope's interval lies wholly on the claimed / other side of 0, else
    inconclusive; not run without a slope."""
    if not math.isfinite(slope):
        return "not run"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    if (hi < 0) if want_negative else (lo > 0):
        return "holds"
    if (lo > 0) if want_negative else (hi < 0):
        return "does not hold"
    return "inconclusive"


CLAIMS = (  # id, study, x column, x label, want_negative, claim, the point label
    ("scale_data_gain", "data", "train_tokens", "log10(training tokens)", True,
     "The tying gain shrinks as the training data grows (nested PTB fractions, one hidden size).", "train_tokens"),
    ("scale_model_share", "model", "embedding_share_untied", "embedding share of parameters", False,
     "The tying gain shrinks as the embedding share of parameters falls (hidden sizes, fixed data).", "hidden"),
)


def claims_table(by_seed: pd.DataFrame, protocol: str) -> pd.DataFrame:
    """One verdict per claim and regularisation level, with the slope's 95 % t interval."""
    rows = []
    levels = sorted(by_seed["dropout"].unique(), key=float) if "dropout" in by_seed else ["0"]
    for cid, study, xcol, xlabel, neg, claim, point in CLAIMS:
        for drop in levels:
            d = by_seed[(by_seed["study"] == study) & (by_seed["dropout"] == drop)]
            row = {"claim_id": cid if float(drop) == 0 else f"{cid}_drop{drop}", "claim": claim, "dropout": drop,
                   "statistic": f"slope of ln(untied/tied valid ppl) vs {xlabel}", "n": len(d)}
            if d[point].nunique() < 2:
                rows.append({**row, "verdict": "not run", "value": float("nan"), "se": float("nan"),
                             "ci_low": float("nan"), "ci_high": float("nan"),
                             "evidence": f"fewer than two {'data sizes' if study == 'data' else 'hidden sizes'}"})
                continue
            x = np.log10(d[xcol].astype(float)) if study == "data" else d[xcol].astype(float)
            t = slope_test(x, d["log_ratio"])
            means = d.groupby(point).agg(lr=("log_ratio", "mean"), share=("embedding_share_untied", "mean"),
                                         tokens=("train_tokens", "mean")).sort_index()
            pts = "; ".join(f"{'%s tokens' % format(int(r.tokens), ',') if study == 'data' else 'h=%d' % k}: share "
                            f"{r.share:.1%}, tying gain {math.expm1(r.lr):+.1%}" for k, r in means.iterrows())
            ev = (f"dropout {drop}; {pts}; slope {t['slope']:+.4f} per unit of x, 95 % t interval "
                  f"[{t['lo']:+.4f}, {t['hi']:+.4f}] ({t['n']} seed pairs, {t['n'] - 2} dof); rule: holds if the "
                  f"interval lies wholly {'below' if neg else 'above'} 0")
            verdict = trend_verdict(t["lo"], t["hi"], t["slope"], want_negative=neg)
            epochs = d.groupby(point)["epochs"].first().sort_index()
            if study == "data" and d["untied_stop"].isna().all() and epochs.nunique() > 1:  # fixed lengths
                verdict = "inconclusive"
                ev += (f"; not testable as run: the runs have fixed lengths that change with the data "
                       f"({'/'.join(str(int(e)) for e in epochs)} epochs from the smallest to the largest data size), "
                       "so data size and training length are confounded")
            rows.append({**row, "verdict": verdict, "value": t["slope"], "se": t["se"], "ci_low": t["lo"],
                         "ci_high": t["hi"], "evidence": ev})
    out = pd.DataFrame(rows, columns=["claim_id", "claim", "dropout", "verdict", "statistic", "value", "se", "ci_low",
                                      "ci_high", "n", "evidence"])
    out["protocol"] = protocol
    return out


# ----------------------------------------------------------------------------- rule specs
def train_spec(sc: dict[str, Any], wc: dict[str, str], base: dict[str, Any], record: bool) -> dict[str, Any]:
    """The spec of one LSTM run (``wc``: its wildcards; ``record``: an analysis run, with the hooks)."""
    check_stopping(sc["lstm"])
    drop = wc.get("dropout", "0")
    lstm = {"size": sc["lstm"]["size"], "overrides": lstm_overrides(sc["lstm"], int(wc["pct"]), drop)}
    spec = {"name": f"scale/{wc['dataset']}/p{wc['pct']}_h{wc['hidden']}_{wc['variant']}_drop{drop}/seed{wc['seed']}",
            "dataset": wc["dataset"], "pct": int(wc["pct"]), "hidden": int(wc["hidden"]), "variant": wc["variant"],
            "seed": int(wc["seed"]), "dropout": drop, "lstm": lstm, "patience": sc["lstm"].get("patience"),
            "anneal": sc["lstm"].get("anneal"),
            "record": bool(record), "top_k": sc["top_k"], "track_every": sc["track_every"]}
    if sc["lstm"].get("equal_updates", False):
        spec["equal_updates"] = True  # for the record (absent when off)
    spec["config"] = {**base, "scale_run": dict(spec)}
    return spec


TRANSFORMER_KEYS = ("d_model", "n_layers", "head_dim", "init", "steps", "batch_size", "seq_len", "warmup",
                    "min_lr_ratio", "weight_decay", "clip", "eval_every", "eval_tokens", "spike_window", "spike_rel",
                    "spike_grad_factor")


def transformer_spec(sc: dict[str, Any], wc: dict[str, str], base: dict[str, Any]) -> dict[str, Any]:
    """The ``--spec`` of one transformer job."""
    tf = sc["transformer"]
    spec = {k: tf[k] for k in TRANSFORMER_KEYS}
    spec.update(name=f"scale/transformer/{wc['variant']}_std{wc['std']}_lr{wc['lr']}/seed{wc['seed']}",
                variant=wc["variant"], std=wc["std"], lr=float(wc["lr"]), seed=int(wc["seed"]),
                allow_tf32=base.get("allow_tf32", False))
    spec["config"] = {**base, "scale_transformer": dict(spec)}
    return spec


def transformer_runs(tf: dict[str, Any]) -> list[dict[str, str]]:
    """Every transformer run of the section ``tf`` as path wildcards (variant, std, lr, seed); a variant's learning
    rates are its own ``variant_lrs`` entry, else ``lrs``."""
    return [{"variant": v, "std": str(std), "lr": lr_name(lr), "seed": str(seed)} for v in tf["variants"]
            for std in tf["stds"] for lr in tf.get("variant_lrs", {}).get(v, tf["lrs"]) for seed in tf["seeds"]]


def lr_name(lr: float) -> str:
    """A learning rate as it appears in run paths: 0.001, 0.003."""
    return f"{float(lr):g}"


def select_lr(table: pd.DataFrame) -> pd.DataFrame:
    """Mark (``selected``) each (variant, std)'s lr with the lowest mean final valid loss over seeds."""
    table = table.copy()
    mean = table.groupby(["variant", "std", "lr"])["final_valid_loss"].transform("mean")
    best = mean.groupby([table["variant"], table["std"]]).transform("min")
    table["selected"] = mean == best
    return table


def spread_step0_loss(tied: bool, rescale: bool, d: int, embed_std: float, n: int) -> float:
    """Step-0 loss counting the spread of the n − 1 other logits (zero branches): tied, ``initial_loss(...,
    spread=True)``; untied (output at ``embed_std`` on a unit-rms hidden state), log n + d σ² / 2."""
    from replicate.initial_loss.theory import initial_loss

    if not tied:
        return math.log(n) + d * embed_std**2 / 2
    return float(initial_loss(d, embed_std, n, rescale=rescale, spread=True))


def transformer_comparison(table: pd.DataFrame) -> pd.DataFrame:
    """Per variant and std at its selected lr: mean test loss over seeds and the log ratio of test perplexities
    against untied (paired by seed), each with its 95 % t interval; ``lr_at_edge``: the lr is an end of the sweep."""
    sel = table[table["selected"]]
    rows = []
    for (variant, std), g in sel.groupby(["variant", "std"], sort=True):
        ci = t_interval(g["final_test_loss"])
        swept = table.loc[(table["variant"] == variant) & (table["std"] == std), "lr"]
        lr = float(g["lr"].iloc[0])
        row = {"variant": variant, "std": std, "lr": lr, "lrs_swept": int(swept.nunique()),
               "lr_at_edge": bool(swept.nunique() > 1 and lr in (swept.min(), swept.max())), "n_seeds": ci["n"],
               "final_valid_ppl": math.exp(g["final_valid_loss"].mean()), "final_test_ppl": math.exp(ci["mean"]),
               "test_loss_mean": ci["mean"], "test_loss_lo": ci["lo"], "test_loss_hi": ci["hi"],
               "embedding_share": float(g["embedding_share"].iloc[0])}
        base = sel[(sel["variant"] == "untied") & (sel["std"] == std)].set_index("seed")["final_test_loss"]
        mine = g.set_index("seed")["final_test_loss"]
        seeds = sorted(set(base.index) & set(mine.index))
        d = t_interval([base[s] - mine[s] for s in seeds]) if variant != "untied" and seeds else None
        row.update(log_ratio_vs_untied=d["mean"] if d else None, log_ratio_lo=d["lo"] if d else None,
                   log_ratio_hi=d["hi"] if d else None)
        rows.append(row)
    return pd.DataFrame(rows)
