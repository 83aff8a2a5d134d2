"""Fast paths for the engine's math (``reference``): the same results, computed faster.

The model calls ``lstm_layer`` and ``output_nll``; each picks the fastest path that computes exactly
the reference math for its inputs:
- no mask on the layer: torch's own LSTM kernel (oneDNN on CPU, cuDNN on GPU), with TF's single gate
  bias as ``b_ih`` and a zero ``b_hh`` that is not trained;
- one mask on the recurrent state (Inan's VD): ``lstm_sequence``, hand-written below;
- per-gate masks (Gal's BD cells): ``reference.lstm_layer`` (plain autograd);
- output layer: ``linear_nll``.
``REPLICATE_KERNELS=reference`` (or ``use("reference")``) runs the reference path everywhere.
Every fast path is proven equal to the reference in float64 (values and gradients) by
tests/test_lstm_kernels.py; this module is therefore the *kernel* version, not the math version:
editing it neither reruns finished jobs nor refuses a checkpoint.

- ``lstm_sequence``: one LSTM layer over a whole BPTT window (nn.LSTM weight layout and gate order
  i, f, g, o; optional per-sequence mask on the recurrent state). The input projection of all time
  steps is one matmul, the weight gradients are one matmul each after the backward time loop, and
  the per-step work is a handful of in-place ops, instead of ~20 autograd nodes per step.
- ``linear_nll``: output layer + log-softmax + NLL summed over tokens, without materialising
  log-probabilities twice; the backward reuses the softmax buffer (p - onehot).

"""

from __future__ import annotations

import contextlib
import os

import torch
from torch.autograd.function import once_differentiable

from replicate.errors import ReplicateError
from replicate.lstm import reference

BACKENDS = ("fast", "reference")
_backend = [os.environ.get("REPLICATE_KERNELS", "fast")]


def backend() -> str:
    """The kernel backend in use: ``fast`` (default) or ``reference`` (env REPLICATE_KERNELS)."""
    if _backend[0] not in BACKENDS:
        raise ReplicateError(f"REPLICATE_KERNELS={_backend[0]!r} is not a kernel backend",
                             f"set it to one of {', '.join(BACKENDS)} (or unset it for 'fast')")
    return _backend[0]


@contextlib.contextmanager
def use(name: str):
    """Run the enclosed code with kernel backend ``name`` (tests, benchmarks)."""
    old, _backend[0] = _backend[0], name
    try:
        backend()
        yield
    finally:
        _backend[0] = old

# Per-step recurrent matmuls below this many multiply-adds run on one thread: at that size a
# parallel region costs more than it saves, and on a loaded machine each thread barrier can wait a
# whole scheduler slice (measured: 2 threads 6x slower than 1 on the small model under load).
SERIAL_STEP_MACS = 8_000_000


@contextlib.contextmanager
def _step_threads(batch: int, hidden: int):
    """Run the time loop single-threaded when its per-step work is small (same math)."""
    threads = torch.get_num_threads()
    serial = threads > 1 and batch * hidden * 4 * hidden < SERIAL_STEP_MACS
    if serial:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if serial:
            torch.set_num_threads(threads)


def _forward_steps(gates, out, cs, tanh_c, h_in, h0, w_hh_t, h_mask):
    """The recurrence: gates[t] (input part precomputed) becomes the activations i, f, g, o in place."""
    H = out.shape[-1]
    h_prev = h0
    for t in range(gates.shape[0]):
        hp = h_in[t]
        if h_mask is None:
            hp.copy_(h_prev)
        else:
            torch.mul(h_prev, h_mask, out=hp)
        g = gates[t]
        g.addmm_(hp, w_hh_t)
        g[:, : 2 * H].sigmoid_()
        g[:, 2 * H: 3 * H].tanh_()
        g[:, 3 * H:].sigmoid_()
        c = cs[t + 1]
        torch.mul(g[:, H: 2 * H], cs[t], out=c)
        c.addcmul_(g[:, :H], g[:, 2 * H: 3 * H])
        torch.tanh(c, out=tanh_c[t])
        torch.mul(g[:, 3 * H:], tanh_c[t], out=out[t])
        h_prev = out[t]


def _backward_steps(d_gates, acts, local, dc_from_h, cs, tanh_c, d_out, dc, w_hh, h_mask):
    """Reverse time loop: fills d_gates (pre-activation gradients); returns (dh_0, dc_0)."""
    H = cs.shape[-1]
    dh = torch.zeros_like(dc)
    for t in range(acts.shape[0] - 1, -1, -1):
        a, dg = acts[t], d_gates[t]
        dh_t = dh if d_out is None else dh.add_(d_out[t])
        dc.addcmul_(dh_t, dc_from_h[t])
        torch.mul(dh_t, tanh_c[t], out=dg[:, 3 * H:])          # d o
        torch.mul(dc, a[:, 2 * H: 3 * H], out=dg[:, :H])       # d i
        torch.mul(dc, cs[t], out=dg[:, H: 2 * H])              # d f
        torch.mul(dc, a[:, :H], out=dg[:, 2 * H: 3 * H])       # d g
        dc.mul_(a[:, H: 2 * H])
        dg.mul_(local[t])
        dh = torch.mm(dg, w_hh)
        if h_mask is not None:
            dh.mul_(h_mask)
    return dh, dc


class _LSTMSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, bias, h_mask):
        T, B, _ = x.shape
        H = w_hh.shape[1]
        # gates[t] holds the pre-activations, then (in place) the activations i, f, g, o.
        gates = torch.addmm(bias, x.reshape(T * B, -1), w_ih.t()).view(T, B, 4 * H)
        out = x.new_empty(T, B, H)
        cs = x.new_empty(T + 1, B, H)
        tanh_c = x.new_empty(T, B, H)
        h_in = x.new_empty(T, B, H)  # recurrent input of each step (masked h_{t-1})
        cs[0] = c0
        with _step_threads(B, H):
            _forward_steps(gates, out, cs, tanh_c, h_in, h0, w_hh.t(), h_mask)
        ctx.save_for_backward(x, w_ih, w_hh, gates, cs, tanh_c, h_in, h_mask)
        return out, cs[T].clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out, d_cn):
        x, w_ih, w_hh, acts, cs, tanh_c, h_in, h_mask = ctx.saved_tensors
        T, B, H4 = acts.shape
        H = H4 // 4
        # Local derivatives of all steps at once: sigma' = s(1-s) for i, f, o; tanh' = 1-g^2 for g;
        # dh -> dc through h = o * tanh(c): o * (1 - tanh(c)^2).
        local = acts * (1 - acts)
        g_act = acts[..., 2 * H: 3 * H]
        torch.mul(g_act, g_act, out=local[..., 2 * H: 3 * H]).neg_().add_(1)
        dc_from_h = (1 - tanh_c * tanh_c).mul_(acts[..., 3 * H:])
        d_gates = torch.empty_like(acts)
        dc = d_cn.clone() if d_cn is not None else torch.zeros_like(cs[0])
        with _step_threads(B, H):
            dh, dc = _backward_steps(d_gates, acts, local, dc_from_h, cs, tanh_c, d_out, dc, w_hh, h_mask)
        flat = d_gates.view(T * B, H4)
        d_w_hh = flat.t().mm(h_in.view(T * B, H))
        d_w_ih = flat.t().mm(x.reshape(T * B, -1))
        d_b = flat.sum(0)
        d_x = flat.mm(w_ih).view(T, B, -1)
        return d_x, dh, dc, d_w_ih, d_w_hh, d_b, None


def lstm_sequence(x, h0, c0, w_ih, w_hh, bias, h_mask=None):
    """Run one LSTM layer over ``x`` [T, B, I] from state (h0, c0) [B, H]; ``bias`` [4H] is added to
    the gate pre-activations (the sum of nn.LSTM's two biases, or TF's single one).

    ``h_mask`` [B, H] (optional) multiplies the recurrent state h_{t-1} at every step (variational
    recurrent dropout; scaled masks). Returns (out [T, B, H] = h_1..h_T, c_T [B, H]).
    """
    return _LSTMSequence.apply(x, h0, c0, w_ih, w_hh, bias, h_mask)


class _LinearNLL(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, weight, bias, targets):
        logits = torch.addmm(bias, h, weight.t()) if bias is not None else h.mm(weight.t())
        target_logit = logits.gather(1, targets[:, None])
        top = logits.amax(1, keepdim=True)
        probs = logits.sub_(top).exp_()
        total = probs.sum(1, keepdim=True)
        nll = (total.log() + top - target_logit).sum()
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            probs.div_(total)
            ctx.save_for_backward(h, weight, targets, probs)
        ctx.has_bias = bias is not None
        return nll

    @staticmethod
    @once_differentiable
    def backward(ctx, d_nll):
        h, weight, targets, probs = ctx.saved_tensors
        grad = probs  # d nll / d logits = softmax - onehot (buffer reused: backward runs once)
        grad[torch.arange(grad.shape[0], device=grad.device), targets] -= 1
        grad.mul_(d_nll)
        d_h = grad.mm(weight) if ctx.needs_input_grad[0] else None
        d_w = grad.t().mm(h) if ctx.needs_input_grad[1] else None
        d_b = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return d_h, d_w, d_b, None


def linear_nll(h, weight, bias, targets):
    """Sum over rows of -log softmax(h @ weight.T + bias)[target]; h [N, H], targets [N]."""
    return _LinearNLL.apply(h, weight, bias, targets)


def _native_lstm(x, h0, c0, w_ih, w_hh, bias):
    """torch's LSTM kernel for one unmasked layer; ``bias`` goes in as b_ih, b_hh is a zero constant."""
    params = [w_ih, w_hh, bias, bias.detach().new_zeros(bias.shape)]
    out, _, c_n = torch.lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)), params, True, 1, 0.0,
                             torch.is_grad_enabled(), False, False)
    return out, c_n[0]


def lstm_layer(x, h0, c0, w_ih, w_hh, bias, h_mask=None, in_mask=None):
    """``reference.lstm_layer`` (same arguments and results) on the fastest path for these masks."""
    if backend() == "reference" or in_mask is not None or (h_mask is not None and h_mask.dim() == 3):
        return reference.lstm_layer(x, h0, c0, w_ih, w_hh, bias, h_mask, in_mask)
    if h_mask is None:
        return _native_lstm(x, h0, c0, w_ih, w_hh, bias)
    return lstm_sequence(x, h0, c0, w_ih, w_hh, bias, h_mask)


def output_nll(h, weight, bias, targets):
    """``reference.output_nll`` on the fused path (training) or the reference one (no gradient)."""
    if backend() == "reference" or not torch.is_grad_enabled():
        return reference.output_nll(h, weight, bias, targets)
    return linear_nll(h, weight, bias, targets)
