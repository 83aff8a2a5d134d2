"""Streamed initial-loss evaluation: the model never exists whole.

The model is random and used once, so we keep only what must persist -- the embedding, which
is also the tied output matrix -- and build, apply and free one block at a time. Every parameter is
drawn from its own generator seeded by (seed, parameter name) (``model.init_tensor_``), so the
streamed result equals ``TransformerLM(cfg, seed)`` exactly (tests/test_initial_loss_sweep.py).

One pass through the blocks (a "trunk": width, std, init, branches) serves every output-side
variant (tied/untied, rescale, mixer): those only change the head, so the residual stream is
computed once per trunk and each head is applied to it. Untied output matrices and the orthogonal
mixer are drawn once per trunk and reused across heads.
"""

from __future__ import annotations

import itertools
import time
from typing import Callable, Iterable

import pandas as pd
import torch
import torch.nn as nn

from replicate.llama import (Block, Head, ModelConfig, init_parameters, init_tensor_,
                                         param_generator, rope_tables, skeleton)

BRANCHES = {"zero": True, "normal": False}


def sample_tokens(n: int, batch: int, length: int, seed: int, dist: str = "uniform",
                  zipf_exponent: float = 1.0) -> torch.Tensor:
    """(batch, length) random token ids: uniform over n, or Zipf p(k) ~ 1/k^a (k = 1..n)."""
    gen = param_generator(seed, f"tokens/{dist}")
    if dist == "uniform":
        return torch.randint(0, n, (batch, length), generator=gen)
    if dist == "zipf":
        p = torch.arange(1, n + 1, dtype=torch.float64).pow(-zipf_exponent)
        return torch.multinomial(p / p.sum(), batch * length, replacement=True, generator=gen).view(batch, length)
    raise ValueError(f"unknown token distribution {dist!r} (uniform | zipf)")


def build_head(cfg: ModelConfig, seed: int, embedding: nn.Parameter, cache: dict, device) -> Head:
    """A Head whose parameters are initialised by name (``head.*``), tied to ``embedding`` if
    ``cfg.tied``; parameters already in ``cache`` (same trunk) are reused, not redrawn."""
    with torch.device("meta"):
        head = Head(cfg)
    for name, meta in list(head.named_parameters()):
        full = "head." + name
        if cfg.tied and name == "out.weight":
            param = embedding
        else:
            if full not in cache:
                t = init_tensor_(full, torch.empty(meta.shape), cfg, seed)
                cache[full] = nn.Parameter(t.to(device), requires_grad=False)
            param = cache[full]
        owner, _, attr = name.rpartition(".")
        setattr(head.get_submodule(owner), attr, param)
    return head


@torch.no_grad()
def streamed_losses(trunk: ModelConfig, heads: list[dict], tokens: torch.Tensor, seed: int,
                    device="cpu", chunk: int = 1024) -> list[dict]:
    """Initial loss of ``trunk.with_(**h)`` for every head option dict ``h`` (tied, rescale, mixer).

    Peak memory: embedding + one block + the untied output matrix (if any) + activations."""
    device = torch.device(device)
    tokens = tokens.to(device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    embed = skeleton(lambda: nn.Embedding(trunk.vocab_size, trunk.d_model))
    init_parameters(embed, trunk, seed, prefix="embed.")
    embed = embed.to(device).requires_grad_(False)
    rope = rope_tables(inputs.shape[1], trunk.d_model // trunk.n_heads, trunk.rope_base, device)
    x = embed(inputs)
    for i in range(trunk.n_layers):
        block = skeleton(lambda: Block(trunk))
        init_parameters(block, trunk, seed, prefix=f"blocks.{i}.")
        x = block.to(device)(x, rope)
        del block
    cache: dict = {}
    out = []
    for opts in heads:
        cfg = trunk.with_(**opts)
        ce, self_logit = build_head(cfg, seed, embed.weight, cache, device).token_losses(x, inputs, targets, chunk)
        out.append({**opts, "loss": ce.mean().item(), "loss_token_std": ce.std().item(),
                    "self_logit_mean": self_logit.mean().item()})
    return out


def expand_grid(grid: Iterable[dict]) -> list[dict]:
    """Cross the list values of each dict (like sklearn's ParameterGrid); concatenate the dicts."""
    combos = []
    for entry in grid:
        keys = sorted(entry)
        values = [v if isinstance(v, list) else [v] for v in (entry[k] for k in keys)]
        combos += [dict(zip(keys, vs)) for vs in itertools.product(*values)]
    return combos


def run_width(section: dict, width: int, device="cpu", log: Callable[[str], None] = print) -> pd.DataFrame:
    """All trunks x heads x seeds x token distributions of the ``initial_loss`` config at one width.
    One tidy row per (configuration, seed)."""
    n, layers = section["vocab_size"], section["n_layers"]
    rows = []
    for seed in section["seeds"]:
        for dist in section["token_distributions"]:
            tokens = sample_tokens(n, section["batch_size"], section["seq_len"] + 1, seed, dist,
                                   section["zipf_exponent"])
            for trunk_opts in expand_grid(section["trunks"]):
                trunk = ModelConfig(vocab_size=n, d_model=width, n_layers=layers, head_dim=section["head_dim"],
                                    std=trunk_opts["std"], init=trunk_opts["init"],
                                    zero_branches=BRANCHES[trunk_opts["branches"]])
                t0 = time.perf_counter()
                results = streamed_losses(trunk, section["heads"], tokens, seed, device, section["chunk_tokens"])
                seconds = time.perf_counter() - t0
                log(f"d={width} seed={seed} tokens={dist} std={trunk_opts['std']} init={trunk_opts['init']} "
                    f"branches={trunk_opts['branches']}: {seconds:.1f}s  "
                    + "  ".join(f"{_head_label(r)}={r['loss']:.3f}" for r in results))
                for r in results:
                    rows.append({"d": width, "n": n, "n_layers": layers, "seed": seed, "token_dist": dist,
                                 "std": str(trunk_opts["std"]), "sigma": trunk.sigma, "init": trunk_opts["init"],
                                 "branches": trunk_opts["branches"], "head": _head_label(r), **r,
                                 "tokens": int(inputs_count(tokens)), "trunk_seconds": seconds})
    return pd.DataFrame(rows)


def inputs_count(tokens: torch.Tensor) -> int:
    return tokens.shape[0] * (tokens.shape[1] - 1)


def _head_label(opts: dict) -> str:
    label = "tied" if opts["tied"] else "untied"
    if opts.get("mixer", "none") != "none":
        label += f"+{opts['mixer']}"
    if opts.get("rescale"):
        label += "+rescale"
    return label
