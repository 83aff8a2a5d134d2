# The initial-loss sweep (a Llama-style transformer at init, tied vs untied): one streamed sweep job per
# width (replicate/initial_loss/runs.py, trained by runs.smk's initial_loss_sweep) -> tables -> figures; plus the
# peak-RSS benchmark of one streamed point. Logic: replicate/initial_loss/. Targets: initial_loss_common.smk.


localrules:
    initial_loss_tables,
    initial_loss_figures,


rule initial_loss_tables:
    input:
        runs=expand(R(paths.IL_SWEEP), width=IL["widths"]),
        families=IL["families_csv"],
    output:
        tidy=R(paths.IL_TIDY),
        summary=il_report(paths.IL_SUMMARY, "summary"),
        theory=il_report(paths.IL_THEORY, "theory"),
        families=il_report(paths.IL_FAMILIES, "families"),
        metrics=R(paths.IL_METRICS),
    params:
        spec=section_spec("initial_loss"),
        args=config_args,
        code=code_version("initial_loss.tables"),
    log:
        R("logs/initial_loss/tables.log"),
    shell:
        "python -m replicate initial-loss tables {params.args} --families {input.families} "
        "--tidy {output.tidy} --summary {output.summary} --theory {output.theory} "
        "--families-out {output.families} --metrics {output.metrics} {input.runs} > {log} 2>&1"


rule initial_loss_figures:
    input:
        summary=R(paths.IL_SUMMARY),
        families=R(paths.IL_FAMILIES),
    output:
        *(out for stem, caption in zip(paths.IL_FIGURES, ("vs_width", "standard_init", "embedding_share"))
          for out in (il_report(f"{stem}.png", caption), R(f"{stem}.svg"))),
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        code=code_version("initial_loss.figures", "plotting"),
    log:
        R("logs/initial_loss/figures.log"),
    shell:
        "python -m replicate initial-loss figures --summary {input.summary} --families {input.families} "
        "--out-dir {params.out_dir} > {log} 2>&1"


rule initial_loss_memory:
    input:
        checked=plan_check(lambda wc: initial_loss_point_check(IL["memory_benchmark"]["width"],
                                                               "initial-loss memory benchmark")),
    output:
        R(paths.IL_MEMORY),
    params:
        spec=spec_json(memory_benchmark_config(config)),
        args=config_args,
        code=code_version("initial_loss.sweep"),
    threads: 2
    log:
        R("logs/initial_loss/memory.log"),
    benchmark:
        R("benchmarks/initial_loss/memory.tsv")
    shell:
        "python -m replicate initial-loss memory {params.args} --threads {threads} "
        "--out {output} > {log} 2>&1"
