"""When does tying pay off? The grid of LSTM runs, the tying-gain tables and the claims.

Three studies share one grid of runs (a cell used by two studies is trained once):
- data: nested fractions (percent of the training split, a prefix of it) of PTB at one hidden size,
  plus optional WikiText-2 points (2x PTB, 3.3x the vocabulary);
- model: several hidden sizes at one fixed PTB fraction;
- analysis: the runs the embedding analysis reads (untied, tied and their +PR variants).
Every run is the small Zaremba / Press & Wolf preset (no dropout) with the study's overrides and
its hidden size; only tying / projection / hidden size / data amount vary. With ``lstm.equal_updates``
a run on p % of the data trains for as many updates as the 100 % run, on the same learning rate per
update (``lstm_overrides``).

Gain = valid perplexity untied − tied (positive: tying helps), relative gain = gain / untied;
paired by seed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from replicate import paths
from replicate.errors import ReplicateError
from replicate.lstm.config import resolve

VARIANTS = {
    "untied": {"tying": "untied", "projection": False},
    "tied": {"tying": "tied", "projection": False},
    "untied_pr": {"tying": "untied", "projection": True},
    "tied_pr": {"tying": "tied", "projection": True},
}
def run_dir(dataset: str, pct: int, hidden: int, variant: str, seed: int) -> str:
    return paths.under_results(paths.SCALE_RUN.format(dataset=dataset, pct=int(pct), hidden=int(hidden), variant=variant,
                                                      seed=int(seed)))


def lstm_grid(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every LSTM run of the scale section ``cfg`` (deduplicated, in a stable order)."""
    points = []
    data, model, ana = cfg["data"], cfg["model"], cfg["analysis"]
    for seed in data["seeds"]:
        for pct in data["pcts"]:
            points += [("ptb", pct, data["hidden"], v, seed) for v in ("untied", "tied")]
        for pct in data["wikitext2_pcts"]:
            points += [("wikitext2", pct, data["hidden"], v, seed) for v in ("untied", "tied")]
    for seed in model["seeds"]:
        for hidden in model["hiddens"]:
            points += [("ptb", model["pct"], hidden, v, seed) for v in ("untied", "tied")]
    points += [(p["dataset"], p["pct"], p["hidden"], p["variant"], p["seed"]) for p in analysis_points(cfg)]
    seen, out = set(), []
    for p in points:
        if p not in seen:
            seen.add(p)
            out.append(dict(zip(("dataset", "pct", "hidden", "variant", "seed"), p)))
    return out


def analysis_points(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs of the embedding analysis: variants x seeds (the _pr variants x ``pr_seeds`` if given)."""
    ana = cfg["analysis"]
    pr_seeds = ana.get("pr_seeds")
    out = []
    for v in ana["variants"]:
        seeds = pr_seeds if (v.endswith("_pr") and pr_seeds is not None) else ana["seeds"]
        out += [dict(dataset="ptb", pct=ana["pct"], hidden=ana["hidden"], variant=v, seed=s) for s in seeds]
    return out


def round_epochs(x: float) -> int:
    """An epoch count to the nearest integer, halves up (6.67 -> 7, 2.5 -> 3)."""
    return int(math.floor(x + 0.5))


def lstm_overrides(lstm: dict[str, Any], pct: int) -> dict[str, Any]:
    """The engine overrides of a run on ``pct`` percent of the training split: ``lstm.overrides``, and
    with ``lstm.equal_updates`` the same number of updates, on the same learning rate per update, as the
    100 % run. An epoch of p % has p/100 of the updates of a 100 % epoch, so with f = 100/p:
    - ``epochs`` x f;
    - the epochs held at the initial lr x f (``max_epoch`` + 1 of them under schedule r0.8, ``max_epoch``
      under later; ``max_epoch`` is set back from the scaled count);
    - ``decay`` (per epoch) -> decay ** (1/f), so that f epochs of p % decay the lr as much as one of 100 %.
    Epoch counts are rounded to the nearest integer, halves up (``round_epochs``); at least one epoch.
    The lr then equals the 100 % run's at the last update of each of its epochs, and lies between that
    epoch's value and the previous one's in between (one decay step of 100 % is f smaller steps here).
    Epochs, held epochs and decay come from the size preset where the overrides do not set them."""
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
    """Settings for ``replicate.lstm.train_run``: the preset + the study's overrides + this cell."""
    if variant not in VARIANTS:
        raise ReplicateError(f"unknown scale variant {variant!r}", f"use one of {sorted(VARIANTS)}")
    settings = {"size": lstm["size"], **lstm["overrides"], "hidden_size": int(hidden), **VARIANTS[variant],
                "seed": int(seed)}
    if train_tokens is not None:
        settings["max_train_tokens"] = int(train_tokens)
    return settings


def train_tokens_for(n_train: int, pct: int) -> int:
    """Tokens in the first ``pct`` percent of the training split (nested prefixes)."""
    if not 0 < pct <= 100:
        raise ReplicateError(f"data percentage {pct} outside (0, 100]", "use percentages like 10, 25, 50, 100")
    return n_train if pct == 100 else int(round(n_train * pct / 100))


# ----------------------------------------------------------------------------- tables
def runs_frame(summaries: list[dict], protocol: str) -> pd.DataFrame:
    cols = ["run", "dataset", "pct", "train_tokens", "hidden", "variant", "tying", "projection", "seed", "epochs",
            "vocab_size", "total_params", "embedding_params", "non_embedding_params", "embedding_share",
            "train_ppl", "train_clean_ppl", "final_valid_ppl", "best_valid_ppl", "best_epoch", "test_ppl",
            "tokens_per_s"]
    df = pd.DataFrame([{c: s.get(c) for c in cols} for s in summaries], columns=cols)
    df["protocol"] = protocol
    return df.sort_values(["dataset", "hidden", "pct", "variant", "seed"]).reset_index(drop=True)


def _metric_col(metric: str) -> str:
    if metric not in ("best_valid", "final_valid"):
        raise ReplicateError(f"unknown scale metric {metric!r}", "use best_valid or final_valid")
    return f"{metric}_ppl"


def study_membership(cfg: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """(study, dataset, pct, hidden) for every point of the gain tables."""
    data, model = cfg["data"], cfg["model"]
    out = [("data", "ptb", p, data["hidden"]) for p in data["pcts"]]
    out += [("wikitext2", "wikitext2", p, data["hidden"]) for p in data["wikitext2_pcts"]]
    out += [("model", "ptb", model["pct"], h) for h in model["hiddens"]]
    return out


def gain_by_seed(runs: pd.DataFrame, cfg: dict[str, Any], metric: str, protocol: str) -> pd.DataFrame:
    """Per-seed untied/tied pairs of every study point."""
    col = _metric_col(metric)
    rows = []
    for study, dataset, pct, hidden in study_membership(cfg):
        cell = runs[(runs["dataset"] == dataset) & (runs["pct"] == pct) & (runs["hidden"] == hidden)]
        u = cell[cell["variant"] == "untied"].set_index("seed")
        t = cell[cell["variant"] == "tied"].set_index("seed")
        for seed in sorted(set(u.index) & set(t.index)):
            uv, tv = float(u.loc[seed, col]), float(t.loc[seed, col])
            rows.append({"study": study, "dataset": dataset, "pct": pct, "train_tokens": int(u.loc[seed, "train_tokens"]),
                         "hidden": hidden, "seed": int(seed), "epochs": int(u.loc[seed, "epochs"]),
                         "untied_valid_ppl": uv, "tied_valid_ppl": tv, "gain": uv - tv, "rel_gain": (uv - tv) / uv,
                         "untied_train_ppl": float(u.loc[seed, "train_clean_ppl"]),
                         "tied_train_ppl": float(t.loc[seed, "train_clean_ppl"]),
                         "vocab_size": int(u.loc[seed, "vocab_size"]),
                         "non_embedding_params": int(u.loc[seed, "non_embedding_params"]),
                         "total_params_untied": int(u.loc[seed, "total_params"]),
                         "total_params_tied": int(t.loc[seed, "total_params"]),
                         "embedding_share_untied": float(u.loc[seed, "embedding_share"]),
                         "embedding_share_tied": float(t.loc[seed, "embedding_share"])})
    df = pd.DataFrame(rows)
    if df.empty:
        raise ReplicateError("no untied/tied pairs found for any point of the scale study",
                             "check that the runs finished (results/scale/runs)")
    df["metric"] = metric
    df["protocol"] = protocol
    return df


def gain_table(by_seed: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd, sem over seeds of every study point."""
    keys = ["study", "dataset", "pct", "train_tokens", "hidden", "vocab_size", "non_embedding_params",
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
        rows.append(row)
    order = ["study", "dataset", "pct", "train_tokens", "hidden", "vocab_size", "n_seeds", "untied_valid_ppl_mean",
             "tied_valid_ppl_mean", "gain_mean", "gain_sd", "gain_sem", "rel_gain_mean", "rel_gain_sd",
             "rel_gain_sem", "non_embedding_params", "total_params_untied", "total_params_tied",
             "embedding_share_untied", "embedding_share_tied", "metric", "protocol"]
    return pd.DataFrame(rows)[order]


def data_table(by_seed: pd.DataFrame) -> pd.DataFrame:
    """The claim's input: nested PTB fractions only."""
    cols = ["dataset", "pct", "train_tokens", "hidden", "seed", "epochs", "untied_valid_ppl", "tied_valid_ppl",
            "gain", "rel_gain", "untied_train_ppl", "tied_train_ppl", "metric", "protocol"]
    d = by_seed[by_seed["study"] == "data"]
    return d[cols].sort_values(["train_tokens", "seed"]).reset_index(drop=True)


def slope_test(x, y) -> dict:
    """Least-squares slope of y on x with its standard error (NaN when undetermined)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < 2 or np.ptp(x) == 0:
        return {"slope": float("nan"), "se": float("nan"), "n": n}
    xc = x - x.mean()
    slope = float((xc * (y - y.mean())).sum() / (xc ** 2).sum())
    if n < 3:
        return {"slope": slope, "se": float("nan"), "n": n}
    resid = y - (y.mean() + slope * xc)
    se = float(math.sqrt((resid ** 2).sum() / (n - 2) / (xc ** 2).sum()))
    return {"slope": slope, "se": se, "n": n}


def _verdict(slope: float, se: float, want_negative: bool, z: float = 2.0) -> str:
    if not math.isfinite(slope):
        return "not run"
    signed = -slope if want_negative else slope
    if not math.isfinite(se):
        return "inconclusive"
    if signed > z * se:
        return "holds"
    if signed < -z * se:
        return "does not hold"
    return "inconclusive"


def claims_table(by_seed: pd.DataFrame, protocol: str) -> pd.DataFrame:
    rows = []
    d = by_seed[by_seed["study"] == "data"]
    claim = "The tying gain shrinks as the training data grows (nested PTB fractions)."
    if d["train_tokens"].nunique() >= 2:
        t = slope_test(np.log10(d["train_tokens"]), d["rel_gain"])
        means = d.groupby("train_tokens")[["gain", "rel_gain"]].mean().sort_index()
        ev = (f"relative gain {means['rel_gain'].iloc[0]:+.1%} (abs {means['gain'].iloc[0]:+.2f} ppl) at "
              f"{int(means.index[0]):,} tokens -> {means['rel_gain'].iloc[-1]:+.1%} (abs {means['gain'].iloc[-1]:+.2f}) "
              f"at {int(means.index[-1]):,} tokens; slope per decade of tokens {t['slope']:+.4f} ± {t['se']:.4f} "
              f"(s.e., {t['n']} seed pairs); rule: holds if slope < 0 beyond 2 s.e.")
        rows.append({"claim_id": "scale_data_gain", "claim": claim,
                     "verdict": _verdict(t["slope"], t["se"], want_negative=True),
                     "statistic": "slope of rel_gain vs log10(train_tokens)", "value": t["slope"], "evidence": ev})
    else:
        rows.append({"claim_id": "scale_data_gain", "claim": claim, "verdict": "not run",
                     "statistic": "", "value": float("nan"), "evidence": "fewer than two data sizes"})
    m = by_seed[by_seed["study"] == "model"]
    claim = "The tying gain shrinks as the embedding share of parameters falls (hidden sizes, fixed data)."
    if m["hidden"].nunique() >= 2:
        t = slope_test(m["embedding_share_untied"], m["rel_gain"])
        means = m.groupby("hidden")[["rel_gain", "embedding_share_untied"]].mean().sort_index()
        ev = "; ".join(f"h={h}: share {r.embedding_share_untied:.1%}, rel gain {r.rel_gain:+.1%}"
                       for h, r in means.iterrows())
        ev += f"; slope {t['slope']:+.4f} ± {t['se']:.4f} (s.e.); rule: holds if slope > 0 beyond 2 s.e."
        rows.append({"claim_id": "scale_model_share", "claim": claim,
                     "verdict": _verdict(t["slope"], t["se"], want_negative=False),
                     "statistic": "slope of rel_gain vs embedding_share_untied", "value": t["slope"], "evidence": ev})
    else:
        rows.append({"claim_id": "scale_model_share", "claim": claim, "verdict": "not run", "statistic": "",
                     "value": float("nan"), "evidence": "fewer than two hidden sizes"})
    out = pd.DataFrame(rows)
    out["protocol"] = protocol
    return out


# ----------------------------------------------------------------------------- rule specs
def train_spec(sc: dict[str, Any], wc: dict[str, str], base: dict[str, Any]) -> dict[str, Any]:
    """The ``--spec`` of one LSTM job (``wc``: the rule's wildcards; ``base``: run_config(None)). Its
    ``lstm`` holds this run's own overrides (``lstm_overrides``: scaled already under equal_updates)."""
    lstm = {"size": sc["lstm"]["size"], "overrides": lstm_overrides(sc["lstm"], int(wc["pct"]))}
    spec = {"name": f"scale/{wc['dataset']}/p{wc['pct']}_h{wc['hidden']}_{wc['variant']}/seed{wc['seed']}",
            "dataset": wc["dataset"], "pct": int(wc["pct"]), "hidden": int(wc["hidden"]), "variant": wc["variant"],
            "seed": int(wc["seed"]), "lstm": lstm, "top_k": sc["top_k"], "track_every": sc["track_every"]}
    if sc["lstm"].get("equal_updates", False):
        spec["equal_updates"] = True  # for the record (absent when off: the spec stays as it was)
    spec["config"] = {**base, "scale_run": dict(spec)}
    return spec


TRANSFORMER_KEYS = ("d_model", "n_layers", "head_dim", "init", "steps", "batch_size", "seq_len", "lr", "warmup",
                    "min_lr_ratio", "weight_decay", "clip", "eval_every", "eval_tokens", "spike_window", "spike_rel",
                    "spike_grad_factor")


def transformer_spec(sc: dict[str, Any], wc: dict[str, str], base: dict[str, Any]) -> dict[str, Any]:
    """The ``--spec`` of one transformer job."""
    tf = sc["transformer"]
    spec = {k: tf[k] for k in TRANSFORMER_KEYS}
    spec.update(name=f"scale/transformer/{wc['variant']}_std{wc['std']}/seed{wc['seed']}", variant=wc["variant"],
                std=wc["std"], seed=int(wc["seed"]), allow_tf32=base.get("allow_tf32", False))
    spec["config"] = {**base, "scale_transformer": dict(spec)}
    return spec
