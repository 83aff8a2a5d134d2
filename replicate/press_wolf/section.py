"""Press & Wolf 2017's report section: Tables 6 and 5 beside the paper's, the variant cells, the learning curves."""

from __future__ import annotations

import json

import pandas as pd

from replicate import paths as P
from replicate.reportkit import blocks as B
from replicate.reportkit import labels
from replicate.reportkit.sections import (Context, Paper, answer, config_diff, listed, missing, ours_paper,
                                          protocols_line, rel_cols, section_figures)
from replicate.reportkit.sources import Results, read_table

PAPER = Paper("Press & Wolf", "Press & Wolf 2017", arxiv="1608.05859", table="press_wolf_table6", table_name="Table 6",
              bar=0.03, headline=(("pw_small_tying", "Tying's gain, small model, valid ppl"),),
              baselines=("Zaremba et al. 2014", "1409.2329"),
              not_run=lambda res: "Table 5 (large models, the `paper` preset)"
              if res.frames.get("pw_table5") is None else "")
SPLITS = ("train", "valid", "test")
FIGURES = (["report_press_wolf_learning_curves"], ["press_wolf"])  # explicit stems, then prefixes
CAPTIONS = {  # the report draws this figure itself: no workflow/report/*.rst
    "report_press_wolf_learning_curves":
        "Learning curves: train perplexity (running, as the reference code reports it) and valid perplexity "
        "per epoch, tied vs untied output, with and without projection regularisation (log scale).",
}


def read(res: Results) -> None:
    """Tables 6 and 5 (for the claims also as ``pw_table6`` / ``pw_table5``: model, <split>_ppl,
    paper_<split>_ppl), and the speed benchmark."""
    for name, rel in P.PW_TABLES.items():
        frame = read_table(res, f"press_wolf_{name}", rel, ["cell", "row", "protocol", "train_ours", "valid_ours",
                                                            "test_ours", "train_paper", "valid_paper", "test_paper"])
        if frame is None:
            continue
        canon = frame.rename(columns={"cell": "model"} | {f"{s}_ours": f"{s}_ppl" for s in SPLITS}
                             | {f"{s}_paper": f"paper_{s}_ppl" for s in SPLITS})
        keep = ["model", *(f"{s}_ppl" for s in SPLITS), *(f"paper_{s}_ppl" for s in SPLITS), "protocol"]
        res.frames["pw_" + name] = canon[keep + (["n_seeds"] if "n_seeds" in canon.columns else [])]
    res.speed = read_table(res, "press_wolf_speed", P.PW_SPEED_TABLE,
                           ["cell", "clock", "threads", "idle", "ours_tok_s", "plain_tok_s", "ratio"])


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


def _pw_variants(ctx: Context) -> str:
    """The cells run with overrides (ablations), one row each (its runs' metrics.json), with why the cell exists."""
    from replicate.press_wolf.cells import parse_cell

    by_cell: dict[str, list[dict]] = {}  # cell id (overrides included) -> its runs, in seed order
    for path in sorted(ctx.results.root.glob("press_wolf/*/seed*/metrics.json")):
        by_cell.setdefault(path.parent.parent.name, []).append(
            json.loads(path.read_text()) | {"_seed": path.parent.name.removeprefix("seed")})
    rows = []
    for cell, runs in by_cell.items():
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
    cols = {"model": "model", **ours_paper(frame), "train_ours": "train (running) ours",
            "train_paper": "train (running) paper", "train_clean_ours": "train (clean) ours",
            "params_m_ours": "params (M)", "n_seeds": "seeds", "valid_sd": "valid sd", "test_sd": "test sd",
            **{k: labels.column(k) for k in ("epochs", "schedule", "gate_bias", "pr_form", "pr_lambda")}}
    table = B.table(frame, cols, keep=("model",), partial=("pr_lambda", "pr_form"), percent=rel_cols(frame),
                    caption=f"Our perplexities (mean over seeds; sd over a cell's seeds, — with one seed) beside "
                            f"Press & Wolf's. {PW_TRAIN_LEGEND}",
                    source=ctx.source(key))
    return B.join([table, listed(frame, "source", "Paper numbers")])


def section(ctx: Context) -> str:
    res = ctx.results
    out: list[str] = [answer(ctx, "press_wolf", PAPER), protocols_line(ctx, {"Table 6": "press_wolf_table6",
                                                                  "Table 5": "press_wolf_table5"})]
    for name, title in (("table6", "Table 6: small model, no dropout"), ("table5", "Table 5: large models")):
        key = f"press_wolf_{name}"
        out.append(f"### Press & Wolf {title}")
        out.append(_pw_table(ctx, key) if key in res.raw else missing(f"Press & Wolf {title}"))
    out += [_pw_variants(ctx), config_diff(ctx, "press_wolf"), "### Learning curves",
            section_figures(ctx, "Learning curves", *FIGURES, CAPTIONS)]
    return B.join(out)
