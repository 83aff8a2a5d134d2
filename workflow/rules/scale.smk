# When does tying pay off? (data scale, model scale, a small transformer) and Press & Wolf's embedding
# analysis. One LSTM job per grid cell x seed (the update/snapshot hooks ride along on the analysis'
# runs), one transformer job per variant x std x lr x seed (replicate/scale/runs.py, trained by runs.smk), then
# three cheap aggregation rules.
# Re-run one point (own folder, e.g. 25% of PTB, hidden 400, tied, seed 3):
#   snakemake --cores 2 results/scale/runs/ptb/p25_h400_tied_drop0/seed3/summary.json
# Logic: replicate/scale/ (runs: runs.py; grid and tables: study.py; hooks and similarity: embeddings.py).
# Config views, run lists and targets: scale_common.smk.


localrules:
    scale_table,
    scale_embeddings,
    scale_transformer_summary,


# The grid's runs and the transformer runs are declared in replicate/scale/runs.py and trained by runs.smk's
# scale_train and scale_transformer. The embedding analysis' runs (scale.analysis): the same job, which then
# also writes updates.csv and embeddings.pt (never published, so these runs are not restorable).
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
        gain=report(R(paths.SCALE_GAIN), caption="../report/scale_gain.rst", category="Scale study"),
        data=report(R(paths.SCALE_DATA), caption="../report/scale_data.rst", category="Scale study"),
        claims=report(R(paths.SCALE_CLAIMS), caption="../report/scale_claims.rst",
                      category="Scale study"),
        fig_data=report(R(paths.png(paths.SCALE_GAIN_FIGURES[0])), caption="../report/scale_data_gain.rst",
                        category="Scale study"),
        fig_model=report(R(paths.png(paths.SCALE_GAIN_FIGURES[1])), caption="../report/scale_model_gain.rst",
                         category="Scale study"),
        fig_answer=report(R(paths.png(paths.SCALE_ANSWER_FIGURE)), caption="../report/scale_answer.rst",
                          category="Scale study"),
        svg=R(*(paths.svg(f) for f in (*paths.SCALE_GAIN_FIGURES, paths.SCALE_ANSWER_FIGURE))),
    params:
        spec=spec_json(run_config("scale")),
        figures=subpath(output.fig_data, parent=True),
        code=code_version("scale.figures", "plotting"),
    log:
        R("logs/scale/table.log"),
    shell:
        "python -m replicate scale table --spec {params.spec:q} --out-runs {output.runs} "
        "--out-by-seed {output.by_seed} --out-gain {output.gain} --out-data {output.data} "
        "--out-claims {output.claims} --figures-dir {params.figures} {input} > {log} 2>&1"


rule scale_embeddings:
    input:
        corpus=corpus_input("ptb"),
        runs=[f"{d}/{f}" for d in SC_ANALYSIS for f in ("summary.json", "updates.csv", "embeddings.pt")],
    output:
        updates=report(R(paths.SCALE_UPDATES), caption="../report/scale_update_frequency.rst",
                       category="Embedding analysis"),
        similarity=report(R(paths.SCALE_SIMILARITY),
                          caption="../report/scale_embedding_similarity.rst", category="Embedding analysis"),
        similarity_epochs=R(paths.SCALE_SIMILARITY_EPOCHS),
        wordsim=report(R(paths.SCALE_WORDSIM), caption="../report/scale_word_similarity.rst",
                       category="Embedding analysis"),
        fig_updates=report(R(paths.png(paths.SCALE_EMBEDDING_FIGURES[0])),
                           caption="../report/scale_update_frequency.rst", category="Embedding analysis"),
        fig_similarity=report(R(paths.png(paths.SCALE_EMBEDDING_FIGURES[1])),
                              caption="../report/scale_embedding_similarity.rst", category="Embedding analysis"),
        svg=R(*(paths.svg(f) for f in paths.SCALE_EMBEDDING_FIGURES)),
    params:
        spec=spec_json(run_config("scale")),
        runs=SC_ANALYSIS,
        figures=subpath(output.fig_updates, parent=True),
        code=code_version("scale.embeddings", "scale.figures", "plotting"),
    log:
        R("logs/scale/embeddings.log"),
    shell:
        "python -m replicate scale embeddings --spec {params.spec:q} --corpus {input.corpus} "
        "--out-updates {output.updates} --out-similarity {output.similarity} "
        "--out-similarity-epochs {output.similarity_epochs} --out-wordsim {output.wordsim} "
        "--figures-dir {params.figures} {params.runs} > {log} 2>&1"


rule scale_transformer_summary:
    input:
        [f"{d}/{f}" for d in SC_TF_RUNS for f in ("summary.json", "curve.csv")],
    output:
        table=report(R(paths.SCALE_TRANSFORMER), caption="../report/scale_transformer.rst",
                     category="Scale study"),
        curves=R(paths.SCALE_TRANSFORMER_CURVES),
        comparison=report(R(paths.SCALE_TRANSFORMER_COMPARISON), caption="../report/scale_transformer.rst",
                          category="Scale study"),
        fig=report(R(paths.png(paths.SCALE_TRANSFORMER_FIGURE)), caption="../report/scale_transformer.rst",
                   category="Scale study"),
        svg=R(paths.svg(paths.SCALE_TRANSFORMER_FIGURE)),
    params:
        spec=spec_json(run_config("scale")),
        runs=SC_TF_RUNS,
        figures=subpath(output.fig, parent=True),
        code=code_version("scale.figures", "scale.transformer", "plotting"),
    log:
        R("logs/scale/transformer_summary.log"),
    shell:
        "python -m replicate scale transformer-summary --spec {params.spec:q} --out-table {output.table} "
        "--out-curves {output.curves} --out-comparison {output.comparison} --figures-dir {params.figures} {params.runs} > {log} 2>&1"
