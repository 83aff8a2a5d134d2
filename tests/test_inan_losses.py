"""Unit tests: Inan et al.'s augmented loss, the 6.2 loss, and the subspace distance."""

from __future__ import annotations

import math

import pytest
import torch

from replicate.inan.losses import (augmented_loss, augmented_loss_transcription, inan_total_loss,
                                   soft_targets_log, subspace_experiment_loss)
from replicate.inan.subspace import angle_distance, orthonormal_basis, principal_cosines, residual_distance


def _hand_kl(logits, targets, emb, tau):
    """J_aug by hand with plain Python floats (no torch softmax / kl_div)."""
    total = []
    for z, t in zip(logits.tolist(), targets.tolist()):
        u = emb[t].tolist()
        soft = [sum(ui * ei for ui, ei in zip(u, row)) / tau for row in emb.tolist()]
        ps = [math.exp(s) for s in soft]
        ps = [p / sum(ps) for p in ps]
        qs = [math.exp(v / tau) for v in z]
        qs = [q / sum(qs) for q in qs]
        total.append(sum(p * (math.log(p) - math.log(q)) for p, q in zip(ps, qs)))
    return total


def test_augmented_loss_matches_hand_computation():
    emb = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=torch.float64)
    logits = torch.tensor([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0]], dtype=torch.float64)
    targets = torch.tensor([2, 0])
    tau = 0.7
    hand = _hand_kl(logits, targets, emb, tau)
    got = augmented_loss(logits, targets, emb, tau, reduction="none")
    assert got.tolist() == pytest.approx(hand, rel=1e-12)
    assert float(augmented_loss(logits, targets, emb, tau)) == pytest.approx(sum(hand) / 2, rel=1e-12)
    assert float(augmented_loss(logits, targets, emb, tau, reduction="sum")) == pytest.approx(sum(hand))
    # one fully worked number: token 2 (target 0, u = [1, 0]) at tau = 1
    u_scores = [1.0, 0.0, 0.6]
    p = [math.exp(s) / sum(math.exp(x) for x in u_scores) for s in u_scores]
    q = [math.exp(s) / sum(math.exp(x) for x in [0.0, 3.0, 1.0]) for s in [0.0, 3.0, 1.0]]
    want = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))
    got1 = augmented_loss(logits[1:], targets[1:], emb, 1.0, reduction="none")
    assert float(got1[0]) == pytest.approx(want, rel=1e-12)


def test_augmented_loss_zero_when_prediction_equals_soft_target():
    torch.manual_seed(0)
    emb = torch.randn(7, 3, dtype=torch.float64)
    targets = torch.tensor([1, 4, 6])
    logits = emb[targets] @ emb.t() + 5.0  # constant shift: same softmax at every tau
    assert float(augmented_loss(logits, targets, emb, 1.0)) == pytest.approx(0.0, abs=1e-12)
    assert float(augmented_loss(logits, targets, emb, 2.0)) == pytest.approx(0.0, abs=1e-12)
    assert float(augmented_loss(2 * logits, targets, emb, 2.0)) > 1e-6  # sharper prediction


@pytest.mark.parametrize("tau", [0.5, 1.0, 10.0])
def test_gradient_wrt_logits_is_pred_minus_soft_over_tau(tau):
    torch.manual_seed(1)
    emb = torch.randn(11, 4, dtype=torch.float64)
    targets = torch.randint(0, 11, (2, 3))
    logits = torch.randn(2, 3, 11, dtype=torch.float64, requires_grad=True)
    augmented_loss(logits, targets, emb, tau, reduction="sum").backward()
    y_hat = torch.softmax(logits.detach() / tau, -1)
    y_soft = torch.softmax(emb[targets] @ emb.t() / tau, -1)
    torch.testing.assert_close(logits.grad, (y_hat - y_soft) / tau, rtol=1e-10, atol=1e-12)


def test_soft_target_grad_switch():
    torch.manual_seed(2)
    emb = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    logits = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([0, 1, 2, 5])
    augmented_loss(logits, targets, emb, 1.0).backward()
    assert emb.grad is None  # default: stop-gradient into the soft target
    augmented_loss(logits, targets, emb, 1.0, soft_target_grad=True).backward()
    assert emb.grad is not None and float(emb.grad.abs().sum()) > 0


def test_chunked_equals_unchunked():
    torch.manual_seed(3)
    emb = torch.randn(9, 4)
    logits = torch.randn(10, 9)
    targets = torch.randint(0, 9, (10,))
    a = augmented_loss(logits, targets, emb, 3.0)
    b = augmented_loss(logits, targets, emb, 3.0, chunk=3)
    torch.testing.assert_close(a, b)


def test_augmented_loss_refuses_bad_arguments_by_name():
    emb, logits, targets = torch.eye(3, dtype=torch.float64), torch.zeros(2, 3, dtype=torch.float64), torch.tensor([0, 1])
    with pytest.raises(ValueError, match="tau must be > 0, got 0"):
        augmented_loss(logits, targets, emb, 0.0)
    with pytest.raises(ValueError, match="reduction must be one of"):
        augmented_loss(logits, targets, emb, 1.0, reduction="avg")
    with pytest.raises(ValueError, match="embedding has 4 rows but logits have 3 classes"):
        augmented_loss(logits, targets, torch.eye(4, 3, dtype=torch.float64), 1.0)


def test_augmented_loss_per_token_keeps_the_batch_shape_with_more_tokens_than_words():
    """(T, B, |V|) logits with T * B = 24 tokens over 3 words: one value per token, shape (T, B), each the
    2-D computation's (so no token is dropped or cut by the vocabulary size), the transcription's too."""
    torch.manual_seed(10)
    emb = torch.randn(3, 2, dtype=torch.float64)
    logits, targets = torch.randn(6, 4, 3, dtype=torch.float64), torch.randint(0, 3, (6, 4))
    got = augmented_loss(logits, targets, emb, 0.7, reduction="none")
    assert got.shape == (6, 4)
    torch.testing.assert_close(augmented_loss_transcription(logits, targets, emb, 0.7), got)
    flat = augmented_loss(logits.reshape(24, 3), targets.reshape(24), emb, 0.7, reduction="none")
    torch.testing.assert_close(got.reshape(24), flat)
    assert flat.tolist() == pytest.approx(_hand_kl(logits.reshape(24, 3), targets.reshape(24), emb, 0.7), rel=1e-12)


def test_soft_target_takes_no_gradient_unless_asked():
    """By default (the paper) y~ is a constant: the embedding gets gradient only through the prediction."""
    emb = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    logits, targets = torch.randn(4, 5, dtype=torch.float64), torch.tensor([0, 1, 2, 3])
    for loss in (augmented_loss, augmented_loss_transcription):
        assert not loss(logits, targets, emb, 2.0).sum().requires_grad
        assert loss(logits, targets, emb, 2.0, soft_target_grad=True).sum().requires_grad
    assert not soft_targets_log(emb, targets, 2.0).requires_grad
    assert soft_targets_log(emb, targets, 2.0, soft_target_grad=True).requires_grad


def test_total_loss_and_subspace_loss():
    ce, j = torch.tensor(4.0), torch.tensor(0.25)
    assert float(inan_total_loss(ce, j, alpha=2.0)) == pytest.approx(4.5)
    assert subspace_experiment_loss(ce, j, beta=0.0, tau=10.0, vocab_size=100) is ce
    assert float(subspace_experiment_loss(ce, torch.tensor(float("nan")), 0.0, 10.0, 100)) == 4.0
    assert float(subspace_experiment_loss(ce, j, 1.0, 10.0, 100)) == pytest.approx(0.25 * 100 * 100)
    assert float(subspace_experiment_loss(ce, j, 0.5, 2.0, 10)) == pytest.approx(0.5 * 0.25 * 4 * 10 + 2.0)
    with pytest.raises(ValueError, match="beta must be in"):
        subspace_experiment_loss(ce, j, 1.5, 1.0, 10)


def test_angle_distance_same_orthogonal_and_basis_invariant():
    torch.manual_seed(4)
    a = torch.randn(50, 5, dtype=torch.float64)
    mix = torch.randn(5, 5, dtype=torch.float64) + 3 * torch.eye(5, dtype=torch.float64)
    assert angle_distance(a, a) == pytest.approx(0.0, abs=1e-6)
    assert angle_distance(a, a @ mix) == pytest.approx(0.0, abs=1e-6)  # other basis, same space
    eye = torch.eye(10, dtype=torch.float64)
    assert angle_distance(eye[:, :3], eye[:, 3:6]) == pytest.approx(1.0, abs=1e-12)
    b = torch.randn(50, 5, dtype=torch.float64)
    d = angle_distance(a, b)
    assert 0.0 < d < 1.0
    assert angle_distance(a @ mix, b @ torch.linalg.qr(torch.randn(5, 5, dtype=torch.float64))[0]) \
        == pytest.approx(d, abs=1e-9)
    # one shared direction of 2 -> cos^2 = (1, 0): d = sqrt(1 - 1/2)
    assert angle_distance(eye[:, :2], eye[:, [0, 5]]) == pytest.approx(math.sqrt(0.5), abs=1e-12)
    assert principal_cosines(eye[:, :2], eye[:, [0, 5]]).tolist() == pytest.approx([1.0, 0.0])


@pytest.mark.parametrize("angles", [(math.pi / 3, math.pi / 4), (0.3, 1.2, 0.7)])
def test_angle_distance_known_answer_between_zero_and_one(angles):
    """Spaces with chosen principal angles theta_i, hidden in a random basis of R^60 and random bases of each
    space: cosines are cos theta_i, and d = sqrt(1 - mean cos^2 theta_i)."""
    torch.manual_seed(7)
    k = len(angles)
    rot = torch.linalg.qr(torch.randn(60, 60, dtype=torch.float64))[0]
    theta = torch.tensor(angles, dtype=torch.float64)
    a = rot[:, :k]
    b = rot[:, :k] * torch.cos(theta) + rot[:, k:2 * k] * torch.sin(theta)
    mix_a, mix_b = (torch.randn(k, k, dtype=torch.float64) + 3 * torch.eye(k, dtype=torch.float64) for _ in "ab")
    cos = torch.cos(theta)
    assert principal_cosines(a @ mix_a, b @ mix_b).tolist() == pytest.approx(sorted(cos.tolist(), reverse=True),
                                                                             abs=1e-12)
    assert angle_distance(a @ mix_a, b @ mix_b) == pytest.approx(math.sqrt(1 - float((cos ** 2).mean())), abs=1e-12)


def test_residual_distance_known_answers():
    torch.manual_seed(5)
    a = torch.randn(60, 6, dtype=torch.float64)
    mix = torch.randn(6, 6, dtype=torch.float64) + 3 * torch.eye(6, dtype=torch.float64)
    assert residual_distance(a, a @ mix) == pytest.approx(0.0, abs=1e-9)  # W inside span(A)
    eye = torch.eye(12, dtype=torch.float64)
    assert residual_distance(eye[:, :3], eye[:, 3:6]) == pytest.approx(1.0, abs=1e-12)  # orthogonal
    # a known off-span energy fraction f: r = sqrt(f)
    q = torch.linalg.qr(torch.randn(60, 60, dtype=torch.float64))[0]
    inside, outside = q[:, :6], q[:, 6:12]
    f = 0.03
    w = math.sqrt(1 - f) * inside @ torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64))[0] \
        + math.sqrt(f) * outside @ torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64))[0]
    assert residual_distance(inside, w) == pytest.approx(math.sqrt(f), abs=1e-9)
    with pytest.raises(ValueError, match="^W is zero: its relative residual is undefined$"):
        residual_distance(a, torch.zeros_like(a))


def test_orthonormal_basis_reveals_the_rank_at_any_scale():
    """A 50 x 6 matrix of rank 3: a basis of 3 orthonormal columns spanning it, the same at scale 1e-8 and
    1e8 (the tolerance is relative); a single column is its own direction; a zero matrix has no basis."""
    torch.manual_seed(8)
    a = torch.randn(50, 3, dtype=torch.float64) @ torch.randn(3, 6, dtype=torch.float64)
    for scale in (1.0, 1e-8, 1e8):
        q = orthonormal_basis(scale * a)
        assert q.shape == (50, 3), scale
        torch.testing.assert_close(q.t() @ q, torch.eye(3, dtype=torch.float64))
        torch.testing.assert_close(q @ (q.t() @ a), a)  # a lies in span(q)
    assert orthonormal_basis(a[:, :1] @ torch.ones(1, 4, dtype=torch.float64)).shape == (50, 1)  # rank 1
    column = torch.zeros(50, 1, dtype=torch.float64)
    column[7] = -2.0
    assert orthonormal_basis(column).abs().squeeze().tolist() == [1.0 if i == 7 else 0.0 for i in range(50)]
    with pytest.raises(ValueError, match="^matrix has rank 0: its column space is empty$"):
        orthonormal_basis(torch.zeros(50, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="R\\^50 and R\\^40"):
        principal_cosines(a, a[:40])


def test_distances_of_float32_matrices_are_computed_in_float64():
    """float32 inputs give the float64 answer (to 1e-12), not float32's ~1e-7."""
    torch.manual_seed(9)
    a, w = torch.randn(200, 8), torch.randn(200, 8) + 0.1 * torch.randn(200, 1)
    assert residual_distance(a, w) == pytest.approx(residual_distance(a.double(), w.double()), abs=1e-12)
    assert angle_distance(a, w) == pytest.approx(angle_distance(a.double(), w.double()), abs=1e-12)


def test_a_cosine_past_one_from_roundoff_reads_one(monkeypatch):
    """float64 SVD can return 1.0000000000000002 for a space and itself in another basis (whether it does
    depends on the BLAS threads): such a value is clamped to 1, so the angle distance stays defined."""
    monkeypatch.setattr(torch.linalg, "svdvals", lambda m: torch.tensor([1.0 + 2e-16, 1.0 + 4e-16], dtype=m.dtype))
    a = torch.randn(20, 2, dtype=torch.float64)
    assert principal_cosines(a, a).tolist() == [1.0, 1.0]
    assert angle_distance(a, a) == 0.0


def test_residual_and_angle_distance_disagree_on_low_energy_directions():
    """W with 25 of its 30 columns inside span(A) and 5 small random ones: about 1 % of its energy is off
    the span, so the residual reads ~0.1, but 5 of the 30 directions of span(W) are (nearly) orthogonal to
    span(A), so the principal-angle distance reads ~sqrt(5/30) = 0.41."""
    torch.manual_seed(6)
    n, d = 2000, 30
    a = torch.randn(n, d, dtype=torch.float64)
    w = torch.cat([a @ torch.randn(d, 25, dtype=torch.float64), 1.2 * torch.randn(n, 5, dtype=torch.float64)], 1)
    off = 1 - (torch.linalg.norm(orthonormal_basis(a).t() @ w) / torch.linalg.norm(w)) ** 2
    r, ang = residual_distance(a, w), angle_distance(a, w)
    assert r == pytest.approx(math.sqrt(float(off)), rel=1e-9) and 0.005 < float(off) < 0.02
    assert r < 0.15 and ang == pytest.approx(math.sqrt(5 / 30), abs=0.02)

@pytest.mark.parametrize("tau", [2.0, 10.0])
def test_scaled_augmented_loss_is_a_centred_regression_when_logits_are_small(tau):
    """With unit-norm embedding rows the soft-target logits E[t] E^T / tau lie in [-1/tau, 1/tau], so
    tau^2 |V| J_aug ~ 0.5 * ||C(z - E[t] E^T)||^2 per token (C = centring over the vocabulary): the 6.2
    objective barely depends on tau once tau >= 2 (README, section 6.2); exact as tau -> infinity."""
    torch.manual_seed(0)
    vocab, d = 2000, 64
    emb = torch.nn.functional.normalize(torch.randn(vocab, d, dtype=torch.float64), dim=1)
    targets = torch.randint(0, vocab, (16,))
    logits = 0.1 * torch.randn(16, vocab, dtype=torch.float64)
    scaled = tau ** 2 * vocab * augmented_loss(logits, targets, emb, tau, reduction="none")
    resid = logits - emb[targets] @ emb.t()
    resid = resid - resid.mean(dim=1, keepdim=True)
    quadratic = 0.5 * (resid ** 2).sum(dim=1)
    rel = ((scaled - quadratic).abs() / quadratic).max().item()
    assert rel < (0.03 if tau == 2.0 else 0.005)  # measured: 0.010 and 0.0017


@pytest.mark.parametrize("soft_target_grad", [False, True])
def test_augmented_loss_matches_plain_transcription_value_and_gradients(soft_target_grad):
    """Repeated target words (the soft target is formed once per distinct word): same value, same
    gradients into the logits and the embedding as the per-token transcription."""
    torch.manual_seed(4)
    vocab, tau = 13, 2.5
    targets = torch.tensor([3, 7, 3, 3, 0, 12, 7, 5])
    grads = []
    for fn in (lambda z, e: augmented_loss(z, targets, e, tau, soft_target_grad, reduction="none"),
               lambda z, e: augmented_loss_transcription(z, targets, e, tau, soft_target_grad)):
        torch.manual_seed(5)
        emb = torch.randn(vocab, 4, dtype=torch.float64, requires_grad=True)
        logits = torch.randn(8, vocab, dtype=torch.float64, requires_grad=True)
        weights = torch.linspace(0.5, 2.0, 8, dtype=torch.float64)  # a non-uniform upstream gradient
        value = fn(logits, emb)
        (value * weights).sum().backward()
        grads.append((value.detach(), logits.grad, emb.grad))
    (v, gz, ge), (v0, gz0, ge0) = grads
    torch.testing.assert_close(v, v0, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(gz, gz0, rtol=1e-10, atol=1e-13)
    if soft_target_grad:
        torch.testing.assert_close(ge, ge0, rtol=1e-10, atol=1e-13)
    else:
        assert ge is None and ge0 is None


def test_augmented_loss_passes_gradcheck_with_gradient_into_the_soft_target():
    torch.manual_seed(6)
    emb = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    logits = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([1, 4, 1, 0, 4])
    assert torch.autograd.gradcheck(lambda z, e: augmented_loss(z, targets, e, 1.7, True, reduction="none"),
                                    (logits, emb))


def test_transcription_matches_hand_computation():
    emb = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=torch.float64)
    logits = torch.tensor([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0]], dtype=torch.float64)
    targets = torch.tensor([2, 0])
    got = augmented_loss_transcription(logits, targets, emb, 0.7)
    assert got.tolist() == pytest.approx(_hand_kl(logits, targets, emb, 0.7), rel=1e-12)


def test_bench_loss_times_both_forms(tmp_path):
    import json

    from replicate.inan.cli import main

    out = tmp_path / "bench.json"
    assert main(["bench-loss", "--tokens", "40", "--vocab", "300", "--dim", "8", "--repeats", "2",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["distinct_targets"] < 40  # Zipf targets repeat, which the soft-target reuse relies on
    for grad in ("false", "true"):
        timing = result["soft_target_grad"][grad]
        assert [len(timing["ms"][k]) for k in ("ours", "transcription")] == [2, 2]
        assert timing["speedup"] == pytest.approx(timing["median_ms"]["transcription"] / timing["median_ms"]["ours"])
