"""A small Llama-style LM (``replicate.llama.TransformerLM``) trained on WikiText-2:
untied vs tied vs tied + d^-1/2 output rescale (with every matrix at ``std``, or with T5's unit-variance
embedding: ``tied_rescale_unit``), each at a learning rate of its own (a sweep; the summary picks each
variant's best). Records the learning curve, gradient norms (total
and of the embedding matrix), loss/gradient spikes, and the loss at step 0 (the initial loss that the
initial-loss sweep predicts in closed form).

Protocol: AdamW (betas 0.9/0.95), linear warmup then cosine decay to ``min_lr_ratio`` x lr, weight
decay on matrices (embedding included) but not on norm gains, global-norm clipping, random
contiguous windows of the training split (the same batches for every variant of a seed: a paired
comparison). Every parameter's init comes from its own per-name generator (replicate.llama), so untied and tied
models of one seed share every common weight. Valid loss (the first ``eval_tokens`` of the valid split) every
``eval_every`` steps chooses each variant's lr; the test loss (same length, test split), measured once after
the last step, is what the variants are compared on. Runs are minutes long: no checkpoint/resume (a killed
run restarts; Snakemake removes its partial outputs).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from replicate import devices, provenance
from replicate import io as rio
from replicate.scale import TRANSFORMER_RUN_MATH
from replicate.errors import ReplicateError

VARIANTS = {"untied": dict(tied=False, rescale=False), "tied": dict(tied=True, rescale=False),
            "tied_rescale": dict(tied=True, rescale=True), "tied_rescale_unit": dict(tied=True, rescale=True)}
EMBED_STD = {"tied_rescale_unit": 1.0}
"""Variants whose embedding (= tied output) matrix is drawn at its own std: T5 pairs the d^-1/2 output rescale
with unit-variance embeddings; every other matrix keeps ``std``. The same per-name generator as the std
draw, so the two rescale variants of a seed differ only in the embedding's scale."""


def parse_std(std: str | float) -> float | str:
    try:
        return float(std)
    except ValueError:
        return str(std)


def model_config(spec: dict[str, Any], vocab_size: int):
    from replicate.llama import ModelConfig

    if spec["variant"] not in VARIANTS:
        raise ReplicateError(f"unknown transformer variant {spec['variant']!r}", f"use one of {sorted(VARIANTS)}")
    return ModelConfig(vocab_size=vocab_size, d_model=spec["d_model"], n_layers=spec["n_layers"],
                       head_dim=spec["head_dim"], std=parse_std(spec["std"]), init=spec["init"],
                       **VARIANTS[spec["variant"]])


def lr_at(step: int, spec: dict[str, Any]) -> float:
    """Linear warmup to lr over ``warmup`` steps, then cosine to min_lr_ratio * lr at the last step."""
    lr, warm, total = spec["lr"], spec["warmup"], spec["steps"]
    if step < warm:
        return lr * (step + 1) / warm
    progress = (step - warm) / max(total - warm, 1)
    floor = spec["min_lr_ratio"] * lr
    return floor + (lr - floor) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def count_spikes(values, window: int, factor: float) -> int:
    """Steps t where values[t] > factor * median(values[t-window:t]) (needs a full window)."""
    v = np.asarray(values, float)
    n = 0
    for t in range(window, len(v)):
        if v[t] > factor * np.median(v[t - window:t]):
            n += 1
    return n


def theory_step0(variant: str, d: int, sigma: float, n: int) -> float:
    """The sweep's closed form (exact for zero residual branches): tied log(exp(d s)+n-1), tied+rescale
    log(exp(s sqrt d)+n-1), untied log n (a random untied output gives logits ~ 0 relative to log n).
    ``s`` is the embedding's std: ``sigma``, or the variant's own (EMBED_STD)."""
    from replicate.initial_loss.theory import initial_loss

    sigma = EMBED_STD.get(variant, sigma)
    if variant == "untied":
        return math.log(n)
    return float(initial_loss(d, sigma, n, rescale=VARIANTS[variant]["rescale"]))


def train(spec: dict[str, Any], corpus, out_dir: str | Path, threads: int | None = None, device: str = "cpu",
          log=print) -> dict[str, Any]:
    from replicate.llama import TransformerLM

    started = provenance.now()
    dev = devices.resolve_device(device)
    devices.setup(threads, bool(spec.get("allow_tf32", False)))
    out_dir = Path(out_dir)
    n = len(corpus.vocab)
    cfg = model_config(spec, n)
    seed = int(spec["seed"])
    model = TransformerLM(cfg, seed=seed)
    embed_std = EMBED_STD.get(spec["variant"])
    if embed_std is not None:  # on CPU, before the move (as every init of replicate.llama)
        from replicate.llama import draw_, param_generator

        with torch.no_grad():
            draw_(model.embed.weight.data, embed_std, cfg.init, param_generator(seed, "embed.weight"))
    model = model.to(dev)
    if cfg.tied and model.head.out.weight is not model.embed.weight:
        raise AssertionError("tied transformer: output weight is not the embedding Parameter")
    total_params = sum(p.numel() for p in model.parameters())
    emb_params = model.embed.weight.numel() + (0 if cfg.tied else model.head.out.weight.numel())
    decay = [p for name, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for name, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": spec["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=spec["lr"], betas=(0.9, 0.95))
    params = decay + no_decay
    T, B = spec["seq_len"], spec["batch_size"]
    train_tokens = corpus.train
    gen = torch.Generator().manual_seed(seed)  # batches: same for every variant of this seed
    def windows(tokens, split: str):
        """The first ``eval_tokens`` of a split as (inputs, targets) windows of length T."""
        tokens = tokens[: spec["eval_tokens"] + 1]
        nwin = (len(tokens) - 1) // T
        if nwin < 1:
            raise ReplicateError(f"eval_tokens={spec['eval_tokens']} gives no window of {T} tokens of the {split} "
                                 "split", "raise scale.transformer.eval_tokens")
        return tokens[: nwin * T].view(nwin, T).to(dev), tokens[1: nwin * T + 1].view(nwin, T).to(dev)

    valid_windows, test_windows = windows(corpus.valid, "valid"), windows(corpus.test, "test")

    @torch.no_grad()
    def evaluate(split_windows) -> float:
        inputs, targets = split_windows
        model.eval()
        total = 0.0
        for s in range(0, len(inputs), B):
            loss, _, _ = model(inputs[s:s + B], targets[s:s + B])
            total += float(loss) * inputs[s:s + B].numel()
        model.train()
        return total / inputs.numel()

    rows = []
    t0 = time.perf_counter()
    for step in range(spec["steps"]):
        starts = torch.randint(0, len(train_tokens) - T - 1, (B,), generator=gen)
        idx = starts[:, None] + torch.arange(T + 1)
        window = train_tokens[idx].to(dev)
        lr = lr_at(step, spec)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        loss, _, _ = model(window[:, :-1], window[:, 1:])
        loss.backward()
        loss_v = float(loss.detach())
        if not math.isfinite(loss_v):
            raise ReplicateError(f"transformer run {spec['name']}: non-finite loss at step {step}",
                                 "lower scale.transformer.lr")
        emb_gn = float(model.embed.weight.grad.norm())
        gn = float(torch.nn.utils.clip_grad_norm_(params, spec["clip"]))
        opt.step()
        valid_loss = float("nan")
        if step % spec["eval_every"] == 0 or step == spec["steps"] - 1:
            valid_loss = evaluate(valid_windows)
        rows.append({"step": step, "lr": lr, "train_loss": loss_v, "grad_norm": gn, "emb_grad_norm": emb_gn,
                     "valid_loss": valid_loss})
        if step % max(1, spec["steps"] // 10) == 0 or step == spec["steps"] - 1:
            el = time.perf_counter() - t0
            log(f"[{spec['name']}] step {step + 1}/{spec['steps']} loss {loss_v:.3f} grad norm {gn:.3f} "
                f"valid {valid_loss:.3f} lr {lr:.2e} ({(step + 1) * B * T / el:.0f} tok/s)")
    curve = pd.DataFrame(rows)
    last = curve.tail(max(1, len(curve) // 10))
    gns = curve["grad_norm"].to_numpy()
    final_valid = float(curve["valid_loss"].dropna().iloc[-1])
    final_test = evaluate(test_windows)  # once, after training: the comparison's measure (lr chosen on valid)
    summary = {
        "run": spec["name"], "variant": spec["variant"], "std": str(spec["std"]), "lr": float(spec["lr"]),
        "embed_std": embed_std if embed_std is not None else cfg.sigma, "seed": seed,
        "d_model": cfg.d_model, "n_layers": cfg.n_layers, "vocab_size": n, "steps": spec["steps"],
        "sigma": cfg.sigma, "total_params": total_params, "embedding_share": emb_params / total_params,
        "step0_loss": float(curve["train_loss"].iloc[0]),
        "theory_step0_loss": theory_step0(spec["variant"], cfg.d_model, cfg.sigma, n), "log_n": math.log(n),
        "final_train_loss": float(last["train_loss"].mean()), "final_valid_loss": final_valid,
        "final_valid_ppl": math.exp(final_valid), "final_test_loss": final_test,
        "final_test_ppl": math.exp(final_test),
        "grad_norm_median": float(np.median(gns)), "grad_norm_p99": float(np.percentile(gns, 99)),
        "grad_norm_max": float(gns.max()), "clip_fraction": float((gns > spec["clip"]).mean()),
        "loss_spikes": count_spikes(curve["train_loss"], spec["spike_window"], 1 + spec["spike_rel"]),
        "grad_spikes": count_spikes(gns, spec["spike_window"], spec["spike_grad_factor"]),
        "seconds": time.perf_counter() - t0,
        "code_version": provenance.source_hash(*TRANSFORMER_RUN_MATH),
    }
    rio.write_csv(out_dir / "curve.csv", curve)
    rio.write_json(out_dir / "summary.json",
                   {**summary, "spec": spec, "provenance": provenance.collect(spec.get("config", spec), started, str(dev))})
    log(f"[{spec['name']}] done: step-0 loss {summary['step0_loss']:.3f} (theory {summary['theory_step0_loss']:.3f}, "
        f"log n {summary['log_n']:.3f}); final valid loss {final_valid:.3f}, test loss {final_test:.3f}")
    return summary
