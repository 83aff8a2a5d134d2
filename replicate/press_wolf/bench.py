"""Speed benchmark (not a test): training tokens/s of this engine against a plain PyTorch loop, and the fp32
matmul peak (``python -m replicate press-wolf bench``; ``snakemake --cores 2 press_wolf_speed`` writes it to results/).

The plain loop is stock modules (nn.Embedding + nn.LSTM + nn.Linear, manual SGD) where nn.LSTM can express the
cell, else the engine's own step under ``REPLICATE_KERNELS=reference``. Both read the same Zipf-drawn tokens,
alternating over repeats; a default-preset row also gets its projected wall hours on PTB. Rates per wall and per
CPU second; model FLOP/s = 6 x matmul multiply-adds per token. Quote ratios from idle runs only (load recorded).
"""

from __future__ import annotations

import json
import statistics
import sys

import pandas as pd
import torch
import torch.nn.functional as F

from replicate import io as rio
from replicate import provenance
from replicate.errors import ReplicateError
from replicate.inan.bench import IDLE_LOAD, load_state, timed, zipf_targets
from replicate.inan.trainer import AugmentedTrainer
from replicate.lstm import kernels
from replicate.lstm.config import resolve
from replicate.lstm.model import LSTMLM
from replicate.lstm.train import Trainer, batchify


def matmul_gflops(n: int = 2048, repeats: int = 5) -> tuple[float, float]:
    """Best fp32 matmul GFLOP/s per wall second and per CPU second (all threads)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    wall, cpu = map(min, zip(*(timed(lambda: torch.mm(a, b)) for _ in range(repeats))))
    return 2 * n ** 3 / wall / 1e9, 2 * n ** 3 / cpu / 1e9


def flops_per_token(hidden: int, layers: int, vocab: int) -> float:
    macs = layers * 4 * hidden * 2 * hidden + hidden * vocab
    return 6 * macs


# Bench cells: engine settings (the Inan rows come from the default preset, ``inan_cell``) and the epochs of
# the default-preset row each one projects (None: no such row).
CELLS = {
    "small": ({"size": "small"}, 13),           # Press & Wolf Table 6 small, no dropout
    "medium": ({"size": "medium"}, None),       # Zaremba medium (dropout 0.5); not in the default preset
    "bd": ({"size": "large_bd", "hidden_size": 650, "init_scale": 0.05}, None),  # Gal's per-gate masks
}
INAN_CELLS = ("inan_vd", "inan_al", "inan_re", "inan_real")
# PTB split sizes in tokens (with <eos>), as results/data/ptb/corpus.pt holds them: the projections' data
PTB_TOKENS = {"train": 929_589, "valid": 73_760, "test": 82_430}


def inan_cell(name: str):
    """(engine settings, augmented loss or None, epochs) of the default preset's Inan Table 1 small row."""
    from replicate import experiments
    from replicate.inan.train import run_settings

    spec = experiments.resolve_run(experiments.load_config(), "inan", f"table1/ptb/small_{name[5:]}").spec
    settings, al = run_settings(spec["size_settings"], spec["size"], spec["variant"], spec["seed"])
    return settings, al, settings["epochs"]


def cell(name: str):
    """(settings, extra_loss, epochs of its default-preset row or None, plain loop kind) of a bench cell."""
    if name in INAN_CELLS:
        return (*inan_cell(name), "reference kernels")
    if name not in CELLS:
        raise ReplicateError(f"unknown bench cell {name!r}", f"use some of {', '.join([*CELLS, *INAN_CELLS])}")
    settings, epochs = CELLS[name]
    plain = "reference kernels" if resolve(settings, 10)[0].dropout in ("variational", "inan") else "stock modules"
    return settings, None, epochs, plain


def _bench_data(settings: dict, batches: int, vocab: int) -> torch.Tensor:
    """The tokens a cell's timed epoch and its warm-up read (the same for every repeat)."""
    tcfg = resolve(settings, vocab)[1]
    return zipf_targets((batches + 3) * tcfg.bptt * tcfg.batch_size + 1, vocab)


def _timed(fn, tokens: int) -> tuple[float, float]:
    """(tokens per wall second, tokens per CPU second) of ``fn()``."""
    wall, cpu = timed(fn)
    return tokens / wall, tokens / cpu


def plain_loop_tok_s(settings: dict, data: torch.Tensor, vocab: int, batches: int, warmup: int = 2) -> tuple:
    """The reference-style loop: stock modules, autograd, manual SGD."""
    mcfg, tcfg = resolve(settings, vocab)
    H, B, T = mcfg.hidden_size, tcfg.batch_size, tcfg.bptt
    emb = torch.nn.Embedding(vocab, H)
    lstm = torch.nn.LSTM(H, H, num_layers=mcfg.num_layers, dropout=mcfg.dropout_rate)
    out = torch.nn.Linear(H, vocab)
    drop = torch.nn.Dropout(mcfg.dropout_rate)
    params = list(emb.parameters()) + list(lstm.parameters()) + list(out.parameters())
    for p in params:
        torch.nn.init.uniform_(p, -mcfg.init_scale, mcfg.init_scale)
    stream = batchify(data, B)
    state = {"hidden": None}

    def step(b):
        x, y = stream[b * T: (b + 1) * T], stream[b * T + 1: (b + 1) * T + 1]
        hidden = None if state["hidden"] is None else tuple(h.detach() for h in state["hidden"])
        h, state["hidden"] = lstm(drop(emb(x)), hidden)
        loss = F.cross_entropy(out(drop(h)).view(-1, vocab), y.reshape(-1), reduction="sum") / B
        for p in params:
            p.grad = None
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, tcfg.clip)
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-tcfg.lr)

    for b in range(warmup):
        step(b)
    return _timed(lambda: [step(b) for b in range(warmup, warmup + batches)], batches * B * T)


def _trainer(settings: dict, data: torch.Tensor, vocab: int, extra_loss=None) -> Trainer:
    mcfg, tcfg = resolve({**settings, "epochs": 2, "log_every": 10**9, "valid_batch_size": 1}, vocab)
    torch.manual_seed(0)
    # the trainer the runs use: the augmented-loss rows train with the fused output-layer loss
    trainer_cls = AugmentedTrainer if extra_loss is not None else Trainer
    return trainer_cls(LSTMLM(mcfg), tcfg, data, data[:3], log=lambda s: None, extra_loss=extra_loss)


def ours_tok_s(settings: dict, data: torch.Tensor, vocab: int, batches: int, warmup: int = 2,
               extra_loss=None, kernel_backend: str = "fast") -> tuple:
    """Our Trainer: one warm-up epoch of ``warmup`` batches, then a timed epoch (its evaluation of 2 tokens
    is negligible), on the kernel backend named (``reference``: the plain per-step autograd step)."""
    with kernels.use(kernel_backend):
        trainer = _trainer(settings, data, vocab, extra_loss)
        trainer.batches = warmup
        trainer.train_epoch()
        trainer.batches = batches
        return _timed(trainer.train_epoch, batches * trainer.cfg.batch_size * trainer.cfg.bptt)


def eval_tok_s(settings: dict, data: torch.Tensor, vocab: int, batch_size: int, tokens: int) -> float:
    """Our evaluation's tokens per wall second at ``batch_size`` streams (no dropout, long windows)."""
    trainer = _trainer(settings, data, vocab)
    return _timed(lambda: trainer.evaluate(data[:tokens], batch_size=batch_size), tokens)[0]


def projected_hours(settings: dict, epochs: int, train_tok_s: float, eval_rate) -> float:
    """Wall hours of a whole row on PTB: every training epoch at ``train_tok_s``, its per-epoch valid
    evaluation and the final clean-train, valid and test evaluations at ``eval_rate(batch_size)``."""
    _, tcfg = resolve(settings, 10)
    rows = PTB_TOKENS["train"] // tcfg.batch_size
    train_tokens = (rows - 1) // tcfg.bptt * tcfg.bptt * tcfg.batch_size
    valid = PTB_TOKENS["valid"] / eval_rate(tcfg.valid_batch_size)
    seconds = (epochs * (train_tokens / train_tok_s + valid) + PTB_TOKENS["train"] / eval_rate(tcfg.valid_batch_size)
               + valid + PTB_TOKENS["test"] / eval_rate(tcfg.eval_batch_size))
    return seconds / 3600


def _median_ms(fn, repeats: int = 7) -> float:
    fn()
    return statistics.median(timed(fn)[0] for _ in range(repeats)) * 1e3


def _optimizer_step(model: LSTMLM, tcfg):
    """The trainer's update of ``model`` (global-norm clip + SGD) on zero gradients, as a function to time."""
    from replicate.lstm.train import clip_global_norm_

    params = list(model.parameters())
    for p in params:
        p.grad = torch.zeros_like(p)

    def step():
        clip_global_norm_(params, tcfg.clip)
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-tcfg.lr)

    return step


def inan_step_breakdown(name: str, fused: bool = True, vocab: int = 10000, repeats: int = 7) -> dict:
    """Milliseconds of one training window of an Inan cell by part (recurrence, output GEMMs, soft-target
    products, the loss's element-wise rest, optimizer) and whole; ``fused``: the fused output-layer kernel, else
    the autograd path."""
    settings, al, _, _ = cell(name)
    mcfg, tcfg = resolve(settings, vocab)
    H, B, T, L = mcfg.hidden_size, tcfg.batch_size, tcfg.bptt, mcfg.num_layers
    g = torch.Generator().manual_seed(0)
    x = torch.rand(T, B, H, generator=g).requires_grad_()
    zeros, mask = torch.zeros(B, H), (torch.rand(B, H, generator=g) > 0.3).float() / 0.7
    w = [(torch.rand(4 * H, H, generator=g) * 0.2 - 0.1).requires_grad_() for _ in range(2 * L)]
    bias = torch.zeros(4 * H, requires_grad=True)

    def recurrence():
        h = x
        for i in range(L):
            h, _ = kernels.lstm_sequence(h, zeros, zeros, w[2 * i], w[2 * i + 1], bias, mask)
        h.sum().backward()

    model = LSTMLM(mcfg)
    data = zipf_targets(T * B + 1, vocab)
    targets = data[1:].view(T, B)
    features = torch.rand(T, B, H, generator=g).requires_grad_()
    emb, out_w, out_b = model.embedding.weight, model.output_weight, model.output_bias
    rows = emb.detach()[targets.reshape(-1).unique()]
    grad = torch.rand(T * B, vocab, generator=g)

    def output_layer():
        if fused:
            nll, j_aug = al.output_loss(features, targets, model)
            loss = nll / B + T * al.alpha * j_aug / targets.numel()
        else:
            logits = model.logits(features)
            loss = (F.cross_entropy(logits.view(-1, vocab), targets.reshape(-1), reduction="sum") / B
                    + T * al(logits, targets, features, model))
        loss.backward()

    soft = [lambda: rows.mm(emb.detach().t())]
    if al.soft_target_grad:
        soft += [lambda: grad[: rows.shape[0]].mm(emb.detach()), lambda: grad[: rows.shape[0]].t().mm(rows)]
    h2 = features.detach().view(-1, H)
    gemms = [lambda: (torch.addmm(out_b.detach(), h2, out_w.detach().t()) if out_b is not None
                      else h2.mm(out_w.detach().t())), lambda: grad.mm(out_w.detach()), lambda: grad.t().mm(h2)]
    optimizer = _optimizer_step(model, tcfg)
    with kernels.use("fast"):
        parts = {"recurrence (2 VD layers)": _median_ms(recurrence, repeats),
                 "output GEMMs (3)": _median_ms(lambda: [f() for f in gemms], repeats),
                 "soft-target product(s)": _median_ms(lambda: [f() for f in soft], repeats),
                 "output layer + loss, whole": _median_ms(output_layer, repeats),
                 "optimizer (clip + SGD)": _median_ms(optimizer, repeats)}
        trainer_cls = AugmentedTrainer if fused else Trainer
        trainer = trainer_cls(model, tcfg, zipf_targets(9 * T * B + 1, vocab), data[:3], log=lambda s: None,
                              extra_loss=al)
        trainer.batches = 2
        trainer.train_epoch()  # warm-up
        trainer.batches = 7
        step = _timed(trainer.train_epoch, 7)[0]
    parts["loss element-wise (output layer minus its products)"] = (
        parts["output layer + loss, whole"] - parts["output GEMMs (3)"] - parts["soft-target product(s)"])
    parts["whole training step"] = 1e3 / step
    return parts


def run(threads: int, cells: list[str], batches: int, repeats: int, vocab: int,
        allocator: str = "the C library's default") -> dict:
    torch.set_num_threads(threads)
    start = load_state()
    if not start["idle"]:
        print(f"WARNING: load average {start['loadavg'][0]:.2f} > {IDLE_LOAD}: the machine is not idle; these "
              "ratios are not comparable with idle-machine figures", file=sys.stderr, flush=True)
    peaks = dict(zip(("wall", "cpu"), matmul_gflops()))
    result = {"threads": threads, "allocator": allocator, "matmul_gflops": peaks, "batches": batches, "repeats": repeats,
              "load_start": start, "cells": {}}
    print(f"fp32 matmul (2048^3, {threads} threads): {peaks['wall']:.1f} GFLOP/s per wall second, "
          f"{peaks['cpu']:.1f} per CPU second", flush=True)
    setups = {name: cell(name) for name in cells}
    data = {name: _bench_data(settings, batches, vocab) for name, (settings, *_) in setups.items()}
    # the repeats go round the cells, so that a drift in the machine's speed falls on every cell alike
    samples = {name: ([], []) for name in cells}
    for _ in range(repeats):
        for name, (settings, extra, _, plain_kind) in setups.items():
            samples[name][0].append(ours_tok_s(settings, data[name], vocab, batches, extra_loss=extra))
            samples[name][1].append(
                plain_loop_tok_s(settings, data[name], vocab, batches) if plain_kind == "stock modules"
                else ours_tok_s(settings, data[name], vocab, batches, extra_loss=extra, kernel_backend="reference"))
    for name, (settings, extra, epochs, plain_kind) in setups.items():
        mcfg, tcfg = resolve(settings, vocab)
        fpt = flops_per_token(mcfg.hidden_size, mcfg.num_layers, vocab)
        row = {"flops_per_token": fpt, "plain": plain_kind, "epochs": epochs}
        for clock, i in (("wall", 0), ("cpu", 1)):
            ours, plain = ([r[i] for r in rates] for rates in samples[name])
            o, p, peak = statistics.median(ours), statistics.median(plain), peaks[clock]
            row[clock] = {"ours_tok_s": ours, "plain_tok_s": plain, "ours_median": o, "plain_median": p,
                          "ratio": o / p, "model_gflops_ours": o * fpt / 1e9, "mfu_ours": o * fpt / 1e9 / peak,
                          "mfu_plain": p * fpt / 1e9 / peak}
            print(f"{name:>9} [{clock:>4} clock]: ours {o:8.0f} tok/s  plain ({plain_kind}) {p:8.0f} tok/s  "
                  f"ratio {o / p:.2f}x  model {o * fpt / 1e9:.1f} GFLOP/s = {o * fpt / 1e9 / peak:.0%} of "
                  f"matmul peak (plain {p * fpt / 1e9 / peak:.0%}); repeats ours "
                  f"{[round(r) for r in ours]} plain {[round(r) for r in plain]}", flush=True)
        if epochs is not None:
            rates = {bs: eval_tok_s(settings, data[name], vocab, bs, min(len(data[name]) - 1, 5000))
                     for bs in {tcfg.valid_batch_size, tcfg.eval_batch_size}}
            row["eval_tok_s"] = {str(bs): r for bs, r in rates.items()}
            row["projected_row_hours"] = projected_hours(settings, epochs, row["wall"]["ours_median"], rates.get)
            print(f"{name:>9}: evaluation {', '.join(f'{r:.0f} tok/s at batch {bs}' for bs, r in rates.items())}; "
                  f"the default-preset row ({epochs} epochs of PTB) projects to {row['projected_row_hours']:.2f} h "
                  f"wall at {threads} thread(s)", flush=True)
        result["cells"][name] = row
    result["load_end"] = load_state()
    return result


def speed_table(result: dict):
    """One row per cell and clock: both medians, their ratio, the plain loop's kind, the load at start and end,
    and (wall clock) the projected hours of the cell's default-preset row."""
    rows = [{"cell": name, "clock": clock, "threads": result["threads"],
             "load_1min_start": result["load_start"]["loadavg"][0], "load_1min_end": result["load_end"]["loadavg"][0],
             "idle": result["load_start"]["idle"], "plain": row["plain"],
             "ours_tok_s": row[clock]["ours_median"], "plain_tok_s": row[clock]["plain_median"],
             "ratio": row[clock]["ratio"], "mfu_ours": row[clock]["mfu_ours"],
             "projected_row_hours": row.get("projected_row_hours") if clock == "wall" else None}
            for name, row in result["cells"].items() for clock in ("wall", "cpu")]
    return pd.DataFrame(rows)


def print_breakdown(cells: list[str], threads: int, repeats: int) -> None:
    """``inan_step_breakdown`` of each cell, fused kernel and autograd path side by side (milliseconds)."""
    torch.set_num_threads(threads)
    for name in cells:
        table = pd.DataFrame({"autograd path (before)": inan_step_breakdown(name, fused=False, repeats=repeats),
                              "fused kernel (now)": inan_step_breakdown(name, fused=True, repeats=repeats)})
        print(f"{name}: ms per training window, {threads} thread(s), load {load_state()['loadavg'][0]:.2f}\n"
              f"{table.round(1).to_string()}", flush=True)


def main(args) -> int:
    from replicate.cli import keep_freed_memory

    # as a training job does (cli.training_attempt), unless the allocator's effect is what is measured
    kept = not args.default_allocator and keep_freed_memory()
    allocator = "glibc, freed memory kept (as training jobs)" if kept else "the C library's default"
    cells = [c for c in args.cells.split(",") if c]
    if args.breakdown:
        print(f"allocator: {allocator}")
        print_breakdown(cells, args.threads, args.repeats)
        return 0
    result = run(args.threads, cells, args.batches, args.repeats, args.vocab, allocator)
    if args.out or args.table:
        result["code_version"] = provenance.code_version(run, kernels=True)  # what it times
        if args.out:
            rio.write_json(args.out, result)
        if args.table:
            rio.write_csv(args.table, speed_table(result))
    else:
        print(json.dumps(result, indent=1))
    return 0
