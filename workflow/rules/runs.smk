# The runs that the experiments declare (replicate/<experiment>/runs.py): one rule per run kind, named by the kind
# (press_wolf_train, inan_train, inan_ablation_train, inan_screen_train, inan_subspace_point, scale_train,
# scale_transformer, initial_loss_sweep), so `--set-threads inan_train=1` and a profile's set-resources name them as
# before. A job runs `python -m replicate train <experiment> <run_id>` with this command's config files and --config
# keys: the command it prints is the command to type. Its `spec` param is the run's resolved settings (Snakemake
# reruns a job whose settings changed); threads and resources come from the same Run.
import functools
import shlex

from replicate import experiments


# `--configfile F ... --config K=V ...` of this snakemake command, for the jobs' commands (config/config.yaml if none)
CONFIG_ARGS = experiments.config_args(workflow.overwrite_configfiles, workflow.config_settings.config_args)


def config_args(wildcards, output):
    """CONFIG_ARGS as the `args` param of a table, figure or report rule, whose command loads the config itself: a
    function of the output, so no rerun trigger (its `spec` param is)."""
    return CONFIG_ARGS


@functools.lru_cache(maxsize=None)
def declared_run(experiment, run_id):
    """The Run of a run id: a configured one as the Snakefile resolved it, another resolved now (a SettingError
    names what is wrong with it, and the canonical spelling)."""
    return RUNS[experiment].get(run_id) or experiments.resolve_run(config, experiment, run_id)


def run_targets(experiment, prefix=""):
    """The metrics.json of the configured runs of ``experiment`` whose run id starts with ``prefix``."""
    return [R(f"{experiment}/{run_id}/metrics.json") for run_id in RUNS[experiment] if run_id.startswith(prefix)]


def job_run(kind):
    return lambda wildcards: declared_run(kind.experiment, kind.run_id(wildcards))


def train_check(kind):
    """Plan-time check of one run: its id resolves (settings in range, memory under the limit), and a finished
    run in its folder is not replaced by other settings unless the command forces it."""

    def check(wildcards):
        run = job_run(kind)(wildcards)
        metrics = R(f"{run.folder}/metrics.json")
        run.refuse_to_overwrite(metrics, forced(kind.rule, metrics))

    return check


def train_args(kind, wildcards):
    """What `python -m replicate train` takes before the job's options: the run, and this command's config."""
    return f"{kind.experiment} {shlex.quote(kind.run_id(wildcards))} {CONFIG_ARGS}"


def job_option(kind, name, value):
    """A job option as a param: a rerun trigger if the kind's results were recorded with it, else derived."""
    return value if name in kind.triggers else (lambda wildcards, output: value)


def train_resource(kind, key):
    """`key` of a job's resources (its Run's estimate at the job's threads and attempt)."""
    return lambda wildcards, threads, attempt: job_run(kind)(wildcards).resources(threads, attempt)[key]


for kind in experiments.kinds():

    rule:
        name: kind.rule
        input:
            corpus=lambda wildcards, kind=kind: ([corpus_input(run.dataset)]
                                                 if (run := job_run(kind)(wildcards)).dataset else []),
            checked=plan_check(train_check(kind)),
        output:
            **{name: R(f"{kind.experiment}/{kind.pattern}{suffix}") for name, suffix in kind.outputs.items()},
        wildcard_constraints:
            **kind.constraints,
        params:
            spec=lambda wildcards, kind=kind: job_run(kind)(wildcards).spec_json,
            # `<experiment> <run_id> --configfile ...`: named from the output path, so no rerun trigger (the spec is)
            args=lambda wildcards, output, kind=kind: train_args(kind, wildcards),
            device=job_option(kind, "device", config["device"]),
            flags=job_option(kind, "flags", engine_flags(keep_checkpoint=kind.keep_checkpoint or None)),
            code=code_version(*kind.code),
            **({"work_dir": R(f"{kind.experiment}/{kind.work}")} if kind.work else {}),
        threads: lambda wildcards, kind=kind: job_run(kind)(wildcards).threads
        resources:
            # cluster memory/time limit from the model size x attempt, a GPU when device is cuda (resources.smk)
            **{key: train_resource(kind, key) for key in kind.resources},
            gpu=train_gpus,
        log:
            R(f"logs/{kind.experiment}/{kind.log or kind.pattern}.log"),
        benchmark:
            R(f"benchmarks/{kind.experiment}/{kind.log or kind.pattern}.tsv")
        shell:
            "python -m replicate train {params.args} --threads {threads} --device {params.device} {params.flags} "
            "> {log:q} 2>&1"
