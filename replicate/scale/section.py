"""The scale study's report section: the tying gain, the embedding analysis, the small transformer."""

from __future__ import annotations

import json
import string

import pandas as pd

from replicate import paths as P
from replicate.reportkit import blocks as B
from replicate.reportkit import labels
from replicate.reportkit.sections import Context, answer, config_diff, missing, protocols_line, section_figures
from replicate.reportkit.sources import Results, read_table

ESSAY = "**The scale study** (the essay's claims; trained runs)"  # the brief's line on this section's claims
FIGURES = ([], ["scale"])  # explicit stems, then prefixes


def read(res: Results) -> None:
    """The tying-gain tables, the study's claims, the transformer's tables and the embedding analysis."""
    read_table(res, "scale_data", P.SCALE_DATA, ["train_tokens", "gain", "protocol"])
    read_table(res, "scale_gain", P.SCALE_GAIN, ["study", "hidden", "embedding_share_untied", "gain_mean", "protocol"])
    res.frames["scale_claims"] = read_table(res, "scale_claims", P.SCALE_CLAIMS, ["claim_id", "verdict", "value",
                                            "ci_low", "ci_high", "n", "evidence", "protocol"])
    for key, rel, cols in (("scale_transformer", P.SCALE_TRANSFORMER, ["variant", "seed", "protocol"]),
                           ("scale_transformer_comparison", P.SCALE_TRANSFORMER_COMPARISON, ["variant", "protocol"]),
                           ("word_similarity", P.SCALE_WORDSIM, ["benchmark", "status", "protocol"])):
        read_table(res, key, rel, cols)
    res.frames["embedding_similarity"] = read_table(res, "embedding_similarity", P.SCALE_SIMILARITY,
                                                    ["comparison", "spearman", "protocol"])
    read_table(res, "scale_runs", P.SCALE_RUNS, ["run", "train_tokens", "stop_reason", "max_epochs"])
    run_settings(res, "scale_eval_tokens", P.SCALE_METRICS, "settings", ["eval_max_tokens"])
    run_settings(res, "scale_transformer_specs", P.SCALE_TRANSFORMER_SUMMARY, "spec",
                 ["steps", "batch_size", "seq_len", "eval_tokens"])


def run_settings(res: Results, key: str, pattern: str, block: str, cols: list[str]) -> None:
    """``cols`` of the ``block`` of every run's JSON file (``pattern``, fields as wildcards) as ``res.raw[key]``."""
    wild = pattern.format(**{f: "*" for _, f, _, _ in string.Formatter().parse(pattern) if f})
    blocks = [json.loads(path.read_text()).get(block) or {} for path in sorted(res.root.glob(wild))]
    res.raw[key] = pd.DataFrame([{c: b.get(c) for c in cols} for b in blocks], columns=cols)


def _values(xs: pd.Series) -> str:
    """The distinct values of a settings column: '8,000' or '4,000 or 8,000'."""
    return " or ".join(f"{int(v):,}" for v in sorted(xs.dropna().unique()))


METRIC_WORDS = {"best_valid": "its best valid perplexity over epochs, on the same tokens that choose that epoch "
                              "and stop the run",
                "final_valid": "its valid perplexity at its last epoch, on the same tokens that stop the run"}


def regime(res: Results) -> str:
    """The regime of the study's numbers, read from its runs: tokens, perplexities, evaluation, runs at the cap."""
    runs, gain = res.raw.get("scale_runs"), res.raw.get("scale_gain")
    if runs is None or runs.empty:
        return ""
    tokens = runs["train_tokens"].astype(float)
    parts = [f"{len(runs)} LSTM runs on {B.cell(tokens.min(), 'train_tokens')[0]} to "
             f"{B.cell(tokens.max(), 'train_tokens')[0]} training tokens"]
    if gain is not None and {"untied_valid_ppl_mean", "tied_valid_ppl_mean"} <= set(gain.columns):
        ppl = gain[["untied_valid_ppl_mean", "tied_valid_ppl_mean"]].astype(float)
        parts[0] += f", at valid perplexities of {ppl.min().min():,.0f} to {ppl.max().max():,.0f} (means over seeds)"
    sizes = res.raw["scale_eval_tokens"]
    if len(sizes):
        firsts = _values(sizes["eval_max_tokens"])
        where = f"the first {firsts} tokens of the valid split" if firsts else "the whole valid split"
        metric = gain["metric"].iloc[0] if gain is not None and "metric" in gain.columns else None
        parts.append(f"Each run is evaluated on {where}" + (f"; the number compared is {METRIC_WORDS[metric]}"
                                                           if metric in METRIC_WORDS else ""))
    at_cap = int((runs["stop_reason"] == "cap").sum())
    caps = " or ".join(f"{int(c)}-epoch" for c in sorted(runs["max_epochs"].dropna().unique()))
    parts.append(f"{at_cap} of {len(runs)} runs stopped at the {caps or 'epoch'} cap, not by patience, so they "
                 f"may still have been improving")
    return "**Regime** (read from the runs): " + ". ".join(parts) + "."


def transformer_regime(res: Results) -> str:
    """The small transformer's regime, read from its runs: steps, tokens, evaluation, train above valid loss."""
    spec, runs = res.raw["scale_transformer_specs"], res.raw.get("scale_transformer")
    if spec.empty or spec.isna().any().any():
        return ""
    steps, batch, seq, ev = (_values(spec[c]) for c in ("steps", "batch_size", "seq_len", "eval_tokens"))
    parts = [f"{len(spec)} runs of {steps} steps of {batch} × {seq} tokens "
             f"({_values(spec['steps'] * spec['batch_size'] * spec['seq_len'])} training tokens a run); the lr is "
             f"chosen on the first {ev} tokens of the valid split and the variants are compared on the first {ev} of "
             f"the test split"]
    if runs is not None and {"selected", "final_train_loss", "final_valid_loss"} <= set(runs.columns):
        sel = runs[runs["selected"].astype(str).str.lower() == "true"]
        above = int((sel["final_train_loss"] > sel["final_valid_loss"]).sum())
        parts.append(f"{above} of {len(sel)} runs at their own lr end with a train loss above their valid loss (a run "
                     f"that over-fits ends below it)")
    return "**Regime** (read from the runs): " + ". ".join(parts) + "."


REGIMES = {"scale_gain": regime, "scale_transformer": transformer_regime}  # stated above the table they qualify


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
    """Mean Spearman correlation per pair of embedding matrices as a symmetric, labelled matrix."""
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


def section(ctx: Context) -> str:
    res = ctx.results
    out: list[str] = [answer(ctx, "scale"),
                      protocols_line(ctx, {"the scale study": "scale_gain", "the embedding analysis": "embedding_similarity",
                                           "the transformer": "scale_transformer"})]
    for key, title, caption, columns in SCALE_TABLES:
        out.append(f"### {title}")
        if key in REGIMES:
            out.append(REGIMES[key](res))
        frame = res.raw.get(key)
        if frame is None:
            out.append(missing(title))
        elif key == "embedding_similarity":
            out.append(_similarity(ctx, frame))
        else:
            out.append(B.table(frame, columns, caption=caption, source=ctx.source(key),
                               share=("embedding_share", "embedding_share_untied", "clip_fraction"),
                               percent=("rel_gain", "rel_gain_mean"),
                               digits={c: 3 for c in frame.columns if any(w in c for w in ("spearman", "overlap", "loss"))}))
    out += [config_diff(ctx, "scale"), "### Figures", section_figures(ctx, "Scale-study figures", *FIGURES)]
    return B.join(out)
