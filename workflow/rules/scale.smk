# When does tying pay off? (data scale, model scale, a small transformer) and Press & Wolf's embedding
# analysis (issue 8). One LSTM job per grid cell x seed (the update/snapshot hooks ride along on every
# run), one transformer job per variant x std x seed, then three cheap aggregation rules.
# Re-run one point (own folder, e.g. 25% of PTB, hidden 400, tied, seed 3):
#   snakemake --cores 2 results/scale/runs/ptb/p25_h400_tied/seed3/summary.json
# Logic: replicate/analysis/ (grid and tables: scale.py; hooks and similarity: embeddings.py).
from replicate.analysis.scale import analysis_points, lstm_grid, run_dir, train_spec, transformer_spec

SC = config["scale"]
SC_GRID = lstm_grid(SC) if SC["enabled"] else []
SC_ANALYSIS = [run_dir(**p) for p in analysis_points(SC)] if SC["enabled"] else []
SC_TF = SC["transformer"]
SC_TF_RUNS = (
    expand("results/scale/transformer/{variant}_std{std}/seed{seed}", variant=SC_TF["variants"],
           std=[str(s) for s in SC_TF["stds"]], seed=SC_TF["seeds"])
    if SC["enabled"] and SC_TF["enabled"] else []
)
# What a training job depends on (table/figure settings stay out: editing them retrains nothing).
SC_LSTM_CODE = code_version("analysis.embeddings", "analysis.scale", "analysis.cli", *LSTM_RUN_MODULES)


localrules:
    scale_table,
    scale_embeddings,
    scale_transformer_summary,


rule scale_train:
    input:
        corpus="results/data/{dataset}/corpus.pt",
    output:
        metrics="results/scale/runs/{dataset}/p{pct}_h{hidden}_{variant}/seed{seed}/metrics.json",
        summary="results/scale/runs/{dataset}/p{pct}_h{hidden}_{variant}/seed{seed}/summary.json",
        updates="results/scale/runs/{dataset}/p{pct}_h{hidden}_{variant}/seed{seed}/updates.csv",
        embeddings="results/scale/runs/{dataset}/p{pct}_h{hidden}_{variant}/seed{seed}/embeddings.pt",
    wildcard_constraints:
        pct=r"\d+",
        hidden=r"\d+",
        variant="untied|tied|untied_pr|tied_pr",
    params:
        spec=lambda wc: spec_json(train_spec(SC, dict(wc.items()), run_config(None))),
        out_dir=subpath(output.metrics, parent=True),
        device=config["device"],
        tf32="--allow-tf32" if config["allow_tf32"] else "",
        code=SC_LSTM_CODE,
    threads: SC["threads"]
    resources:
        runtime=SC["runtime_minutes"],
        gpu=train_gpus,
    log:
        "results/logs/scale/runs/{dataset}/p{pct}_h{hidden}_{variant}/seed{seed}.log",
    benchmark:
        "results/benchmarks/scale/runs/{dataset}/p{pct}_h{hidden}_{variant}/seed{seed}.tsv"
    shell:
        "python -m replicate scale train --spec {params.spec:q} --corpus {input.corpus} "
        "--out-dir {params.out_dir:q} --threads {threads} --device {params.device} {params.tf32} > {log:q} 2>&1"


rule scale_table:
    input:
        [f"{run_dir(**p)}/summary.json" for p in SC_GRID],
    output:
        runs="results/scale/runs.csv",
        by_seed="results/scale/gain_by_seed.csv",
        gain=report("results/tables/scale_gain.csv", caption="../report/scale_gain.rst", category="Scale study"),
        data=report("results/tables/scale_data.csv", caption="../report/scale_data.rst", category="Scale study"),
        claims=report("results/tables/scale_claims.csv", caption="../report/scale_claims.rst",
                      category="Scale study"),
        fig_data=report("results/figures/scale_data_gain.png", caption="../report/scale_data_gain.rst",
                        category="Scale study"),
        fig_model=report("results/figures/scale_model_gain.png", caption="../report/scale_model_gain.rst",
                         category="Scale study"),
        svg=["results/figures/scale_data_gain.svg", "results/figures/scale_model_gain.svg"],
    params:
        spec=spec_json(run_config("scale")),
        code=code_version("analysis.scale", "analysis.figures", "analysis.cli", "plotting"),
    log:
        "results/logs/scale/table.log",
    shell:
        "python -m replicate scale table --spec {params.spec:q} --out-runs {output.runs} "
        "--out-by-seed {output.by_seed} --out-gain {output.gain} --out-data {output.data} "
        "--out-claims {output.claims} --figures-dir results/figures {input} > {log} 2>&1"


rule scale_embeddings:
    input:
        corpus="results/data/ptb/corpus.pt",
        runs=[f"{d}/{f}" for d in SC_ANALYSIS for f in ("summary.json", "updates.csv", "embeddings.pt")],
    output:
        updates=report("results/analysis/update_frequency.csv", caption="../report/scale_update_frequency.rst",
                       category="Embedding analysis"),
        similarity=report("results/tables/embedding_similarity.csv",
                          caption="../report/scale_embedding_similarity.rst", category="Embedding analysis"),
        similarity_epochs="results/analysis/embedding_similarity_epochs.csv",
        wordsim=report("results/analysis/word_similarity.csv", caption="../report/scale_word_similarity.rst",
                       category="Embedding analysis"),
        fig_updates=report("results/figures/analysis_update_frequency.png",
                           caption="../report/scale_update_frequency.rst", category="Embedding analysis"),
        fig_similarity=report("results/figures/analysis_embedding_similarity.png",
                              caption="../report/scale_embedding_similarity.rst", category="Embedding analysis"),
        svg=["results/figures/analysis_update_frequency.svg", "results/figures/analysis_embedding_similarity.svg"],
    params:
        spec=spec_json(run_config("scale")),
        runs=SC_ANALYSIS,
        code=code_version("analysis.embeddings", "analysis.figures", "analysis.cli", "plotting"),
    log:
        "results/logs/scale/embeddings.log",
    shell:
        "python -m replicate scale embeddings --spec {params.spec:q} --corpus {input.corpus} "
        "--out-updates {output.updates} --out-similarity {output.similarity} "
        "--out-similarity-epochs {output.similarity_epochs} --out-wordsim {output.wordsim} "
        "--figures-dir results/figures {params.runs} > {log} 2>&1"


rule scale_transformer:
    input:
        corpus=f"results/data/{SC_TF['dataset']}/corpus.pt",
    output:
        summary="results/scale/transformer/{variant}_std{std}/seed{seed}/summary.json",
        curve="results/scale/transformer/{variant}_std{std}/seed{seed}/curve.csv",
    wildcard_constraints:
        variant="untied|tied|tied_rescale",
        std=r"[A-Za-z0-9_.\-]+",
    params:
        spec=lambda wc: spec_json(transformer_spec(SC, dict(wc.items()), run_config(None))),
        out_dir=subpath(output.summary, parent=True),
        device=config["device"],
        code=code_version("analysis.transformer_train", "analysis.cli", "transformer.model", "transformer.theory",
                          "data", "devices"),
    threads: SC["threads"]
    resources:
        runtime=SC["runtime_minutes"],
        gpu=train_gpus,
    log:
        "results/logs/scale/transformer/{variant}_std{std}/seed{seed}.log",
    benchmark:
        "results/benchmarks/scale/transformer/{variant}_std{std}/seed{seed}.tsv"
    shell:
        "python -m replicate scale transformer --spec {params.spec:q} --corpus {input.corpus} "
        "--out-dir {params.out_dir:q} --threads {threads} --device {params.device} > {log:q} 2>&1"


rule scale_transformer_summary:
    input:
        [f"{d}/{f}" for d in SC_TF_RUNS for f in ("summary.json", "curve.csv")],
    output:
        table=report("results/tables/scale_transformer.csv", caption="../report/scale_transformer.rst",
                     category="Scale study"),
        curves="results/scale/transformer_curves.csv",
        fig=report("results/figures/scale_transformer.png", caption="../report/scale_transformer.rst",
                   category="Scale study"),
        svg="results/figures/scale_transformer.svg",
    params:
        spec=spec_json(run_config("scale")),
        runs=SC_TF_RUNS,
        code=code_version("analysis.figures", "analysis.cli", "plotting"),
    log:
        "results/logs/scale/transformer_summary.log",
    shell:
        "python -m replicate scale transformer-summary --spec {params.spec:q} --out-table {output.table} "
        "--out-curves {output.curves} --figures-dir results/figures {params.runs} > {log} 2>&1"


if SC["enabled"]:
    TARGETS.extend(["results/tables/scale_gain.csv", "results/tables/scale_claims.csv"])
    if SC_ANALYSIS:
        TARGETS.append("results/tables/embedding_similarity.csv")
    if SC_TF_RUNS:
        TARGETS.append("results/tables/scale_transformer.csv")
