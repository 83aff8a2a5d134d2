# Cluster resources of the heavy rules (memory, time limit, GPUs), estimated from the model size by
# replicate/resources.py: every run's from its Run (replicate/experiments.py, runs.smk), with `one_thread_min`,
# the expected one-thread minutes at measured throughput that `python -m replicate costs` adds up (no scheduler
# reads it). A profile's `set-resources` (e.g. profiles/slurm/config.yaml) wins over them. Every estimate scales
# with Snakemake's `attempt`, so a job retried after running out of memory or time (profile `retries:`) asks for
# 2x, 3x, ... of both. Locally (no cluster) `mem_mb`/`runtime` only matter if you pass `--resources mem_mb=...`;
# `gpu` only if you pass `--resources gpu=N` (see README "Running on a cluster").
from replicate import experiments
from replicate import resources as _res
from replicate.experiments import MEMORY_FIX
from replicate.validate import check_memory

# the most memory one job may need: the config's, else this machine's (a cluster node's: set it)
MAX_JOB_MEMORY_GIB = experiments.memory_limit_gib(config)

# 'cuda' when the config asks for a GPU (device: cuda or cuda:N), else 'cpu'.
DEVICE_KIND = _res.device_kind(config["device"])


def train_gpus(wildcards):
    """`gpu` resource of a training rule: 1 when the config's device is cuda[:N], else 0 (device auto
    does not reserve a GPU on a cluster; pass --config device=cuda for GPU jobs)."""
    return 1 if DEVICE_KIND == "cuda" else 0


def check_sweep_memory(section, width, where):
    """Refuse an initial-loss sweep point whose estimated memory is over max_job_memory_gib (the memory
    benchmark's; a sweep width's own: its Run)."""
    check_memory(_res.sweep_estimate(section, width).mem_mb, MAX_JOB_MEMORY_GIB, where=where,
                 fix=MEMORY_FIX)
