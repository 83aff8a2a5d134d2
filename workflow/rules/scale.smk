# When does tying pay off? (data and model scale, a small transformer) and Press & Wolf's embedding analysis: the
# runs (replicate/scale/runs.py) train in runs.smk, then three cheap aggregation rules. Re-run one point:
#   snakemake --cores 2 results/scale/runs/ptb/p25_h400_tied_drop0/seed3/summary.json
# Logic: replicate/scale/. Config views, run lists and targets: scale_common.smk.


localrules:
    scale_table,
    scale_embeddings,
    scale_transformer_summary,


# The embedding analysis' runs: runs.smk's scale_train, which then also writes updates.csv and embeddings.pt
# (never published, so these runs are not restorable).
use rule scale_train as scale_train_recorded with:
    output:
        metrics=R(paths.SCALE_METRICS),
        summary=R(paths.SCALE_SUMMARY),
        updates=R(paths.SCALE_UPDATES_RUN),
        embeddings=R(paths.SCALE_EMBEDDINGS_RUN),
    wildcard_constraints:
        **SC_ANALYSIS_CONSTRAINTS,


ruleorder: scale_train_recorded > scale_train


rule scale_table:
    input:
        [f"{rebased(run_dir(**p))}/summary.json" for p in SC_GRID],
    output:
        runs=R(paths.SCALE_RUNS),
        by_seed=R(paths.SCALE_BY_SEED),
        gain=scale_report(paths.SCALE_GAIN, "scale_gain"),
        data=scale_report(paths.SCALE_DATA, "scale_data"),
        claims=scale_report(paths.SCALE_CLAIMS, "scale_claims"),
        fig_data=scale_report(f"{paths.SCALE_GAIN_FIGURES[0]}.png", "scale_data_gain"),
        fig_model=scale_report(f"{paths.SCALE_GAIN_FIGURES[1]}.png", "scale_model_gain"),
        fig_answer=scale_report(f"{paths.SCALE_ANSWER_FIGURE}.png", "scale_answer"),
        svg=R(*(f"{f}.svg" for f in (*paths.SCALE_GAIN_FIGURES, paths.SCALE_ANSWER_FIGURE))),
    params:
        spec=section_spec("scale"),
        args=config_args,
        figures=subpath(output.fig_data, parent=True),
        code=code_version("scale.figures", "plotting"),
    log:
        R("logs/scale/table.log"),
    shell:
        "python -m replicate scale table {params.args} --out-runs {output.runs} "
        "--out-by-seed {output.by_seed} --out-gain {output.gain} --out-data {output.data} "
        "--out-claims {output.claims} --figures-dir {params.figures} {input} > {log} 2>&1"


rule scale_embeddings:
    input:
        corpus=corpus_input("ptb"),
        runs=[f"{d}/{f}" for d in SC_ANALYSIS for f in ("summary.json", "updates.csv", "embeddings.pt")],
    output:
        updates=scale_report(paths.SCALE_UPDATES, "scale_update_frequency", "Embedding analysis"),
        similarity=scale_report(paths.SCALE_SIMILARITY, "scale_embedding_similarity", "Embedding analysis"),
        similarity_epochs=R(paths.SCALE_SIMILARITY_EPOCHS),
        wordsim=scale_report(paths.SCALE_WORDSIM, "scale_word_similarity", "Embedding analysis"),
        fig_updates=scale_report(f"{paths.SCALE_EMBEDDING_FIGURES[0]}.png", "scale_update_frequency",
                                 "Embedding analysis"),
        fig_similarity=scale_report(f"{paths.SCALE_EMBEDDING_FIGURES[1]}.png", "scale_embedding_similarity",
                                    "Embedding analysis"),
        svg=R(*(f"{f}.svg" for f in paths.SCALE_EMBEDDING_FIGURES)),
    params:
        spec=section_spec("scale"),
        args=config_args,
        runs=SC_ANALYSIS,
        figures=subpath(output.fig_updates, parent=True),
        code=code_version("scale.embeddings", "scale.figures", "plotting"),
    log:
        R("logs/scale/embeddings.log"),
    shell:
        "python -m replicate scale embeddings {params.args} --corpus {input.corpus} "
        "--out-updates {output.updates} --out-similarity {output.similarity} "
        "--out-similarity-epochs {output.similarity_epochs} --out-wordsim {output.wordsim} "
        "--figures-dir {params.figures} {params.runs} > {log} 2>&1"


rule scale_transformer_summary:
    input:
        [f"{d}/{f}" for d in SC_TF_RUNS for f in ("summary.json", "curve.csv")],
    output:
        table=scale_report(paths.SCALE_TRANSFORMER, "scale_transformer"),
        curves=R(paths.SCALE_TRANSFORMER_CURVES),
        comparison=scale_report(paths.SCALE_TRANSFORMER_COMPARISON, "scale_transformer"),
        fig=scale_report(f"{paths.SCALE_TRANSFORMER_FIGURE}.png", "scale_transformer"),
        svg=R(f"{paths.SCALE_TRANSFORMER_FIGURE}.svg"),
    params:
        spec=section_spec("scale"),
        args=config_args,
        runs=SC_TF_RUNS,
        figures=subpath(output.fig, parent=True),
        code=code_version("scale.figures", "scale.transformer", "plotting"),
    log:
        R("logs/scale/transformer_summary.log"),
    shell:
        "python -m replicate scale transformer-summary {params.args} --out-table {output.table} "
        "--out-curves {output.curves} --out-comparison {output.comparison} --figures-dir {params.figures} {params.runs} > {log} 2>&1"
