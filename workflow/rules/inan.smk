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


# The four tables: (rule, command, log and caption name, label, output, inputs, the arguments after --out)
for _rule, _command, _name, _label, _out, _inputs, _args in (
    ("inan_screen_table", "screen-table", "screen", "short-scale screen", paths.INAN_SCREEN,
     {"metrics": INAN_SCREEN_RUNS, "soft": INAN_SCREEN_SOFT}, "--soft-target {input.soft} -- {input.metrics}"),
    ("inan_table1", "table1", "table1", "Table 1", paths.INAN_TABLE1,
     {"metrics": INAN_TABLE1_RUNS, "paper": "paper/reference/inan_table1.csv"}, "{input.metrics}"),
    ("inan_ablation_table", "ablation-table", "ablation", "tau x gamma ablation", paths.INAN_ABLATION,
     {"metrics": INAN_ABLATION_RUNS}, "{input.metrics}"),
    ("inan_subspace_readings", "readings-table", "subspace_readings", "section 6.2 readings", paths.INAN_READINGS,
     {"points": INAN_READING_POINTS, "paper": "paper/reference/inan_figure1.csv"}, "{input.points}"),
):

    rule:
        name:
            _rule
        input:
            **_inputs,
        output:
            report(R(_out), caption=f"../report/inan_{_name}.rst", category="Inan et al.", labels={"table": _label}),
        params:
            spec=spec_json(run_config("inan")),
            protocol=config["protocol"],
            code=code_version("inan.report"),
        log:
            R(f"logs/inan/{_name}.log"),
        shell:
            f"python -m replicate inan {_command} --spec {{params.spec:q}} --protocol {{params.protocol}} "
            + ("--paper {input.paper} " if "paper" in _inputs else "") + f"--out {{output}} {_args} > {{log}} 2>&1"


rule inan_figure1:
    input:
        points=INAN_POINTS,
        paper="paper/reference/inan_figure1.csv",
    output:
        table=report(R(paths.INAN_FIGURE1), caption="../report/inan_figure1.rst",
                     category="Inan et al.", labels={"table": "Figure 1 data"}),
        runs=R(paths.INAN_FIGURE1_RUNS),
        epochs=R(paths.INAN_FIGURE1_EPOCHS),
        png=report(R(paths.png(paths.INAN_FIGURE1_FIGURE)), caption="../report/inan_figure1.rst",
                   category="Inan et al.", labels={"figure": "Figure 1"}),
        svg=R(paths.svg(paths.INAN_FIGURE1_FIGURE)),
    params:
        spec=spec_json(run_config("inan")),
        protocol=config["protocol"],
        stem=subpath(output.png, strip_suffix=".png"),
        code=code_version("inan.report", "plotting"),
    log:
        R("logs/inan/figure1.log"),
    shell:
        "python -m replicate inan figure1 --spec {params.spec:q} --protocol {params.protocol} "
        "--paper {input.paper} --out {output.table} --out-runs {output.runs} --out-epochs {output.epochs} --figure {params.stem:q} "
        "{input.points} > {log} 2>&1"
