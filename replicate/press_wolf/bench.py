"""Speed benchmark (not a test): training tokens/s of this engine vs a plain PyTorch loop, and the
machine's fp32 matmul throughput, in one run.

    python -m replicate press-wolf bench --threads 2 --sizes small,medium --repeats 3
    snakemake --cores 2 press_wolf_speed      # the same into results/ (JSON + table), for publishing

The plain loop is what one would write from the PyTorch docs (nn.Embedding + nn.LSTM + nn.Linear +
F.cross_entropy, manual SGD, clipping), with the same protocol (loss = sum_t mean_b NLL, hidden state
carried). Both see the same random tokens; the repeats alternate the two loops so that load changes on
a shared machine hit both. Rates are given per wall-clock second and per CPU second of the
process (on a loaded machine the CPU-time rate at 1 thread is the robust one). Model FLOP/s counts
6 x (matmul multiply-adds per token) (forward + the two backward matmuls) and is compared with the best of
a 2048^3 fp32 matmul. The load average at the start and the end is recorded with the result, with a
warning when the machine was not idle: quote ratios from idle runs only.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from replicate.lstm.config import resolve
from replicate.lstm.model import LSTMLM
from replicate.lstm.train import Trainer, batchify
from replicate.press_wolf import BENCH_MODULES


def matmul_gflops(n: int = 2048, repeats: int = 5) -> tuple[float, float]:
    """Best fp32 matmul GFLOP/s per wall second and per CPU second (all threads)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    wall = cpu = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        torch.mm(a, b)
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return 2 * n ** 3 / wall / 1e9, 2 * n ** 3 / cpu / 1e9


def flops_per_token(hidden: int, layers: int, vocab: int) -> float:
    macs = layers * 4 * hidden * 2 * hidden + hidden * vocab
    return 6 * macs


def plain_loop_tok_s(settings: dict, data: torch.Tensor, vocab: int, batches: int, warmup: int = 2) -> float:
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
    hidden = None
    t0 = c0 = None
    for b in range(warmup + batches):
        if b == warmup:
            t0, c0 = time.perf_counter(), time.process_time()
        x, y = stream[b * T: (b + 1) * T], stream[b * T + 1: (b + 1) * T + 1]
        hidden = None if hidden is None else tuple(h.detach() for h in hidden)
        h, hidden = lstm(drop(emb(x)), hidden)
        loss = F.cross_entropy(out(drop(h)).view(-1, vocab), y.reshape(-1), reduction="sum") / B
        for p in params:
            p.grad = None
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, tcfg.clip)
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-tcfg.lr)
    tokens = batches * B * T
    return tokens / (time.perf_counter() - t0), tokens / (time.process_time() - c0)


def ours_tok_s(settings: dict, data: torch.Tensor, vocab: int, batches: int, warmup: int = 2) -> float:
    """Our Trainer (fused kernels): one warm-up epoch of ``warmup`` batches, then a timed epoch."""
    mcfg, tcfg = resolve({**settings, "epochs": 2, "log_every": 10**9, "valid_batch_size": 1}, vocab)
    torch.manual_seed(0)
    trainer = Trainer(LSTMLM(mcfg), tcfg, data, data[:3], log=lambda s: None)
    trainer.batches = warmup
    trainer.train_epoch()
    trainer.batches = batches
    t0, c0 = time.perf_counter(), time.process_time()
    trainer.train_epoch()  # (its evaluation of 2 tokens is negligible)
    tokens = batches * tcfg.batch_size * tcfg.bptt
    return tokens / (time.perf_counter() - t0), tokens / (time.process_time() - c0)


# 1-minute load average above which the machine does not count as idle (other runnable processes)
IDLE_LOAD = 0.5


def load_state() -> dict:
    """Load averages (1, 5, 15 min) and whether the machine counts as idle for a speed measurement."""
    load = os.getloadavg()
    return {"loadavg": list(load), "idle": load[0] <= IDLE_LOAD, "cpus": os.cpu_count()}


def run(threads: int, sizes: list[str], batches: int, repeats: int, vocab: int) -> dict:
    torch.set_num_threads(threads)
    start = load_state()
    if not start["idle"]:
        print(f"WARNING: load average {start['loadavg'][0]:.2f} > {IDLE_LOAD}: the machine is not idle; these "
              "ratios are not comparable with idle-machine figures", file=sys.stderr, flush=True)
    peaks = dict(zip(("wall", "cpu"), matmul_gflops()))
    result = {"threads": threads, "matmul_gflops": peaks, "batches": batches, "repeats": repeats,
              "load_start": start, "sizes": {}}
    print(f"fp32 matmul (2048^3, {threads} threads): {peaks['wall']:.1f} GFLOP/s per wall second, "
          f"{peaks['cpu']:.1f} per CPU second", flush=True)
    for size in sizes:
        settings = {"size": size}
        mcfg, tcfg = resolve(settings, vocab)
        need = (batches + 3) * tcfg.bptt * tcfg.batch_size + 1
        data = torch.randint(0, vocab, (need,), generator=torch.Generator().manual_seed(0))
        ours, plain = [], []
        for _ in range(repeats):
            ours.append(ours_tok_s(settings, data, vocab, batches))
            plain.append(plain_loop_tok_s(settings, data, vocab, batches))
        fpt = flops_per_token(mcfg.hidden_size, mcfg.num_layers, vocab)
        row = {"flops_per_token": fpt}
        for clock, i in (("wall", 0), ("cpu", 1)):
            peak = peaks[clock]
            o, p = statistics.median(r[i] for r in ours), statistics.median(r[i] for r in plain)
            row[clock] = {"ours_tok_s": [r[i] for r in ours], "plain_tok_s": [r[i] for r in plain],
                          "ours_median": o, "plain_median": p, "ratio": o / p,
                          "model_gflops_ours": o * fpt / 1e9, "mfu_ours": o * fpt / 1e9 / peak,
                          "mfu_plain": p * fpt / 1e9 / peak}
            print(f"{size:>6} [{clock:>4} clock]: ours {o:8.0f} tok/s  plain {p:8.0f} tok/s  "
                  f"ratio {o / p:.2f}x  model {o * fpt / 1e9:.1f} GFLOP/s = {o * fpt / 1e9 / peak:.0%} of "
                  f"matmul peak (plain {p * fpt / 1e9 / peak:.0%}); repeats ours "
                  f"{[round(r[i]) for r in ours]} plain {[round(r[i]) for r in plain]}", flush=True)
        result["sizes"][size] = row
    result["load_end"] = load_state()
    return result


def speed_table(result: dict):
    """One row per size and clock: both medians, their ratio, and the load the run started and ended at
    (``idle`` from the start: the load at the end includes the benchmark's own threads)."""
    import pandas as pd

    rows = [{"size": size, "clock": clock, "threads": result["threads"],
             "load_1min_start": result["load_start"]["loadavg"][0], "load_1min_end": result["load_end"]["loadavg"][0],
             "idle": result["load_start"]["idle"],
             "ours_tok_s": row[clock]["ours_median"], "plain_tok_s": row[clock]["plain_median"],
             "ratio": row[clock]["ratio"], "mfu_ours": row[clock]["mfu_ours"]}
            for size, row in result["sizes"].items() for clock in ("wall", "cpu")]
    return pd.DataFrame(rows)


def main(args) -> int:
    sizes = [s for s in args.sizes.split(",") if s]
    result = run(args.threads, sizes, args.batches, args.repeats, args.vocab)
    if args.out or args.table:
        from replicate import io as rio
        from replicate import provenance

        result["code_version"] = provenance.source_hash(*BENCH_MODULES)
        if args.out:
            rio.write_json(args.out, result)
        if args.table:
            rio.write_csv(args.table, speed_table(result))
    else:
        print(json.dumps(result, indent=1))
    return 0
