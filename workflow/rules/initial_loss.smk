# Transformer initial-loss sweep (PAPERS.md s.4): one streamed sweep job per width -> tables ->
# figures; plus the peak-RSS benchmark of one streamed point. Logic: replicate/transformer/.


localrules:
    initial_loss_tables,
    initial_loss_figures,


IL = config["initial_loss"]
# What a sweep job depends on (figure/table settings stay out, so editing them reruns no sweep).
_IL_SWEEP_KEYS = ("vocab_size", "n_layers", "head_dim", "seeds", "batch_size", "seq_len",
                  "token_distributions", "zipf_exponent", "chunk_tokens", "trunks", "heads")
IL_SWEEP_SPEC = spec_json(run_config(None, initial_loss={k: IL[k] for k in _IL_SWEEP_KEYS}))


rule initial_loss_sweep:
    output:
        csv="results/initial_loss/runs/d{width}.csv",
        provenance="results/initial_loss/runs/d{width}.csv.provenance.json",
    wildcard_constraints:
        width=r"\d+",
    params:
        spec=IL_SWEEP_SPEC,
        code=code_version("transformer.model", "transformer.sweep", "transformer.cli", "devices"),
    threads: 2
    resources:
        mem_mb=sweep_mem_mb(IL),
        runtime=sweep_runtime(IL),
        gpu=train_gpus,
    log:
        "results/logs/initial_loss/sweep_d{width}.log",
    benchmark:
        "results/benchmarks/initial_loss/sweep_d{width}.tsv"
    shell:
        "python -m replicate initial-loss sweep --width {wildcards.width} --spec {params.spec:q} "
        "--threads {threads} --out {output.csv} > {log} 2>&1"


rule initial_loss_tables:
    input:
        runs=expand("results/initial_loss/runs/d{width}.csv", width=IL["widths"]),
        families=IL["families_csv"],
    output:
        tidy="results/initial_loss/initial_loss.csv",
        summary=report("results/tables/initial_loss_summary.csv",
                       caption="../report/initial_loss_summary.rst", category="Initial loss"),
        theory=report("results/tables/initial_loss_theory.csv",
                      caption="../report/initial_loss_theory.rst", category="Initial loss"),
        families=report("results/tables/model_families.csv",
                        caption="../report/initial_loss_families.rst", category="Initial loss"),
        metrics="results/initial_loss/metrics.json",
    params:
        spec=spec_json(run_config("initial_loss")),
        code=code_version("transformer"),
    log:
        "results/logs/initial_loss/tables.log",
    shell:
        "python -m replicate initial-loss tables --spec {params.spec:q} --families {input.families} "
        "--tidy {output.tidy} --summary {output.summary} --theory {output.theory} "
        "--families-out {output.families} --metrics {output.metrics} {input.runs} > {log} 2>&1"


rule initial_loss_figures:
    input:
        summary="results/tables/initial_loss_summary.csv",
        families="results/tables/model_families.csv",
    output:
        report("results/figures/initial_loss_vs_width.png",
               caption="../report/initial_loss_vs_width.rst", category="Initial loss"),
        "results/figures/initial_loss_vs_width.svg",
        report("results/figures/initial_loss_standard_init.png",
               caption="../report/initial_loss_standard_init.rst", category="Initial loss"),
        "results/figures/initial_loss_standard_init.svg",
        report("results/figures/embedding_share.png",
               caption="../report/initial_loss_embedding_share.rst", category="Initial loss"),
        "results/figures/embedding_share.svg",
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        code=code_version("transformer", "plotting"),
    log:
        "results/logs/initial_loss/figures.log",
    shell:
        "python -m replicate initial-loss figures --summary {input.summary} --families {input.families} "
        "--out-dir {params.out_dir} > {log} 2>&1"


rule initial_loss_memory:
    output:
        "results/initial_loss/memory_benchmark.json",
    params:
        spec=spec_json(run_config(None, initial_loss={**{k: IL[k] for k in _IL_SWEEP_KEYS},
                                                      "memory_benchmark": IL["memory_benchmark"]})),
        code=code_version("transformer.model", "transformer.sweep", "transformer.cli", "devices"),
    threads: 2
    log:
        "results/logs/initial_loss/memory.log",
    benchmark:
        "results/benchmarks/initial_loss/memory.tsv"
    shell:
        "python -m replicate initial-loss memory --spec {params.spec:q} --threads {threads} "
        "--out {output} > {log} 2>&1"


TARGETS.extend(
    [
        "results/tables/initial_loss_summary.csv",
        "results/tables/initial_loss_theory.csv",
        "results/tables/model_families.csv",
        "results/figures/initial_loss_vs_width.png",
        "results/figures/initial_loss_standard_init.png",
        "results/figures/embedding_share.png",
    ]
)
if IL["memory_benchmark"]["enabled"]:
    TARGETS.append("results/initial_loss/memory_benchmark.json")
