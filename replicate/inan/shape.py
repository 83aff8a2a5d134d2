"""The shape of Figure 1 as numbers, on our measurements: does the distance decrease rapidly with beta (1a), and
is it lower at larger tau (1b)? A change below SHAPE_TOLERANCE is within one point's seed spread."""

from __future__ import annotations

SHAPE_TOLERANCE = 0.01
# "rapid": the first beta interval carries at least this multiple of its linear share of the whole fall
# (with betas 0, 0.25, ..., 1: at least 37.5 % of the fall between beta 0 and 0.25)
RAPID_FACTOR = 1.5


def beta_shape(curve: list[tuple[float, float]]) -> dict:
    """(beta, distance) points -> the fall over the betas, the first interval's share of it, and ``rapid``: the
    fall exceeds the tolerance, the first interval carries RAPID_FACTOR x its linear share, no rise beyond it."""
    pts = sorted(curve)
    if len(pts) < 3:
        raise ValueError("the beta curve needs at least three points")
    (b0, d0), (b1, d1), (bn, dn) = pts[0], pts[1], pts[-1]
    fall = d0 - dn
    share = (d0 - d1) / fall if fall > SHAPE_TOLERANCE else float("nan")
    rise = max(later - earlier for (_, earlier), (_, later) in zip(pts, pts[1:]))
    linear = (b1 - b0) / (bn - b0)
    rapid = fall > SHAPE_TOLERANCE and share >= RAPID_FACTOR * linear and rise <= SHAPE_TOLERANCE
    return {"fall": fall, "first_step_share": share, "rapid": bool(rapid), "end": dn}


def tau_effect(curve: list[tuple[float, float]]) -> dict:
    """(tau, distance) points -> distance at the largest tau minus at the smallest, and whether it is lower."""
    pts = sorted(curve)
    if len(pts) < 2:
        raise ValueError("the tau curve needs at least two points")
    effect = pts[-1][1] - pts[0][1]
    return {"effect": effect, "lower_at_larger_tau": bool(effect < -SHAPE_TOLERANCE)}
