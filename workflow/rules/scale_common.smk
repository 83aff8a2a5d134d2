# Scale study and embedding analysis: config views, run lists and targets used by scale.smk (its runs:
# replicate/scale/runs.py, trained by runs.smk's scale_train and scale_transformer).
from replicate.scale.study import analysis_constraints, analysis_points, lstm_grid, run_dir

SC = config["scale"]
SC_GRID = lstm_grid(SC) if SC["enabled"] else []
SC_ANALYSIS_POINTS = analysis_points(SC) if SC["enabled"] else []
SC_ANALYSIS = [rebased(run_dir(**p)) for p in SC_ANALYSIS_POINTS]
SC_ANALYSIS_CONSTRAINTS = analysis_constraints(SC_ANALYSIS_POINTS)  # the rule that records their embeddings
SC_TF_RUNS = [R(f"scale/{run_id}") for run_id in RUNS["scale"] if run_id.startswith("transformer/")]


def scale_report(rel, caption, category="Scale study"):
    """An output of a scale rule shown in the Snakemake report, its caption workflow/report/<caption>.rst."""
    return report(R(rel), caption=f"../report/{caption}.rst", category=category)


def scale_targets():
    if not SC["enabled"]:
        return []
    out = R(paths.SCALE_GAIN, paths.SCALE_CLAIMS)
    if SC_ANALYSIS:
        out.append(R(paths.SCALE_SIMILARITY))
    if SC_TF_RUNS:
        out.append(R(paths.SCALE_TRANSFORMER))
    return out
