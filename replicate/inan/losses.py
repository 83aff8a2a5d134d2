"""Inan et al.'s augmented loss and the section 6.2 mixed loss.

Notation (paper): L is the INPUT embedding (d x |V|); in PyTorch the embedding weight is
E = L^T with shape (|V|, d). For a target word t, u = L y*_t = E[t]; the soft target is
y~ = softmax(L^T u / tau) = softmax(E @ E[t] / tau); the prediction at the same temperature is
y^ = softmax(logits / tau); J_aug = KL(y~ || y^) = sum_v y~_v (log y~_v - log y^_v).

Memory and time: every intermediate has at most the shape of the logits (N, |V|); the soft target
depends on the target word only, so E[t] @ E^T is formed once per distinct word (U <= N rows), and
the KL and its gradient are written out in a few passes over (N, |V|) (about 1.6x faster than the
per-token ``kl_div`` transcription on one CPU thread, ``inan bench-loss``; the tests compare the two;
``REPLICATE_KERNELS=reference`` runs the transcription instead, as the engine's reference kernels). An optional
``chunk`` processes the N rows in slices for callers that want a smaller peak.

Gradient: d J_aug / d logits = (y^ - y~) / tau per token (tested). With
``soft_target_grad=False`` (default) the soft target is a constant (stop-gradient), so the
embedding receives gradient from the AL only through the model's use of it (input and, with RE,
the output layer). ``soft_target_grad=True`` also back-propagates through y~ into E[t] and E; the
paper does not say which one it used.

``target_norm`` (None = the paper's y~): every word vector (a row of E = L^T, a column of the paper's
d x |V| L) is rescaled to norm ``target_norm`` inside the soft target only, y~ = softmax(r^2 cos(E[t], E[v])
/ tau); the model's embedding is not changed. It makes y~ depend on the directions of the word vectors
alone, with a sharpness r^2 / tau set by the config instead of by the norms training happens to reach.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from replicate.lstm import kernels

REDUCTIONS = ("mean", "sum", "none")


def target_embedding(embedding: torch.Tensor, target_norm: float | None = None) -> torch.Tensor:
    """The word vectors the soft target is formed from: E itself, or every row of E rescaled to norm
    ``target_norm`` (a new tensor; a zero row stays zero)."""
    if target_norm is None:
        return embedding
    if target_norm <= 0:
        raise ValueError(f"target_norm must be > 0 or None, got {target_norm}")
    return F.normalize(embedding, dim=-1) * float(target_norm)


def soft_targets_log(embedding: torch.Tensor, targets: torch.Tensor, tau: float,
                     soft_target_grad: bool = False, target_norm: float | None = None) -> torch.Tensor:
    """log y~ for each target: log_softmax(E[t] @ E^T / tau), shape (N, |V|); E's rows at norm
    ``target_norm`` when given."""
    emb = target_embedding(embedding if soft_target_grad else embedding.detach(), target_norm)
    u = emb.index_select(0, targets)  # (N, d)
    return F.log_softmax(u @ emb.t() / tau, dim=-1)


class _KLToSoftTargets(torch.autograd.Function):
    """Per-token KL(y~[idx] || softmax(z / tau)) from the soft targets of the distinct target words.

    The same quantity as ``kl_div(log_softmax(z / tau), log_soft[idx], log_target=True).sum(-1)``, in
    fewer passes over the (N, |V|) arrays: KL = sum y~ log y~ (one number per distinct word) - y~ . log y^,
    and the gradient is written out, (y^ - y~) / tau for z and y~ (log y~ - log y^ + 1) for log y~
    (autograd's log_softmax backward then projects the latter onto the simplex)."""

    @staticmethod
    def forward(ctx, z, log_soft, idx, tau):
        log_pred = F.log_softmax(z / tau, dim=-1)  # (N, |V|)
        soft = log_soft.exp()  # (U, |V|)
        neg_entropy = (soft * log_soft).sum(-1)  # (U,)
        soft_n = soft.index_select(0, idx)  # (N, |V|), kept for the backward
        per_token = neg_entropy.index_select(0, idx) - torch.linalg.vecdot(soft_n, log_pred)
        ctx.save_for_backward(log_pred, log_soft, soft_n, idx)
        ctx.tau = tau
        return per_token

    @staticmethod
    def backward(ctx, grad):
        log_pred, log_soft, soft_n, idx = ctx.saved_tensors
        grad_z = grad_log_soft = None
        if ctx.needs_input_grad[1]:
            per_word = (log_soft.index_select(0, idx) - log_pred).add_(1.0).mul_(soft_n).mul_(grad.unsqueeze(-1))
            grad_log_soft = torch.zeros_like(log_soft).index_add_(0, idx, per_word)
        if ctx.needs_input_grad[0]:
            grad_z = log_pred.exp().sub_(soft_n).mul_((grad / ctx.tau).unsqueeze(-1))
        return grad_z, grad_log_soft, None, None


def augmented_loss(logits: torch.Tensor, targets: torch.Tensor, embedding: torch.Tensor, tau: float,
                   soft_target_grad: bool = False, reduction: str = "mean",
                   chunk: int | None = None, target_norm: float | None = None) -> torch.Tensor:
    """J_aug = KL(y~ || y^) per token, reduced like cross-entropy ('mean' over tokens by default).

    logits: (..., |V|); targets: (...) int64; embedding: the input embedding weight E (|V|, d).
    The soft target depends on the target word only, so it is computed once per distinct word of a
    chunk (a PTB train batch of 700 targets has 314-397 distinct words); the result equals the per-token
    transcription ``kl_div(log_softmax(z / tau), soft_targets_log(E, t, tau))`` up to rounding (tested).
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    if kernels.backend() == "reference":  # REPLICATE_KERNELS=reference: the per-token transcription
        per_token = augmented_loss_transcription(logits, targets, embedding, tau, soft_target_grad, target_norm)
        return {"none": per_token, "sum": per_token.sum(), "mean": per_token.mean()}[reduction]
    vocab = logits.shape[-1]
    if embedding.shape[0] != vocab:
        raise ValueError(f"embedding has {embedding.shape[0]} rows but logits have {vocab} classes")
    lead = logits.shape[:-1]
    flat_logits = logits.reshape(-1, vocab)
    flat_targets = targets.reshape(-1)
    n = flat_logits.shape[0]
    step = n if not chunk else int(chunk)
    emb = target_embedding(embedding if soft_target_grad else embedding.detach(), target_norm)  # once per call
    parts = []
    for start in range(0, n, max(step, 1)):
        words, idx = torch.unique(flat_targets[start:start + step], return_inverse=True)
        log_soft = soft_targets_log(emb, words, tau, soft_target_grad)  # (U, |V|)
        parts.append(_KLToSoftTargets.apply(flat_logits[start:start + step], log_soft, idx, float(tau)))
    per_token = torch.cat(parts) if len(parts) > 1 else parts[0]
    if reduction == "none":
        return per_token.reshape(lead)
    if reduction == "sum":
        return per_token.sum()
    return per_token.mean()


def augmented_loss_transcription(logits: torch.Tensor, targets: torch.Tensor, embedding: torch.Tensor,
                                 tau: float, soft_target_grad: bool = False,
                                 target_norm: float | None = None) -> torch.Tensor:
    """The per-token J_aug as the formula reads (y~ formed for every token, autograd for the gradient):
    the reference ``augmented_loss`` is tested and benchmarked against. Shape ``logits.shape[:-1]``."""
    log_pred = F.log_softmax(logits / tau, dim=-1)
    log_soft = soft_targets_log(embedding, targets.reshape(-1), tau, soft_target_grad,
                                target_norm).reshape(log_pred.shape)
    return F.kl_div(log_pred, log_soft, reduction="none", log_target=True).sum(-1)


def inan_total_loss(ce: torch.Tensor, j_aug: torch.Tensor, alpha: float) -> torch.Tensor:
    """Table 1 training loss: J = CE + alpha * J_aug (both with the same reduction)."""
    return ce + alpha * j_aug


def subspace_experiment_loss(ce: torch.Tensor, j_aug: torch.Tensor, beta: float, tau: float,
                             vocab_size: int) -> torch.Tensor:
    """Section 6.2 loss: beta * J_aug * tau^2 * |V| + (1 - beta) * CE.

    At beta = 0 this is exactly CE (the J_aug term is dropped, not multiplied by zero, so a
    non-finite J_aug cannot leak NaN into a pure-CE run)."""
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    if beta == 0.0:
        return ce
    return beta * j_aug * (tau ** 2) * vocab_size + (1.0 - beta) * ce
