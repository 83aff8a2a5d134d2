# Tied input/output embeddings: one DAG from raw data to the report.
# Thin on purpose: config, validation, rule files. All logic lives in the `replicate` package.
from snakemake.utils import min_version

from replicate.experiments import check_config

min_version("9.0")


# A preset is complete by itself: config/config.yaml is read only when no --configfile is given, so
# `--configfile config/paper.yaml` never inherits a reduced value by accident. To overlay a few keys
# on a preset, name both: --configfile config/config.yaml my_ablation.yaml (later files win, merged).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


# The config checked (defaults filled in, then every configured run resolved) as `python -m replicate train` and
# `check-config` check it: replicate/experiments.py.
RUNS = check_config(config)


envvars:
    "PATH",  # common.smk puts the running interpreter's bin folder first (see there)


wildcard_constraints:
    dataset="ptb|wikitext2",
    seed=r"\d+",


include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/initial_loss_common.smk"
include: "workflow/rules/initial_loss.smk"
include: "workflow/rules/press_wolf_common.smk"
include: "workflow/rules/press_wolf.smk"
include: "workflow/rules/inan_common.smk"
include: "workflow/rules/inan.smk"
include: "workflow/rules/scale_common.smk"
include: "workflow/rules/scale.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        final_targets(),


# One target per experiment: `snakemake --cores 2 inan` runs (or `-n` plans) that experiment alone.
rule press_wolf:
    input:
        press_wolf_targets(),


rule inan:
    input:
        inan_targets(),


rule initial_loss:
    input:
        initial_loss_targets(),


rule scale:
    input:
        scale_targets(),


check_requested_targets({"cell": parse_cell})  # a path no rule writes: name the part that does not fit
