# Cluster resources of the heavy rules (memory, time limit, GPUs), estimated from the model size by
# replicate/resources.py (for the Press & Wolf and Inan runs: their Run's resources, runs.smk), and
# `one_thread_min`, the expected one-thread minutes at measured throughput that `python -m replicate costs`
# adds up (no scheduler reads it). The experiment rule files use these as `resources` values; a profile's
# `set-resources` (e.g. profiles/slurm/config.yaml) wins over them. Every estimate scales with
# Snakemake's `attempt`, so a job retried after running out of memory or time (profile `retries:`)
# asks for 2x, 3x, ... of both. Locally (no cluster) `mem_mb`/`runtime` only matter if you pass
# `--resources mem_mb=...`; `gpu` only if you pass `--resources gpu=N` (see README "Running on a cluster").
import json
import math

from replicate import experiments
from replicate import resources as _res
from replicate.experiments import MEMORY_FIX
from replicate.validate import check_memory

# the most memory one job may need: the config's, else this machine's (a cluster node's: set it)
MAX_JOB_MEMORY_GIB = experiments.memory_limit_gib(config)

# 'cuda' when the config asks for a GPU (device: cuda or cuda:N), else 'cpu'.
DEVICE_KIND = _res.device_kind(config["device"])
# {"vocab", "train", "valid", "test"} of a prepared corpus (ptb | wikitext2), for settings functions
corpus_shape = _res.corpus_shape


def train_gpus(wildcards):
    """`gpu` resource of a training rule: 1 when the config's device is cuda[:N], else 0 (device auto
    does not reserve a GPU on a cluster; pass --config device=cuda for GPU jobs)."""
    return 1 if DEVICE_KIND == "cuda" else 0


def lstm_estimate_of(settings, dataset, threads):
    """The resource estimate of training one LSTM with ``settings`` on ``dataset`` (cached: a job's memory, time
    limit and expected time all read it; the experiments' runs.py use the same one)."""
    return experiments.lstm_estimate(json.dumps(settings, sort_keys=True), dataset, DEVICE_KIND, int(threads))


def _lstm(settings_of, dataset, wildcards, threads):
    return lstm_estimate_of(settings_of(wildcards), dataset(wildcards) if callable(dataset) else dataset, threads)


def check_lstm_memory(settings, dataset, threads, where):
    """Refuse an LSTM run whose estimated memory is over max_job_memory_gib (a SettingError naming it)."""
    check_memory(lstm_estimate_of(settings, dataset, threads).mem_mb, MAX_JOB_MEMORY_GIB, where=where,
                 fix=MEMORY_FIX)


def lstm_one_thread_min(settings_of, dataset):
    """`one_thread_min` of a rule that trains one LSTM, its expected minutes on one CPU thread at the measured
    throughput (resources.MEASURED_ON). Not a limit: what `python -m replicate costs` adds up."""

    def one_thread_min(wildcards):
        return math.ceil(60 * _lstm(settings_of, dataset, wildcards, 1).one_thread_hours)

    return one_thread_min


def runtime_at_least(minutes, one_thread_min):
    """`runtime` of a training job with a configured limit: ``minutes``, raised where its own estimate
    (``one_thread_min(wildcards)`` at its threads) needs more: LIMIT_OVER_ESTIMATE x its expected wall time."""

    def runtime(wildcards, threads, attempt):
        expected = _res.expected_wall_min(one_thread_min(wildcards), threads)
        return attempt * max(int(minutes), math.ceil(_res.LIMIT_OVER_ESTIMATE * expected))

    return runtime


def check_sweep_memory(section, width, where):
    """Refuse an initial-loss sweep point whose estimated memory is over max_job_memory_gib."""
    check_memory(_res.sweep_estimate(section, width).mem_mb, MAX_JOB_MEMORY_GIB, where=where,
                 fix=MEMORY_FIX)


def sweep_mem_mb(section):
    """`mem_mb` of the initial-loss sweep job of width {width} (section: config["initial_loss"])."""

    def mem_mb(wildcards, threads, attempt):
        return _res.sweep_estimate(section, int(wildcards.width), threads).for_attempt(attempt).mem_mb

    return mem_mb


def sweep_one_thread_min(section):
    """`one_thread_min` of the initial-loss sweep job of width {width} (expected, not a limit)."""

    def one_thread_min(wildcards):
        return math.ceil(60 * _res.sweep_estimate(section, int(wildcards.width)).one_thread_hours)

    return one_thread_min


def sweep_runtime(section):
    """`runtime` (integer minutes) of the initial-loss sweep job of width {width}."""

    def runtime(wildcards, threads, attempt):
        return _res.sweep_estimate(section, int(wildcards.width), threads).for_attempt(attempt).runtime_min

    return runtime
