"""Normalised subspace distance between column spaces, from principal angles (Björck & Golub 1973).

For A (n x p) and B (n x q) with orthonormal bases Qa, Qb of their column spaces, the cosines of
the k = min(rank A, rank B) principal angles are the singular values of Qa^T Qb. The distance used
here is the normalised projection (chordal) distance

    d(A, B) = sqrt(1 - (1/k) * sum_i cos^2(theta_i))  in [0, 1],

0 when one space contains the other (same space), 1 when they are orthogonal; it depends on the
spaces only, not on the bases (invariant to B -> B @ R for any invertible R). Inan et al. use
"normalised subspace distance" from principal angles with these end points; the exact formula
was not recovered, and this is the standard normalised one.

For section 6.2 the spaces are the column spaces of L^T and W, both |V| x d: in PyTorch, the
embedding weight E (|V| x d) and the output weight (|V| x d).
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


def principal_cosines(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosines of the principal angles between the column spaces of a and b (descending)."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"column spaces live in R^{a.shape[0]} and R^{b.shape[0]}: not comparable")
    qa, qb = orthonormal_basis(a), orthonormal_basis(b)
    return torch.linalg.svdvals(qa.t() @ qb).clamp(0.0, 1.0)


def subspace_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """Normalised subspace distance in [0, 1] (see module docstring)."""
    cos = principal_cosines(a, b)
    k = cos.numel()
    return float(torch.sqrt(torch.clamp(1.0 - (cos ** 2).sum() / k, min=0.0)))
