"""Is the augmented loss's soft target informative? Statistics of y~ = softmax(L^T u / tau) for a trained input
embedding: with small embeddings y~ is nearly uniform and the AL acts as a confidence penalty, not the
word-similarity target the paper describes. Per target word t: ``entropy_ratio`` H(y~) / log |V|, ``target_mass``
y~_t and ``top_mass`` (the k most probable words), averaged over a split's target tokens and over the vocabulary;
``loss_terms``: the AL term of a trained model's objective beside its cross-entropy."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from replicate import io as rio
from replicate.errors import ReplicateError
from replicate.inan.losses import target_embedding


@torch.no_grad()
def word_stats(embedding: torch.Tensor, tau: float, top_k: int = 10, chunk: int = 1024,
               target_norm: float | None = None) -> dict[str, torch.Tensor]:
    """Per vocabulary word t: entropy_ratio, target_mass, top_mass of y~ = softmax(E E[t] / tau) (E's rows
    at norm ``target_norm`` when given)."""
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    emb = target_embedding(embedding.detach().to(torch.float64), target_norm)
    vocab = emb.shape[0]
    if not 1 <= top_k <= vocab:
        raise ValueError(f"top_k must be in [1, {vocab}], got {top_k}")
    out = {"entropy_ratio": [], "target_mass": [], "top_mass": []}
    for start in range(0, vocab, chunk):
        rows = torch.arange(start, min(start + chunk, vocab))
        log_p = torch.log_softmax(emb[rows] @ emb.t() / tau, dim=-1)
        p = log_p.exp()
        out["entropy_ratio"].append(-(p * log_p).sum(-1) / math.log(vocab))
        out["target_mass"].append(p.gather(1, rows.unsqueeze(1)).squeeze(1))
        out["top_mass"].append(p.topk(top_k, dim=-1).values.sum(-1))
    return {k: torch.cat(v) for k, v in out.items()}


def summarise(embedding: torch.Tensor, tau: float, targets: torch.Tensor | None = None, top_k: int = 10,
              chunk: int = 1024, target_norm: float | None = None) -> dict[str, float]:
    """The statistics' means over the vocabulary (``vocab_*``) and over ``targets`` (``token_*``), the uniform
    distribution's values and the embedding's mean row norm."""
    stats = word_stats(embedding, tau, top_k, chunk, target_norm)
    vocab = embedding.shape[0]
    out: dict[str, float] = {"tau": float(tau), "target_norm": target_norm, "top_k": int(top_k),
                             "vocab_size": int(vocab),
                             "embedding_norm_mean": float(embedding.detach().to(torch.float64).norm(dim=1).mean())}
    weights = None
    if targets is not None:
        counts = torch.bincount(targets.reshape(-1).long(), minlength=vocab).to(torch.float64)
        weights = counts / counts.sum()
    for name, values in stats.items():
        out[f"vocab_{name}"] = float(values.mean())
        if weights is not None:
            out[f"token_{name}"] = float((values * weights).sum())
    out.update(uniform_entropy_ratio=1.0, uniform_target_mass=1.0 / vocab, uniform_top_mass=top_k / vocab)
    return out


@torch.no_grad()
def loss_terms(model, tokens: torch.Tensor, al) -> dict[str, float]:
    """Per-token cross-entropy, J_aug and alpha * J_aug of ``model`` (eval mode, one stream) on ``tokens``."""
    model.eval()
    inputs, targets = tokens[:-1].view(-1, 1), tokens[1:].reshape(-1)
    features, _ = model(inputs, model.init_hidden(1))
    features = features.reshape(-1, features.shape[-1])
    logits = model.logits(features)
    ce = float(torch.nn.functional.cross_entropy(logits, targets))
    alpha_j = float(al(logits, targets, features, model))
    return {"loss_tokens": int(targets.numel()), "ce": ce, "j_aug": alpha_j / al.alpha, "alpha": al.alpha,
            "alpha_j_aug": alpha_j, "al_share": alpha_j / (ce + alpha_j)}


def checkpoint_state(run: Path) -> dict:
    """A run's checkpoint.pt, its checksum verified."""
    ckpt = run / "checkpoint.pt"
    if not ckpt.is_file():
        raise ReplicateError(f"{run} has no checkpoint.pt", "pass the folder of a finished Table 1 / ablation run")
    if rio.checksum_status(ckpt) is False:
        raise ReplicateError(f"{ckpt} does not match its checksum in {rio.checksum_path(ckpt)} (its bytes changed "
                             "after it was written)", f"train the run again (delete {run} and rerun its target)")
    return torch.load(ckpt, map_location="cpu", weights_only=True)
