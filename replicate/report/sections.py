"""The generated blocks of the report, one function per template directive, each returning Markdown.

Every number comes from a result file (``replicate.report.sources``); a result the configuration
did not produce reads "not run in this protocol". Tables show values common to all rows once above
them and link the full result file under them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from replicate.inan.shape import RAPID_FACTOR
from replicate.report import blocks as B
from replicate.report import claims as claims_mod
from replicate.report import labels
from replicate.report.format import NO_VALUE, NOT_RUN
from replicate.report.sources import Results, run_label
from replicate.report.compute import flatten, section_compute, section_provenance
from replicate.report.summary import answer, section_summary

# Figures each section shows: explicit stems first, then prefixes (a figure goes to the first
# section that claims it; anything left over appears under "other_figures").
FIGURES = {
    "press_wolf": (["report_press_wolf_learning_curves"], ["press_wolf"]),
    "initial_loss": (["initial_loss_vs_width", "initial_loss_standard_init", "embedding_share"], ["initial_loss"]),
    "inan": ([], ["inan"]),
    "scale": ([], ["scale"]),
}

CAPTIONS = {
    "report_press_wolf_learning_curves":
        "Learning curves: train perplexity (running, as the reference code reports it) and valid perplexity "
        "per epoch, tied vs untied output, with and without projection regularisation (log scale).",
}  # the other figures' captions: workflow/report/*.rst


@dataclass
class Context:
    results: Results
    verdicts: list
    figures_dir: Path
    captions_dir: Path | None
    md_path: Path
    used_figures: set = field(default_factory=set)
    sections: dict | None = None        # this run's config sections (press_wolf, inan, ...)
    tolerances: dict | None = None      # the report config's claim tolerances
    full_protocol: dict | None = None   # the same sections in config/paper.yaml (schema defaults filled)

    def source(self, key: str) -> B.Link:
        """The link to a result file read by ``sources`` (its path relative to the results' parent)."""
        label = self.results.paths[key]
        return B.link(label, self.results.root.parent / label, self.md_path.parent)


# ----------------------------------------------------------------------------------- helpers
def _figure_stems(figures_dir: Path) -> list[str]:
    return sorted(p.stem for p in figures_dir.glob("*.png")) if figures_dir.is_dir() else []


def _caption(ctx: Context, stem: str) -> str:
    """The figure's Snakemake-report caption (workflow/report/<stem>.rst or *_<stem>.rst, written by
    the figure's owner) as plain text; else the report's own caption; else the humanised name."""
    if ctx.captions_dir is not None and ctx.captions_dir.is_dir():
        for path in [ctx.captions_dir / f"{stem}.rst", *sorted(ctx.captions_dir.glob(f"*_{stem}.rst"))]:
            if path.is_file():
                text = " ".join(path.read_text(encoding="utf-8").split())
                if "{{" in text or "{%" in text:  # a Jinja template for Snakemake's report only
                    continue
                return re.sub(r"(``|\*\*|\*|`)([^`*]+)\1", r"\2", text)
    if stem in CAPTIONS:
        return CAPTIONS[stem]
    return stem.replace("_", " ").capitalize() + "."


def _figures(ctx: Context, stems: list[str]) -> list[str]:
    out = []
    for stem in stems:
        if stem in ctx.used_figures:
            continue
        ctx.used_figures.add(stem)
        out.append(B.figure(ctx.figures_dir / f"{stem}.png", _caption(ctx, stem), ctx.md_path.parent))
    return out


def _section_figures(ctx: Context, section: str, what: str) -> str:
    explicit, prefixes = FIGURES.get(section, ([], []))
    stems = _figure_stems(ctx.figures_dir)
    chosen = [s for s in explicit if s in stems]
    chosen += [s for s in stems if any(s.startswith(p) for p in prefixes) and s not in chosen]
    return B.join(_figures(ctx, chosen)) or _missing(what)


def _config_diff(ctx: Context, section: str) -> str:
    """Every config key of ``section`` whose value differs from the papers' full protocol."""
    if not ctx.sections or not ctx.full_protocol or section not in ctx.sections:
        return ""
    ours, full = (flatten(ctx.sections[section], json.dumps), flatten(ctx.full_protocol.get(section) or {}, json.dumps))
    keys = sorted(k for k in set(ours) | set(full) if ours.get(k, "—") != full.get(k, "—"))
    if not keys:
        return f"Configuration: identical to the papers' full protocol (`config/paper.yaml`, `{section}`)."
    return B.join([f"What this configuration changes from the full protocol (`config/paper.yaml`, section "
                   f"`{section}`):",
                   B.bullets([f"{B.code(k)}: {B.code(ours.get(k, '—'))} (full protocol: {B.code(full.get(k, '—'))})"
                              for k in keys])])


def _protocols(ctx: Context, parts: dict[str, str]) -> str:
    """The section's protocol line: per part (label -> result key) the protocol label(s) its table carries,
    stated once here instead of in a column."""
    by: dict[str, list[str]] = {}
    for label, key in parts.items():
        frame = ctx.results.raw.get(key)
        if frame is not None and "protocol" in frame.columns:
            for p in dict.fromkeys(frame["protocol"].dropna().astype(str)):
                by.setdefault(p, []).append(label)
    if not by:
        return ""
    if len(by) == 1:
        return f"Protocol of this section: {B.code(next(iter(by)))}."
    return "Protocol of this section: " + "; ".join(f"{', '.join(v)}: {B.code(p)}" for p, v in by.items()) + "."


def _missing(what: str) -> str:
    return B.notice(f"{what}: {NOT_RUN}.")


def _first(frame: pd.DataFrame, *names: str) -> str | None:
    return next((n for n in names if n in frame.columns), None)


def _ours_paper(frame: pd.DataFrame, splits: Sequence[str] = ("valid", "test")) -> dict[str, str]:
    """Column map 'ours | paper | rel. diff' per split, for the owners' names of those columns
    (``valid_ours``/``valid_paper`` or ``valid_ppl``/``paper_valid_ppl``)."""
    cols: dict[str, str] = {}
    for split in splits:
        for names, what in (((f"{split}_ours", f"{split}_ppl"), "ours"),
                            ((f"{split}_paper", f"paper_{split}_ppl"), "paper"),
                            ((f"{split}_rel_diff",), "rel. diff")):
            col = _first(frame, *names)
            if col is not None:
                cols[col] = f"{split} {what}"
    return cols


def _rel_cols(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.endswith("rel_diff")]


def _listed(frame: pd.DataFrame, col: str, label: str) -> str:
    """The distinct values of a long text column (e.g. where the paper's numbers come from) as one
    sentence, instead of a column that repeats them."""
    if col not in frame.columns or frame[col].isna().all():
        return ""
    return f"{label}: " + "; ".join(B.escape(v) for v in dict.fromkeys(frame[col].dropna().astype(str))) + "."


# ------------------------------------------------------------------------------- Press & Wolf
PW_TRAIN_LEGEND = (
    "**train (running)** is the mean perplexity over the last epoch's batches, with dropout on and the "
    "weights moving: what the TF scripts print and what Table 6 reports. **train (clean)** is the train "
    "perplexity after training, without dropout: what the Lua BD scripts print and what Table 5's BD rows "
    "report. rel. diff = (ours − paper) / paper.")

# Why each kind of variant cell exists (one sentence per override key; the cell id names the values).
VARIANT_WHY = {
    "pr_form": "The paper's sentence read literally (0.15·‖P‖² on the summed cost, about 40 times the pull of "
               "the authors' code): it shows why the authors' code form is the reference.",
    "gate_bias": "Two uniformly initialised biases per gate (the Torch form) instead of the TF scripts' one zero "
                 "bias: the detail that decides whether PR learns.",
    "epochs": "Stopped early to save CPU: enough to see whether a setting learns, and to repeat on other seeds.",
    "schedule": "The later TF tutorial's learning-rate schedule (one epoch less at lr 1).",
    "pr_lambda": "Another PR weight λ.",
}


def _pw_runs(res: Results) -> dict[str, list[dict]]:
    """Per Press & Wolf cell id (overrides included), its runs' metrics.json, in seed order."""
    runs: dict[str, list[dict]] = {}
    for path in sorted(res.root.glob("press_wolf/*/seed*/metrics.json")):
        m = json.loads(path.read_text())
        runs.setdefault(path.parent.parent.name, []).append(m | {"_seed": path.parent.name.removeprefix("seed")})
    return runs


def _pw_variants(ctx: Context) -> str:
    """The cells run with overrides (ablations), one row each, with why the cell exists."""
    from replicate.press_wolf.cells import parse_cell

    rows = []
    for cell, runs in _pw_runs(ctx.results).items():
        base, over = parse_cell(cell)
        if not over:
            continue
        why = " ".join(dict.fromkeys(VARIANT_WHY.get(k, "") for k in over if k != "epochs" or len(over) == 1))
        rows.append({"cell": labels.cell(base),
                     "changed": "; ".join(f"{labels.column(k)} = {labels.value(str(v))}" for k, v in over.items()),
                     "seeds": ", ".join(r["_seed"] for r in runs),
                     "epochs": max(int(r.get("epochs_completed") or 0) for r in runs),
                     **{f"{k}_ppl": sum(float(r[f"{k}_ppl"]) for r in runs) / len(runs) for k in ("train", "valid", "test")},
                     "why": why.strip() or None})
    if not rows:
        return ""
    return B.join(["### Variants: cells run with changed settings",
                   B.table(pd.DataFrame(rows), {"cell": "cell", "changed": "changed from the cell's paper settings",
                                                "seeds": "seeds", "epochs": "epochs run", "train_ppl": "train (running)",
                                                "valid_ppl": "valid", "test_ppl": "test", "why": "why it exists"},
                           keep=("cell", "changed", "why", "seeds", "epochs"),
                           caption="Not rows of the paper: ablations of one setting each, read from their runs' "
                                   "metrics.json (mean over seeds). No published number exists for them.")])


def _pw_table(ctx: Context, key: str) -> str:
    frame = ctx.results.raw[key].copy()
    frame = frame[~frame["cell"].astype(str).str.contains("@")]  # variants: their own table
    frame.insert(0, "model", frame["row"].where(frame["row"].notna(), frame["cell"]))
    # the valid and test columns first: on a phone they are what shows without scrolling sideways
    cols = {"model": "model", **_ours_paper(frame), "train_ours": "train (running) ours",
            "train_paper": "train (running) paper", "train_clean_ours": "train (clean) ours",
            "params_m_ours": "params (M)", "n_seeds": "seeds", "valid_sd": "valid sd", "test_sd": "test sd",
            **{k: labels.column(k) for k in ("epochs", "schedule", "gate_bias", "pr_form", "pr_lambda")}}
    table = B.table(frame, cols, keep=("model",), partial=("pr_lambda", "pr_form"), percent=_rel_cols(frame),
                    caption=f"Our perplexities (mean over seeds; sd over a cell's seeds, — with one seed) beside "
                            f"Press & Wolf's. {PW_TRAIN_LEGEND}",
                    source=ctx.source(key))
    return B.join([table, _listed(frame, "source", "Paper numbers")])


def section_press_wolf(ctx: Context) -> str:
    res = ctx.results
    out: list[str] = [answer(ctx, "press_wolf"), _protocols(ctx, {"Table 6": "press_wolf_table6",
                                                                  "Table 5": "press_wolf_table5"})]
    for name, title in (("table6", "Table 6: small model, no dropout"), ("table5", "Table 5: large models")):
        key = f"press_wolf_{name}"
        out.append(f"### Press & Wolf {title}")
        out.append(_pw_table(ctx, key) if key in res.raw else _missing(f"Press & Wolf {title}"))
    out += [_pw_variants(ctx), _config_diff(ctx, "press_wolf"), "### Learning curves",
            _section_figures(ctx, "press_wolf", "Learning curves")]
    return B.join(out)


# ------------------------------------------------------------------------------- initial loss
IL_SETTING = {"token_dist": "tokens", "branches": "branches", "init": "init", "std": "σ", "head": "head",
              "reference_kind": "reference"}
IL_CONSTANT = {"n": "vocabulary n", "n_layers": "layers", "n_seeds": "seeds per point"}


def initial_loss_differences(summary: pd.DataFrame, tolerances: dict) -> pd.DataFrame:
    """One row per setting (tokens, branches, init, σ, head, reference), one column ``d=<d>`` per width
    holding measured − reference (nats, mean over seeds), and ``tol:d=<d>``, the tolerance of the claim the
    row tests at that point (nats; claims.tolerance_nats)."""
    keys = [c for c in IL_SETTING if c in summary.columns]
    rows = []
    for values, part in summary.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, values))
        row |= {c: part[c].iloc[0] for c in IL_CONSTANT if c in part.columns}
        for _, rec in part.iterrows():
            row[f"d={int(rec['d'])}"] = rec["loss_mean"] - rec["reference_loss"]
            row[f"tol:d={int(rec['d'])}"] = claims_mod.tolerance_nats(rec["reference_kind"], rec["reference_loss"],
                                                                      tolerances)
        rows.append(row)
    widths = [f"d={int(d)}" for d in sorted(summary["d"].unique())]
    constant = [c for c in IL_CONSTANT if c in summary.columns]
    return pd.DataFrame(rows, columns=keys + constant + widths + [f"tol:{w}" for w in widths])


def _flag_past(frame: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Cells past the row's tolerance as bold text (render.py shades a cell that is bold throughout)."""
    out = frame.copy().astype({c: object for c in cols})
    for i, row in frame.iterrows():
        for c in cols:
            x = row[c]
            if pd.notna(x):
                text = f"{x:+.2f}" if abs(x) >= 0.005 else "0.00"
                out.at[i, c] = f"**{text}**" if abs(x) > row[f"tol:{c}"] else text
    return out


def _initial_loss_table(ctx: Context, summary: pd.DataFrame) -> str:
    tol = {**claims_mod.DEFAULT_TOLERANCES, **(ctx.tolerances or {})}
    frame = initial_loss_differences(summary, tol)
    widths = [c for c in frame.columns if c.startswith("d=")]
    shown = _flag_past(frame, widths)
    caption = ("Initial loss minus its reference, in nats, per setting (rows) and width d (columns); measured = mean "
               "over seeds. References: closed form = log(exp(dσ) + n − 1), rescaled closed form = "
               "log(exp(σ√d) + n − 1), log n. **Bold, shaded**: beyond the tolerance of the claim the row tests "
               f"({tol['theory_rel']:.0%} of the closed form, {tol['rescale_nats']:g} nats from the rescaled one, "
               f"{tol['above_log_n_rel']:.0%} of log n above it). The measured and reference values themselves, their sd and "
               "the refined theory are in the full table.")
    return B.table(shown, (IL_SETTING | IL_CONSTANT) | {c: c for c in widths},
                   keep=("head", "reference_kind", *widths), markdown=widths, caption=caption,
                   source=ctx.source("initial_loss_summary"))


def _theory_table(ctx: Context, t: pd.DataFrame) -> str:
    """The closed form log(exp(dσ) + n − 1) as one row per init scale and one column per width (no training);
    what every cell shares (n, log n, the rescaled closed form's range) is said once in the caption."""
    pivot = t.pivot_table(index="std", columns="d", values="theory_loss", sort=False)
    shown = pd.DataFrame({"init scale σ": [labels.value(str(i)) for i in pivot.index],
                          **{f"d={int(d)}": pivot[d].to_numpy() for d in pivot.columns}})
    n = sorted(t["n"].unique())
    resc = t.get("theory_loss_rescaled", pd.Series(dtype=float)).dropna()
    rescaled = (f" With the d^−1/2 rescale the closed form lies between {resc.min():.4f} and {resc.max():.4f} in "
                "every cell." if len(resc) else "")
    return B.table(shown, keep=tuple(shown.columns), source=ctx.source("initial_loss_theory"),
                   caption=f"Closed-form initial loss log(exp(dσ) + n − 1) in nats (no training), n = "
                           f"{', '.join(f'{int(x):,}' for x in n)} (log n = {math.log(n[0]):.2f}).{rescaled} "
                           "exp(dσ) and exp(dσ)/n are in the full table.")


def section_initial_loss(ctx: Context) -> str:
    res = ctx.results
    out = [answer(ctx, "initial_loss"), _protocols(ctx, {"the sweep": "initial_loss_summary"}), "### Measured initial loss against the theory"]
    s = res.raw.get("initial_loss_summary")
    out.append(_missing("Initial-loss sweep") if s is None else _initial_loss_table(ctx, s))
    out.append("### The essay's table: the closed form per init scale and width")
    t = res.raw.get("initial_loss_theory")
    out.append(_missing("Theory table") if t is None else _theory_table(ctx, t))
    out.append("### Embedding share of parameters in public model families")
    f = res.raw.get("model_families")
    if f is None:
        out.append(_missing("Model-family table"))
    else:
        cols = {c: B.humanise(c) for c in ["family", "model", "vocab_size", "d_model", "n_layers", "tied",
                                           "total_params", "embedding_params", "embedding_share"]}
        cols |= {"pp_tied_grad_mib_bf16": "PP tied-grad (MiB)", "source": "source"}
        out.append(B.table(f, cols, keep=("model",), share=("embedding_share",), source=ctx.source("model_families"),
                           caption="Parameters from the public configs (source per row); embedding parameters n·d "
                                   "tied, 2·n·d untied; PP tied-grad: the bf16 gradient of the tied matrix exchanged "
                                   "per step under pipeline parallelism."))
    out += [_config_diff(ctx, "initial_loss"), "### Figures",
            _section_figures(ctx, "initial_loss", "Initial-loss figures")]
    return B.join(out)


# --------------------------------------------------------------------------------------- Inan
SOFT_LEGEND = (" y~: the soft target of the +AL / +REAL rows at the end of training, over the valid split's targets "
               "(entropy over log |V|: 1 = uniform).")


def _inan_table1(ctx: Context) -> str:
    t = ctx.results.raw["inan_table1"]
    soft = ("soft_entropy_ratio", "soft_target_mass")
    cols = {"dataset": "data set", "size": "size", "model": "model",
            **_ours_paper(t), "tau": "tau", "gamma": "gamma", "alpha": "alpha",
            **{k: labels.column(k) for k in soft},
            "n_seeds": "seeds", "valid_sd": "valid sd", "test_sd": "test sd", "epochs": "epochs", "dropout_rate": "dropout", "embedding_dropout": "embedding dropout",
            "hours": "hours (train + valid)", "protocol": "protocol"}
    table = B.table(t, cols, keep=("model",), partial=("tau", "gamma", "alpha"), percent=_rel_cols(t),
                    digits={"soft_entropy_ratio": 4, "soft_target_mass": 5},
                    caption="Our perplexities beside Inan et al.'s; rel. diff = (ours − paper) / paper; — = no "
                            "number in the paper." + (SOFT_LEGEND if t.reindex(columns=soft).notna().any(axis=None)
                                                      else ""),
                    source=ctx.source("inan_table1"))
    return B.join([table,
                   _listed(t, _first(t, "paper_source", "source") or "paper_source", "Paper numbers")])


PER_RUN_PPL = ("The per-run train and valid perplexities in the CSV are left out: for any β > 0 the augmented term, "
               "scaled by τ²·|V|, dominates the loss, so next-word prediction is barely trained and its perplexity "
               "stays near the vocabulary size |V|; it says nothing about the subspace distance.")


def _inan_figure1(ctx: Context, key: str) -> str:
    f = ctx.results.raw[key]
    runs = key.endswith("_runs")
    cols = [c for c in f.columns if c not in ("paper_source", "metric") and not (runs and c.endswith("_ppl"))]
    metric = (", ".join(dict.fromkeys(f["metric"].dropna().astype(str))) if "metric" in f.columns
              else "normalised subspace distance from principal angles; 1 = orthogonal, 0 = same space")
    what = "one row per run (seed)" if runs else "mean over seeds per point"
    return B.join([B.table(f, cols, digits={c: 3 for c in f.columns if "distance" in c or c == "diff_vs_paper"},
                           caption=f"Figure 1 data, {what}. Metric: {metric}.", source=ctx.source(key)),
                   PER_RUN_PPL if runs and any(c.endswith("_ppl") for c in f.columns) else "",
                   _listed(f, "paper_source", "Paper numbers")])


# in the linked CSV only: detail, and the shape flags of an earlier rule (the column "paper's shape" replaces them)
READING_DETAIL = ("fall_0_to_1", "first_step_share", "distance_beta1", "tau_effect", "gradual_in_beta", "rapid_in_beta",
                  "lower_at_larger_tau")


def _inan_readings(ctx: Context) -> str:
    f = ctx.results.raw["inan_subspace_readings"].copy()
    f["shape"] = [claims_mod.reading_has_shape(row) for _, row in f.iterrows()]
    cols = {c: B.humanise(c) for c in f.columns if c not in READING_DETAIL and c != "shape"}
    cols["shape"] = "Figure 1's shape"
    return B.table(f, cols, keep=("reading", "shape"),
                   digits={c: 3 for c in f.columns if c.startswith(("beta", "tau", "paper_distance", "angle"))},
                   caption="The same points under each reading of the setup the paper leaves open: the distance "
                           f"per β (τ fixed) and per τ (β = 1). Figure 1's shape: a rapid decrease with β (the first "
                           f"β step carries at least {RAPID_FACTOR:g} times its linear share of the fall, which exceeds the "
                           "tolerance, and the distance never rises by more than it) and lower at larger τ, computed "
                           "from the columns shown (replicate/inan/shape.py).",
                   source=ctx.source("inan_subspace_readings"))


def section_inan(ctx: Context) -> str:
    res = ctx.results
    out = [answer(ctx, "inan"),
           _protocols(ctx, {"Table 1": "inan_table1", "the ablation": "inan_ablation", "the screen": "inan_screen",
                            "section 6.2": "inan_figure1", "its readings": "inan_subspace_readings"}),
           "### Table 1: AL, RE and REAL",
           _inan_table1(ctx) if "inan_table1" in res.raw else _missing("Inan et al. Table 1"),
           "### Choosing the augmented-loss settings: validation perplexity of the ablation"]
    ab = res.raw.get("inan_ablation")
    out.append(_missing("The augmented-loss ablation") if ab is None else
               B.table(ab, caption="Validation perplexity over the grid (best valid marks the lowest). The paper "
                                   "does not give these settings; this sweep is how the pipeline's choice is "
                                   "checked against data.", source=ctx.source("inan_ablation")))
    if "inan_screen" in res.raw:
        out += ["### Screening the schedule and the augmented loss's form on a short budget",
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
                                "objective. On a "
                                "short budget (the protocol above), these rank settings; they are not Table 1 "
                                "numbers.", source=ctx.source("inan_screen"))]
    out.append("### Section 6.2: subspace distance between input and output embeddings")
    fig1 = sorted(k for k in res.raw if k.startswith("inan_figure1"))
    out += [_inan_figure1(ctx, k) for k in fig1] or [_missing("Inan et al. Figure 1 data")]
    if "inan_subspace_readings" in res.raw:
        out.append(_inan_readings(ctx))
    out += [_config_diff(ctx, "inan"), "### Figures", _section_figures(ctx, "inan", "Inan et al. figures")]
    return B.join(out)


# -------------------------------------------------------------------------------- scale study
# (result, heading, caption, columns shown: None = all; the full file is linked under each table)
SCALE_TABLES = (
    ("scale_gain", "Tying gain at every point of the study", "Mean over seeds; gain = valid ppl untied − tied; "
     "sem = standard error of the mean over seeds.",
     ["study", "dataset", "pct", "train_tokens", "hidden", "dropout", "n_seeds", "untied_valid_ppl_mean", "tied_valid_ppl_mean",
      "gain_mean", "gain_sem", "rel_gain_mean", "tying_gain_pct", "tying_gain_pct_lo", "tying_gain_pct_hi", "runs_at_cap",
      "embedding_share_untied", "metric", "protocol"]),
    ("scale_data", "Tying gain against training data (per seed)", "Nested fractions of the PTB training split.",
     None),
    ("embedding_similarity", "How alike the tied, input and output embeddings are",
     "Spearman correlation of the pairwise cosine similarities over the most frequent words, and the "
     "nearest-neighbour overlap (final epoch) against its chance level.",
     ["comparison", "seed_a", "seed_b", "same_seed", "shared_init", "epoch", "top_k", "spearman", "knn_overlap",
      "knn_k", "knn_chance", "protocol"]),
    ("word_similarity", "Word-similarity benchmarks", "Human-judgement benchmarks (only when configured).", None),
    ("scale_transformer", "Small transformer on WikiText-2: untied vs tied vs tied + rescale",
     "Initial loss at step 0 against the sweep's theory and log n, final valid loss (chooses the lr) and test "
     "loss, gradient-norm statistics, spike counts.",
     ["variant", "std", "lr", "seed", "selected", "d_model", "n_layers", "vocab_size", "steps", "step0_loss",
      "theory_step0_loss", "spread_step0_loss", "log_n", "final_valid_loss", "final_test_loss", "grad_norm_median",
      "grad_norm_max", "clip_fraction", "loss_spikes", "grad_spikes", "protocol"]),
    ("scale_transformer_comparison", "Transformer variants, each at its own best learning rate",
     "Each variant at the lr its valid loss chose: mean test loss over seeds with its 95 % t interval, and the "
     "log ratio ln(untied / variant test ppl), paired by seed, with its 95 % t interval: below 0 the variant is "
     "worse than untied, above 0 better.", None),
)


def similarity_matrix(sim: pd.DataFrame) -> pd.DataFrame:
    """Mean Spearman correlation per pair of embedding matrices (comparison ``<a>_vs_<b>``), as a symmetric
    matrix with readable labels; the diagonal is the same kind of matrix across two seeds."""
    names = list(labels.MATRICES)
    means = sim.groupby("comparison")["spearman"].mean()
    found = {}
    for comp, value in means.items():
        a, _, b = str(comp).partition("_vs_")
        if a in labels.MATRICES and b in labels.MATRICES:
            found[(a, b)] = found[(b, a)] = float(value)
    present = [n for n in names if any(n in pair for pair in found)]
    rows = [{"matrix": labels.MATRICES[a], **{labels.MATRICES[b]: found.get((a, b)) for b in present}} for a in present]
    return pd.DataFrame(rows, columns=["matrix", *[labels.MATRICES[b] for b in present]])


def _similarity(ctx: Context, frame: pd.DataFrame) -> str:
    m = similarity_matrix(frame)
    seeds = ", ".join(f"{what} {B.cell(frame[k].iloc[0], k)[0]}" for k, what in (("top_k", "top"), ("epoch", "epoch"))
                      if k in frame.columns and frame[k].nunique() == 1)
    return B.table(m, keep=tuple(m.columns), digits={c: 2 for c in m.columns},
                   caption="Mean Spearman correlation of the pairwise cosine similarities over the most frequent words "
                           f"({seeds}), averaged over the seed pairs in the full table; diagonal: the same kind of "
                           "matrix in two seeds (— = not compared). Nearest-neighbour overlaps are in the full table.",
                   source=ctx.source("embedding_similarity"))


SHARES = ("embedding_share", "embedding_share_untied", "clip_fraction")
GAINS = ("rel_gain", "rel_gain_mean")


def section_scale(ctx: Context) -> str:
    res = ctx.results
    out: list[str] = [answer(ctx, "scale"), _protocols(ctx, {"the scale study": "scale_gain", "the embedding analysis": "embedding_similarity",
                                       "the transformer": "scale_transformer"})]
    for key, title, caption, columns in SCALE_TABLES:
        out.append(f"### {title}")
        frame = res.raw.get(key)
        if frame is None:
            out.append(_missing(title))
        elif key == "embedding_similarity":
            out.append(_similarity(ctx, frame))
        else:
            out.append(B.table(frame, columns, caption=caption, keep=("claim", "verdict"), source=ctx.source(key),
                               share=SHARES, percent=GAINS,
                               digits={c: 3 for c in frame.columns if any(w in c for w in ("spearman", "overlap", "loss"))}))
    out += [_config_diff(ctx, "scale"), "### Figures", _section_figures(ctx, "scale", "Scale-study figures")]
    return B.join(out)


def section_other_figures(ctx: Context) -> str:
    rest = [s for s in _figure_stems(ctx.figures_dir) if s not in ctx.used_figures]
    return B.join(_figures(ctx, rest)) or "None: every figure appears in its experiment's section."


BUILDERS: dict[str, Callable[[Context], str]] = {
    "summary": section_summary, "press_wolf": section_press_wolf, "inan": section_inan,
    "initial_loss": section_initial_loss, "scale": section_scale, "other_figures": section_other_figures,
    "compute": section_compute, "provenance": section_provenance,
}
