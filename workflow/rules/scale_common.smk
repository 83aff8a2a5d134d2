# Scale study and embedding analysis: config views, run lists and targets used by scale.smk.
from replicate.scale.study import (analysis_constraints, analysis_points, check_stopping, lstm_grid,
                                   lstm_overrides, run_dir, run_settings, train_spec, train_tokens_for,
                                   transformer_runs, transformer_spec)

SC = config["scale"]
SC_GRID = lstm_grid(SC) if SC["enabled"] else []
SC_ANALYSIS_POINTS = analysis_points(SC) if SC["enabled"] else []
SC_ANALYSIS = [rebased(run_dir(**p)) for p in SC_ANALYSIS_POINTS]
SC_ANALYSIS_CONSTRAINTS = analysis_constraints(SC_ANALYSIS_POINTS)  # the rule that records their embeddings
SC_TF = SC["transformer"]
SC_TF_RUNS = (
    [R(paths.SCALE_TRANSFORMER_RUN.format(**run)) for run in transformer_runs(SC_TF)]
    if SC["enabled"] and SC_TF["enabled"] else []
)
if SC["enabled"]:
    check_stopping(SC["lstm"])  # plan time: contradictory stopping settings stop the plan with the fix
# A training job's math: the engine and the hooks it trains with, the version its summary.json records
# (table/figure settings and code stay out: editing them retrains nothing).
SC_LSTM_CODE = code_version("scale.embeddings", "scale.stopping")


def scale_train_check(wc):
    """Plan-time check of one LSTM run: data percentage and hidden size of its path in range, its memory."""
    where = f"scale run {wc.dataset}/p{wc.pct}_h{wc.hidden}_{wc.variant}_drop{wc.dropout}/seed{wc.seed}"
    fix = "ask for e.g. results/scale/runs/ptb/p25_h400_tied_drop0/seed1/summary.json, or change the scale section"
    check_wildcard(wc, "pct", "scale.schema.yaml#/properties/model/properties/pct", where, fix)
    check_wildcard(wc, "hidden", "scale.schema.yaml#/properties/model/properties/hiddens/items", where, fix)
    check_wildcard(wc, "dropout", "scale.schema.yaml#/properties/lstm/properties/dropouts/items", where, fix)
    check_lstm_memory(scale_train_settings(wc), wc.dataset, SC["threads"], where)


def scale_train_settings(wc):
    """The engine settings of one LSTM run of the grid (its wildcards), for the estimates."""
    pct = int(wc.pct)
    lstm = {"size": SC["lstm"]["size"], "overrides": lstm_overrides(SC["lstm"], pct, wc.dropout)}
    tokens = train_tokens_for(corpus_shape(wc.dataset)["train"], pct)
    return run_settings(lstm, int(wc.hidden), wc.variant, int(wc.seed), tokens)


def scale_transformer_check(wc):
    """Plan-time check of one transformer run: the init std and learning rate of its path."""
    where = f"scale transformer run {wc.variant}_std{wc.std}_lr{wc.lr}/seed{wc.seed}"
    fix = "ask for e.g. results/scale/transformer/tied_std0.02_lr0.003/seed1/summary.json"
    check_wildcard(wc, "std", "scale.schema.yaml#/properties/transformer/properties/stds/items", where, fix)
    check_wildcard(wc, "lr", "scale.schema.yaml#/properties/transformer/properties/lrs/items", where, fix)


def transformer_one_thread_min(wc):
    """`one_thread_min` of one transformer run: its model FLOPs at the measured CPU rate (an estimate)."""
    from replicate.resources import transformer_one_thread_hours

    return math.ceil(60 * transformer_one_thread_hours(SC_TF, corpus_shape(SC_TF["dataset"])))


def scale_targets():
    if not SC["enabled"]:
        return []
    out = R(paths.SCALE_GAIN, paths.SCALE_CLAIMS)
    if SC_ANALYSIS:
        out.append(R(paths.SCALE_SIMILARITY))
    if SC_TF_RUNS:
        out.append(R(paths.SCALE_TRANSFORMER))
    return out
