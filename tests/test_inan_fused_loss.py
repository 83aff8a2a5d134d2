"""The fused output-layer loss of the +AL / +REAL runs equals the reference path in float64.

Reference: the engine's own ``Trainer._loss`` with ``REPLICATE_KERNELS=reference`` (logits,
``F.cross_entropy``, and the per-token ``kl_div`` transcription of J_aug). Values and every gradient,
relative error <= 1e-10: the proof that the fused kernel is a kernel change, not a change of results.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from replicate.inan.losses import augmented_loss_transcription
from replicate.inan.train import AugmentedLoss
from replicate.inan.trainer import AugmentedTrainer
from replicate.lstm import kernels
from replicate.lstm.config import ModelConfig, TrainConfig
from replicate.lstm.model import LSTMLM
from replicate.lstm.train import Trainer

RTOL = 1e-10
VOCAB = 23


def _assert_rel(a, b, what):
    err = float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))
    assert err <= RTOL, f"{what}: relative error {err:.2e} > {RTOL:.0e}"


def _plain(h, weight, bias, targets, emb, tau, prediction_bias, soft_target_grad, target_norm):
    """CE and J_aug summed over rows, as the formulas read (autograd for every gradient)."""
    logits = F.linear(h, weight, bias)
    scores = logits if prediction_bias or bias is None else logits - bias
    kl = augmented_loss_transcription(scores, targets, emb, tau, soft_target_grad, target_norm)
    return F.cross_entropy(logits, targets, reduction="sum"), kl.sum()


CASES = [dict(tied=t, bias=b, prediction_bias=pb, soft_target_grad=g, target_norm=n)
         for t in (False, True) for b in (False, True) for pb in (False, True) for g in (False, True)
         for n in (None, 2.0) if not (pb and not b)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_output_loss_equals_cross_entropy_plus_transcription_in_float64(case, row_path):
    """Repeated targets (rows share a soft target), a non-uniform weight on each term."""
    g = torch.Generator().manual_seed(11)
    rnd = lambda *s: torch.randn(*s, dtype=torch.double, generator=g).requires_grad_()  # noqa: E731
    h, emb = rnd(17, 5), rnd(VOCAB, 5)
    weight = emb if case["tied"] else rnd(VOCAB, 5)
    bias = rnd(VOCAB) if case["bias"] else None
    targets = torch.tensor([3, 7, 3, 3, 0, 22, 7, 5, 3, 1, 1, 9, 7, 3, 14, 0, 2])
    tau, pb, grad, norm = 2.5, case["prediction_bias"], case["soft_target_grad"], case["target_norm"]
    al = AugmentedLoss(tau, 0.5, grad, pb, target_norm=norm)
    params = [p for p in {id(t): t for t in (h, emb, weight, bias) if t is not None}.values()]

    model = SimpleNamespace(embedding=SimpleNamespace(weight=emb), output_weight=weight, output_bias=bias)
    fused = al.output_loss(h, targets, model)
    plain = _plain(h, weight, bias, targets, emb, tau, pb, grad, norm)
    for name, a, b in zip(("nll", "J_aug"), fused, plain):
        _assert_rel(a.detach(), b.detach(), name)
    grads = [torch.autograd.grad(0.3 * x + 1.7 * y, params, allow_unused=True) for x, y in (fused, plain)]
    for i, (a, b) in enumerate(zip(*grads)):
        assert (a is None) == (b is None), f"gradient {i}: one path has none"
        if a is not None:
            _assert_rel(a, b, f"gradient {i}")


def test_output_loss_without_soft_target_is_the_plain_nll(row_path):
    g = torch.Generator().manual_seed(2)
    h = torch.randn(9, 4, dtype=torch.double, generator=g).requires_grad_()
    w = torch.randn(VOCAB, 4, dtype=torch.double, generator=g).requires_grad_()
    t = torch.randint(0, VOCAB, (9,), generator=g)
    fused, plain = kernels.output_loss(h, w, None, t), F.cross_entropy(h @ w.t(), t, reduction="sum")
    _assert_rel(fused.detach(), plain.detach(), "nll")
    for a, b in zip(torch.autograd.grad(fused, (h, w)), torch.autograd.grad(plain, (h, w))):
        _assert_rel(a, b, "gradient")
    with pytest.raises(ValueError, match="go together"):
        kernels.output_loss(h, w, None, t, soft_rows=torch.zeros(2, 4, dtype=torch.double))


@pytest.mark.parametrize("variant", ["al", "real"])
def test_augmented_trainer_step_equals_the_engine_step_on_reference_kernels(variant, row_path):
    """A whole training window of a float64 LSTM LM: loss, mean NLL and every parameter gradient of
    ``AugmentedTrainer`` (fused kernels) against ``Trainer`` + ``extra_loss`` on the reference kernels."""
    tying, grad = {"al": ("untied", False), "real": ("tied_nobias", True)}[variant]
    torch.manual_seed(3)
    model = LSTMLM(ModelConfig(vocab_size=VOCAB, hidden_size=6, init_scale=0.4, tying=tying,
                               dropout="inan", dropout_rate=0.3)).double()
    cfg = TrainConfig(batch_size=3, bptt=5, epochs=1)
    data = torch.randint(0, VOCAB, (60,))
    al = AugmentedLoss(tau=2.0, gamma=0.7, soft_target_grad=grad)
    inputs, targets = data[:15].view(5, 3), data[1:16].view(5, 3)

    def step(trainer_cls):
        trainer = trainer_cls(model, cfg, data, data[:10], extra_loss=al, log=lambda s: None)
        trainer.hidden = model.init_hidden(3)
        model.zero_grad()
        torch.manual_seed(8)  # the same dropout masks for both
        loss, mean_nll = trainer._loss(inputs, targets)
        loss.backward()
        return [loss.detach(), mean_nll] + [p.grad.clone() for p in model.parameters()]

    fused = step(AugmentedTrainer)
    with kernels.use("reference"):
        ref = step(Trainer)
    names = ["loss", "mean nll", *(n for n, _ in model.named_parameters())]
    for name, a, b in zip(names, fused, ref):
        _assert_rel(a, b, name)


def test_augmented_trainer_takes_the_engine_path_on_reference_kernels(monkeypatch):
    """So the equality above compares the fused kernel with the reference, not the reference with itself."""
    calls, real = [], AugmentedLoss.output_loss
    monkeypatch.setattr(AugmentedLoss, "output_loss", lambda *a: calls.append("fused") or real(*a))
    model = LSTMLM(ModelConfig(vocab_size=VOCAB, hidden_size=4, tying="untied", dropout="inan"))
    data = torch.randint(0, VOCAB, (40,))
    trainer = AugmentedTrainer(model, TrainConfig(batch_size=2, bptt=4, epochs=1), data, data[:10],
                               extra_loss=AugmentedLoss(2.0, 0.5), log=lambda s: None)
    trainer.hidden = model.init_hidden(2)
    with kernels.use("reference"):
        trainer._loss(data[:8].view(4, 2), data[1:9].view(4, 2))
    assert calls == []
    trainer._loss(data[:8].view(4, 2), data[1:9].view(4, 2))
    assert calls == ["fused"]


@pytest.mark.parametrize("vocab", [3, 8, 37])
@pytest.mark.parametrize("bias", [False, True])
def test_row_passes_cover_rows_shorter_than_a_vector_whole_vectors_and_a_tail(vocab, bias, row_path):
    """float64 vectors hold 4 numbers (8 in float32): a row of 3 is all tail, 8 has none, 37 both; rows of
    one word split across the chunks of two threads would race (200 rows, a few words)."""
    g = torch.Generator().manual_seed(vocab)
    rnd = lambda *s: torch.randn(*s, dtype=torch.double, generator=g).requires_grad_()  # noqa: E731
    h, emb, w = rnd(200, 5), rnd(vocab, 5), rnd(vocab, 5)
    b = rnd(vocab) if bias else None
    targets = torch.randint(0, vocab, (200,), generator=g)
    al = AugmentedLoss(1.5, 0.5, True, prediction_bias=False)
    model = SimpleNamespace(embedding=SimpleNamespace(weight=emb), output_weight=w, output_bias=b)
    fused = al.output_loss(h, targets, model)
    plain = _plain(h, w, b, targets, emb, 1.5, False, True, None)
    params = [t for t in (h, emb, w, b) if t is not None]
    for name, x, y in zip(("nll", "J_aug"), fused, plain):
        _assert_rel(x.detach(), y.detach(), name)
    for i, (x, y) in enumerate(zip(torch.autograd.grad(sum(fused), params), torch.autograd.grad(sum(plain), params))):
        _assert_rel(x, y, f"gradient {i}")


def test_the_compiled_row_passes_serve_a_cpu_training_step_and_repeat_bit_for_bit(row_path):
    """The equalities above test the compiled passes, not torch's alone, where the CPU allows them; and two
    calls on the same float32 inputs give the same bits (a resumed run repeats its steps exactly)."""
    calls = []
    real = kernels._cpu_rows
    if row_path == "compiled":
        kernels._cpu_rows = lambda: calls.append(1) or real()
    try:
        g = torch.Generator().manual_seed(5)
        h, w = torch.randn(300, 8, generator=g).requires_grad_(), torch.randn(50, 8, generator=g).requires_grad_()
        targets = torch.randint(0, 50, (300,), generator=g)
        words, idx = torch.unique(targets, return_inverse=True)
        runs = []
        for _ in range(2):
            nll, kl = kernels.output_loss(h, w, None, targets, w[words], w, idx, tau=2.0)
            runs.append([nll, kl, *torch.autograd.grad(nll + kl, (h, w))])
    finally:
        kernels._cpu_rows = real
    assert bool(calls) == (row_path == "compiled")
    for x, y in zip(*runs):
        assert torch.equal(x, y)
