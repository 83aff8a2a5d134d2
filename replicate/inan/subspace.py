"""How far the output matrix W lies from the column space of the input embedding L^T: two metrics.

Both compare A = L^T (|V| x d, in PyTorch the embedding weight E) with W (|V| x d, the output weight),
and both are 0 when W's columns lie in span(A) and 1 when they are orthogonal to it.

- ``residual_distance`` (the reported number): the relative residual norm of projecting W onto span(A),

      r(A, W) = ||W - P_A W||_F / ||W||_F,   P_A = Q_A Q_A^T,

  Inan et al.'s wording, "a common metric based on the relative residual norm from projection of one
  matrix onto another" (citing Björck & Golub 1973), read literally. It weights each direction of W by
  the energy W carries in it: if a fraction f of ||W||_F^2 lies off span(A), r = sqrt(f).
- ``angle_distance``: the normalised projection (chordal) distance from the k = min(rank A, rank W)
  principal angles, sqrt(1 - (1/k) sum_i cos^2 theta_i), where cos theta_i are the singular values of
  Q_A^T Q_W. Every direction of W's column space counts equally, however little energy W has in it; it
  depends on the two spaces only (invariant to W -> W R for any invertible R).

Bases come from a rank-revealing float64 SVD.
"""

from __future__ import annotations

import torch


def orthonormal_basis(mat: torch.Tensor, rtol: float = 1e-10) -> torch.Tensor:
    """Orthonormal basis of the column space of ``mat`` (float64 SVD, rank-revealing)."""
    m = mat.detach().to(torch.float64)
    u, s, _ = torch.linalg.svd(m, full_matrices=False)
    if s.numel() == 0 or s[0] == 0:
        raise ValueError("matrix has rank 0: its column space is empty")
    rank = int((s > rtol * s[0]).sum())
    return u[:, :rank]


def _check_rows(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"column spaces live in R^{a.shape[0]} and R^{b.shape[0]}: not comparable")


def principal_cosines(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosines of the principal angles between the column spaces of a and b (descending)."""
    _check_rows(a, b)
    qa, qb = orthonormal_basis(a), orthonormal_basis(b)
    return torch.linalg.svdvals(qa.t() @ qb).clamp(0.0, 1.0)


def angle_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """Normalised principal-angle distance in [0, 1] (see module docstring)."""
    cos = principal_cosines(a, b)
    k = cos.numel()
    return float(torch.sqrt(torch.clamp(1.0 - (cos ** 2).sum() / k, min=0.0)))


def residual_distance(a: torch.Tensor, w: torch.Tensor) -> float:
    """Relative residual ||W - P_A W||_F / ||W||_F of projecting W onto span(a), in [0, 1]."""
    _check_rows(a, w)
    w64 = w.detach().to(torch.float64)
    total = torch.linalg.norm(w64)
    if total == 0:
        raise ValueError("W is zero: its relative residual is undefined")
    q = orthonormal_basis(a)
    residual = w64 - q @ (q.t() @ w64)
    return float((torch.linalg.norm(residual) / total).clamp(0.0, 1.0))


METRICS = {
    "residual": "relative residual ||W - P_L W||_F / ||W||_F of projecting W onto span(L^T)",
    "angle": "normalised principal-angle distance sqrt(1 - mean cos^2) between span(L^T) and span(W)",
}
