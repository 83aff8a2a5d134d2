# Inan et al. 2017: Table 1 (VD-LSTM, +AL, +RE, +REAL), the tau x gamma ablation and section 6.2
# (Figure 1). Training is the Press & Wolf engine (replicate/lstm) + the augmented loss (replicate/inan); its
# training rules and the section 6.2 point rule are in runs.smk (replicate/inan/runs.py). Targets: inan_common.smk.
localrules:
    inan_table1,
    inan_ablation_table,
    inan_screen_table,
    inan_figure1,
    inan_subspace_readings,


rule inan_screen_soft_target:
    input:
        corpus=lambda wildcards: corpus_input(wildcards.dataset),
        metrics=R(paths.INAN_SCREEN_METRICS),
    output:
        R(paths.INAN_SCREEN_SOFT),
    wildcard_constraints:
        size="small|medium|large",
        variant="al|real",
        tag="[a-z0-9]+(_[a-z0-9]+)*",
    params:
        run_dir=subpath(input.metrics, parent=True),
        loss_tokens=INAN_SC["soft_target_loss_tokens"],
        code=code_version("inan.soft_target"),
    log:
        R("logs/inan/screen/{dataset}/{size}_{variant}_{tag}_soft_target.log"),
    shell:
        "python -m replicate inan soft-target --corpus {input.corpus} --loss-tokens {params.loss_tokens} "
        "--threads {threads} --out {output:q} {params.run_dir:q} > {log:q} 2>&1"


rule inan_screen_table:
    input:
        metrics=INAN_SCREEN_RUNS,
        soft=INAN_SCREEN_SOFT,
    output:
        report(R(paths.INAN_SCREEN), caption="../report/inan_screen.rst", category="Inan et al.",
               labels={"table": "short-scale screen"}),
    params:
        spec=section_spec("inan"),
        args=config_args,
        code=code_version("inan.report"),
    log:
        R("logs/inan/screen.log"),
    shell:
        "python -m replicate inan screen-table {params.args} "
        "--out {output} --soft-target {input.soft} -- {input.metrics} > {log} 2>&1"


rule inan_table1:
    input:
        metrics=INAN_TABLE1_RUNS,
        paper="paper/reference/inan_table1.csv",
    output:
        report(R(paths.INAN_TABLE1), caption="../report/inan_table1.rst", category="Inan et al.",
               labels={"table": "Table 1"}),
    params:
        spec=section_spec("inan"),
        args=config_args,
        code=code_version("inan.report"),
    log:
        R("logs/inan/table1.log"),
    shell:
        "python -m replicate inan table1 {params.args} "
        "--paper {input.paper} --out {output} {input.metrics} > {log} 2>&1"


rule inan_ablation_table:
    input:
        INAN_ABLATION_RUNS,
    output:
        report(R(paths.INAN_ABLATION), caption="../report/inan_ablation.rst", category="Inan et al.",
               labels={"table": "tau x gamma ablation"}),
    params:
        spec=section_spec("inan"),
        args=config_args,
        code=code_version("inan.report"),
    log:
        R("logs/inan/ablation.log"),
    shell:
        "python -m replicate inan ablation-table {params.args} "
        "--out {output} {input} > {log} 2>&1"


rule inan_figure1:
    input:
        points=INAN_POINTS,
        paper="paper/reference/inan_figure1.csv",
    output:
        table=report(R(paths.INAN_FIGURE1), caption="../report/inan_figure1.rst",
                     category="Inan et al.", labels={"table": "Figure 1 data"}),
        runs=R(paths.INAN_FIGURE1_RUNS),
        epochs=R(paths.INAN_FIGURE1_EPOCHS),
        png=report(R(f"{paths.INAN_FIGURE1_FIGURE}.png"), caption="../report/inan_figure1.rst",
                   category="Inan et al.", labels={"figure": "Figure 1"}),
        svg=R(f"{paths.INAN_FIGURE1_FIGURE}.svg"),
    params:
        spec=section_spec("inan"),
        args=config_args,
        stem=subpath(output.png, strip_suffix=".png"),
        code=code_version("inan.report", "plotting"),
    log:
        R("logs/inan/figure1.log"),
    shell:
        "python -m replicate inan figure1 {params.args} "
        "--paper {input.paper} --out {output.table} --out-runs {output.runs} --out-epochs {output.epochs} --figure {params.stem:q} "
        "{input.points} > {log} 2>&1"


rule inan_subspace_readings:
    input:
        points=INAN_READING_POINTS,
        paper="paper/reference/inan_figure1.csv",
    output:
        report(R(paths.INAN_READINGS), caption="../report/inan_subspace_readings.rst",
               category="Inan et al.", labels={"table": "section 6.2 readings"}),
    params:
        spec=section_spec("inan"),
        args=config_args,
        code=code_version("inan.report"),
    log:
        R("logs/inan/subspace_readings.log"),
    shell:
        "python -m replicate inan readings-table {params.args} "
        "--paper {input.paper} --out {output} {input.points} > {log} 2>&1"

