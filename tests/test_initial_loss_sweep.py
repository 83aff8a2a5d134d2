"""Streamed sweep == whole model; tokens, grids, tables and the model-family computations."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from replicate.errors import ReplicateError
from replicate.initial_loss import tables
from replicate.llama import ModelConfig, TransformerLM
from replicate.initial_loss.sweep import expand_grid, run_width, sample_tokens, streamed_losses

HEADS = [
    {"tied": True, "rescale": False, "mixer": "none"},
    {"tied": True, "rescale": True, "mixer": "none"},
    {"tied": False, "rescale": False, "mixer": "none"},
    {"tied": False, "rescale": True, "mixer": "orthogonal"},
    {"tied": True, "rescale": False, "mixer": "shuffle"},
]


@pytest.mark.parametrize("zero_branches,init,std", [(True, "normal", 0.02), (False, "trunc_normal", "inv_sqrt_d"),
                                                    (False, "normal", "log_n_over_d")])
def test_streamed_equals_whole_model_exactly(zero_branches, init, std):
    trunk = ModelConfig(vocab_size=300, d_model=32, n_layers=3, head_dim=16, std=std, init=init,
                        zero_branches=zero_branches)
    toks = sample_tokens(300, 2, 13, seed=4)
    streamed = streamed_losses(trunk, HEADS, toks, seed=7, chunk=5)   # chunking must not matter
    for opts, got in zip(HEADS, streamed):
        model = TransformerLM(trunk.with_(**opts), seed=7)
        with torch.no_grad():
            loss, ce, self_logit = model(toks[:, :-1], toks[:, 1:], chunk=5)
        assert got["loss"] == loss.item(), opts
        assert got["self_logit_mean"] == self_logit.mean().item(), opts


def test_different_seed_gives_different_loss():
    trunk = ModelConfig(vocab_size=300, d_model=32, n_layers=2, head_dim=16)
    toks = sample_tokens(300, 2, 13, seed=0)
    a = streamed_losses(trunk, HEADS[:1], toks, seed=0)[0]["loss"]
    b = streamed_losses(trunk, HEADS[:1], toks, seed=1)[0]["loss"]
    assert a != b


def test_zero_branch_tied_loss_follows_theory_and_rescale_gives_log_n():
    n, d = 32000, 256          # the essay's n; the theory ignores the spread of the other logits
    trunk = ModelConfig(vocab_size=n, d_model=d, n_layers=1, zero_branches=True, std=0.02)
    toks = sample_tokens(n, 2, 65, seed=0)
    tied, rescaled = streamed_losses(trunk, HEADS[:2], toks, seed=0)
    from replicate.initial_loss.theory import initial_loss

    assert tied["loss"] == pytest.approx(float(initial_loss(d, 0.02, n)), abs=0.1)
    assert rescaled["loss"] == pytest.approx(math.log(n), abs=0.02)


def test_sample_tokens_uniform_and_zipf():
    u = sample_tokens(1000, 4, 50, seed=3)
    assert u.shape == (4, 50) and u.min() >= 0 and u.max() < 1000
    assert torch.equal(u, sample_tokens(1000, 4, 50, seed=3))
    z = sample_tokens(1000, 20, 100, seed=3, dist="zipf", zipf_exponent=1.2)
    assert (z == 0).float().mean() > 0.1 > (u == 0).float().mean()   # token 0 is the most frequent
    with pytest.raises(ValueError):
        sample_tokens(10, 1, 5, 0, dist="gauss")


def test_expand_grid_crosses_lists():
    grid = expand_grid([{"std": [0.02, "inv_sqrt_d"], "init": ["normal"], "branches": ["zero", "normal"]},
                        {"std": [0.02], "init": ["trunc_normal"], "branches": ["normal"]}])
    assert len(grid) == 5 and {"std": 0.02, "init": "trunc_normal", "branches": "normal"} in grid


def _section(**over):
    base = {"vocab_size": 200, "n_layers": 1, "head_dim": 16, "seeds": [0, 1], "batch_size": 1, "seq_len": 8,
            "token_distributions": ["uniform"], "zipf_exponent": 1.0, "chunk_tokens": 64,
            "trunks": [{"std": [0.02, "inv_sqrt_d"], "init": ["normal"], "branches": ["zero"]}], "heads": HEADS[:2]}
    base.update(over)
    return base


def test_run_width_tidy_rows_and_summary():
    frame = run_width(_section(), 32, log=lambda _: None)
    assert len(frame) == 2 * 2 * 2                      # seeds x trunks x heads
    assert set(frame["head"]) == {"tied", "tied+rescale"}
    frame["protocol"] = "test"
    summary = tables.summarise(frame, "test")
    assert len(summary) == 4 and (summary["n_seeds"] == 2).all()
    assert set(summary["reference_kind"]) == {"theory", "theory_rescaled"}
    row = summary[(summary["std"] == "0.02") & (summary["head"] == "tied")].iloc[0]
    assert row["reference_loss"] == pytest.approx(math.log(math.exp(32 * 0.02) + 199))
    assert row["diff"] == pytest.approx(row["loss_mean"] - row["reference_loss"])
    f = tables.findings(summary)
    assert set(f["max_abs_diff_theory"]) == {"0.02", "inv_sqrt_d"}


def test_families_table_from_the_reference_csv(repo_root):
    fam = tables.embedding_table(tables.load_families(repo_root / "paper/reference/model_families.csv"))
    assert fam["source"].str.len().min() > 5
    assert (fam["embedding_params"] < fam["total_params"]).all()
    gpt2 = fam[fam["model"] == "gpt2"].iloc[0]
    assert gpt2["embedding_share"] == pytest.approx(50257 * 768 / 124439808)
    assert gpt2["pp_tied_grad_bytes_bf16"] == 50257 * 768 * 2
    llama = fam[fam["model"] == "Llama-2-7b"].iloc[0]
    assert llama["embedding_params"] == 2 * 32000 * 4096 and not llama["tied"]


def test_families_rejects_rows_without_source(tmp_path):
    p = tmp_path / "f.csv"
    pd.DataFrame([{"family": "x", "model": "y", "vocab_size": 10, "d_model": 4, "n_layers": 1, "tied": True,
                   "total_params": 100, "source": ""}]).to_csv(p, index=False)
    with pytest.raises(ReplicateError):
        tables.load_families(p)
