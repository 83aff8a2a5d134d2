"""Readable names for the result files' column names and coded values, in one place (docs/glossary.md
lists the same mapping). A name not listed reads with spaces for underscores."""

from __future__ import annotations

import re

COLUMNS = {
    "params_m_ours": "params (M)", "params_m_paper": "params (M), paper", "n_seeds": "seeds",
    "n_layers": "layers", "d_model": "width d", "vocab_size": "vocabulary", "total_params": "parameters",
    "embedding_params": "embedding parameters", "embedding_share": "embedding share",
    "embedding_share_untied": "embedding share (untied)", "pp_tied_grad_mib_bf16": "PP tied-grad (MiB)",
    "pct": "% of train", "train_tokens": "train tokens", "untied_valid_ppl_mean": "untied valid ppl",
    "tied_valid_ppl_mean": "tied valid ppl", "gain_mean": "gain (ppl)", "gain_sem": "gain s.e.",
    "rel_gain_mean": "relative gain", "rel_gain": "relative gain", "gain": "gain (ppl)",
    "untied_valid_ppl": "untied valid ppl", "tied_valid_ppl": "tied valid ppl",
    "untied_train_ppl": "untied train ppl", "tied_train_ppl": "tied train ppl",
    "step0_loss": "loss at step 0", "theory_step0_loss": "closed form at step 0",
    "spread_step0_loss": "closed form + logit spread", "log_n": "log n",
    "final_valid_loss": "final valid loss", "final_valid_ppl": "final valid ppl",
    "final_test_loss": "final test loss", "final_test_ppl": "final test ppl",
    "log_ratio_vs_untied": "ln(untied / variant test ppl), < 0: variant worse", "log_ratio_lo": "ln ratio 95 % low",
    "log_ratio_hi": "ln ratio 95 % high",
    "grad_norm_median": "grad norm median", "grad_norm_max": "grad norm max", "clip_fraction": "clipped steps",
    "loss_spikes": "loss spikes", "grad_spikes": "grad spikes", "valid_ppl": "valid ppl", "test_ppl": "test ppl",
    "train_ppl": "train ppl", "best_valid": "best valid", "soft_target_grad": "gradient into soft target",
    "prediction_bias": "bias in AL prediction", "gain_over_vd": "gain over VD", "decay_after": "decay after / every",
    "best_valid_ppl": "best valid", "best_gain_over_vd": "gain over VD at best",
    "target_norm": "word-vector norm in y~", "soft_entropy_ratio": "y~ entropy / log |V|",
    "soft_target_mass": "y~ target-word mass", "al_share": "AL share of loss", "baseline": "VD baseline",
    "hours": "hours (train + valid)",
    "claim_id": "id", "d_sigma": "d·σ", "exp_d_sigma": "exp(d·σ)", "log10_exp_d_sigma": "log10 exp(d·σ)",
    "exp_d_sigma_over_n": "exp(d·σ) / n", "theory_loss": "closed form", "theory_loss_rescaled": "rescaled closed form",
    "std": "σ", "sigma": "σ value", "knn_overlap": "kNN overlap",
    # Inan section 6.2
    "tau": "τ", "beta": "β", "distance_mean": "distance", "distance_std": "sd", "distance_min": "min",
    "distance_max": "max", "paper_distance_approx": "paper (approx.)", "diff_vs_paper": "ours − paper",
    "distance_at_init_mean": "distance at init", "angle_distance_mean": "principal-angle distance",
    "paper_distance_beta1_approx": "paper at β = 1 (approx.)", "rapid_in_beta": "rapid in β",
    "gradual_in_beta": "gradual in β", "lower_at_larger_tau": "lower at larger τ",
    "distance_beta1": "distance at β = 1", "angle_distance_beta1": "principal-angle distance at β = 1",
    "slice_start": "slice start", "embedding_norm": "unit norm on", "output_init": "W init",
    "pr_form": "PR form", "gate_bias": "gate bias", "pr_lambda": "PR weight λ",
}

VALUES = {
    # initial-loss init scales
    "log_n_over_d": "log n / d", "inv_sqrt_d": "1/√d",
    # initial-loss references
    "theory": "closed form", "theory_rescaled": "rescaled closed form", "log_n": "log n",
    # Press & Wolf PR penalty forms
    "authors_code": "authors' code", "squared": "squared",
    # scale study
    "best_valid": "best valid ppl over epochs", "tied_rescale": "tied + rescale",
    "tied_rescale_unit": "tied + rescale, unit embedding",
}

MATRICES = {  # embedding-similarity comparison parts
    "tied": "tied", "tied_pr": "tied + PR", "untied_input": "untied input", "untied_output": "untied output",
    "untied_pr_input": "untied + PR input", "untied_pr_output": "untied + PR output",
}


# settings (not measurements): shown in their shortest form, 0.5 not 0.50
SETTINGS = {"tau", "gamma", "alpha", "beta", "lr", "dropout_rate", "dropout", "sigma", "pr_lambda", "init_scale"}


def column(name: str) -> str:
    if name in COLUMNS:
        return COLUMNS[name]
    m = re.fullmatch(r"beta([\d.]+)", name) or re.fullmatch(r"tau([\d.]+)_beta1", name)
    if m:
        return f"β = {m.group(1)}" if name.startswith("beta") else f"τ = {m.group(1)}, β = 1"
    return name.replace("_", " ")


def value(text: str) -> str:
    return VALUES.get(text, text)


def cell(name: str) -> str:
    """A Press & Wolf cell id as the paper names the row: small_wt_pr -> small + WT + PR; its overrides in
    words (small_wt_pr@gate_bias=torch@epochs=2 -> small + WT + PR (gate bias torch, epochs 2))."""
    base, *overrides = name.split("@")
    first, *parts = base.split("_")
    words = ", ".join(column(k) + " " + value(v) for k, _, v in (o.partition("=") for o in overrides))
    return " + ".join([first, *(p.upper() for p in parts)]) + (f" ({words})" if words else "")
