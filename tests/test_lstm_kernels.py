"""Every fast path of ``replicate.lstm.kernels`` equals ``replicate.lstm.reference`` in float64.

Values and gradients, relative error <= 1e-10, on random inputs: the proof that a kernel change is not a
change of results (the kernels are hashed apart from the math version, see replicate/lstm/__init__.py).
"""

from __future__ import annotations

import pytest
import torch

from replicate.errors import ReplicateError
from replicate.lstm import kernels, reference
from replicate.lstm.config import ModelConfig
from replicate.lstm.model import LSTMLM

RTOL = 1e-10


def _assert_rel(a: torch.Tensor, b: torch.Tensor, what: str):
    err = float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))
    assert err <= RTOL, f"{what}: relative error {err:.2e} > {RTOL:.0e}"


def _layer_case(seed=0, T=6, B=3, I=5, H=4, mask=None):
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, dtype=torch.double, generator=g)  # noqa: E731
    x, h0, c0 = rnd(T, B, I), rnd(B, H), rnd(B, H)
    w_ih, w_hh, bias = rnd(4 * H, I) * 0.5, rnd(4 * H, H) * 0.5, rnd(4 * H) * 0.5
    masks = {None: (None, None),
             "recurrent": ((torch.rand(B, H, generator=g, dtype=torch.double) < 0.7).double() / 0.7, None),
             "per_gate": ((torch.rand(B, 4, H, generator=g, dtype=torch.double) < 0.7).double() / 0.7,
                          (torch.rand(B, 4, I, generator=g, dtype=torch.double) < 0.7).double() / 0.7)}[mask]
    weights = rnd(T, B, H)  # a loss that weights every output differently
    return [t.requires_grad_() for t in (x, h0, c0, w_ih, w_hh, bias)], masks, weights


def _run(fn, tensors, masks, weights):
    out, c_n = fn(*tensors, *masks)
    loss = (out * weights).sum() + (c_n * c_n).sum()
    return [out.detach(), c_n.detach(), *torch.autograd.grad(loss, tensors)]


@pytest.mark.parametrize("mask", [None, "recurrent", "per_gate"])
def test_lstm_layer_fast_path_equals_reference_in_float64(mask):
    tensors, masks, weights = _layer_case(mask=mask)
    names = ["out", "c_T", "d x", "d h0", "d c0", "d w_ih", "d w_hh", "d bias"]
    fast = _run(kernels.lstm_layer, tensors, masks, weights)
    ref = _run(reference.lstm_layer, tensors, masks, weights)
    for name, a, b in zip(names, fast, ref):
        _assert_rel(a, b, f"mask={mask}: {name}")


def test_each_lstm_path_is_the_one_dispatched(monkeypatch):
    """The dispatch really takes the native kernel for no mask and the fused one for masks (so the equality above is a statement about the fast paths, not about the reference twice)."""
    calls = []
    monkeypatch.setattr(kernels, "_native_lstm", lambda *a: calls.append("native") or reference.lstm_layer(*a))
    monkeypatch.setattr(kernels, "lstm_sequence", lambda *a: calls.append("fused") or reference.lstm_layer(*a))
    for mask in (None, "recurrent", "per_gate"):
        tensors, masks, _ = _layer_case(mask=mask)
        kernels.lstm_layer(*tensors, *masks)
    with kernels.use("reference"):
        tensors, masks, _ = _layer_case(mask=None)
        kernels.lstm_layer(*tensors, *masks)
    assert calls == ["native", "fused", "fused"]


@pytest.mark.parametrize("with_bias", [True, False])
def test_output_nll_fast_path_equals_reference_in_float64(with_bias, row_path):
    g = torch.Generator().manual_seed(1)
    h = torch.randn(40, 6, dtype=torch.double, generator=g).requires_grad_()
    w = torch.randn(50, 6, dtype=torch.double, generator=g).requires_grad_()
    b = torch.randn(50, dtype=torch.double, generator=g).requires_grad_() if with_bias else None
    t = torch.randint(0, 50, (40,), generator=g)
    params = [p for p in (h, w, b) if p is not None]
    fast, ref = kernels.linear_nll(h, w, b, t), reference.output_nll(h, w, b, t)
    _assert_rel(fast.detach(), ref.detach(), "nll")
    for a, c in zip(torch.autograd.grad(fast, params), torch.autograd.grad(ref, params)):
        _assert_rel(a, c, "gradient")


@pytest.mark.parametrize("cfg", [
    dict(dropout="none", gate_bias="tf"),
    dict(dropout="none", gate_bias="torch", tying="tied", projection=True),
    dict(dropout="inan", dropout_rate=0.4, tying="tied_nobias"),
    dict(dropout="variational", dropout_word=0.2, dropout_input=0.4, dropout_hidden=0.3, dropout_output=0.4),
    dict(dropout="variational", dropout_input=0.4, dropout_hidden=0.3, variational_masks="shared"),
], ids=["none-tf", "none-torch-tied-pr", "inan", "bd-per-gate", "bd-shared"])
def test_model_loss_and_gradients_equal_under_fast_and_reference_kernels(cfg):
    """A whole training step's loss and every parameter gradient, both backends, same masks (same seed)."""
    torch.manual_seed(5)
    model = LSTMLM(ModelConfig(vocab_size=37, hidden_size=6, init_scale=0.3, **cfg)).double().train()
    inputs, targets = torch.randint(0, 37, (7, 4)), torch.randint(0, 37, (7, 4))

    def step():
        torch.manual_seed(9)  # the same dropout masks for both backends
        model.zero_grad()
        features, hidden = model(inputs, model.init_hidden(4))
        loss = model.nll(features, targets)
        loss.backward()
        return [loss.detach(), hidden[-1][1].detach()] + [p.grad.clone() for p in model.parameters()]

    fast = step()
    with kernels.use("reference"):
        ref = step()
    for (name, _), a, b in zip([("loss", 0), ("c_T", 0), *model.named_parameters()], fast, ref):
        _assert_rel(a, b, name)


def test_unknown_kernel_backend_is_refused_with_the_fix():
    with pytest.raises(ReplicateError, match="REPLICATE_KERNELS") as err:
        with kernels.use("fastest"):
            pass
    assert err.value.fix == "set it to one of fast, reference (or unset it for 'fast')"


@pytest.mark.parametrize("grad, name, fused", [(True, "fast", True), (False, "fast", False),
                                               (True, "reference", False), (False, "reference", False)])
def test_output_nll_takes_the_fused_kernel_only_for_a_fast_training_step(grad, name, fused):
    h, w, t = torch.randn(4, 3, dtype=torch.double, requires_grad=True), torch.randn(5, 3, dtype=torch.double), \
        torch.tensor([0, 1, 2, 4])
    with kernels.use(name), torch.set_grad_enabled(grad):
        nll = kernels.output_nll(h, w, None, t)
    assert (nll.grad_fn is not None and "OutputLoss" in type(nll.grad_fn).__name__) is fused


@pytest.mark.parametrize("needs", ["h", "weight", "bias"])
def test_fused_output_nll_gives_the_gradient_of_whichever_input_needs_one(needs, row_path):
    """A frozen output layer (only h) or a frozen encoder (only the weight or the bias) still gets its gradient."""
    g = torch.Generator().manual_seed(3)
    h, w, b = (torch.randn(*s, dtype=torch.double, generator=g) for s in ((6, 4), (7, 4), (7,)))
    x = {"h": h, "weight": w, "bias": b}[needs].requires_grad_()
    t = torch.randint(0, 7, (6,), generator=g)
    (fast,) = torch.autograd.grad(kernels.linear_nll(h, w, b, t), x)
    (ref,) = torch.autograd.grad(reference.output_nll(h, w, b, t), x)
    _assert_rel(fast, ref, f"d {needs}")


def test_fused_output_nll_is_stable_for_rows_whose_logits_are_far_apart(row_path):
    """Each row is shifted by its own largest logit: one row near 0 and one near 1000 both stay finite (a
    single shift for the whole batch would underflow the first row's exp to 0 and give an infinite loss)."""
    h = torch.tensor([[0.0, 1.0], [1000.0, 999.0]], dtype=torch.double, requires_grad=True)
    w, t = torch.eye(2, dtype=torch.double), torch.tensor([0, 1])
    fast, ref = kernels.linear_nll(h, w, None, t), reference.output_nll(h, w, None, t)
    assert torch.isfinite(fast) and torch.isclose(fast, ref, rtol=1e-12)


def test_lstm_sequence_without_masks_equals_the_reference():
    tensors, masks, weights = _layer_case(mask=None, seed=5)
    for a, b in zip(_run(kernels.lstm_sequence, tensors, masks, weights), _run(reference.lstm_layer, tensors, masks,
                                                                              weights)):
        _assert_rel(a, b, "no masks")


@pytest.mark.threads
def test_small_steps_run_on_one_thread_and_the_thread_count_comes_back():
    """Below SERIAL_STEP_MACS the time loop runs on one thread; the caller's thread count is restored after
    the forward and the backward pass of the fused kernel, and large steps keep every thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with kernels._step_threads(20, 200):  # 20 * 4 * 200 * 200 = 3.2 M multiply-adds
            assert torch.get_num_threads() == 1
        with kernels._step_threads(20, 650):  # 33.8 M
            assert torch.get_num_threads() == 2
        tensors, masks, weights = _layer_case(mask="recurrent", seed=2)
        fast = _run(kernels.lstm_sequence, tensors, masks, weights)
        assert torch.get_num_threads() == 2
        for a, b in zip(fast, _run(reference.lstm_layer, tensors, masks, weights)):
            _assert_rel(a, b, "two threads")
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("masks", ["per_gate_h_only", "per_gate_x_only", "shared_h_with_per_gate_x"])
def test_fused_kernel_handles_every_mask_combination_as_the_reference(masks):
    tensors, (h4, x4), weights = _layer_case(mask="per_gate", seed=7)
    h_mask, in_mask = {"per_gate_h_only": (h4, None), "per_gate_x_only": (None, x4),
                       "shared_h_with_per_gate_x": (h4[:, 0], x4)}[masks]
    fast = _run(kernels.lstm_sequence, tensors, (h_mask, in_mask), weights)
    ref = _run(reference.lstm_layer, tensors, (h_mask, in_mask), weights)
    for a, b in zip(fast, ref):
        _assert_rel(a, b, masks)


def test_fused_per_gate_kernel_passes_gradcheck():
    tensors, masks, _ = _layer_case(mask="per_gate", T=3, B=2, I=3, H=2, seed=11)
    assert torch.autograd.gradcheck(lambda *t: kernels.lstm_sequence(*t, *masks), tuple(tensors))


def test_reference_backend_runs_the_augmented_loss_transcription(monkeypatch):
    """REPLICATE_KERNELS=reference reaches the Inan augmented loss too: the per-token kl_div form, same value."""
    from replicate.inan import losses

    g = torch.Generator().manual_seed(3)
    z, emb = torch.randn(12, 30, dtype=torch.double, generator=g), torch.randn(30, 4, dtype=torch.double, generator=g)
    t = torch.randint(0, 30, (12,), generator=g)
    fast = losses.augmented_loss(z, t, emb, 2.0)
    calls = []
    monkeypatch.setattr(losses, "augmented_loss_transcription",
                        lambda *a: calls.append(1) or losses.F.kl_div(
                            losses.F.log_softmax(a[0] / a[3], -1), losses.soft_targets_log(a[2], a[1], a[3]),
                            reduction="none", log_target=True).sum(-1))
    with kernels.use("reference"):
        ref = losses.augmented_loss(z, t, emb, 2.0)
    assert calls == [1]
    _assert_rel(fast, ref, "augmented loss")
