"""The initial-loss report section: the sweep against its references, the closed form, the model families."""

from __future__ import annotations

import json
import math

import pandas as pd

from replicate import paths as P
from replicate.initial_loss.claims import DEFAULT_TOLERANCES, tolerance_nats
from replicate.reportkit import blocks as B
from replicate.reportkit import labels
from replicate.reportkit.sections import Context, answer, config_diff, missing, protocols_line, section_figures
from replicate.reportkit.sources import Results, read_table, relative

ESSAY = ("**Initial loss and embedding share** (the essay's claims; closed-form and configuration checks, "
         "no training)")  # the brief's line on this section's claims
FIGURES = (["initial_loss_vs_width", "initial_loss_standard_init", "embedding_share"],  # explicit stems,
           ["initial_loss"])  # then prefixes


def read(res: Results) -> None:
    """The sweep's summary (also as ``initial_loss``, booleans parsed), the closed form, families, memory."""
    frame = read_table(res, "initial_loss_summary", P.IL_SUMMARY,
                       ["token_dist", "branches", "init", "std", "head", "tied", "rescale", "mixer", "d", "n",
                        "loss_mean", "reference_kind", "reference_loss", "diff", "rel_diff", "protocol"],
                       dtype={"std": str})
    if frame is not None:
        for col in ("tied", "rescale"):
            frame[col] = frame[col].astype(str).str.lower().map({"true": True, "false": False})
        res.frames["initial_loss"] = frame
    read_table(res, "initial_loss_theory", P.IL_THEORY, [])
    res.frames["families"] = read_table(res, "model_families", P.IL_FAMILIES, ["model", "vocab_size", "d_model",
                                        "n_layers", "tied", "total_params", "embedding_share", "source"])
    if (res.root / P.IL_MEMORY).is_file():
        res.throughput.append({"path": relative(res.root, res.root / P.IL_MEMORY),
                               "data": json.loads((res.root / P.IL_MEMORY).read_text())})


IL_SETTING = {"token_dist": "tokens", "branches": "branches", "init": "init", "std": "σ", "head": "head",
              "reference_kind": "reference"}
IL_CONSTANT = {"n": "vocabulary n", "n_layers": "layers", "n_seeds": "seeds per point"}


def initial_loss_differences(summary: pd.DataFrame, tolerances: dict) -> pd.DataFrame:
    """One row per setting, per width ``d=<d>``: measured − reference (nats, mean over seeds) and ``tol:d=<d>``,
    the tolerance of the claim the row tests there."""
    keys = [c for c in IL_SETTING if c in summary.columns]
    rows = []
    for values, part in summary.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, values))
        row |= {c: part[c].iloc[0] for c in IL_CONSTANT if c in part.columns}
        for _, rec in part.iterrows():
            row[f"d={int(rec['d'])}"] = rec["loss_mean"] - rec["reference_loss"]
            row[f"tol:d={int(rec['d'])}"] = tolerance_nats(rec["reference_kind"], rec["reference_loss"],
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
    tol = {**DEFAULT_TOLERANCES, **(ctx.tolerances or {})}
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
    """The closed form log(exp(dσ) + n − 1), one row per init scale, one column per width."""
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


def section(ctx: Context) -> str:
    res = ctx.results
    out = [answer(ctx, "initial_loss"), protocols_line(ctx, {"the sweep": "initial_loss_summary"}),
           "### Measured initial loss against the theory"]
    s = res.raw.get("initial_loss_summary")
    out.append(missing("Initial-loss sweep") if s is None else _initial_loss_table(ctx, s))
    out.append("### The essay's table: the closed form per init scale and width")
    t = res.raw.get("initial_loss_theory")
    out.append(missing("Theory table") if t is None else _theory_table(ctx, t))
    out.append("### Embedding share of parameters in public model families")
    f = res.raw.get("model_families")
    if f is None:
        out.append(missing("Model-family table"))
    else:
        cols = {c: labels.column(c) for c in ["family", "model", "vocab_size", "d_model", "n_layers", "tied",
                                           "total_params", "embedding_params", "embedding_share"]}
        cols |= {"pp_tied_grad_mib_bf16": "PP tied-grad (MiB)", "source": "source"}
        out.append(B.table(f, cols, keep=("model",), share=("embedding_share",), source=ctx.source("model_families"),
                           caption="Parameters from the public configs (source per row); embedding parameters n·d "
                                   "tied, 2·n·d untied; PP tied-grad: the bf16 gradient of the tied matrix exchanged "
                                   "per step under pipeline parallelism."))
    out += [config_diff(ctx, "initial_loss"), "### Figures",
            section_figures(ctx, "Initial-loss figures", *FIGURES)]
    return B.join(out)
