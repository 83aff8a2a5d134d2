"""Speed benchmark (not a test) of the augmented loss against its per-token transcription, forward + backward on a
PTB-sized batch, the two timed alternately (``python -m replicate inan bench-loss``)."""

from __future__ import annotations

import json
import os
import statistics
import time

import torch

from replicate import io as rio
from replicate import provenance
from replicate.inan.losses import augmented_loss, augmented_loss_transcription

# 1-minute load average above which the machine does not count as idle (other runnable processes)
IDLE_LOAD = 0.5


def load_state() -> dict:
    """Load averages (1, 5, 15 min) and whether the machine counts as idle for a speed measurement."""
    load = os.getloadavg()
    return {"loadavg": list(load), "idle": load[0] <= IDLE_LOAD, "cpus": os.cpu_count()}


def zipf_targets(n: int, vocab: int, seed: int = 0) -> torch.Tensor:
    """``n`` word ids drawn with probability 1 / rank, with about as many distinct words as a PTB batch."""
    g = torch.Generator().manual_seed(seed)
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)
    return torch.multinomial(weights, n, replacement=True, generator=g)


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of all threads) of ``fn()``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def time_ms(fn, logits: torch.Tensor, targets: torch.Tensor, embedding: torch.Tensor, tau: float,
            soft_target_grad: bool) -> float:
    """Wall milliseconds of one forward + backward of ``fn`` (mean over tokens)."""
    z = logits.detach().requires_grad_()
    emb = embedding.detach().requires_grad_(soft_target_grad)
    return timed(lambda: fn(z, targets, emb, tau, soft_target_grad).mean().backward())[0] * 1e3


def run(threads: int, tokens: int, vocab: int, dim: int, tau: float, repeats: int, seed: int = 0) -> dict:
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(tokens, vocab, generator=g)
    embedding = torch.randn(vocab, dim, generator=g) * 0.1
    targets = zipf_targets(tokens, vocab, seed)
    forms = {"ours": lambda *a: augmented_loss(*a, reduction="none"), "transcription": augmented_loss_transcription}
    result = {"threads": threads, "tokens": tokens, "vocab": vocab, "dim": dim, "tau": tau,
              "distinct_targets": int(targets.unique().numel()), "repeats": repeats, "load_start": load_state(),
              "soft_target_grad": {}}
    for grad in (False, True):
        rounds = [{name: time_ms(fn, logits, targets, embedding, tau, grad) for name, fn in forms.items()}
                  for _ in range(repeats + 1)]
        times = {name: [r[name] for r in rounds[1:]] for name in forms}  # the first round warms up
        med = {name: statistics.median(t) for name, t in times.items()}
        result["soft_target_grad"][str(grad).lower()] = {"ms": times, "median_ms": med,
                                                         "speedup": med["transcription"] / med["ours"]}
        print(f"soft_target_grad={str(grad).lower():5}: ours {med['ours']:.1f} ms, transcription "
              f"{med['transcription']:.1f} ms per forward + backward ({med['transcription'] / med['ours']:.2f}x), "
              f"{tokens} tokens, {result['distinct_targets']} distinct targets, |V| {vocab}, d {dim}, "
              f"{threads} thread(s)", flush=True)
    result["load_end"] = load_state()
    return result


def main(args) -> int:
    result = run(args.threads, args.tokens, args.vocab, args.dim, args.tau, args.repeats)
    if args.out:
        result["code_version"] = provenance.code_version(run, kernels=True)  # what it times
        rio.write_json(args.out, result)
    else:
        print(json.dumps({k: v for k, v in result.items() if k != "soft_target_grad"}))
    return 0
