"""The essay's initial-loss and embedding-share claims, checked against the sweep and the model families."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from replicate.reportkit import labels
from replicate.reportkit.claims import Claim, Verdict, checked, not_run


DEFAULT_TOLERANCES = {
    # |measured - log(exp(d sigma) + n - 1)| / the closed form, tied zero-branch models (a fraction) ...
    "theory_rel": 0.05,
    # ... at widths d >= this (the closed form assumes ||w|| / sqrt(d) ~ sigma, loose at small d)
    "theory_min_width": 128,
    # |measured - log n| for tied + rescale, zero-branch models (nats)
    "rescale_nats": 0.1,
    # "slightly above log n": 0 < (loss - log n) / log n <= this, standard init (branches not zero)
    "above_log_n_rel": 0.1,
}
# which tolerance applies to an initial-loss point, by its reference (initial_loss_summary's reference_kind)
IL_TOLERANCE = {"theory": "theory_rel", "theory_rescaled": "rescale_nats", "log_n": "above_log_n_rel"}


def tolerance_nats(reference_kind: str, reference: float, tol: dict) -> float:
    """The tolerance of one initial-loss point in nats: a relative one times its reference value."""
    key = IL_TOLERANCE.get(reference_kind, "theory_rel")
    return tol[key] * reference if key.endswith("_rel") else tol[key]


def _il(r, **where) -> pd.DataFrame | None:
    """The sweep's points without a mixer that match ``where``, on uniform tokens where the sweep has them."""
    s = r.frames.get("initial_loss")
    if s is None:
        return None
    if (s["token_dist"] == "uniform").any():
        s = s[s["token_dist"] == "uniform"]
    for k, v in where.items():
        s = s[s[k] == v]
    s = s[s["mixer"].fillna("none") == "none"]
    return s if len(s) else None


def il_tied_follows_theory(r, tol) -> Verdict:
    s = _il(r, branches="zero", tied=True, rescale=False)
    if s is None:
        return not_run("no tied, zero-branch, unscaled points in the initial-loss sweep")
    s = s[s["d"] >= tol["theory_min_width"]]
    if s.empty:
        return not_run(f"no tied, zero-branch point at width d ≥ {tol['theory_min_width']} (the theory's regime)")
    rel = (s["loss_mean"] - s["reference_loss"]).abs() / s["reference_loss"]
    worst = s.loc[rel.idxmax()]
    ok = bool(rel.max() <= tol["theory_rel"])
    return checked(ok, f"largest miss {abs(worst['loss_mean'] - worst['reference_loss']):.3f} nats = {rel.max():.1%} "
                        f"of log(e^(dσ)+n−1) = {worst['reference_loss']:.2f} (d = {int(worst['d'])}, "
                        f"σ = {labels.value(str(worst['std']))}) over {len(s)} points with d ≥ {tol['theory_min_width']}; "
                        f"tolerance {tol['theory_rel']:.0%} of the closed form")


def il_rescale_gives_log_n(r, tol) -> Verdict:
    s = _il(r, branches="zero", tied=True, rescale=True)
    if s is None:
        return not_run("no tied + rescale, zero-branch points in the initial-loss sweep")
    diff = (s["loss_mean"] - np.log(s["n"].astype(float))).abs()
    ok = bool(diff.max() <= tol["rescale_nats"])
    return checked(ok, f"max |measured − log n| = {diff.max():.3f} nats over {len(s)} points "
                        f"(log n = {math.log(float(s['n'].iloc[0])):.2f}; tolerance {tol['rescale_nats']} nats)")


def il_standard_init_slightly_above_log_n(r, tol) -> Verdict:
    s = _il(r, branches="normal", rescale=False)
    if s is None:
        return not_run("no standard-init (non-zero branches) points in the initial-loss sweep")
    s = s[s["std"].astype(str) == "0.02"]
    if s.empty or set(s["tied"]) != {True, False}:
        return not_run("standard init (σ = 0.02) needs both tied and untied points")
    log_n = np.log(s["n"].astype(float))
    gap = (s["loss_mean"] - log_n) / log_n
    ok = bool((gap > 0).all() and (gap <= tol["above_log_n_rel"]).all())
    parts = [f"{'tied' if t else 'untied'}: log n + {g.min():.1%} to {g.max():.1%}" for t, g in gap.groupby(s["tied"])]
    return checked(ok, "; ".join(parts) + f" over {len(s)} points (σ = 0.02; 'slightly above' = above log n by "
                        f"at most {tol['above_log_n_rel']:.0%} of it)")


def scale_embedding_share_shrinks(r) -> Verdict:
    f = r.frames.get("families")
    if f is None or len(f) < 3:
        return not_run("model-family table not produced (needs at least 3 models)")
    rho = f["total_params"].astype(float).corr(f["embedding_share"].astype(float), method="spearman")
    small, big = f.loc[f["total_params"].idxmin()], f.loc[f["total_params"].idxmax()]
    return checked(rho < 0, f"Spearman ρ(total parameters, embedding share) = {rho:.2f} over {len(f)} models; "
                             f"{small['model']}: {small['embedding_share']:.1%}, "
                             f"{big['model']}: {big['embedding_share']:.1%}")


CLAIMS: list[Claim] = [
    Claim("il_theory", "With zero residual branches, the tied initial loss follows log(e^(dσ) + n − 1).",
          "Su 2023; the essay", "initial_loss", il_tied_follows_theory, tolerances=DEFAULT_TOLERANCES),
    Claim("il_rescale", "The d^−1/2 output rescale brings the tied initial loss to ≈ log n.",
          "T5 / Mesh-TensorFlow; Su 2023", "initial_loss", il_rescale_gives_log_n, tolerances=DEFAULT_TOLERANCES),
    Claim("il_standard", "With standard init (σ = 0.02 everywhere) tied and untied both start slightly "
          "above log n.", "the essay (Llama, 12 layers, n = 32k)", "initial_loss",
          il_standard_init_slightly_above_log_n, tolerances=DEFAULT_TOLERANCES),
    Claim("scale_share", "The embedding share of parameters shrinks as models grow.",
          "the essay; public model configs", "initial_loss", scale_embedding_share_shrinks),
]

RESTS_ON = {  # the runs each claim rests on: a pattern over the result paths that carry provenance
    r"/initial_loss/": ("il_theory", "il_rescale", "il_standard"), r"/model_families": ("scale_share",),
}
