"""Unit tests of the Llama-style decoder, its initialisation and the initial-loss theory."""

from __future__ import annotations

import math

import pytest
import torch

from replicate.llama import (Block, HalfSwap, ModelConfig, TransformerLM, draw_, mlp_hidden,
                                         param_generator, resolve_std, rope_tables)
from replicate.initial_loss.theory import essay_table, initial_loss, self_logit

SMALL = dict(vocab_size=500, d_model=32, n_layers=2, head_dim=16)


def tokens(n=500, batch=2, length=17, seed=0):
    return torch.randint(0, n, (batch, length), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------- theory

def test_theory_matches_hand_values():
    # d*sigma = 64/8 = 8: ln(e^8 + 31999) = ln(2980.958 + 31999) = ln(34979.958) = 10.46254
    assert initial_loss(64, 1 / 8, 32000) == pytest.approx(10.46254, abs=1e-4)
    # rescaled, d = 4096, sigma = 0.02: sigma*sqrt(d) = 1.28: ln(e^1.28 + 31999) = ln(32002.597) = 10.37360
    assert initial_loss(4096, 0.02, 32000, rescale=True) == pytest.approx(10.37360, abs=1e-4)
    # self-logit 0 and n = 2: ln(1 + 1) = ln 2
    assert initial_loss(10, 0.0, 2) == pytest.approx(math.log(2))
    # huge d*sigma: no overflow, loss -> d*sigma
    assert initial_loss(8192, 0.02, 32000) == pytest.approx(163.84, abs=1e-6)
    assert self_logit(1024, 0.02) == pytest.approx(20.48) and self_logit(1024, 0.02, True) == pytest.approx(0.64)


def test_refined_theory_eps_and_spread():
    # eps shrinks the self-logit by sigma / sqrt(sigma^2 + eps): sigma^2 = eps -> factor 1/sqrt(2)
    assert self_logit(1000, 1e-3, eps=1e-6) == pytest.approx(1.0 / math.sqrt(2))
    assert initial_loss(1000, 1e-3, 100, eps=1e-6) == pytest.approx(math.log(math.exp(1 / math.sqrt(2)) + 99))
    # spread: other logits ~ N(0, s^2/d): d = 100, s = 10 -> v = 1 -> (n-1) * e^0.5
    assert initial_loss(100, 0.1, 50, spread=True) == pytest.approx(math.log(math.exp(10) + 49 * math.exp(0.5)))


def test_resolve_std_names():
    assert resolve_std("inv_sqrt_d", 1024, 32000) == pytest.approx(1 / 32)
    assert resolve_std("log_n_over_d", 1000, 32000) == pytest.approx(math.log(32000) / 1000)
    assert resolve_std(0.02, 4096, 32000) == 0.02
    with pytest.raises(ValueError):
        resolve_std("sqrt_d", 64, 10)


def test_essay_table_columns_and_values():
    """Every column of two rows against known answers: std 1/sqrt(d) at d = 4096 (d sigma = 64, sigma sqrt(d) = 1)
    and std log(n)/d (d sigma = log n, so exp(d sigma) = n)."""
    t = essay_table([1024, 4096], [0.02, "inv_sqrt_d", "log_n_over_d"], 32000)
    assert len(t) == 6 and list(t["std"].unique()) == ["0.02", "inv_sqrt_d", "log_n_over_d"]
    log_n = math.log(32000)
    known = {
        ("inv_sqrt_d", 4096): {"sigma": 1 / 64, "n": 32000, "d_sigma": 64.0, "exp_d_sigma": math.exp(64.0),
                               "log10_exp_d_sigma": 64 / math.log(10), "exp_d_sigma_over_n": math.exp(64.0) / 32000,
                               "log_n": log_n, "theory_loss": 64 + math.log1p(31999 * math.exp(-64.0)),
                               "theory_loss_rescaled": math.log(math.e + 31999)},
        ("log_n_over_d", 1024): {"sigma": log_n / 1024, "n": 32000, "d_sigma": log_n, "exp_d_sigma": 32000.0,
                                 "log10_exp_d_sigma": math.log10(32000), "exp_d_sigma_over_n": 1.0, "log_n": log_n,
                                 "theory_loss": math.log(63999),
                                 "theory_loss_rescaled": math.log(math.exp(log_n / 32) + 31999)},
    }
    for (std, d), values in known.items():
        row = t[(t["std"] == std) & (t["d"] == d)].iloc[0]
        assert {k: row[k] for k in values} == pytest.approx(values, rel=1e-12), (std, d)


# ----------------------------------------------------------------------------- model

def test_mlp_hidden_matches_llama():
    assert mlp_hidden(4096) == 11008 and mlp_hidden(2048) == 5632


def test_tied_output_shares_storage_and_counts_once():
    tied = TransformerLM(ModelConfig(**SMALL, tied=True), seed=1)
    assert tied.head.out.weight is tied.embed.weight
    assert tied.head.out.weight.data_ptr() == tied.embed.weight.data_ptr()
    moved = tied.to(torch.float64).to(torch.float32)
    assert moved.head.out.weight is moved.embed.weight
    untied = TransformerLM(ModelConfig(**SMALL, tied=False), seed=1)
    n_tied = sum(p.numel() for p in tied.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied - n_tied == 500 * 32
    assert torch.equal(untied.embed.weight, tied.embed.weight)         # same seed, same embedding
    assert not torch.equal(untied.head.out.weight, untied.embed.weight)


def test_rescale_multiplies_hidden_state_by_inverse_sqrt_d():
    cfg = ModelConfig(**SMALL)
    plain, scaled = TransformerLM(cfg, seed=3), TransformerLM(cfg.with_(rescale=True), seed=3)
    x = torch.randn(2, 5, 32)
    torch.testing.assert_close(scaled.head.hidden(x), plain.head.hidden(x) / math.sqrt(32), rtol=1e-6, atol=0)


def test_half_swap_shuffle():
    x = torch.arange(8.0).view(1, 8)
    swap = HalfSwap()
    assert swap(x).tolist() == [[4, 5, 6, 7, 0, 1, 2, 3]]
    assert torch.equal(swap(swap(x)), x) and not list(swap.parameters())
    model = TransformerLM(ModelConfig(**SMALL, mixer="shuffle", zero_branches=True), seed=0)
    h = model.head.hidden(model.embed.weight[:3])
    expected = model.head.norm(model.embed.weight[:3])
    assert torch.equal(h[:, :16], expected[:, 16:]) and torch.equal(h[:, 16:], expected[:, :16])


def test_shuffle_and_orthogonal_remove_the_tied_self_logit():
    cfg = ModelConfig(vocab_size=2000, d_model=256, n_layers=1, zero_branches=True, std=0.02)
    inp = tokens(2000, 2, 33)
    means = {}
    for mixer in ("none", "shuffle", "orthogonal"):
        m = TransformerLM(cfg.with_(mixer=mixer), seed=0)
        with torch.no_grad():
            _, _, sl = m(inp[:, :-1], inp[:, 1:])
        means[mixer] = sl.mean().item()
    assert means["none"] == pytest.approx(256 * 0.02, rel=0.05)     # d*sigma = 5.12
    assert abs(means["shuffle"]) < 1.0 and abs(means["orthogonal"]) < 1.0


def test_orthogonal_mixer_is_orthogonal():
    m = TransformerLM(ModelConfig(**SMALL, mixer="orthogonal"), seed=0)
    q = m.head.mixer.weight.detach()
    torch.testing.assert_close(q @ q.T, torch.eye(32), atol=1e-5, rtol=0)


def test_zero_branch_block_is_an_exact_identity():
    cfg = ModelConfig(**SMALL, zero_branches=True, std="inv_sqrt_d")
    model = TransformerLM(cfg, seed=0)
    x = torch.randn(2, 9, 32)
    rope = rope_tables(9, 16, cfg.rope_base)
    for block in model.blocks:
        assert torch.equal(block(x, rope), x)
    assert torch.count_nonzero(model.blocks[0].attn.wo.weight) == 0
    assert torch.count_nonzero(model.blocks[0].mlp.w_down.weight) == 0
    assert torch.count_nonzero(model.blocks[0].attn.wq.weight) > 0
    normal = TransformerLM(cfg.with_(zero_branches=False), seed=0)
    assert not torch.equal(normal.blocks[0](x, rope), x)


def test_truncated_normal_is_truncated_and_seeded():
    t = draw_(torch.empty(200_000), 0.5, "trunc_normal", param_generator(0, "w"))
    assert t.abs().max() <= 1.5 and t.std().item() == pytest.approx(0.5 * 0.9866, rel=0.02)
    u = draw_(torch.empty(200_000), 0.5, "normal", param_generator(0, "w"))
    assert u.abs().max() > 1.5 and u.std().item() == pytest.approx(0.5, rel=0.02)
    assert torch.equal(t, draw_(torch.empty(200_000), 0.5, "trunc_normal", param_generator(0, "w")))
    assert not torch.equal(u, draw_(torch.empty(200_000), 0.5, "normal", param_generator(1, "w")))


def test_every_matrix_gets_the_configured_std():
    cfg = ModelConfig(vocab_size=2000, d_model=128, n_layers=1, std="inv_sqrt_d", tied=False)
    m = TransformerLM(cfg, seed=0)
    for name, p in m.named_parameters():
        if name.endswith("norm.weight"):
            assert torch.equal(p, torch.ones_like(p)), name
        else:
            assert p.std().item() == pytest.approx(1 / math.sqrt(128), rel=0.05), name


def test_config_rejects_bad_widths():
    with pytest.raises(ValueError):
        ModelConfig(vocab_size=10, d_model=30, head_dim=4)  # 7 heads do not divide 30
    with pytest.raises(ValueError):
        ModelConfig(vocab_size=10, d_model=32, init="uniform")


def test_block_type_has_branch_output_names():
    names = {n for n, _ in Block(ModelConfig(**SMALL)).named_parameters()}
    assert {"attn.wo.weight", "mlp.w_down.weight"} <= names
