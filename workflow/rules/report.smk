# The report: every table and figure beside the papers', the claims checked against our numbers.
# Its inputs are every experiment's final targets (common.smk), read when the DAG is built.
# Logic: replicate/report/ (python -m replicate report ...).
import glob


localrules:
    report_learning_curves,
    report,


rule report_learning_curves:
    input:
        histories=lambda wildcards: press_wolf_histories(),
        paper="paper/reference/press_wolf_table6.csv",
    output:
        report(
            R(f"{paths.PW_LEARNING_CURVES}.png"),
            caption="../report/report_learning_curves.rst",
            category="Press & Wolf",
            subcategory="Figures",
            labels={"figure": "learning curves"},
        ),
        R(f"{paths.PW_LEARNING_CURVES}.svg"),
    params:
        stem=subpath(output[0], strip_suffix=".png"),
        code=code_version("report.figures", "plotting"),
    log:
        R("logs/report/learning_curves.log"),
    shell:
        "python -m replicate report learning-curves --out-stem {params.stem:q} --paper {input.paper:q} "
        "{input.histories} > {log} 2>&1"


rule report:
    input:
        results=lambda wildcards: experiment_targets(),
        curves=lambda wildcards: R(f"{paths.PW_LEARNING_CURVES}.png") if press_wolf_histories() else [],
        template=config["report"]["template"],
        paper=sorted(glob.glob("paper/reference/*.csv")),
        captions=sorted(glob.glob("workflow/report/*.rst")),
    output:
        md=R(paths.REPORT_MD),
        html=report(
            R(paths.REPORT_HTML),
            caption="../report/report_index.rst",
            category="Report",
            labels={"file": "index.html"},
        ),
    params:
        spec=spec_json(experiments.report_config(config)),
        args=config_args,
        results=subpath(output.md, ancestor=2),
        code=code_version("report.build"),
    log:
        R("logs/report/report.log"),
    shell:
        "python -m replicate report build --results {params.results} --template {input.template:q} "
        "--md {output.md} --html {output.html} --captions workflow/report {params.args} > {log} 2>&1"

