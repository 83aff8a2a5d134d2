# Cluster resources of the heavy rules (memory, time limit, GPUs), estimated from the model size by
# replicate/resources.py, and `one_thread_min`, the expected one-thread minutes at measured throughput
# that `python -m replicate costs` adds up (no scheduler reads it). The experiment rule files use these
# as `resources` values; a profile's
# `set-resources` (e.g. profiles/slurm/config.yaml) wins over them. Every estimate scales with
# Snakemake's `attempt`, so a job retried after running out of memory or time (profile `retries:`)
# asks for 2x, 3x, ... of both. Locally (no cluster) `mem_mb`/`runtime` only matter if you pass
# `--resources mem_mb=...`; `gpu` only if you pass `--resources gpu=N` (see README "Running on a cluster").
import functools
import json
import math

from replicate import resources as _res
from replicate.lstm.config import resolve as _lstm_resolve
from replicate.validate import check_memory

MEMORY_FIX = ("make the run smaller (hidden size, width, vocabulary, batch), or raise max_job_memory_gib "
              "(e.g. --config max_job_memory_gib=128; its default is this machine's memory) if the machine or "
              "cluster node has the memory")
# the most memory one job may need: the config's, else this machine's (a cluster node's: set it)
MAX_JOB_MEMORY_GIB = config.get("max_job_memory_gib") or _res.machine_memory_gib()

# 'cuda' when the config asks for a GPU (device: cuda or cuda:N), else 'cpu'.
DEVICE_KIND = _res.device_kind(config["device"])
# {"vocab", "train", "valid", "test"} of a prepared corpus (ptb | wikitext2), for settings functions
corpus_shape = _res.corpus_shape


def train_gpus(wildcards):
    """`gpu` resource of a training rule: 1 when the config's device is cuda[:N], else 0 (device auto
    does not reserve a GPU on a cluster; pass --config device=cuda for GPU jobs)."""
    return 1 if DEVICE_KIND == "cuda" else 0


def lstm_estimate_of(settings, dataset, threads):
    """The resource estimate of training one LSTM with ``settings`` on ``dataset`` (computed once per run:
    a job's memory, time limit and expected time all read it)."""
    return _lstm_estimate_cached(json.dumps(settings, sort_keys=True), dataset, int(threads))


@functools.lru_cache(maxsize=None)
def _lstm_estimate_cached(settings_json, dataset, threads):
    shape = _res.corpus_shape(dataset)
    model, train = _lstm_resolve(json.loads(settings_json), shape["vocab"])
    return _res.lstm_estimate(model, train, shape, DEVICE_KIND, threads)


def _lstm(settings_of, dataset, wildcards, threads):
    return lstm_estimate_of(settings_of(wildcards), dataset(wildcards) if callable(dataset) else dataset, threads)


def check_lstm_memory(settings, dataset, threads, where):
    """Refuse an LSTM run whose estimated memory is over max_job_memory_gib (a SettingError naming it)."""
    check_memory(lstm_estimate_of(settings, dataset, threads).mem_mb, MAX_JOB_MEMORY_GIB, where=where,
                 fix=MEMORY_FIX)


def lstm_mem_mb(settings_of, dataset):
    """`mem_mb` of a rule that trains one LSTM. settings_of(wildcards) -> the run's settings dict
    ({"size": preset, **overrides}, as replicate.lstm.config.resolve takes); dataset: ptb | wikitext2, or
    a function of the wildcards that returns one."""

    def mem_mb(wildcards, threads, attempt):
        return _lstm(settings_of, dataset, wildcards, threads).for_attempt(attempt).mem_mb

    return mem_mb


def lstm_runtime(settings_of, dataset, slowdown=None):
    """`runtime` (integer minutes) of a rule that trains one LSTM; same arguments as lstm_mem_mb, and the
    measured ``slowdown(wildcards)`` of its loss (as lstm_one_thread_min), so the limit stays above the estimate."""

    def runtime(wildcards, threads, attempt):
        factor = slowdown(wildcards) if slowdown else 1.0
        return math.ceil(factor * _lstm(settings_of, dataset, wildcards, threads).for_attempt(attempt).runtime_min)

    return runtime


def lstm_one_thread_min(settings_of, dataset, slowdown=None):
    """`one_thread_min` of a rule that trains one LSTM, its expected minutes on one CPU thread at the measured
    throughput (resources.MEASURED_ON), times ``slowdown(wildcards)`` if given. Not a limit: what
    `python -m replicate costs` adds up."""

    def one_thread_min(wildcards):
        factor = slowdown(wildcards) if slowdown else 1.0
        return math.ceil(60 * factor * _lstm(settings_of, dataset, wildcards, 1).one_thread_hours)

    return one_thread_min


def runtime_at_least(minutes, one_thread_min):
    """`runtime` of a training job with a configured limit: ``minutes``, raised where its own estimate
    (``one_thread_min(wildcards)`` at its threads) needs more: LIMIT_OVER_ESTIMATE x its expected wall time."""

    def runtime(wildcards, threads, attempt):
        expected = _res.expected_wall_min(one_thread_min(wildcards), threads)
        return attempt * max(int(minutes), math.ceil(_res.LIMIT_OVER_ESTIMATE * expected))

    return runtime


def augmented_loss_slowdown(wildcards):
    """The Inan variant's measured time factor over the engine alone (+AL, +REAL; 1 for VD-LSTM and +RE)."""
    return _res.AUGMENTED_LOSS_SLOWDOWN.get(wildcards.variant, 1.0)


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
