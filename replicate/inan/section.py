"""Inan et al. 2017's report section: Table 1, the ablation, the screen, section 6.2 and its readings."""

from __future__ import annotations

from replicate import paths as P
from replicate.inan.claims import INAN_SIZES, reading_has_shape
from replicate.inan.shape import RAPID_FACTOR
from replicate.reportkit import blocks as B
from replicate.reportkit import labels
from replicate.reportkit.sections import (Context, Paper, answer, config_diff, distinct, listed, missing, ours_paper,
                                          protocols_line, rel_cols, section_figures)
from replicate.reportkit.sources import Results, read_table


def _not_run(res) -> str:
    """The Table 1 sizes the results lack."""
    t = res.frames.get("inan_table1")
    ran = set(t["size"].astype(str)) if t is not None else set()
    lacking = " and ".join(f"Table 1 {s}" for s in INAN_SIZES if s not in ran)
    return lacking + " (the `paper` preset, a GPU)" if ran != set(INAN_SIZES) else ""


PAPER = Paper("Inan", "Inan et al. 2017", arxiv="1611.01462", table="inan_table1", table_name="Table 1", bar=0.05,
              headline=(("inan_al_vd", "AL gain over VD-LSTM, valid ppl"),
                        ("inan_subspace_level", "Section 6.2 distance at β = 1")), not_run=_not_run)
FIGURES = ([], ["inan"])  # explicit stems, then prefixes


def read(res: Results) -> None:
    """Table 1, the ablation, the screen, section 6.2's points (for the claims with ``distance``, the mean over
    seeds) and its readings."""
    res.frames["inan_table1"] = read_table(res, "inan_table1", P.INAN_TABLE1,
                                           ["dataset", "size", "model", "valid_ppl", "test_ppl", "protocol"])
    read_table(res, "inan_ablation", P.INAN_ABLATION, ["tau", "alpha", "valid_ppl", "protocol"])
    read_table(res, "inan_screen", P.INAN_SCREEN, ["model", "tag", "schedule", "valid_ppl", "gain_over_vd", "protocol"])
    frame = read_table(res, "inan_figure1", P.INAN_FIGURE1, ["panel", "tau", "beta", "distance_mean", "protocol"])
    if frame is not None:
        res.frames["inan_figure1"] = frame.assign(distance=frame["distance_mean"])
    read_table(res, "inan_figure1_runs", P.INAN_FIGURE1_RUNS, ["panel", "tau", "beta", "distance", "protocol"])
    read_table(res, "inan_subspace_readings", P.INAN_READINGS, ["reading", "protocol"])


FLAT = 0.99  # a soft target whose entropy is above this share of log |V| counts as flat


def _signed(values) -> str:
    return ", ".join(f"{v:+.2f}" for v in values)


def _soft_target_why(t) -> str:
    soft = t.dropna(subset=["soft_entropy_ratio"])
    within = t.loc[t["valid_rel_diff"].abs() <= PAPER.bar, "model"]
    out = f"Table 1: {', '.join(within) or 'no row'} within {PAPER.bar:.0%} of the paper's valid perplexity"
    if len(soft) and (soft["soft_entropy_ratio"] >= FLAT).all():
        out += (". The AL rows' soft target y~ ends nearly uniform (entropy / log |V| "
                + ", ".join(f"{m} {x:.4f}" for m, x in zip(soft["model"], soft["soft_entropy_ratio"]))
                + ") at the embedding norms training reaches, so the AL acts as a confidence penalty, not as a "
                  "word-similarity target")
    return out


def _screen_why(s) -> list[str]:
    al = s[s["model"] == "+AL"]
    sliced, whole = al[al["train_tokens"].notna()], al[al["train_tokens"].isna()].sort_values("alpha")
    sharp, flat = sliced[sliced["soft_entropy_ratio"] < FLAT], sliced[sliced["soft_entropy_ratio"] >= FLAT]
    out = []
    if len(sharp) and len(flat):
        gains = sharp["best_gain_over_vd"]
        ratio = sharp["soft_entropy_ratio"]
        out.append(f"On the screens' slice, +AL with an informative y~ (entropy ratio {ratio.min():.2f}"
                   f"-{ratio.max():.2f}) gains {_signed(gains)} valid ppl over VD-LSTM at its "
                   f"best epoch, with the flat y~ {_signed(flat['best_gain_over_vd'])}"
                   + (": the gain comes with the flat target only" if gains.max() < flat["best_gain_over_vd"].min()
                      and (gains <= 0).all() else ""))
    if len(whole):
        out.append(f"On all of PTB ({', '.join(f'{e:g}' for e in whole['epochs'].unique())} epochs, one seed each) "
                   f"alpha {', '.join(f'{a:g}' for a in whole['alpha'])} gain {_signed(whole['gain_over_vd'])}")
    return out


def findings(raw: dict) -> str:
    """The section's opening paragraph: what reproduces, what does not and the measured why, read from the tables
    below it (Table 1's y~ entropy, the screens' gains beside their y~, section 6.2's readings)."""
    t, s, r = (raw.get(k) for k in ("inan_table1", "inan_screen", "inan_subspace_readings"))
    parts = []
    if t is not None and {"valid_rel_diff", "soft_entropy_ratio"} <= set(t.columns):
        parts.append(_soft_target_why(t))
    if s is not None and {"soft_entropy_ratio", "best_gain_over_vd", "train_tokens", "alpha"} <= set(s.columns):
        parts += _screen_why(s)
    if r is not None and {"output_init", "beta1"} <= set(r.columns) and (r["output_init"] == "zero").any():
        other = r.loc[r["output_init"] != "zero", "beta1"]
        parts.append(f"Section 6.2 reads {r.loc[r['output_init'] == 'zero', 'beta1'].iloc[0]:.3f} at β = 1 with W "
                     "started at 0" + (f"; from a random W the same loss and step read "
                                       f"{', '.join(f'{x:.3f}' for x in other)}" if len(other) else ""))
    return "**What reproduces, and why.** " + ". ".join(parts) + "." if parts else ""


def _inan_table1(ctx: Context) -> str:
    t = ctx.results.raw["inan_table1"]
    soft = ("soft_entropy_ratio", "soft_target_mass")
    cols = {"dataset": "data set", "size": "size", "model": "model", **ours_paper(t), "tau": "tau", "gamma": "gamma",
            "alpha": "alpha", **{k: labels.column(k) for k in soft}, "n_seeds": "seeds", "valid_sd": "valid sd",
            "test_sd": "test sd", "epochs": "epochs", "dropout_rate": "dropout",
            "embedding_dropout": "embedding dropout", "hours": "hours (train + valid)", "protocol": "protocol"}
    legend = (" y~: the soft target of the +AL / +REAL rows at the end of training, over the valid split's targets "
              "(entropy over log |V|: 1 = uniform).")
    table = B.table(t, cols, keep=("model",), partial=("tau", "gamma", "alpha"), percent=rel_cols(t),
                    digits={"soft_entropy_ratio": 4, "soft_target_mass": 5},
                    caption="Our perplexities beside Inan et al.'s; rel. diff = (ours − paper) / paper; — = no "
                            "number in the paper." + (legend if t.reindex(columns=soft).notna().any(axis=None) else ""),
                    source=ctx.source("inan_table1"))
    return B.join([table, listed(t, "paper_source", "Paper numbers")])


PER_RUN_PPL = ("The per-run train and valid perplexities in the CSV are left out: for any β > 0 the augmented term, "
               "scaled by τ²·|V|, dominates the loss, so next-word prediction is barely trained and its perplexity "
               "stays near the vocabulary size |V|; it says nothing about the subspace distance.")
PAPER_COLUMNS = ("paper_distance_approx", "diff_vs_paper")


def beside_ours(cols: list[str]) -> list[str]:
    """The paper's columns moved right after our distance, so that a phone shows ours against the paper's
    without scrolling sideways."""
    paper = [c for c in cols if c in PAPER_COLUMNS]
    rest = [c for c in cols if c not in PAPER_COLUMNS]
    at = next((i + 1 for i, c in enumerate(rest) if c in ("distance_mean", "distance")), len(rest))
    return rest[:at] + paper + rest[at:]


def _inan_figure1(ctx: Context, key: str) -> str:
    f = ctx.results.raw[key]
    runs = key.endswith("_runs")
    cols = beside_ours([c for c in f.columns if c not in ("paper_source", "metric")
                        and not (runs and c.endswith("_ppl"))])
    metric = (", ".join(distinct(f, "metric"))
              or "normalised subspace distance from principal angles; 1 = orthogonal, 0 = same space")
    what = "one row per run (seed)" if runs else "mean over seeds per point"
    return B.join([B.table(f, cols, digits={c: 3 for c in f.columns if "distance" in c or c == "diff_vs_paper"},
                           caption=f"Figure 1 data, {what}. Metric: {metric}.", source=ctx.source(key)),
                   PER_RUN_PPL if runs and any(c.endswith("_ppl") for c in f.columns) else "",
                   listed(f, "paper_source", "Paper numbers")])


# in the linked CSV only: detail, and the shape flags of an earlier rule (the column "paper's shape" replaces them)
READING_DETAIL = ("fall_0_to_1", "first_step_share", "distance_beta1", "tau_effect", "gradual_in_beta", "rapid_in_beta",
                  "lower_at_larger_tau")


def _inan_readings(ctx: Context) -> str:
    f = ctx.results.raw["inan_subspace_readings"].copy()
    f["shape"] = [reading_has_shape(row) for _, row in f.iterrows()]
    cols = {c: labels.column(c) for c in f.columns if c not in READING_DETAIL and c != "shape"}
    cols["shape"] = "Figure 1's shape"
    return B.table(f, cols, keep=("reading", "shape"),
                   digits={c: 3 for c in f.columns if c.startswith(("beta", "tau", "paper_distance", "angle"))},
                   caption="The same points under each reading of the setup the paper leaves open: the distance "
                           f"per β (τ fixed) and per τ (β = 1). Figure 1's shape: a rapid decrease with β (the first "
                           f"β step carries at least {RAPID_FACTOR:g} times its linear share of the fall, which exceeds the "
                           "tolerance, and the distance never rises by more than it) and lower at larger τ, computed "
                           "from the columns shown (replicate/inan/shape.py).",
                   source=ctx.source("inan_subspace_readings"))


def section(ctx: Context) -> str:
    res = ctx.results
    out = [answer(ctx, "inan", PAPER), findings(res.raw),
           protocols_line(ctx, {"Table 1": "inan_table1", "the ablation": "inan_ablation", "the screen": "inan_screen",
                            "section 6.2": "inan_figure1", "its readings": "inan_subspace_readings"}),
           "### Table 1: AL, RE and REAL",
           _inan_table1(ctx) if "inan_table1" in res.raw else missing("Inan et al. Table 1"),
           "### Choosing the augmented-loss settings: validation perplexity of the ablation"]
    ab = res.raw.get("inan_ablation")
    out.append(missing("The augmented-loss ablation") if ab is None else
               B.table(ab, caption="Validation perplexity over the grid (best valid marks the lowest). The paper "
                                   "does not give these settings; this sweep is how the pipeline's choice is "
                                   "checked against data.", source=ctx.source("inan_ablation")))
    if "inan_screen" in res.raw:
        out += ["### Screens: an informative soft target, the AL weight and RE, on a short budget",
                B.table(res.raw["inan_screen"],
                        ["model", "tag", "baseline", "schedule", "embedding_dropout", "tau", "target_norm", "alpha",
                         "train_tokens", "valid_ppl", "gain_over_vd", "best_gain_over_vd", "soft_entropy_ratio",
                         "soft_target_mass", "hours", "why"],
                        caption="Each run differs from the size block in the settings shown (every setting, the test "
                                "and train perplexities and the AL's share of the loss: the CSV). Gain over VD = the "
                                "validation perplexity of the run's VD-LSTM baseline (the one named, else the VD-LSTM "
                                "run with the same schedule, epochs and training tokens; empty tokens: all of them) "
                                "minus this run's, after the last epoch and at each run's best epoch. For +AL / +REAL "
                                "runs, the soft target y~ they trained with: its entropy / log |V| (1 = uniform) and "
                                "the target word's mass per valid target token, and the AL term's share of the "
                                "objective. On a short budget (the protocol above), these rank settings; they are "
                                "not Table 1 numbers.", source=ctx.source("inan_screen"))]
    out.append("### Section 6.2: subspace distance between input and output embeddings")
    fig1 = sorted(k for k in res.raw if k.startswith("inan_figure1"))
    out += [_inan_figure1(ctx, k) for k in fig1] or [missing("Inan et al. Figure 1 data")]
    if "inan_subspace_readings" in res.raw:
        out.append(_inan_readings(ctx))
    out += [config_diff(ctx, "inan"), "### Figures", section_figures(ctx, "Inan et al. figures", *FIGURES)]
    return B.join(out)
