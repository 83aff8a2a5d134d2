"""Cluster resource estimates (memory, time limit) of the heavy jobs, derived from the model size.

Used by workflow/rules/resources.smk to fill the `mem_mb` and `runtime` resources of the training and
sweep rules, so that a SLURM job asks for what its model needs: a large LSTM gets more memory and time
than a small one, WikiText-2 (33k words) more than PTB (10k). The estimates are deliberately generous
(a job killed at its limit costs more than an idle reservation) and grow with Snakemake's `attempt`
(1, 2, 3, ...) so that a retried job gets more of both.

Model of a training job (all in float32):
- memory = interpreter + torch (BASE_MB) + the corpus (int64 token ids) + parameters x copies
  (weights, gradients, update/clip temporaries, checkpoint buffers) + activations of one training batch
  or one evaluation window (the logits dominate: tokens x vocabulary), times SAFETY;
- time = a fixed start-up allowance + (training + evaluation FLOPs) / an assumed sustained rate,
  plus a per-step latency on GPU (the recurrence is sequential), times SAFETY.
On a GPU the activations and parameters live in device memory; the host keeps the CUDA runtime, the
corpus and checkpoint copies (GPU memory is not a SLURM request; pick the GPU model in the profile).

The rates are calibrated on this project's measurements, then lowered: the small LSTM trains at
~3,500 tokens/s on 2 threads of the development machine (~27 GFLOP/s per thread of model math);
we assume CPU_FLOPS_PER_THREAD = 12 GFLOP/s. Override any estimate per rule in the profile
(`set-resources`), which wins over these functions.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

# Shapes of the prepared corpora (README "Local data"; checked against a real prepare run by
# tests/test_resources.py). Used only for estimates: the jobs read the real corpus.
CORPUS_SHAPES: dict[str, dict[str, int]] = {
    "ptb": {"vocab": 10_000, "train": 929_589, "valid": 73_760, "test": 82_430},
    "wikitext2": {"vocab": 33_278, "train": 2_088_628, "valid": 217_646, "test": 245_569},
}

BASE_MB = {"cpu": 800, "cuda": 3000}  # python + torch (+ CUDA runtime on GPU nodes), host RSS
CPU_FLOPS_PER_THREAD = 12e9  # sustained fp32 model math per torch thread (measured ~27e9 here)
GPU_FLOPS = 2e12  # sustained fp32 (no TF32) for these small recurrent models, far below peak
GPU_SECONDS_PER_STEP = 2e-3  # kernel-launch latency per time step of the recurrence (train and eval)
CPU_SECONDS_PER_EVAL_TOKEN = 1e-4  # batch-1 evaluation is sequential matrix-vector work
PARAM_COPIES = {"cpu": 5, "cuda": 2}  # weights, grads, temporaries, checkpoint (host side on GPU)
SAFETY = 1.3
STARTUP_MINUTES = 10  # imports, corpus load, checkpoint writes, node start-up
MEM_STEP_MB = 256
RNG_NUMBERS_PER_S_PER_THREAD = 20e6  # streamed transformer init (measured ~55e6 per thread here)

# What a job is *expected* to take (the cost estimates: `python -m replicate costs`, the generated cost
# table of docs/reproducibility.md), as opposed to the generous time limits above. Measured on this
# project's machine; a faster or slower machine scales every estimate by the same factor.
MEASURED_ON = ("the Press & Wolf small engine at about 1,700 training tokens/s on one thread of this project's "
               "machine (2-core AMD EPYC VM, otherwise idle), 2026-12-05")
MEASURED_CPU_FLOPS_PER_THREAD = 6 * 2_640_000 * 1_700  # 6 x small's multiply-adds per token x tokens/s: ~27 GFLOP/s
MEASURED_RNG_NUMBERS_PER_S_PER_THREAD = 55e6
# The augmented loss (Inan +AL, +REAL) on top of the engine, as a factor on its time, with the fused
# output-layer kernel and its compiled row passes: training tokens/s of VD-LSTM 5,192 against +AL 4,384 and
# +REAL 4,099 (2 threads, idle, 2026-12-07; paper/measured/tables/press_wolf_speed.csv). It scales both the
# estimate and the time limit.
AUGMENTED_LOSS_SLOWDOWN = {"al": 1.18, "real": 1.27}
# GPU hours: an estimate until measured (no job of this project has been timed on a GPU yet). The stated rate:
# one GPU sustains GPU_FLOPS of model math (the rate the GPU time limits assume), so a job's GPU hours are the
# FLOPs its one-thread estimate stands for (one-thread hours x MEASURED_CPU_FLOPS_PER_THREAD) at that rate. The
# recurrence's per-time-step latency is left out, so a small model's job will take longer than this.
GPU_ESTIMATE = (f"estimated, not measured: one GPU at {GPU_FLOPS / 1e12:g} TFLOP/s sustained fp32 "
                f"({GPU_FLOPS / MEASURED_CPU_FLOPS_PER_THREAD:.0f}x one measured CPU thread), the recurrence's "
                "per-step latency left out")


def gpu_hours(one_thread_hours: float) -> float:
    """The GPU hours of work that takes ``one_thread_hours`` on one CPU thread (see GPU_ESTIMATE)."""
    return one_thread_hours * MEASURED_CPU_FLOPS_PER_THREAD / GPU_FLOPS


# A cluster time limit is at least this many times the job's expected wall time (expected_wall_min); tested.
LIMIT_OVER_ESTIMATE = 1.5
TWO_THREAD_SPEEDUP = 1.5  # a small-model job on two threads against one (measured: 1.4-1.6x)


# a container's memory limit, where a cgroup (v2, then v1) sets one; "max" or a huge number: none
CGROUP_MEMORY_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def machine_memory_gib() -> float:
    """This machine's memory in GiB (its container's limit where that is lower), rounded down to 0.1 GiB:
    the default of ``max_job_memory_gib``."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in CGROUP_MEMORY_LIMITS:
        try:
            limit = path.read_text().strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit))
    return math.floor(total / 2**30 * 10) / 10


def expected_wall_min(one_thread_min: float, threads: int) -> float:
    """A job's expected wall minutes at ``threads`` from its one-thread estimate (more threads: 1.5x at most)."""
    return one_thread_min / (1.0 if threads <= 1 else TWO_THREAD_SPEEDUP)


@dataclasses.dataclass(frozen=True)
class Estimate:
    mem_mb: int  # SLURM --mem for attempt 1
    runtime_min: int  # SLURM --time (minutes) for attempt 1
    parameters: int  # distinct parameters (tied matrix once)
    train_flops: float  # model FLOPs of the whole job (training + evaluation)
    one_thread_hours: float = 0.0  # expected time on one CPU thread at the measured throughput (MEASURED_ON)

    def for_attempt(self, attempt: int) -> "Estimate":
        """Retry k gets k times the memory and time of the first attempt."""
        k = max(1, int(attempt))
        return dataclasses.replace(self, mem_mb=self.mem_mb * k, runtime_min=self.runtime_min * k)


def device_kind(device: str) -> str:
    """'cuda' when the config asks for a GPU explicitly (cuda, cuda:N), else 'cpu' (auto and cpu: a
    cluster job gets a GPU only when the config says so; see README "Running on a cluster")."""
    return "cuda" if str(device).startswith("cuda") else "cpu"


def corpus_shape(dataset: str) -> dict[str, int]:
    try:
        return CORPUS_SHAPES[dataset]
    except KeyError:
        raise ValueError(f"no corpus shape for dataset {dataset!r}; known: {sorted(CORPUS_SHAPES)}") from None


def _round_up(x: float, step: int) -> int:
    return int(math.ceil(x / step) * step)


def lstm_parameters(vocab: int, hidden: int, layers: int, tying: str, projection: bool) -> int:
    """Distinct parameters of the Zaremba/P&W LSTM LM (embedding = hidden size; nn.LSTM layout with two
    bias vectors per layer; the tied matrix counted once; tied_nobias has no output bias).
    small: 4,653,200 untied / 2,653,200 tied (P&W: 4.65M / 2.65M)."""
    embedding = vocab * hidden
    lstm = layers * 4 * (2 * hidden * hidden + 2 * hidden)
    proj = hidden * hidden + hidden if projection else 0
    out_weight = 0 if tying in ("tied", "tied_nobias") else vocab * hidden
    out_bias = 0 if tying == "tied_nobias" else vocab
    return embedding + lstm + proj + out_weight + out_bias


def lstm_estimate(model: Any, train: Any, shape: dict[str, int], device: str = "cpu",
                  threads: int = 1) -> Estimate:
    """Memory and time of training one LSTM (``model``/``train``: replicate.lstm.config ModelConfig and
    TrainConfig, or anything with the same attributes) on a corpus of ``shape`` (CORPUS_SHAPES entry)."""
    kind = device_kind(device)
    V, H, L = model.vocab_size, model.hidden_size, model.num_layers
    params = lstm_parameters(V, H, L, model.tying, model.projection)
    # multiply-accumulates per token outside the embedding lookup
    macs = L * 4 * 2 * H * H + V * H + (H * H if model.projection else 0)

    def capped(n: int) -> int:
        return min(n, train.eval_max_tokens) if train.eval_max_tokens else n

    n_train = min(shape["train"], train.max_train_tokens) if train.max_train_tokens else shape["train"]
    batches = max(1, (n_train - 1) // (train.batch_size * train.bptt))
    if train.max_batches:
        batches = min(batches, train.max_batches)
    train_tokens = train.epochs * batches * train.batch_size * train.bptt
    # validation after every epoch; at the end clean train, valid and test
    eval_tokens = train.epochs * capped(shape["valid"]) + capped(n_train) + capped(shape["valid"]) + capped(shape["test"])
    flops = 6.0 * macs * train_tokens + 2.0 * macs * eval_tokens

    if kind == "cuda":
        steps = train.epochs * batches * train.bptt + eval_tokens / max(1, train.eval_batch_size)
        seconds = flops / GPU_FLOPS + steps * GPU_SECONDS_PER_STEP
    else:
        seconds = flops / (CPU_FLOPS_PER_THREAD * max(1, int(threads))) + eval_tokens * CPU_SECONDS_PER_EVAL_TOKEN
    runtime = STARTUP_MINUTES + math.ceil(SAFETY * seconds / 60.0)
    expected_s = flops / MEASURED_CPU_FLOPS_PER_THREAD + eval_tokens * CPU_SECONDS_PER_EVAL_TOKEN

    f32 = 4
    corpus_bytes = 2 * 8 * (shape["train"] + shape["valid"] + shape["test"])
    param_bytes = PARAM_COPIES[kind] * f32 * params
    if kind == "cuda":
        act_bytes = 0  # on the device
    else:
        per_token = 3 * V + 20 * L * H  # logits, their gradient and softmax; gates and states per layer
        train_act = train.batch_size * train.bptt * per_token
        eval_act = train.eval_batch_size * min(train.eval_window, capped(shape["test"])) * per_token
        act_bytes = f32 * max(train_act, eval_act)
    mem = BASE_MB[kind] + SAFETY * (corpus_bytes + param_bytes + act_bytes) / 2**20
    return Estimate(mem_mb=_round_up(mem, MEM_STEP_MB), runtime_min=int(runtime), parameters=params,
                    train_flops=flops, one_thread_hours=expected_s / 3600)


def sweep_estimate(section: dict[str, Any], width: int, threads: int = 1) -> Estimate:
    """Memory and time of one streamed initial-loss sweep job (replicate/initial_loss/sweep.py): it holds
    the embedding, one block, the untied output matrix and a mixer at a time, and is dominated by drawing
    the random parameters of every trunk (seeds x token distributions x trunk grid)."""
    n, d, layers = section["vocab_size"], width, section["n_layers"]
    block = 12 * d * d  # attention (4 d^2) + gated MLP (~8 d^2)
    held = 2 * n * d + block + d * d  # embedding, untied output, one block, orthogonal mixer
    chunk = min(section.get("chunk_tokens", 1024), section["batch_size"] * section["seq_len"])
    act = 3 * chunk * n + 4 * section["batch_size"] * section["seq_len"] * d
    mem = BASE_MB["cpu"] + SAFETY * 4 * (2 * held + act) / 2**20
    trunks = 0
    for entry in section["trunks"]:
        trunks += math.prod(len(v) if isinstance(v, list) else 1 for v in entry.values())
    passes = trunks * len(section["seeds"]) * len(section.get("token_distributions", ["uniform"]))
    numbers = passes * (2 * n * d + layers * block)
    seconds = numbers / (RNG_NUMBERS_PER_S_PER_THREAD * max(1, int(threads)))
    runtime = STARTUP_MINUTES + math.ceil(SAFETY * seconds / 60.0)
    return Estimate(mem_mb=_round_up(mem, MEM_STEP_MB), runtime_min=int(runtime),
                    parameters=2 * n * d + layers * block, train_flops=0.0,
                    one_thread_hours=numbers / MEASURED_RNG_NUMBERS_PER_S_PER_THREAD / 3600)


def transformer_one_thread_hours(section: dict[str, Any], shape: dict[str, int]) -> float:
    """Expected one-thread hours of one scale-study transformer run (``section``: config scale.transformer):
    its model FLOPs (6 x multiply-adds per training token, 2 x per evaluation token; attention projections,
    SwiGLU MLP, attention scores, output layer) at the LSTM engine's measured rate
    (MEASURED_CPU_FLOPS_PER_THREAD). An estimate: the transformer's own throughput was not measured apart."""
    from replicate.llama_dims import mlp_hidden

    d, layers, seq, vocab = section["d_model"], section["n_layers"], section["seq_len"], shape["vocab"]
    macs = layers * (4 * d * d + 3 * d * mlp_hidden(d) + 2 * seq * d) + vocab * d
    train_tokens = section["steps"] * section["batch_size"] * seq
    evals = section["steps"] // section["eval_every"] + 2
    eval_tokens = evals * min(section["eval_tokens"], shape["valid"])
    return (6.0 * macs * train_tokens + 2.0 * macs * eval_tokens) / MEASURED_CPU_FLOPS_PER_THREAD / 3600
