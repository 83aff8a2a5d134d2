"""The essay's scale-study and embedding-analysis claims, and the small transformer's."""

from __future__ import annotations

import math
from typing import Callable

import pandas as pd

from replicate.reportkit import effects as E
from replicate.reportkit import noise
from replicate.reportkit.claims import STATUSES, Claim, Verdict, checked, n_seeds, not_run, num, row_of
from replicate.reportkit.labels import NOT_RUN


def _study_claim(claim_id: str) -> Callable[..., Verdict]:
    """The scale study's own verdict on one claim (``scale_claims.csv``), its slope's interval as the effect."""
    def check(r) -> Verdict:
        c = r.frames.get("scale_claims")
        row = c[c["claim_id"] == claim_id] if c is not None else None
        if row is None or row.empty:
            return not_run(f"claim {claim_id} not in the scale study's claims table (scale_claims.csv)")
        row = row.iloc[0]
        status = row["verdict"] if row["verdict"] in STATUSES else NOT_RUN
        if not all(math.isfinite(float(row[k])) for k in ("value", "ci_low", "ci_high")):
            return Verdict(status, str(row["evidence"]))
        # the slope signed so that the claim's direction is positive; its allowance the interval's half-width,
        # so effects.judge reads the interval as the study does
        from replicate.scale.study import CLAIMS as STUDY_CLAIMS

        want_negative = next(c[4] for c in STUDY_CLAIMS if claim_id.split("_drop")[0] == c[0])
        sign = -1.0 if want_negative else 1.0
        effect = E.Effect(f"slope of ln(untied / tied ppl) vs {'log10 tokens, negated' if sign < 0 else 'share'}",
                          None, sign * float(row["value"]), unit="", seeds=(int(row["n"]),),
                          allowance=(float(row["ci_high"]) - float(row["ci_low"])) / 2,
                          noise="95 % t interval of the slope over seed pairs (n − 2 dof)", dof=int(row["n"]) - 2)
        return Verdict(status, str(row["evidence"]), [effect])
    return check


def _similarity_allowance(e: pd.DataFrame) -> tuple[float | None, str, str, int | None]:
    """The 95 % t half-width of the mean (to output − to input) difference, note, flag and dof (tied seeds − 1)."""
    if not {"seed_a", "seed_b"} <= set(e.columns):
        return None, "seed pairs not recorded", "", None
    wide = e.pivot_table(index=["seed_a", "seed_b"], columns="comparison", values="spearman")
    diff = (wide["tied_vs_untied_output"] - wide["tied_vs_untied_input"]).dropna()
    seeds = diff.index.get_level_values("seed_a").nunique()
    if seeds < 2:
        return None, "one seed of the tied model", "", None
    t = noise.t_factor(seeds - 1)
    return (t * float(diff.std(ddof=1)) / math.sqrt(seeds),
            f"95 % t interval over {len(diff)} seed pairs of {seeds} tied runs ({seeds - 1} dof, t = {t:.3g})",
            "one pair" if seeds == 2 else "", seeds - 1)


# the small transformer: each variant at the lr its valid loss chose, compared on test (scale.study)
TF_VARIANTS = {"untied": "untied", "tied": "tied", "tied_rescale": "tied + rescale (σ 0.02)",
               "tied_rescale_unit": "tied + rescale (unit embedding)"}


def tf_tying_lowers_test_ppl(r) -> Verdict:
    """ln(untied / tied test ppl) of the small transformer, paired by seed, with its 95 % t interval."""
    c = r.raw.get("scale_transformer_comparison")
    row, base = row_of(c, "variant", "tied"), row_of(c, "variant", "untied")
    ours, lo, hi = (num(row, k) for k in ("log_ratio_vs_untied", "log_ratio_lo", "log_ratio_hi"))
    if ours is None or base is None:
        return not_run("the transformer comparison has no tied row with its log ratio against untied")
    n = n_seeds(row)
    known = lo is not None and hi is not None and n >= 2
    effect = E.Effect("ln(untied / tied test ppl)", None, ours, "", (n,), (hi - lo) / 2 if known else None,
                      f"95 % t interval over {n} seed pairs ({n - 1} dof)" if known else "one seed pair",
                      flag="one pair" if n == 2 else "", dof=n - 1 if known else None)
    return checked(ours > 0, f"test ppl untied {num(base, 'final_test_ppl'):.1f} (lr {num(base, 'lr'):g}) "
                             f"vs tied {num(row, 'final_test_ppl'):.1f} (lr {num(row, 'lr'):g}); "
                             f"ln(untied / tied) = {ours:+.3f} (below 0: tied worse)", effect)


def _selected(r, col: str, what: str) -> tuple[pd.DataFrame, dict[str, pd.Series]] | Verdict:
    """The transformer runs at each variant's own lr (``selected``) and {variant: ``col`` by seed} of them, in the
    table's order; the not-run verdict without them, or without untied and a tied variant."""
    t = r.raw.get("scale_transformer")
    if t is None or "selected" not in t.columns or col not in t.columns:
        return not_run(f"the transformer table has no selected runs with their {what}")
    sel = t[t["selected"].astype(str).str.lower() == "true"]
    per = {v: g.set_index("seed")[col] for v, g in sel.groupby("variant", sort=False)}
    if "untied" not in per or len(per) < 2:
        return not_run("the transformer table has no untied and tied runs at their own lr")
    return sel, per


def _seeds(xs, fmt: str = "{:g}") -> str:
    return ", ".join(fmt.format(x) for x in xs)


def tf_no_added_loss_spikes(r) -> Verdict:
    """Each tied variant's runs at its own lr have no more loss spikes than untied's (a count: its own test)."""
    got = _selected(r, "loss_spikes", "loss spikes")
    if isinstance(got, Verdict):
        return got
    sel, spikes = got
    grads = _selected(r, "grad_spikes", "gradient-norm spikes")[1] if "grad_spikes" in sel else {}
    ok = all(k.sum() <= spikes["untied"].sum() for v, k in spikes.items() if v != "untied")
    per = "; ".join(f"{TF_VARIANTS.get(v, v)} {_seeds(k)}"
                    + (f" (gradient-norm spikes {_seeds(grads[v])})" if v in grads else "")
                    for v, k in spikes.items())
    return checked(ok, f"loss spikes per run at each variant's own lr: {per}")


# tying "leaves the start of training" when each seed's step-0 loss is within this of untied's (nats; the
# initial-loss sweep's tolerance for a start at log n)
START_NATS = 0.1
# tying "does not raise the gradient norms" when each seed's median norm is at most this far above untied's
GRAD_REL = 0.1


def tf_start_unchanged(r) -> Verdict:
    """Each tied variant at untied's σ starts within START_NATS of untied's step-0 loss, seed by seed (T5's unit
    embedding starts elsewhere by its init: listed, not tested)."""
    got = _selected(r, "step0_loss", "step-0 loss")
    if isinstance(got, Verdict):
        return got
    sel, per = got
    base = per.pop("untied")
    sigma = sel.groupby("variant")["embed_std"].first() if "embed_std" in sel.columns else None
    same = {v: x for v, x in per.items() if sigma is None or sigma[v] == sigma["untied"]}
    if not same:
        return not_run("no tied variant at the untied model's σ in the transformer table")
    gap = {v: x - base.reindex(x.index) for v, x in per.items()}
    ok = all(bool((gap[v].abs() <= START_NATS).all()) for v in same)
    other = [v for v in per if v not in same]
    log_n = f"; log n {num(sel.iloc[0], 'log_n'):.3f}" if "log_n" in sel.columns else ""
    return checked(ok, "step-0 loss minus untied's, per seed: "
                   + "; ".join(f"{TF_VARIANTS.get(v, v)} {_seeds(gap[v], '{:+.3f}')}" for v in same)
                   + f" (untied {_seeds(base, '{:.3f}')}{log_n}; tolerance {START_NATS:g} nats)"
                   + (f"; started at another σ by its init, not tested: "
                      + "; ".join(f"{TF_VARIANTS.get(v, v)} {_seeds(gap[v], '{:+.3f}')}" for v in other)
                      if other else ""))


def tf_grad_norms_not_raised(r) -> Verdict:
    """Each tied variant's median gradient norm at its own lr is at most GRAD_REL above untied's, seed by seed."""
    got = _selected(r, "grad_norm_median", "gradient norms")
    if isinstance(got, Verdict):
        return got
    per = got[1]
    base = per.pop("untied")
    ratio = {v: x / base.reindex(x.index) for v, x in per.items()}
    ok = all(bool((q <= 1 + GRAD_REL).all()) for q in ratio.values())
    return checked(ok, "median gradient norm over untied's, per seed, at each variant's own lr: "
                   + "; ".join(f"{TF_VARIANTS.get(v, v)} {_seeds(q, '{:.2f}')}" for v, q in ratio.items())
                   + f" (untied {_seeds(base, '{:.3f}')}; tolerance {GRAD_REL:.0%} above)")


def emb_tied_like_output(r) -> Verdict:
    e = r.frames.get("embedding_similarity")
    if e is None:
        return not_run("embedding-similarity analysis not produced")
    got = e.groupby("comparison")["spearman"].mean()
    need = ["tied_vs_untied_input", "tied_vs_untied_output"]
    if any(k not in got.index for k in need):
        return not_run("needs the tied-vs-untied-input and tied-vs-untied-output similarities")
    a, b = got["tied_vs_untied_input"], got["tied_vs_untied_output"]
    pairs = int((e["comparison"] == "tied_vs_untied_output").sum())
    allow, how, flag, dof = _similarity_allowance(e[e["comparison"].isin(need)])
    return checked(b > a, f"similarity of the tied embedding to the untied output embedding {b:.3f} vs "
                          f"to the untied input embedding {a:.3f} (mean over {pairs} seed pairs)",
                   E.Effect("Spearman ρ, to untied output − to untied input", None, b - a, "", (pairs,), allow, how,
                            flag=flag, dof=dof))


CLAIMS: list[Claim] = [
    Claim("emb_tied_output", "The tied embedding evolves like the untied output embedding, not the input one.",
          "Press & Wolf 2017, Section 4", "scale", emb_tied_like_output),
    Claim("scale_tf_tied", "In the small transformer, tying lowers test perplexity against untied (each at "
          "its own learning rate).", "the essay; small-model regime", "scale", tf_tying_lowers_test_ppl),
    Claim("scale_tf_spikes", "In the small transformer, tying (with or without the output rescale) adds no "
          "loss spikes at each variant's own learning rate.", "the essay; the stability question", "scale",
          tf_no_added_loss_spikes),
    Claim("scale_tf_start", "In the small transformer, tying with every matrix at the same σ (with or without the "
          "output rescale) leaves the start of training where untied starts.", "the essay; the stability question",
          "scale", tf_start_unchanged),
    Claim("scale_tf_grad", "In the small transformer, tying (with or without the output rescale) does not raise "
          "the gradient norms at each variant's own learning rate.", "the essay; the stability question", "scale",
          tf_grad_norms_not_raised),
    *(Claim(f"{cid}{level}", f"{text}{where}", "the essay", "scale", _study_claim(f"{cid}{level}"))
      for level, where in (("", ", without dropout."), ("_drop0.3", ", at Zaremba dropout 0.3."))
      for cid, text in (("scale_data_gain", "The tying gain shrinks as the training data grows"),
                        ("scale_model_share", "The tying gain shrinks as the embedding share of parameters falls "
                                              "(larger hidden size, same data)"))),
]

RESTS_ON = {  # the runs each claim rests on: a pattern over the result paths that carry provenance
    r"/scale/runs/|/embedding_similarity|/scale_claims": ("emb_tied_output", "scale_data_gain", "scale_model_share",
                                                         "scale_data_gain_drop0.3", "scale_model_share_drop0.3"),
    r"/scale/transformer/|/scale_transformer": ("scale_tf_tied", "scale_tf_spikes", "scale_tf_start", "scale_tf_grad"),
}
