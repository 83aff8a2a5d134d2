"""Where every result file lives, relative to a results folder (``results/`` or the bundle ``paper/measured/``), as
templates with Snakemake's ``{wildcards}``; a name's prefix (``PW_``, ``INAN_``, ``IL_``, ``SCALE_``) says which
experiment owns the file (``owner``). Imports nothing."""

from __future__ import annotations

RESULTS = "results"  # the default results folder; a preset may name its own (config key results_dir)


def under(root: str, *rel: str) -> str | list[str]:
    """``<root>/<rel>`` for one path, a list of them for several."""
    out = [f"{root}/{r}" for r in rel]
    return out[0] if len(out) == 1 else out


def under_results(*rel: str) -> str | list[str]:
    """``results/<rel>`` for one path, a list of them for several."""
    return under(RESULTS, *rel)


# ---------------------------------------------------------------------------------------- data
DATA_RAW = "data/raw/{dataset}"
DATA_CORPUS = "data/{dataset}/corpus.pt"
DATA_STATS = "data/{dataset}/stats.json"
DATA_SUMMARY = "data/summary.md"

# ------------------------------------------------------------------------------- Press & Wolf
PW_RUN = "press_wolf/{cell}/seed{seed}"  # with checkpoints
PW_METRICS = f"{PW_RUN}/metrics.json"
PW_HISTORY = f"{PW_RUN}/history.csv"
PW_TABLE = "tables/press_wolf_{table}.csv"
PW_TABLES = {"table6": "tables/press_wolf_table6.csv", "table5": "tables/press_wolf_table5.csv"}
PW_SPEED = "press_wolf/bench_speed.json"  # the speed benchmark (not in `all`: it needs an idle machine)
PW_SPEED_TABLE = "tables/press_wolf_speed.csv"
PW_LEARNING_CURVES = "figures/report_press_wolf_learning_curves"  # stem (.png, .svg); the report draws it

# --------------------------------------------------------------------------------------- Inan
INAN_SCREEN_METRICS = "inan/screen/{dataset}/{size}_{variant}_{tag}/metrics.json"  # short-scale screening run
INAN_SCREEN_SOFT = "inan/screen/{dataset}/{size}_{variant}_{tag}/soft_target.csv"  # its y~ (+AL / +REAL runs)
INAN_POINT = "inan/subspace/{reading}/tau{tau}_beta{beta}.json"  # one section 6.2 point, all seeds
INAN_POINT_WORK = "inan/subspace/runs/{reading}/tau{tau}_beta{beta}"  # its per-seed records, checkpoints
INAN_TABLE1 = "tables/inan_table1.csv"
INAN_ABLATION = "tables/inan_ablation.csv"
INAN_SCREEN = "tables/inan_screen.csv"
INAN_FIGURE1 = "tables/inan_figure1.csv"
INAN_FIGURE1_RUNS = "tables/inan_figure1_runs.csv"
INAN_FIGURE1_EPOCHS = "inan/subspace/figure1_epochs.csv"
INAN_FIGURE1_FIGURE = "figures/inan_figure1"  # stem (.png, .svg)
INAN_READINGS = "tables/inan_subspace_readings.csv"

# ------------------------------------------------------------------------------- initial loss
IL_SWEEP = "initial_loss/runs/d{width}.csv"  # one width
IL_TIDY = "initial_loss/initial_loss.csv"
IL_METRICS = "initial_loss/metrics.json"
IL_MEMORY = "initial_loss/memory_benchmark.json"
IL_SUMMARY = "tables/initial_loss_summary.csv"
IL_THEORY = "tables/initial_loss_theory.csv"
IL_FAMILIES = "tables/model_families.csv"
IL_FIGURES = ("figures/initial_loss_vs_width", "figures/initial_loss_standard_init",
              "figures/embedding_share")  # stems (.png, .svg)

# -------------------------------------------------------------- scale study, embedding analysis
SCALE_RUN = "scale/runs/{dataset}/p{pct}_h{hidden}_{variant}_drop{dropout}/seed{seed}"
SCALE_METRICS = f"{SCALE_RUN}/metrics.json"
SCALE_SUMMARY = f"{SCALE_RUN}/summary.json"
SCALE_UPDATES_RUN = f"{SCALE_RUN}/updates.csv"
SCALE_EMBEDDINGS_RUN = f"{SCALE_RUN}/embeddings.pt"
SCALE_RUNS = "scale/runs.csv"
SCALE_BY_SEED = "scale/gain_by_seed.csv"
SCALE_GAIN = "tables/scale_gain.csv"
SCALE_DATA = "tables/scale_data.csv"
SCALE_CLAIMS = "tables/scale_claims.csv"
SCALE_GAIN_FIGURES = ("figures/scale_data_gain", "figures/scale_model_gain")  # stems
SCALE_ANSWER_FIGURE = "figures/scale_answer"  # stem: tying gain vs embedding share and vs training tokens
SCALE_UPDATES = "scale/update_frequency.csv"
SCALE_SIMILARITY = "tables/scale_embedding_similarity.csv"
SCALE_SIMILARITY_EPOCHS = "scale/embedding_similarity_epochs.csv"
SCALE_WORDSIM = "scale/word_similarity.csv"
SCALE_WORDSIM_DOWNLOADS = "scale/benchmarks"  # word-similarity files given by url
SCALE_EMBEDDING_FIGURES = ("figures/scale_update_frequency", "figures/scale_embedding_similarity")  # stems
SCALE_TRANSFORMER_RUN = "scale/transformer/{variant}_std{std}_lr{lr}/seed{seed}"
SCALE_TRANSFORMER_SUMMARY = f"{SCALE_TRANSFORMER_RUN}/summary.json"
SCALE_TRANSFORMER = "tables/scale_transformer.csv"
SCALE_TRANSFORMER_COMPARISON = "tables/scale_transformer_comparison.csv"
SCALE_TRANSFORMER_CURVES = "scale/transformer_curves.csv"
SCALE_TRANSFORMER_FIGURE = "figures/scale_transformer"  # stem

# ------------------------------------------------------------------------------------- report
BENCHMARKS = "benchmarks"
REPORT_MD = "report/report.md"
REPORT_HTML = "report/index.html"

# ------------------------------------------------------------------------------------- owners
# the experiments, each with the name prefix of its constants
GROUPS = {"press_wolf": "PW_", "inan": "INAN_", "initial_loss": "IL_", "scale": "SCALE_"}
SHARED_FOLDERS = ("tables", "figures")  # hold several experiments' files, told apart by the file name


def path_constants(group: str) -> list[str]:
    """The paths this module names ``<group>*`` (strings, and the values of tuples and dicts)."""
    out = []
    for name, value in list(globals().items()):
        if name.startswith(group):
            out += [value] if isinstance(value, str) else list(value.values() if isinstance(value, dict) else value)
    return out


def prefixes_of(experiment: str, group: str) -> tuple[str, ...]:
    """Where an experiment's files live, from its constants (``group``: their prefix): its own folder and benchmark
    folder; in a shared folder, ``<folder>/<experiment>_`` or the file's stem up to its first wildcard."""
    out = []
    for path in path_constants(group):
        folder, _, rest = path.partition("/")
        if folder in SHARED_FOLDERS:
            stem = rest.split("{", 1)[0].split(".", 1)[0]
            out.append(f"{folder}/{experiment}_" if stem.startswith(f"{experiment}_") else f"{folder}/{stem}")
        else:
            out += [f"{folder}/", f"{BENCHMARKS}/{folder}/"]
    return tuple(dict.fromkeys(out))


PREFIXES = {experiment: prefixes_of(experiment, group) for experiment, group in GROUPS.items()}


def owner(rel: str) -> str | None:
    """The experiment whose file ``rel`` (relative to a results folder) is, None for none."""
    return next((name for name, prefixes in PREFIXES.items() if rel.startswith(prefixes)), None)
