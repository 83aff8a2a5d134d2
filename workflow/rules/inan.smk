# Inan et al. 2017: Table 1 (VD-LSTM, +AL, +RE, +REAL), the tau x gamma ablation and section 6.2
# (Figure 1). Training is the Press & Wolf engine (replicate/lstm) + the augmented loss (replicate/inan).
# Targets and spec functions: inan_common.smk.
localrules:
    inan_table1,
    inan_ablation_table,
    inan_figure1,
    inan_subspace_readings,


rule inan_train:
    input:
        corpus="results/data/{dataset}/corpus.pt",
    output:
        metrics="results/inan/table1/{dataset}/{size}_{variant}/metrics.json",
        history="results/inan/table1/{dataset}/{size}_{variant}/history.csv",
    wildcard_constraints:
        size="small|medium|large",
        variant="vd|al|re|real",
    params:
        spec=_with_config(inan_table1_spec),
        out_dir=subpath(output.metrics, parent=True),
        device=config["device"],
        tf32="--allow-tf32" if config["allow_tf32"] else "",
        code=code_version(*INAN_CODE),
    threads: INAN["threads"]
    resources:
        mem_mb=lstm_mem_mb(_engine_settings(inan_table1_spec), lambda wc: wc.dataset),
        runtime=lstm_runtime(_engine_settings(inan_table1_spec), lambda wc: wc.dataset),
        gpu=train_gpus,
    log:
        "results/logs/inan/table1/{dataset}/{size}_{variant}.log",
    benchmark:
        "results/benchmarks/inan/table1/{dataset}/{size}_{variant}.tsv"
    shell:
        "python -m replicate inan train --spec {params.spec:q} --corpus {input.corpus} "
        "--out-dir {params.out_dir:q} --threads {threads} --device {params.device} {params.tf32} > {log:q} 2>&1"


rule inan_ablation_train:
    input:
        corpus="results/data/{dataset}/corpus.pt",
    output:
        metrics="results/inan/ablation/{dataset}/{size}_{variant}_tau{tau}_gamma{gamma}/metrics.json",
    wildcard_constraints:
        size="small|medium|large",
        variant="al|real",
        tau=r"[0-9.e+-]+",
        gamma=r"[0-9.e+-]+",
    params:
        spec=_with_config(inan_ablation_spec),
        out_dir=subpath(output.metrics, parent=True),
        device=config["device"],
        tf32="--allow-tf32" if config["allow_tf32"] else "",
        code=code_version(*INAN_CODE),
    threads: INAN["threads"]
    resources:
        mem_mb=lstm_mem_mb(_engine_settings(inan_ablation_spec), lambda wc: wc.dataset),
        runtime=lstm_runtime(_engine_settings(inan_ablation_spec), lambda wc: wc.dataset),
        gpu=train_gpus,
    log:
        "results/logs/inan/ablation/{dataset}/{size}_{variant}_tau{tau}_gamma{gamma}.log",
    benchmark:
        "results/benchmarks/inan/ablation/{dataset}/{size}_{variant}_tau{tau}_gamma{gamma}.tsv"
    shell:
        "python -m replicate inan train --spec {params.spec:q} --corpus {input.corpus} "
        "--out-dir {params.out_dir:q} --threads {threads} --device {params.device} {params.tf32} > {log:q} 2>&1"


rule inan_table1:
    input:
        metrics=INAN_TABLE1_RUNS,
        paper="paper/reference/inan_table1.csv",
    output:
        report("results/tables/inan_table1.csv", caption="../report/inan_table1.rst", category="Inan et al.",
               labels={"table": "Table 1"}),
    params:
        spec=spec_json(run_config("inan")),
        protocol=config["protocol"],
        code=code_version("inan"),
    log:
        "results/logs/inan/table1.log",
    shell:
        "python -m replicate inan table1 --spec {params.spec:q} --protocol {params.protocol} "
        "--paper {input.paper} --out {output} {input.metrics} > {log} 2>&1"


rule inan_ablation_table:
    input:
        INAN_ABLATION_RUNS,
    output:
        report("results/tables/inan_ablation.csv", caption="../report/inan_ablation.rst", category="Inan et al.",
               labels={"table": "tau x gamma ablation"}),
    params:
        spec=spec_json(run_config("inan")),
        protocol=config["protocol"],
        code=code_version("inan"),
    log:
        "results/logs/inan/ablation.log",
    shell:
        "python -m replicate inan ablation-table --spec {params.spec:q} --protocol {params.protocol} "
        "--out {output} {input} > {log} 2>&1"


rule inan_subspace_point:
    input:
        corpus="results/data/ptb/corpus.pt",
    output:
        "results/inan/subspace/{reading}/tau{tau}_beta{beta}.json",
    wildcard_constraints:
        reading=r"[a-z0-9_]+",
        tau=r"[0-9.e+-]+",
        beta=r"[0-9.e+-]+",
    params:
        spec=inan_point_spec,
        work_dir="results/inan/subspace/runs/{reading}/tau{tau}_beta{beta}",
        device=config["device"],
        tf32="--allow-tf32" if config["allow_tf32"] else "",
        code=code_version(*INAN_CODE),
    threads: INAN_SUB["threads"]
    resources:
        gpu=train_gpus,
    log:
        "results/logs/inan/subspace/{reading}/tau{tau}_beta{beta}.log",
    benchmark:
        "results/benchmarks/inan/subspace/{reading}/tau{tau}_beta{beta}.tsv"
    shell:
        "python -m replicate inan subspace --spec {params.spec:q} --corpus {input.corpus} --out {output} "
        "--work-dir {params.work_dir:q} --threads {threads} --device {params.device} {params.tf32} > {log:q} 2>&1"


rule inan_figure1:
    input:
        points=INAN_POINTS,
        paper="paper/reference/inan_figure1.csv",
    output:
        table=report("results/tables/inan_figure1.csv", caption="../report/inan_figure1.rst",
                     category="Inan et al.", labels={"table": "Figure 1 data"}),
        runs="results/tables/inan_figure1_runs.csv",
        epochs="results/inan/subspace/figure1_epochs.csv",
        png=report("results/figures/inan_figure1.png", caption="../report/inan_figure1.rst",
                   category="Inan et al.", labels={"figure": "Figure 1"}),
        svg="results/figures/inan_figure1.svg",
    params:
        spec=spec_json(run_config("inan")),
        protocol=config["protocol"],
        stem=subpath(output.png, strip_suffix=".png"),
        code=code_version("inan", "plotting"),
    log:
        "results/logs/inan/figure1.log",
    shell:
        "python -m replicate inan figure1 --spec {params.spec:q} --protocol {params.protocol} "
        "--paper {input.paper} --out {output.table} --out-runs {output.runs} --out-epochs {output.epochs} --figure {params.stem:q} "
        "{input.points} > {log} 2>&1"


rule inan_subspace_readings:
    input:
        points=INAN_READING_POINTS,
        paper="paper/reference/inan_figure1.csv",
    output:
        report("results/tables/inan_subspace_readings.csv", caption="../report/inan_subspace_readings.rst",
               category="Inan et al.", labels={"table": "section 6.2 readings"}),
    params:
        spec=spec_json(run_config("inan")),
        protocol=config["protocol"],
        code=code_version("inan"),
    log:
        "results/logs/inan/subspace_readings.log",
    shell:
        "python -m replicate inan readings-table --spec {params.spec:q} --protocol {params.protocol} "
        "--paper {input.paper} --out {output} {input.points} > {log} 2>&1"


TARGETS.append("results/tables/inan_table1.csv")
if INAN_AB["enabled"]:
    TARGETS.append("results/tables/inan_ablation.csv")
if INAN_SUB["enabled"]:
    TARGETS.extend(["results/tables/inan_figure1.csv", "results/figures/inan_figure1.png"])
    if len(INAN_READINGS) > 1:
        TARGETS.append("results/tables/inan_subspace_readings.csv")
