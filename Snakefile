# Tied input/output embeddings: one DAG from raw data to the report.
# Thin on purpose: config, validation, rule files. All logic lives in the `replicate` package.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")
for _section in ("data", "press_wolf", "inan", "initial_loss", "scale", "report"):
    validate(config[_section], f"workflow/schemas/{_section}.schema.yaml")


envvars:
    "PATH",  # common.smk puts the running interpreter's bin folder first (see there)


wildcard_constraints:
    dataset="ptb|wikitext2",
    seed=r"\d+",


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"


rule all:
    default_target: True
    input:
        TARGETS,
