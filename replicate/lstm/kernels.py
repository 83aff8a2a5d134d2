"""Fast paths for the engine's math (``reference``): the same results, computed faster.

The model calls ``lstm_layer`` and ``output_nll``; each picks the fastest path that computes exactly
the reference math for its inputs:
- no mask on the layer: torch's own LSTM kernel (oneDNN on CPU, cuDNN on GPU), with TF's single gate
  bias as ``b_ih`` and a zero ``b_hh`` that is not trained;
- masks (one on the recurrent state: Inan's VD; one per gate on x and h_{t-1}: Gal's BD cells):
  ``lstm_sequence``, hand-written below;
- output layer: ``linear_nll``.
``REPLICATE_KERNELS=reference`` (or ``use("reference")``) runs the reference path everywhere.
Every fast path is proven equal to the reference in float64 (values and gradients) by
tests/test_lstm_kernels.py; this module is therefore the *kernel* version, not the math version:
editing it neither reruns finished jobs nor refuses a checkpoint.

- ``lstm_sequence``: one LSTM layer over a whole BPTT window (nn.LSTM weight layout and gate order
  i, f, g, o; optional masks: one per sequence on the recurrent state, or one per gate on x and
  h_{t-1}). The input projection of all time steps is one (batched) matmul, the weight gradients are one matmul each after the backward time loop, and
  the per-step work is a handful of in-place ops, instead of ~20 autograd nodes per step.
- ``output_loss``: output layer + log-softmax + NLL summed over tokens and, when asked, Inan's KL to a
  soft target (``linear_nll`` is its NLL-only form), without materialising log-probabilities; the
  backward writes the gradient into the softmax buffer (p - onehot, plus (y^ - y~) / tau). On a CPU
  its element-wise work is ``kernels.cpp`` (one pass per row and direction, compiled on first use with
  torch's extension builder); on a GPU the same passes are torch operations.

"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
from pathlib import Path

import torch
from torch.autograd.function import once_differentiable

from replicate.errors import ReplicateError
from replicate.lstm import reference

BACKENDS = ("fast", "reference")
CPU_SOURCE = Path(__file__).with_suffix(".cpp")  # the output layer's row passes on a CPU (``_Rows``)
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


class _SharedMask:
    """Recurrent input of one step with one mask for all gates (or none): h_in[t] = m * h_{t-1}."""

    def __init__(self, T, B, H, w_hh, h_mask, like):
        self.w_hh, self.w_hh_t, self.mask = w_hh, w_hh.t(), h_mask
        self.h_in = like.new_empty(T, B, H)

    def add(self, t, h_prev, g):
        hp = self.h_in[t]
        if self.mask is None:
            hp.copy_(h_prev)
        else:
            torch.mul(h_prev, self.mask, out=hp)
        g.addmm_(hp, self.w_hh_t)

    def d_h(self, dg):
        dh = torch.mm(dg, self.w_hh)
        return dh if self.mask is None else dh.mul_(self.mask)

    def d_w_hh(self, flat):
        return flat.t().mm(self.h_in.view(-1, self.h_in.shape[-1]))


class _PerGateMask:
    """Recurrent input with one mask per gate (Gal's LSTM): gate k sees m_k * h_{t-1}."""

    def __init__(self, T, B, H, w_hh, h_mask, like):
        self.w4 = w_hh.view(4, H, H)
        self.w4_t = self.w4.transpose(1, 2)
        self.mask = h_mask.permute(1, 0, 2).contiguous()  # [4, B, H]
        self.h_in = like.new_empty(T, 4, B, H)

    def add(self, t, h_prev, g):
        hp = torch.mul(h_prev.unsqueeze(0), self.mask, out=self.h_in[t])
        g.view(g.shape[0], 4, -1).add_(torch.bmm(hp, self.w4_t).transpose(0, 1))

    def d_h(self, dg):
        B = dg.shape[0]
        return torch.bmm(dg.view(B, 4, -1).transpose(0, 1), self.w4).mul_(self.mask).sum(0)

    def d_w_hh(self, flat):
        T, _, B, H = self.h_in.shape
        d4 = flat.view(T * B, 4, H).transpose(0, 1)  # [4, T*B, H]
        return torch.bmm(d4.transpose(1, 2), self.h_in.transpose(0, 1).reshape(4, T * B, H)).view(4 * H, H)


def _forward_steps(gates, out, cs, tanh_c, h0, recurrent):
    """The recurrence: gates[t] (input part precomputed) becomes the activations i, f, g, o in place."""
    H = out.shape[-1]
    h_prev = h0
    for t in range(gates.shape[0]):
        g = gates[t]
        recurrent.add(t, h_prev, g)
        g[:, : 2 * H].sigmoid_()
        g[:, 2 * H: 3 * H].tanh_()
        g[:, 3 * H:].sigmoid_()
        c = cs[t + 1]
        torch.mul(g[:, H: 2 * H], cs[t], out=c)
        c.addcmul_(g[:, :H], g[:, 2 * H: 3 * H])
        torch.tanh(c, out=tanh_c[t])
        torch.mul(g[:, 3 * H:], tanh_c[t], out=out[t])
        h_prev = out[t]


def _backward_steps(d_gates, acts, local, dc_from_h, cs, tanh_c, d_out, dc, recurrent):
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
        dh = recurrent.d_h(dg)
    return dh, dc


def _input_gates(x, w_ih, bias, in_mask):
    """Input part of all steps' gate pre-activations [T, B, 4H] (per-gate copies of x when masked per gate)."""
    T, B, I = x.shape
    if in_mask is None:
        return torch.addmm(bias, x.reshape(T * B, I), w_ih.t()).view(T, B, -1)
    H = w_ih.shape[0] // 4
    xm = (x.unsqueeze(2) * in_mask).permute(2, 0, 1, 3).reshape(4, T * B, I)
    pre = torch.bmm(xm, w_ih.view(4, H, I).transpose(1, 2))  # [4, T*B, H]
    return pre.transpose(0, 1).reshape(T, B, 4 * H).add_(bias)


def _input_grads(d_gates, x, w_ih, in_mask):
    """(d x, d w_ih) of ``_input_gates`` from the pre-activation gradients [T, B, 4H]."""
    T, B, I = x.shape
    flat = d_gates.view(T * B, -1)
    if in_mask is None:
        return flat.mm(w_ih).view(T, B, I), flat.t().mm(x.reshape(T * B, I))
    H = w_ih.shape[0] // 4
    d4 = flat.view(T * B, 4, H).transpose(0, 1)  # [4, T*B, H]
    dxm = torch.bmm(d4, w_ih.view(4, H, I)).view(4, T, B, I)
    m4 = in_mask.permute(1, 0, 2).unsqueeze(1)  # [4, 1, B, I]
    d_x = (dxm * m4).sum(0)
    xm = (x.unsqueeze(0) * m4).reshape(4, T * B, I)
    return d_x, torch.bmm(d4.transpose(1, 2), xm).view(4 * H, I)


class _LSTMSequence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, bias, h_mask, in_mask):
        T, B, _ = x.shape
        H = w_hh.shape[1]
        per_gate = in_mask is not None or (h_mask is not None and h_mask.dim() == 3)
        if per_gate and h_mask is not None and h_mask.dim() == 2:
            h_mask = h_mask.unsqueeze(1).expand(-1, 4, -1)
        rec_cls = _PerGateMask if per_gate and h_mask is not None else _SharedMask
        # gates[t] holds the pre-activations, then (in place) the activations i, f, g, o.
        gates = _input_gates(x, w_ih, bias, in_mask)
        out = x.new_empty(T, B, H)
        cs = x.new_empty(T + 1, B, H)
        tanh_c = x.new_empty(T, B, H)
        cs[0] = c0
        recurrent = rec_cls(T, B, H, w_hh, h_mask, x)
        with _step_threads(B, H):
            _forward_steps(gates, out, cs, tanh_c, h0, recurrent)
        ctx.save_for_backward(x, w_ih, gates, cs, tanh_c, in_mask)
        ctx.recurrent = recurrent  # weights, masks and the recurrent inputs of every step
        return out, cs[T].clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out, d_cn):
        x, w_ih, acts, cs, tanh_c, in_mask = ctx.saved_tensors
        recurrent = ctx.recurrent
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
            dh, dc = _backward_steps(d_gates, acts, local, dc_from_h, cs, tanh_c, d_out, dc, recurrent)
        flat = d_gates.view(T * B, H4)
        d_x, d_w_ih = _input_grads(d_gates, x, w_ih, in_mask)
        return d_x, dh, dc, d_w_ih, recurrent.d_w_hh(flat), flat.sum(0), None, None


def lstm_sequence(x, h0, c0, w_ih, w_hh, bias, h_mask=None, in_mask=None):
    """Run one LSTM layer over ``x`` [T, B, I] from state (h0, c0) [B, H]; ``bias`` [4H] is added to
    the gate pre-activations (the sum of nn.LSTM's two biases, or TF's single one).

    ``h_mask`` multiplies the recurrent state h_{t-1} at every step: [B, H] for all gates, or [B, 4, H]
    one per gate; ``in_mask`` [B, 4, I] gives every gate its own masked copy of x (Gal's LSTM).
    Returns (out [T, B, H] = h_1..h_T, c_T [B, H]).
    """
    return _LSTMSequence.apply(x, h0, c0, w_ih, w_hh, bias, h_mask, in_mask)


def _cpu_rows_usable(z) -> bool:
    """Whether the compiled row passes (kernels.cpp) serve ``z``: on the CPU with AVX2 (or wider)."""
    return z.device.type == "cpu" and torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


@functools.cache
def _cpu_rows():
    """kernels.cpp, compiled once per machine into torch's extension cache (about a minute the first time;
    it needs a C++ compiler and ninja, the venv's or the system's)."""
    from torch.utils import cpp_extension

    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    try:
        return cpp_extension.load_inline(
            "replicate_output_rows", [CPU_SOURCE.read_text()], functions=["rows_forward", "rows_backward", "softmax_rows"],
            extra_cflags=["-O3", "-fopenmp", "-mavx2", "-mfma", "-DCPU_CAPABILITY_AVX2", "-DCPU_CAPABILITY=AVX2"])
    except (RuntimeError, OSError, subprocess.CalledProcessError) as err:
        raise ReplicateError(f"the output layer's CPU kernel ({CPU_SOURCE.name}) did not build: {err}",
                             "install a C++ compiler and ninja (Debian: apt-get install g++ ninja-build), or "
                             "run REPLICATE_KERNELS=reference (the same math, slower)") from err


class _Rows:
    """The row passes over the logits z (N, |V|), in place: z becomes exp(z - max) (the softmax's numerator)
    and, with soft targets, q (N, |V|) becomes exp(q), q = (z - max) / tau (+ ``shift``). One implementation,
    two ways: the compiled passes on a CPU (kernels.cpp: each row crosses memory once per direction) or
    torch operations elsewhere (a GPU). Per row: ``top`` (the max), ``total`` and ``total_q`` (the sums of the
    exponentials), ``target_logit``; per distinct word: ``soft_dot`` (y~ . q summed over the word's rows) and,
    when asked, ``agg`` (q summed over them, for REAL's backward)."""

    def __init__(self, z, targets, soft=None, idx=None, shift=None, tau: float = 1.0, want_agg: bool = False):
        n = z.shape[0]
        self.compiled = _cpu_rows_usable(z)
        self.z, self.targets, self.soft = z, targets.contiguous(), soft
        self.idx = idx.contiguous() if idx is not None else None
        self.order = torch.argsort(self.idx, stable=True) if soft is not None and self.compiled else None
        new = z.new_empty
        self.top, self.total, self.target_logit = new(n), new(n), new(n)
        self.q = self.total_q = self.soft_dot = self.agg = None
        if soft is not None:
            self.q, self.total_q, self.soft_dot = torch.empty_like(z), new(n), z.new_zeros(soft.shape[0])
            self.agg = torch.zeros_like(soft) if want_agg else None
        if self.compiled:
            _cpu_rows().rows_forward(z, self.targets, self.top, self.total, self.target_logit, soft, self.idx, shift,
                                     tau, self.q, self.total_q, self.soft_dot, self.order, self.agg)
        else:
            self._torch_forward(shift, tau)

    def _torch_forward(self, shift, tau):
        z = self.z
        torch.gather(z, 1, self.targets[:, None], out=self.target_logit[:, None])
        torch.amax(z, 1, out=self.top)
        z.sub_(self.top[:, None])  # every exponent below is <= 0
        if self.soft is not None:
            q = torch.mul(z, 1.0 / tau, out=self.q)
            if shift is not None:
                q.add_(shift)
            # the rows of a word share y~: y~ . q is taken with q summed per word (no (N, |V|) gather of y~)
            agg = torch.zeros_like(self.soft).index_add_(0, self.idx, q)
            torch.linalg.vecdot(self.soft, agg, out=self.soft_dot)
            if self.agg is not None:
                self.agg.copy_(agg)
            torch.sum(q.exp_(), 1, out=self.total_q)
        torch.sum(z.exp_(), 1, out=self.total)

    def gradient(self, d_nll: float, c: float = 0.0, d_bias=None, bias_from_nll_only: bool = True):
        """z becomes d_nll * (softmax(z) - onehot) (+ c * (y^ - y~), y^ = exp(q) / total_q); ``d_bias`` (|V|)
        receives its column sums, of the NLL part alone when ``bias_from_nll_only``."""
        if self.compiled:
            _cpu_rows().rows_backward(self.z, self.total, self.targets, d_nll, self.q, self.total_q, self.soft,
                                      self.idx, c, self.order, d_bias, bias_from_nll_only)
            return self.z
        grad = self.z.mul_((d_nll / self.total)[:, None])
        grad[torch.arange(grad.shape[0], device=grad.device), self.targets] -= d_nll
        if d_bias is not None and (bias_from_nll_only or self.soft is None):
            torch.sum(grad, 0, out=d_bias)
        if self.soft is not None:
            grad.addcmul_(self.q, (c / self.total_q)[:, None])  # + c y^
            grad.sub_(torch.index_select(self.soft, 0, self.idx, out=self.q), alpha=float(c))  # - c y~ (q's buffer)
            if d_bias is not None and not bias_from_nll_only:
                torch.sum(grad, 0, out=d_bias)
        return grad


def _soft_targets(a):
    """(y~ = softmax(a) per row, log of its normaliser, y~ . log y~) of the soft logits a (U, |V|)."""
    soft, log_norm, neg_entropy = torch.empty_like(a), a.new_empty(a.shape[0]), a.new_empty(a.shape[0])
    if _cpu_rows_usable(a):
        _cpu_rows().softmax_rows(a, soft, log_norm, neg_entropy)
        return soft, log_norm, neg_entropy
    a_top = a.amax(1, keepdim=True)
    torch.sub(a, a_top, out=soft).exp_()
    a_total = soft.sum(1, keepdim=True)
    soft.div_(a_total)
    torch.add(a_top, a_total.log_(), out=log_norm[:, None])
    torch.sub(torch.linalg.vecdot(soft, a), log_norm, out=neg_entropy)
    return soft, log_norm, neg_entropy


class _OutputLoss(torch.autograd.Function):
    """The output layer's whole training loss in one function: z = h W^T (+ b), the summed NLL and, with
    soft-target rows r (U, H) against word vectors E (|V|, H), the summed KL(y~[idx] || softmax(s / tau)),
    y~ = softmax(r E^T), s = z or z - b (``prediction_bias``). The gradients are written out, not taped:
    d NLL / d z = softmax(z) - onehot; d KL / d z = (softmax(s / tau) - y~) / tau; into r and E (REAL)
    through the softmax that forms y~. When E is W (tied, no bias), z and the soft logits come from one
    GEMM and their gradients go back through two. The element-wise work is ``_Rows``: on a CPU, one pass
    per row in each direction. The GEMMs are whole: on a 2-core CPU small-M GEMMs lose what a cache-sized
    block saves (docs/reproducibility.md)."""

    @staticmethod
    def forward(ctx, h, weight, bias, targets, soft_rows, word_vectors, idx, tau, prediction_bias):
        n = h.shape[0]
        merged = soft_rows is not None and word_vectors is weight and bias is None  # REAL: one GEMM for both
        rows = torch.cat([h, soft_rows.detach()]) if merged else h
        whole = torch.addmm(bias, rows, weight.t()) if bias is not None else rows.mm(weight.t())
        z, a = (whole[:n], whole[n:]) if merged else (whole, None)
        al = soft_rows is not None
        ctx.al, ctx.merged, ctx.has_bias = al, merged, bias is not None
        ctx.tau, ctx.prediction_bias = tau, prediction_bias
        if not al:
            r = _Rows(z, targets)
            ctx.rows = r
            ctx.save_for_backward(h, weight)
            return (r.total.log() + r.top - r.target_logit).sum()
        if a is None:
            a = soft_rows.detach().mm(word_vectors.detach().t())
        soft, log_norm, neg_entropy = _soft_targets(a)
        # q = (s - max z) / tau; without the bias in the prediction, b - min b keeps the exponents <= 0
        shift = ((bias.detach().min() - bias.detach()) / tau) if bias is not None and not prediction_bias else None
        into_soft = ctx.needs_input_grad[4] or ctx.needs_input_grad[5]  # REAL: q summed per word, for the backward
        r = _Rows(z, targets, soft, idx, shift, tau, want_agg=into_soft)
        counts = torch.bincount(idx, minlength=soft.shape[0]).to(soft.dtype)
        # sum_n KL_n = sum_n (y~ . log y~ - y~ . q_n + log sum exp q_n)
        kl = torch.dot(counts, neg_entropy) - r.soft_dot.sum() + r.total_q.log().sum()
        nll = (r.total.log() + r.top - r.target_logit).sum()
        ctx.rows, ctx.counts = r, counts
        ctx.save_for_backward(h, weight, whole, a, log_norm, neg_entropy, soft_rows, word_vectors)
        return nll, kl

    @staticmethod
    @once_differentiable
    def backward(ctx, d_nll, d_kl=None):
        r = ctx.rows
        h, weight, *saved = ctx.saved_tensors
        n = h.shape[0]
        want_b = ctx.has_bias and ctx.needs_input_grad[2]
        d_b = weight.new_empty(weight.shape[0]) if want_b else None
        al = ctx.al and d_kl is not None
        c = float(d_kl) / ctx.tau if al else 0.0
        if al:
            grad = r.gradient(float(d_nll), c, d_b, bias_from_nll_only=not ctx.prediction_bias)
        else:
            grad = r.gradient(float(d_nll), d_bias=d_b)
            if ctx.al:  # a KL that reached no loss: its soft target takes no part
                r.soft = None
        d_rows = d_vectors = d_a = None
        if al and r.agg is not None:
            whole, a, log_norm, neg_entropy, soft_rows, vectors = saved
            # d KL / d a = y~ * (g - y~ . g), g = d KL / d log y~ = counts * log y~ - (q summed per word),
            # written into a's buffer: y~ . g = counts * (y~ . log y~) - y~ . agg
            d_a = a.sub_(log_norm[:, None] + neg_entropy[:, None]).mul_((ctx.counts * d_kl)[:, None])
            d_a.sub_(r.agg, alpha=float(d_kl)).add_((r.soft_dot * d_kl)[:, None]).mul_(r.soft)
        if ctx.merged and d_a is not None:  # grad and d_a are the two halves of ``whole``: two GEMMs for both
            d_hr = whole.mm(weight) if ctx.needs_input_grad[0] or ctx.needs_input_grad[4] else None
            d_w = whole.t().mm(torch.cat([h, soft_rows.detach()])) if ctx.needs_input_grad[1] else None
            d_h, d_rows = (d_hr[:n], d_hr[n:]) if d_hr is not None else (None, None)
            return d_h, d_w, d_b, None, d_rows, None, None, None, None
        d_h = grad.mm(weight) if ctx.needs_input_grad[0] else None
        d_w = grad.t().mm(h) if ctx.needs_input_grad[1] else None
        if d_a is not None:
            d_rows = d_a.mm(vectors.detach()) if ctx.needs_input_grad[4] else None
            d_vectors = d_a.t().mm(soft_rows.detach()) if ctx.needs_input_grad[5] else None
        return d_h, d_w, d_b, None, d_rows, d_vectors, None, None, None


def output_loss(h, weight, bias, targets, soft_rows=None, word_vectors=None, idx=None, tau: float = 1.0,
                prediction_bias: bool = False):
    """Sum over rows of -log softmax(h @ weight.T + bias)[target]; with ``soft_rows`` r (U, H),
    ``word_vectors`` E (|V|, H) and ``idx`` [N] (row n's soft target is softmax(r[idx[n]] @ E.T)), also
    the sum over rows of KL(y~ || softmax(s / tau)), s the logits without the bias unless
    ``prediction_bias``: returns (nll, kl) then. h [N, H], targets [N]. Proven equal to the plain
    cross-entropy and KL transcriptions in float64 (tests/test_inan_fused_loss.py)."""
    if not ((soft_rows is None) == (word_vectors is None) == (idx is None)):
        raise ValueError("soft_rows, word_vectors and idx go together")
    return _OutputLoss.apply(h, weight, bias, targets, soft_rows, word_vectors, idx, float(tau), bool(prediction_bias))


def linear_nll(h, weight, bias, targets):
    """Sum over rows of -log softmax(h @ weight.T + bias)[target]; h [N, H], targets [N]."""
    return output_loss(h, weight, bias, targets)


def _native_lstm(x, h0, c0, w_ih, w_hh, bias):
    """torch's LSTM kernel for one unmasked layer; ``bias`` goes in as b_ih, b_hh is a zero constant."""
    params = [w_ih, w_hh, bias, bias.detach().new_zeros(bias.shape)]
    out, _, c_n = torch.lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)), params, True, 1, 0.0,
                             torch.is_grad_enabled(), False, False)
    return out, c_n[0]


def lstm_layer(x, h0, c0, w_ih, w_hh, bias, h_mask=None, in_mask=None):
    """``reference.lstm_layer`` (same arguments and results) on the fastest path for these masks."""
    if backend() == "reference":
        return reference.lstm_layer(x, h0, c0, w_ih, w_hh, bias, h_mask, in_mask)
    if h_mask is None and in_mask is None:
        return _native_lstm(x, h0, c0, w_ih, w_hh, bias)
    return lstm_sequence(x, h0, c0, w_ih, w_hh, bias, h_mask, in_mask)


def output_nll(h, weight, bias, targets):
    """``reference.output_nll`` on the fused path (training) or the reference one (no gradient)."""
    if backend() == "reference" or not torch.is_grad_enabled():
        return reference.output_nll(h, weight, bias, targets)
    return linear_nll(h, weight, bias, targets)
