# Scale study and embedding analysis: config views, run lists and targets used by scale.smk.
from replicate.scale.study import analysis_points, lstm_grid, run_dir, train_spec, transformer_spec

SC = config["scale"]
SC_GRID = lstm_grid(SC) if SC["enabled"] else []
SC_ANALYSIS = [run_dir(**p) for p in analysis_points(SC)] if SC["enabled"] else []
SC_TF = SC["transformer"]
SC_TF_RUNS = (
    expand(R(paths.SCALE_TRANSFORMER_RUN), variant=SC_TF["variants"],
           std=[str(s) for s in SC_TF["stds"]], seed=SC_TF["seeds"])
    if SC["enabled"] and SC_TF["enabled"] else []
)
# What a training job depends on (table/figure settings stay out: editing them retrains nothing).
SC_LSTM_CODE = code_version("scale.embeddings", "scale.study", "scale.cli", *LSTM_RUN_MODULES)


def scale_targets():
    if not SC["enabled"]:
        return []
    out = R(paths.SCALE_GAIN, paths.SCALE_CLAIMS)
    if SC_ANALYSIS:
        out.append(R(paths.SCALE_SIMILARITY))
    if SC_TF_RUNS:
        out.append(R(paths.SCALE_TRANSFORMER))
    return out
