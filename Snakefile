# Tied input/output embeddings: one DAG from raw data to the report.
# Thin on purpose: config, validation, rule files. All logic lives in the `replicate` package.
from snakemake.utils import min_version, validate

min_version("9.0")


# A preset is complete by itself: config/config.yaml is read only when no --configfile is given, so
# `--configfile config/paper.yaml` never inherits a reduced value by accident. To overlay a few keys
# on a preset, name both: --configfile config/config.yaml my_ablation.yaml (later files win, merged).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


validate(config, "workflow/schemas/config.schema.yaml")
for _section in ("data", "press_wolf", "inan", "initial_loss", "scale", "report"):
    validate(config[_section], f"workflow/schemas/{_section}.schema.yaml")


envvars:
    "PATH",  # common.smk puts the running interpreter's bin folder first (see there)


wildcard_constraints:
    dataset="ptb|wikitext2",
    seed=r"\d+",


include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"
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
