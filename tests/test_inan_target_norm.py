"""The AL knob ``target_norm``: every word vector at a fixed norm inside the soft target only."""

from __future__ import annotations

import math

import pytest
import torch

from replicate.errors import ReplicateError
from replicate.inan.losses import augmented_loss, augmented_loss_transcription, soft_targets_log, target_embedding
from replicate.inan.soft_target import summarise, word_stats
from replicate.inan.train import AugmentedLoss, run_settings
from replicate.lstm import kernels


def test_the_fixed_norm_makes_the_soft_target_depend_on_directions_only():
    torch.manual_seed(0)
    emb = torch.randn(30, 6, dtype=torch.float64)
    scaled = emb * torch.rand(30, 1, dtype=torch.float64).mul(9).add(0.1)  # every row its own positive factor
    targets = torch.arange(30)
    same = soft_targets_log(emb, targets, 2.0, target_norm=3.0)
    torch.testing.assert_close(soft_targets_log(scaled, targets, 2.0, target_norm=3.0), same)
    # without the knob the row norms matter (the paper's y~)
    assert (soft_targets_log(scaled, targets, 2.0) - soft_targets_log(emb, targets, 2.0)).abs().max() > 0.1
    # by hand: logits r^2 cos(E[t], E[v]) / tau
    unit = emb / emb.norm(dim=1, keepdim=True)
    torch.testing.assert_close(same, torch.log_softmax(9.0 * unit @ unit.t() / 2.0, dim=-1))


@pytest.mark.parametrize("norm", [0.0, -1.0])
def test_a_norm_that_is_not_positive_is_refused(norm):
    with pytest.raises(ValueError, match=f"target_norm must be > 0 or None, got {norm}"):
        target_embedding(torch.ones(3, 2), norm)


def test_any_positive_norm_rescales_every_row_to_it():
    emb = torch.tensor([[3.0, 4.0], [0.0, 0.5], [0.0, 0.0]])
    torch.testing.assert_close(target_embedding(emb, 0.5), torch.tensor([[0.3, 0.4], [0.0, 0.5], [0.0, 0.0]]))
    assert target_embedding(emb, None) is emb


def test_orthogonal_words_have_the_closed_form_mass_whatever_their_norms():
    """E = diag(s) with arbitrary s > 0: logits r^2 / tau on the target and 0 elsewhere."""
    v, r, tau = 12, 2.5, 2.0
    emb = torch.diag(torch.linspace(0.05, 7.0, v, dtype=torch.float64))
    a = math.exp(r * r / tau)
    st = word_stats(emb, tau, top_k=1, target_norm=r)
    assert st["target_mass"] == pytest.approx(torch.full((v,), a / (a + v - 1), dtype=torch.float64))


def test_a_large_norm_puts_the_target_words_mass_near_one():
    torch.manual_seed(1)
    emb = torch.randn(200, 16) * 0.05  # small, trained-like norms: y~ nearly uniform at tau 10
    targets = torch.randint(0, 200, (500,))
    flat = summarise(emb, 10.0, targets)
    sharp = summarise(emb, 10.0, targets, target_norm=30.0)
    assert flat["token_entropy_ratio"] > 0.999 and flat["token_target_mass"] < 2 / 200
    assert sharp["token_target_mass"] > 0.99 and sharp["token_entropy_ratio"] < 0.01
    assert sharp["target_norm"] == 30.0 and sharp["embedding_norm_mean"] == pytest.approx(flat["embedding_norm_mean"])


@pytest.mark.parametrize("grad", [False, True])
def test_value_and_gradients_match_the_transcription_and_leave_the_embedding_alone(grad):
    torch.manual_seed(2)
    emb = torch.randn(11, 4, dtype=torch.float64, requires_grad=True)
    before = emb.detach().clone()
    logits = torch.randn(9, 11, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([1, 1, 3, 5, 5, 5, 0, 10, 3])
    fast = augmented_loss(logits, targets, emb, 2.0, soft_target_grad=grad, target_norm=4.0)
    ref = augmented_loss_transcription(logits, targets, emb, 2.0, soft_target_grad=grad, target_norm=4.0).mean()
    torch.testing.assert_close(fast, ref)
    g_fast = torch.autograd.grad(fast, (logits, emb), allow_unused=True)
    g_ref = torch.autograd.grad(ref, (logits, emb), allow_unused=True)
    torch.testing.assert_close(g_fast[0], g_ref[0])
    if grad:  # the gradient reaches E through the rescaling; a rescaled row's gradient is orthogonal to it
        torch.testing.assert_close(g_fast[1], g_ref[1])
        assert float((g_fast[1] * emb.detach()).sum(1).abs().max()) < 1e-10
    else:
        assert g_fast[1] is None and g_ref[1] is None
    assert torch.equal(emb.detach(), before)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("target_norm, grad", [(None, False), (4.0, False), (4.0, True)])
def test_the_reference_backend_gives_the_fast_paths_loss_and_gradients(reduction, target_norm, grad):
    """REPLICATE_KERNELS=reference swaps in the per-token transcription: the same loss, reduced the same way,
    with the knob and the soft target's gradient passed on (once dropped: the reference path ignored the norm)."""
    torch.manual_seed(3)
    emb = torch.randn(11, 4, dtype=torch.float64, requires_grad=True)
    logits = torch.randn(3, 3, 11, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([[1, 1, 3], [5, 5, 0], [0, 10, 3]])
    out = {}
    for name in ("fast", "reference"):
        with kernels.use(name):
            loss = augmented_loss(logits, targets, emb, 2.0, soft_target_grad=grad, reduction=reduction,
                                  target_norm=target_norm)
        grads = torch.autograd.grad(loss.sum(), (logits, emb), allow_unused=True)
        out[name] = (loss, *grads)
    assert out["reference"][0].shape == (torch.Size([3, 3]) if reduction == "none" else torch.Size([]))
    for f, r in zip(out["fast"], out["reference"]):
        torch.testing.assert_close(r, f)
    assert (out["reference"][2] is not None) == grad


def test_the_knob_is_part_of_the_loss_state_and_reaches_it_from_the_config():
    size = {"hidden_size": 8, "init_scale": 0.1, "dropout_rate": 0.3, "batch_size": 2, "bptt": 5, "lr": 1.0,
            "epochs": 1, "max_epoch": 1, "decay": 0.5, "clip": 5.0, "tau": 2.0, "gamma": 2.5}
    engine, al = run_settings(size, "small", "al", seed=1, overrides={"target_norm": 4.5})
    assert al.target_norm == 4.5 and al.alpha == pytest.approx(5.0) and "target_norm" not in engine
    assert run_settings(size, "small", "al", seed=1)[1].target_norm is None
    assert al.state_dict()["target_norm"] == 4.5
    # a checkpoint from before the knob trained the paper's y~: only target_norm None resumes it
    old = {"tau": 2.0, "gamma": 2.5, "soft_target_grad": False, "prediction_bias": False, "tau_power": 1.0}
    AugmentedLoss(2.0, 2.5).load_state_dict(old)
    with pytest.raises(ReplicateError):
        al.load_state_dict(old)
    with pytest.raises(ReplicateError):
        AugmentedLoss(2.0, 2.5, target_norm=0.0)


def test_the_training_hook_uses_the_knob():
    from replicate.lstm.config import resolve
    from replicate.lstm.model import LSTMLM

    size = {"hidden_size": 8, "init_scale": 0.1, "dropout_rate": 0.3, "batch_size": 2, "bptt": 5, "lr": 1.0,
            "epochs": 1, "max_epoch": 1, "decay": 0.5, "clip": 5.0, "tau": 2.0, "gamma": 2.5, "target_norm": 4.5}
    engine, al = run_settings(size, "small", "real", seed=1)
    model = LSTMLM(resolve(engine, 13)[0])
    torch.manual_seed(3)
    logits, targets = torch.randn(6, 13), torch.randint(0, 13, (6,))
    got = al(logits, targets, None, model)
    torch.testing.assert_close(got, 5.0 * augmented_loss(logits, targets, model.embedding.weight, 2.0, target_norm=4.5))
    assert float((got - 5.0 * augmented_loss(logits, targets, model.embedding.weight, 2.0)).abs()) > 1e-4
