"""What the jobs cost: each training or sweep job's memory, time limit and expected one-thread CPU time, from its
model size (generous limits that grow with Snakemake's ``attempt``; a profile's ``set-resources`` wins), and
``python -m replicate costs``: a plan's estimated hours per experiment, and the generated cost block of
docs/reproducibility.md. Rates: measured on this project's machine (``MEASURED_ON``), then lowered for
the limits. Imports nothing heavy."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from replicate import io as rio
from replicate import paths
from replicate.errors import ReplicateError

# the prepared corpora's shapes (tests/test_resources.py checks them against a real prepare run)
CORPUS_SHAPES: dict[str, dict[str, int]] = {
    "ptb": {"vocab": 10_000, "train": 929_589, "valid": 73_760, "test": 82_430},
    "wikitext2": {"vocab": 33_278, "train": 2_088_628, "valid": 217_646, "test": 245_569},
}
corpus_shape = CORPUS_SHAPES.__getitem__  # a dataset the schemas and wildcards allow

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

# what a job is expected to take (the costs), as opposed to the generous limits above
MEASURED_ON = ("the Press & Wolf small engine at about 1,700 training tokens/s on one thread of this project's "
               "machine (2-core AMD EPYC VM, otherwise idle), 2026-12-05")
MEASURED_CPU_FLOPS_PER_THREAD = 6 * 2_640_000 * 1_700  # 6 x small's multiply-adds per token x tokens/s: ~27 GFLOP/s
MEASURED_RNG_NUMBERS_PER_S_PER_THREAD = 55e6
# Inan's +AL / +REAL as a factor on the engine's time (estimate and limit): training tokens/s of VD-LSTM 5,192
# against +AL 4,384 and +REAL 4,099 (2 threads, idle, 2026-12-07; paper/measured/tables/press_wolf_speed.csv)
AUGMENTED_LOSS_SLOWDOWN = {"al": 1.18, "real": 1.27}
# GPU hours, an estimate until measured: the FLOPs a one-thread estimate stands for, at GPU_FLOPS
GPU_ESTIMATE = (f"estimated, not measured: one GPU at {GPU_FLOPS / 1e12:g} TFLOP/s sustained fp32 "
                f"({GPU_FLOPS / MEASURED_CPU_FLOPS_PER_THREAD:.0f}x one measured CPU thread), the recurrence's "
                "per-step latency left out")


def gpu_hours(one_thread_hours: float) -> float:
    """The GPU hours of work that takes ``one_thread_hours`` on one CPU thread (see GPU_ESTIMATE)."""
    return one_thread_hours * MEASURED_CPU_FLOPS_PER_THREAD / GPU_FLOPS


LIMIT_OVER_ESTIMATE = 1.5  # a cluster time limit is at least this many times the expected wall time
TWO_THREAD_SPEEDUP = 1.5  # a small-model job on two threads against one (measured: 1.4-1.6x)
# a container's memory limit, where a cgroup (v2, then v1) sets one; "max" or a huge number: none
CGROUP_MEMORY_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def machine_memory_gib() -> float:
    """This machine's (or its container's) memory in GiB, rounded down to 0.1: ``max_job_memory_gib``'s default."""
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
    """'cuda' when the config asks for a GPU explicitly (cuda, cuda:N), else 'cpu' (auto included)."""
    return "cuda" if str(device).startswith("cuda") else "cpu"


def _round_up(x: float, step: int) -> int:
    return int(math.ceil(x / step) * step)


def lstm_parameters(vocab: int, hidden: int, layers: int, tying: str, projection: bool) -> int:
    """Distinct parameters of the Zaremba/P&W LSTM LM, the tied matrix once (small: 4,653,200 untied; 2,653,200)."""
    embedding = vocab * hidden
    lstm = layers * 4 * (2 * hidden * hidden + 2 * hidden)
    proj = hidden * hidden + hidden if projection else 0
    out_weight = 0 if tying in ("tied", "tied_nobias") else vocab * hidden
    out_bias = 0 if tying == "tied_nobias" else vocab
    return embedding + lstm + proj + out_weight + out_bias


def lstm_estimate(model: Any, train: Any, shape: dict[str, int], device: str = "cpu",
                  threads: int = 1) -> Estimate:
    """Memory and time of training one LSTM (``model``, ``train``: replicate.lstm.config's) on a corpus of ``shape``."""
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
    """Memory and time of one streamed initial-loss sweep job: one block at a time; drawing every trunk's random
    parameters (seeds x token distributions x trunk grid) dominates."""
    n, d, layers = section["vocab_size"], width, section["n_layers"]
    block = 12 * d * d  # attention (4 d^2) + gated MLP (~8 d^2)
    held = 2 * n * d + block + d * d  # embedding, untied output, one block, orthogonal mixer
    chunk = min(section.get("chunk_tokens", 1024), section["batch_size"] * section["seq_len"])
    act = 3 * chunk * n + 4 * section["batch_size"] * section["seq_len"] * d
    mem = BASE_MB["cpu"] + SAFETY * 4 * (2 * held + act) / 2**20
    trunks = sum(math.prod(len(v) if isinstance(v, list) else 1 for v in entry.values()) for entry in section["trunks"])
    passes = trunks * len(section["seeds"]) * len(section.get("token_distributions", ["uniform"]))
    numbers = passes * (2 * n * d + layers * block)
    seconds = numbers / (RNG_NUMBERS_PER_S_PER_THREAD * max(1, int(threads)))
    runtime = STARTUP_MINUTES + math.ceil(SAFETY * seconds / 60.0)
    return Estimate(mem_mb=_round_up(mem, MEM_STEP_MB), runtime_min=int(runtime),
                    parameters=2 * n * d + layers * block, train_flops=0.0,
                    one_thread_hours=numbers / MEASURED_RNG_NUMBERS_PER_S_PER_THREAD / 3600)


def transformer_one_thread_hours(section: dict[str, Any], shape: dict[str, int]) -> float:
    """Expected one-thread hours of one scale-study transformer run (config scale.transformer): its model FLOPs at
    the LSTM engine's measured rate (the transformer's own throughput was not measured apart)."""
    from replicate.llama_dims import mlp_hidden

    d, layers, seq, vocab = section["d_model"], section["n_layers"], section["seq_len"], shape["vocab"]
    macs = layers * (4 * d * d + 3 * d * mlp_hidden(d) + 2 * seq * d) + vocab * d
    train_tokens = section["steps"] * section["batch_size"] * seq
    evals = section["steps"] // section["eval_every"] + 2
    eval_tokens = evals * min(section["eval_tokens"], shape["valid"])
    return (6.0 * macs * train_tokens + 2.0 * macs * eval_tokens) / MEASURED_CPU_FLOPS_PER_THREAD / 3600


# ---- a plan's costs: python -m replicate costs

EXPERIMENTS = tuple(paths.GROUPS)  # rule-name prefixes; the rest is "data, report"
OTHER = "data, report"

DOCS_PAGE = "docs/reproducibility.md"
BLOCK_BEGIN, BLOCK_END = "<!-- costs:begin -->", "<!-- costs:end -->"
# the plans of the generated block: (what it is, the arguments of `costs`)
DOCS_PLANS = (("the default preset", ["all"]), ("the paper preset", ["all", "--configfile", "config/paper.yaml"]))

_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_MINUTES = re.compile(r"\bone_thread_min=(\d+)")


@dataclasses.dataclass
class ExperimentCost:
    jobs: int = 0
    minutes: int = 0
    unestimated: dict[str, int] = dataclasses.field(default_factory=lambda: defaultdict(int))  # rule -> jobs


def parse_plan(text: str) -> dict[str, ExperimentCost]:
    """Per experiment: jobs, estimated minutes and the rules of jobs without an estimate, from a `snakemake -n` plan
    (each job's `rule NAME:` block, its `resources:` line holding one_thread_min); `all` is no job."""
    costs: dict[str, ExperimentCost] = defaultdict(ExperimentCost)
    rule, minutes = None, None

    def close():
        if rule is not None and rule != "all":
            cost = costs[next((e for e in EXPERIMENTS if rule.startswith(f"{e}_")), OTHER)]
            cost.jobs += 1
            if minutes is None:
                cost.unestimated[rule] += 1
            else:
                cost.minutes += minutes

    for line in text.splitlines():
        if m := _RULE.match(line.strip()):
            close()
            rule, minutes = m.group(1), None
        elif rule is not None and line.strip().startswith("resources:") and (m := _MINUTES.search(line)):
            minutes = int(m.group(1))
    close()
    return dict(costs)


def table(costs: dict[str, ExperimentCost]) -> str:
    """A Markdown table: one row per experiment and the total."""
    rows = ["| experiment | jobs | estimated one-thread hours | GPU hours (estimate, not measured) | jobs without "
            "an estimate |", "|---|---|---|---|---|"]
    order = [e for e in (*EXPERIMENTS, OTHER) if e in costs]
    total = ExperimentCost(jobs=sum(c.jobs for c in costs.values()), minutes=sum(c.minutes for c in costs.values()))
    for name, c in [*((name, costs[name]) for name in order), ("total", total)]:
        missing = "" if c is total else ", ".join(f"{r} x{n}" for r, n in sorted(c.unestimated.items())) or "none"
        rows.append(f"| {name} | {c.jobs} | {c.minutes / 60:.1f} | {gpu_hours(c.minutes / 60):.1f} | {missing} |")
    return "\n".join(rows)


def docs_block(plans: list[dict[str, ExperimentCost]]) -> str:
    """The generated block of DOCS_PAGE: the first plan of DOCS_PLANS as a table, the others as their totals."""
    head = (f"Generated by `python -m replicate costs --write-docs` (the whole plan of each preset) from "
            f"`replicate/resources.py`, which converts each job's FLOPs with {MEASURED_ON}; "
            f"Inan's augmented loss as a measured factor on the engine "
            f"(+AL x{AUGMENTED_LOSS_SLOWDOWN['al']}, +REAL x{AUGMENTED_LOSS_SLOWDOWN['real']}). "
            f"GPU hours: {GPU_ESTIMATE}. Do not edit between the markers.\n\n")
    totals = [(name, args, sum(c.jobs for c in p.values()), sum(c.minutes for c in p.values()) / 60)
              for (name, args), p in zip(DOCS_PLANS[1:], plans[1:], strict=True)]
    return head + table(plans[0]) + "\n" + "".join(
        f"\n{name.capitalize()} (`python -m replicate costs {' '.join(args)}`): {jobs} jobs, {hours:,.1f} estimated "
        f"one-thread hours, {gpu_hours(hours):,.1f} GPU hours (estimate, not measured).\n"
        for name, args, jobs, hours in totals)


def write_docs(plans: list[dict[str, ExperimentCost]], page: str = DOCS_PAGE) -> None:
    """Replace the generated block of ``page`` (its markers must be there)."""
    rio.replace_block(page, BLOCK_BEGIN, BLOCK_END, docs_block(plans), f"put the two markers back into {page}")


def plan(snakemake_args: list[str], remaining: bool = False) -> str:
    """The text of `snakemake -n [--forceall] ARGS` (this interpreter's Snakemake)."""
    cmd = [sys.executable, "-m", "snakemake", "-n", *([] if remaining else ["--forceall"]), *snakemake_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "REPLICATE_PROGRESS_SECONDS": "0"})
    if proc.returncode != 0:
        raise ReplicateError(f"snakemake could not plan {' '.join(snakemake_args) or 'all'}:\n"
                             f"{(proc.stdout + proc.stderr)[-2000:]}",
                             "fix the targets or config (the same arguments as to snakemake -n)")
    return proc.stdout + proc.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m replicate costs",
        usage="%(prog)s [--remaining] [--markdown | --write-docs] [TARGETS] [SNAKEMAKE OPTIONS]",
        description="A plan's estimated one-thread CPU hours per experiment. Every other argument goes to "
                    "snakemake -n unchanged, e.g.: all --configfile config/smoke.yaml")
    parser.add_argument("--remaining", action="store_true",
                        help="only the jobs still to run (default: the whole plan, as if nothing had run)")
    parser.add_argument("--markdown", action="store_true", help=f"the table only (what {DOCS_PAGE} holds)")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"write the default and the paper preset's costs into {DOCS_PAGE} (run in the repository)")
    args, snakemake_args = parser.parse_known_args(argv)
    if args.write_docs and snakemake_args:
        raise ReplicateError("--write-docs plans the default and the paper preset itself", "drop the other arguments")
    plans = [parse_plan(plan(a, args.remaining)) for a in ([a for _, a in DOCS_PLANS] if args.write_docs
                                                             else [snakemake_args])]
    print("\n\n".join(map(table, plans)))
    if args.write_docs:
        write_docs(plans)
    if not args.markdown:
        print(f"\nMeasured throughput behind the estimates: {MEASURED_ON}; Inan's augmented loss "
              f"as a factor on the engine ({AUGMENTED_LOSS_SLOWDOWN}). Wall time on N cores is at least "
              f"the total / N and at least the longest job. GPU hours: {GPU_ESTIMATE}.")
    return 0
