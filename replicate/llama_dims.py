"""The Llama-style decoder's widths, without torch: what planning (resource estimates) needs to size a
model without importing the model (``replicate.llama`` re-exports these)."""

from __future__ import annotations

import math


def mlp_hidden(d: int) -> int:
    """Llama's SwiGLU width: 8d/3 rounded up to a multiple of min(256, d) (d=4096 -> 11008)."""
    multiple = min(256, d)
    return multiple * math.ceil(int(8 * d / 3) / multiple)
