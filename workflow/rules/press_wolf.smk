# Press & Wolf 2017 / Zaremba et al. 2014 LSTM language models: one job per cell x seed (press_wolf_train, in
# runs.smk), one table per paper table. Ablation in one command (own result folder, never the baseline's):
#   snakemake --cores 2 results/press_wolf/small_wt_pr@pr_lambda=0.05/seed1/metrics.json
# Targets: press_wolf_common.smk.
localrules:
    press_wolf_table,


rule press_wolf_table:
    input:
        metrics=lambda wc: press_wolf_runs(PW["tables"][wc.table]),
        paper="paper/reference/press_wolf_{table}.csv",
    output:
        report(R(paths.PW_TABLE), caption="../report/press_wolf_table.rst",
               category="Press & Wolf", labels={"table": "{table}"}),
    wildcard_constraints:
        table="table5|table6",
    params:
        protocol=config["protocol"],
        code=code_version("press_wolf.table"),
    log:
        R("logs/press_wolf/table_{table}.log"),
    shell:
        "python -m replicate press-wolf table --name {wildcards.table} --paper {input.paper} "
        "--protocol {params.protocol} --out {output} {input.metrics} > {log} 2>&1"


rule press_wolf_speed:
    """Training speed of the engine against a plain PyTorch loop (not in `all`: measure on an idle machine)."""
    output:
        json=R(paths.PW_SPEED),
        table=R(paths.PW_SPEED_TABLE),
    params:
        code=code_version("press_wolf.bench", kernels=True),
        cells="small,medium,bd,inan_vd,inan_al,inan_re,inan_real",
    threads: 2
    log:
        R("logs/press_wolf/speed.log"),
    shell:
        "python -m replicate press-wolf bench --threads {threads} --cells {params.cells} --repeats 5 "
        "--out {output.json} --table {output.table} > {log} 2>&1"
