"""The engine's math, written plainly: what an LSTM layer and the output layer compute.

These functions define the results. ``kernels`` computes the same things faster (fused autograd
functions, torch's own LSTM kernel), and tests prove every fast path equal to this module in float64,
values and gradients. So this module is part of the math version (a change here changes results and
refuses old checkpoints), while ``kernels`` is the kernel version (a change there does not).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def lstm_layer(x, h0, c0, w_ih, w_hh, bias, h_mask=None, in_mask=None):
    """One LSTM layer (nn.LSTM weight layout, gates i, f, g, o), one time step after another.

    x [T, B, I], state h0, c0 [B, H], ``bias`` [4H] added to the gate pre-activations.
    ``h_mask`` multiplies h_{t-1} at every step: [B, H] (one mask for all gates) or [B, 4, H] (one per
    gate, Gal's LSTM); ``in_mask`` [B, 4, I] gives every gate its own dropped copy of x.
    Returns (out [T, B, H] = h_1..h_T, c_T [B, H]).
    """
    H = w_hh.shape[1]
    w_ih4, w_hh4, b4 = w_ih.view(4, H, -1), w_hh.view(4, H, H), bias.view(4, H)
    if h_mask is not None and h_mask.dim() == 2:
        h_mask = h_mask.unsqueeze(1)
    h, c, outs = h0, c0, []
    for t in range(x.shape[0]):
        xs = x[t].unsqueeze(1).expand(-1, 4, -1)
        if in_mask is not None:
            xs = xs * in_mask
        hs = h.unsqueeze(1).expand(-1, 4, -1)
        if h_mask is not None:
            hs = hs * h_mask
        gates = torch.einsum("bki,kgi->bkg", xs, w_ih4) + torch.einsum("bkh,kgh->bkg", hs, w_hh4) + b4
        i, f, g, o = gates.unbind(1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs), c


def output_nll(h, weight, bias, targets):
    """Sum over rows of -log softmax(h @ weight.T + bias)[target]; h [N, H], targets [N]."""
    return F.cross_entropy(F.linear(h, weight, bias), targets, reduction="sum")
