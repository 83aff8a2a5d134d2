"""Closed-form initial loss of a tied model whose residual branches start at zero.

Every block is an identity, so the final RMSNorm sees the embedding w_i of the input token and
returns w_i / rms(w_i) ~ w_i / sigma. With a tied output the logit of token i itself is then
w_i . w_i / sigma ~ d * sigma, while the other logits are ~ 0, so

    loss ~ log(exp(d * sigma) + n - 1)                       (no rescale)
    loss ~ log(exp(sigma * sqrt(d)) + n - 1)                 (hidden state times d^-1/2)

which is far above log n whenever exp(d * sigma) >> n. ``essay_table`` reproduces the essay's
comparison of exp(d * sigma) with n at common widths.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from replicate.llama import resolve_std


def self_logit(d, sigma, rescale: bool = False, eps: float = 0.0):
    """Expected logit of the input token itself: d*sigma, or sigma*sqrt(d) with the rescale.

    With ``eps`` > 0 the RMSNorm divides by sqrt(sigma^2 + eps) instead of sigma, which matters
    when sigma^2 is not >> eps (e.g. sigma = (log n)/d at large d with eps = 1e-6)."""
    d = np.asarray(d, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    gain = 1.0 if eps == 0 else sigma / np.sqrt(sigma**2 + eps)
    return gain * sigma * (np.sqrt(d) if rescale else d)


def initial_loss(d, sigma, n: int, rescale: bool = False, eps: float = 0.0, spread: bool = False):
    """log(exp(self_logit) + n - 1), computed stably (no overflow at large d * sigma).

    The essay's formula is the default. ``eps`` adds the RMSNorm epsilon (see ``self_logit``);
    ``spread=True`` also counts the spread of the other n - 1 logits (each ~ N(0, v) with
    v = self_logit^2 / d, so E exp = exp(v / 2)): log(exp(s) + (n - 1) exp(v / 2))."""
    s = self_logit(d, sigma, rescale, eps)
    other = math.log(n - 1)
    if spread:
        other = other + s**2 / (2 * np.asarray(d, dtype=float))
    return np.logaddexp(s, other)


def essay_table(widths: list[int], stds: list, n: int) -> pd.DataFrame:
    """exp(d * sigma) against n for each width and std (number or name), with both theory losses."""
    rows = []
    for std in stds:
        for d in widths:
            sigma = resolve_std(std, d, n)
            ds = d * sigma
            rows.append({
                "std": str(std), "d": d, "sigma": sigma, "n": n, "d_sigma": ds,
                "exp_d_sigma": math.exp(ds), "log10_exp_d_sigma": ds / math.log(10),
                "exp_d_sigma_over_n": math.exp(ds - math.log(n)),
                "log_n": math.log(n),
                "theory_loss": float(initial_loss(d, sigma, n)),
                "theory_loss_rescaled": float(initial_loss(d, sigma, n, rescale=True)),
            })
    return pd.DataFrame(rows)
