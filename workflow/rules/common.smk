# Helpers of every experiment's rules: result paths, the final targets, the `spec` params. A rule's `code` param is
# code_version(<the modules its job computes with>), a hash of them and of the math they import
# (replicate/provenance.py): Snakemake (--rerun-triggers params, the default) reruns the jobs an edit can change.
import functools
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger as _snakemake_logger

from replicate import console, data, experiments, paths
from replicate.experiments import spec_json
from replicate.provenance import code_version
from replicate.validate import explain as explain_target
from replicate.validate import parse_text  # initial_loss_common.smk

# Jobs run `python -m replicate ...` with the interpreter that runs Snakemake, so a venv works
# without activation (Snakemake does not put its own bin folder on the jobs' PATH).
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])

# The console plan in short lines (long file lists a count); what runs and the rerun triggers are unchanged.
# REPLICATE_FULL_PLAN=1 prints everything (replicate/console.py).
def given_cores():
    """The --cores of the command, or None for a command that takes none (--unlock, --cleanup-metadata)."""
    try:
        return workflow.cores
    except WorkflowError:
        return None


console.install(_snakemake_logger, given_cores())

# The results folder of this config: results/ unless the preset names another (the smoke preset writes
# to results_smoke/, so that it never meets a real run's files, metadata or report).
RESULTS_DIR = config["results_dir"]


def R(*rel):
    """R(paths.X, ...): the path(s) of replicate/paths.py's names under this config's results folder."""
    return paths.under(RESULTS_DIR, *rel)


onstart:
    # What the run costs, before its first job, then one progress line per running
    # training job, read from the jobs' logs, and one for the whole run (at most one each per
    # REPLICATE_PROGRESS_SECONDS, default 60; 0 turns it off; replicate/console.py).
    jobs = list(workflow.dag.needrun_jobs())
    console.announce([(job.rule.name, job.resources.get("one_thread_min")) for job in jobs],
                   given_cores(), config["cost_notice_hours"], _snakemake_logger.info)
    console.start(R("logs"), _snakemake_logger.info, console.planned(jobs), given_cores())


onsuccess:
    if os.path.exists(R(paths.REPORT_HTML)):
        _snakemake_logger.info(f"Report: {os.path.abspath(R(paths.REPORT_HTML))}")


@functools.cache
def corpus_input(dataset):
    """The prepared corpus of ``dataset`` as the input of a job that reads it, by content: while the file holds the
    corpus the data stage writes (replicate.data.holds_prepared), it is ancient(), so a data stage that reruns and
    writes the same corpus again (an edit of the data code, a new local_dir) reruns no job that reads it; another
    corpus, or none, does."""
    path = R(paths.DATA_CORPUS.format(dataset=dataset))
    return ancient(path) if data.holds_prepared(path, dataset) else path


def rebased(path):
    """A path a library function built under results/ (paths.under_results), under RESULTS_DIR instead."""
    return R(os.path.relpath(path, paths.RESULTS))


def experiment_targets():
    """Every experiment's final outputs (what the report reads); each *_common.smk says its own."""
    return [R(paths.DATA_SUMMARY), *initial_loss_targets(), *press_wolf_targets(), *inan_targets(),
            *scale_targets()]


def final_targets():
    """The target of `snakemake all`: every experiment's final outputs and the report."""
    return [*experiment_targets(), R(paths.REPORT_HTML)]


def forced(rule, output):
    """Whether the command asks for this job to run again (--forceall, --forcerun RULE or FILE, -f)."""
    dag = workflow.dag_settings
    return bool(dag.forceall or rule in dag.forcerun or output in dag.forcerun
                or (dag.forcetargets and output in dag.targets))


def plan_check(check):
    """An input function that runs ``check(wildcards)`` and adds no input. Input functions run while the DAG
    is built, so a value the check refuses (a SettingError) stops `snakemake`, `-n` included, before any
    job starts."""

    def no_input(wildcards):
        check(wildcards)
        return []

    return no_input


def engine_flags(keep_checkpoint=None):
    """Flags of an engine training command: --allow-tf32 (config allow_tf32) and --drop-checkpoint (config
    keep_final_checkpoint false; keep_checkpoint=True for runs whose weights an analysis reads)."""
    keep = config["keep_final_checkpoint"] if keep_checkpoint is None else keep_checkpoint
    return " ".join(flag for flag, on in (("--allow-tf32", config["allow_tf32"]), ("--drop-checkpoint", not keep)) if on)


def section_spec(section):
    """The `spec` param of a table or figure rule: the global keys and ``section``, the values its command reads
    (it loads the config itself from its `args` param, replicate.cli.load_section), so a change reruns it."""
    return spec_json(experiments.section_config(config, section))


def requested_targets():
    """The targets on snakemake's command line, read by Snakemake's own parser (the workflow is parsed before
    Snakemake hands them over); none when Snakemake runs from its Python API."""
    if os.path.basename(sys.argv[0]) != "snakemake":
        return []
    from snakemake.cli import get_argument_parser

    args, _ = get_argument_parser().parse_known_args(sys.argv[1:])
    return args.targets or []


def check_requested_targets(checkers):
    """Refuse a requested path that no rule writes, naming the part that does not fit the closest rule's
    pattern (replicate/validate.py), instead of Snakemake's bare "No rule to produce"."""
    rules = list(workflow.rules)
    names = {r.name for r in rules}
    for target in requested_targets():
        path = os.path.relpath(target) if os.path.isabs(target) else os.path.normpath(target)
        if target in names or os.path.exists(path) or any(r.is_producer(path) for r in rules):
            continue
        raise explain_target(path, [(r.name, str(o)) for r in rules for o in r.output], checkers)
