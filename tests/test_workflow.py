"""The Snakemake workflow itself: lint, dry runs of every preset, bad config and data errors."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest
import yaml

from support.workflow import REPO_ROOT, SMOKE_RESULTS, inan_specs, job_counts, run_snakemake
from replicate import data
from replicate.resources import machine_memory_gib

# Lints we keep on purpose (justified in docs/reproducibility.md, "Lints we accept"). Anything else fails the test.
ACCEPTED_LINTS = {"Specify a conda environment or container for each rule."}


def test_lint_only_justified(tmp_path):
    proc = run_snakemake(["--lint"], cwd=REPO_ROOT, check=False)
    titles = set(re.findall(r"^\s+\* (.+?):\s*$", proc.stdout + proc.stderr, flags=re.M))
    assert titles <= ACCEPTED_LINTS, f"unexpected lints: {titles - ACCEPTED_LINTS}\n{proc.stdout}{proc.stderr}"
    justified = (REPO_ROOT / "docs" / "reproducibility.md").read_text()
    for title in ACCEPTED_LINTS:
        assert title.rstrip(".") in justified, f"accepted lint not justified in docs/reproducibility.md: {title}"


@pytest.mark.parametrize("preset", ["config/config.yaml", "config/paper.yaml", "config/smoke.yaml"])
def test_dry_run(preset, workflow_dir):
    proc = run_snakemake(["-n", "all", "--configfile", preset], cwd=workflow_dir)
    jobs = job_counts(proc.stdout + proc.stderr)
    datasets = yaml.safe_load((workflow_dir / preset).read_text())["data"]["datasets"]
    assert jobs["all"] == jobs["report"] == 1, jobs
    assert jobs["prepare_data"] == len(datasets), jobs  # the data stage is always planned on a fresh folder
    assert not (workflow_dir / "results").exists(), "a dry run must not write results"


def test_each_experiment_is_a_target(workflow_dir):
    """`snakemake press_wolf` (inan, initial_loss, scale, report) runs one experiment: together they plan (a union
    of targets plans iff each does), each once; `snakemake -n inan` alone: tests/test_costs.py."""
    targets = ["press_wolf", "inan", "initial_loss", "scale", "report"]
    jobs = job_counts(run_snakemake(["-n", *targets], cwd=workflow_dir).stdout)
    assert {t: jobs.get(t) for t in targets} == dict.fromkeys(targets, 1), jobs


def test_dry_run_imports_no_torch(workflow_dir, tmp_path):
    """Building the DAG imports nothing heavy: `snakemake -n all` works where `import torch` fails."""
    shim = tmp_path / "no_torch" / "torch"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("torch is blocked in this test")\n')
    env = {"PYTHONPATH": os.pathsep.join([str(shim.parent), str(REPO_ROOT)])}
    proc = run_snakemake(["-n", "all", "--configfile", "config/smoke.yaml"], cwd=workflow_dir, env=env)
    assert "report" in proc.stdout + proc.stderr


def _inan_train_specs(*configfiles) -> dict[str, dict]:
    """variant -> the spec of its Table 1 run (the `spec` param of its inan_train job)."""
    return {s["variant"]: s for s in inan_specs(*configfiles)}


def test_training_jobs_print_the_command_to_type(workflow_dir):
    """A training job runs (and prints) `python -m replicate train <experiment> <run_id>` with the command's config
    files: a command a user can copy, not a JSON spec."""
    (workflow_dir / "overlay.yaml").write_text("inan: {threads: 1}\n")
    args = ["-n", "-p", "--forceall", "results/inan/table1/ptb/small_real/metrics.json",
            "results/press_wolf/small_wt_pr@pr_lambda=0.05/seed1/metrics.json",
            "--configfile", "config/config.yaml", "overlay.yaml", "--config", "device=cpu"]
    out = run_snakemake(args, cwd=workflow_dir).stdout
    for command in ("python -m replicate train inan table1/ptb/small_real --configfile config/config.yaml "
                    "overlay.yaml --config device=cpu --threads 1 --device cpu",
                    "python -m replicate train press_wolf small_wt_pr@pr_lambda=0.05/seed1 --configfile "
                    "config/config.yaml overlay.yaml --config device=cpu --threads 1 --device cpu"):
        assert command in out, out[-3000:]


def test_soft_target_grad_per_variant(workflow_dir):
    """`inan.soft_target_grad` reaches each Table 1 job: a mapping per variant, a boolean for every variant."""
    specs = _inan_train_specs("config/config.yaml")
    assert set(specs) == {"vd", "al", "re", "real"}
    grad = {v: s["size_settings"]["soft_target_grad"] for v, s in specs.items()}
    assert grad == {"vd": False, "al": False, "re": False, "real": True}  # the default preset's mapping
    (workflow_dir / "all_on.yaml").write_text("inan:\n  soft_target_grad: true\n")
    specs = _inan_train_specs("config/config.yaml", str(workflow_dir / "all_on.yaml"))
    assert all(s["size_settings"]["soft_target_grad"] for s in specs.values())


def test_screen_runs_carry_their_reduction_text():
    """A screen run that lifts the budget carries its own reduction text, the others the screen's; a `why`
    with a quote and an ampersand survives the shell."""
    specs = {f"{s['variant']}_{s['tag']}": s for s in inan_specs("config/config.yaml", kind="screen")}
    assert specs["vd_later_full6"]["reduction"].startswith("full PTB")
    assert specs["vd_later"]["reduction"].startswith("screen: first 10 %")
    assert specs["re_bias_later"]["why"].endswith("(Press & Wolf's WT); compare with re_later")


def test_full_data_screen_runs_are_table1_rows_for_six_epochs():
    """The AL-weight screen trains the Table 1 rows for 6 of their 40 epochs: `vd_later_full6` and
    `al_later_full6` are the VD-LSTM and +AL rows but for the epochs; `_alpha10` / `_alpha20` change only the
    AL weight (gamma 1 and 2 at tau 10)."""
    from replicate.inan.train import run_settings

    table1 = _inan_train_specs("config/config.yaml")
    screen = {f"{s['variant']}_{s['tag']}": s for s in inan_specs("config/config.yaml", kind="screen")}

    def settings(spec, overrides=None):
        return run_settings(spec["size_settings"], spec["size"], spec["variant"], spec["seed"], overrides)

    for variant in ("vd", "al"):
        row, full = settings(table1[variant]), settings(screen[f"{variant}_later_full6"],
                                                        screen[f"{variant}_later_full6"]["overrides"])
        assert {**row[0], "epochs": 6} == full[0], variant
        assert (row[1] is full[1] is None) if variant == "vd" else vars(row[1]) == vars(full[1]), variant
    base = settings(table1["al"])[1]
    for tag, alpha in (("al_later_full6_alpha10", 10.0), ("al_later_full6_alpha20", 20.0)):
        engine, al = settings(screen[tag], screen[tag]["overrides"])
        assert engine == {**settings(table1["al"])[0], "epochs": 6}
        assert (al.alpha, al.tau, al.soft_target_grad) == (alpha, base.tau, base.soft_target_grad), tag


def test_bad_config_stops_with_cause(workflow_dir):
    (workflow_dir / "bad.yaml").write_text("protocol: reduced\ndata:\n  download_timeout: -1\n")
    proc = run_snakemake(["-n", "all", "--configfile", "bad.yaml"], cwd=workflow_dir, check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "data.download_timeout=-1" in out and "must be a number in (0, 86400]" in out


PW = "results/press_wolf/{}/seed1/metrics.json"
# (id, target, config overlay or None, words the error must contain). Every value comes from a target's path
# or a config overlay and must be refused while the DAG is built: a named error, nothing under results/.
PLAN_REFUSALS = [
    ("pw-negative-size", PW.format("small@hidden_size=-5"), None,
     ["SettingError", "hidden_size=-5", "an integer from 1 to 16384"]),
    ("pw-unknown-key", PW.format("small@lamda=1"), None, ["SettingError", "unknown key 'lamda'", "'pr_lambda'"]),
    ("pw-negative-dropout", PW.format("small@dropout_rate=-0.1"), None, ["dropout_rate=-0.1", "a number in [0, 1)"]),
    ("pw-non-numeric", PW.format("small@lr=fast"), None, ["lr='fast'", "a number in (0, 100]"]),
    ("pw-seed-override", PW.format("small@seed=3"), None, ["seed is not a cell override"]),
    ("pw-out-of-memory", PW.format("small@hidden_size=16000"), None,
     ["estimated memory", f"over max_job_memory_gib = {machine_memory_gib()} GiB"]),
    ("pw-limit-from-config", PW.format("small"), "max_job_memory_gib: 1\n",
     ["Press & Wolf run small/seed1", "over max_job_memory_gib = 1 GiB"]),
    ("pw-ablation-in-config", "all",  # the preset's table6 lists its ablation: an overlay keeps it
     "press_wolf:\n  ablations: ['small_wt_pr@pr_form=squared@epochs=4', 'small@dropout_rate=1.5']\n",
     ["dropout_rate=1.5", "a number in [0, 1)"]),
    ("inan-zero-tau", "results/inan/ablation/ptb/small_real_tau0_gamma0.5/metrics.json", None,
     ["Inan ablation run", "tau=0", "a number in (0, 1000]"]),
    ("inan-screen-unknown-run", "results/inan/screen/ptb/small_al_later_tnrom7/metrics.json", None,
     ["Inan screening run", "no run al_later_tnrom7", "'al_later_tnorm7'"]),
    ("inan-screen-bad-override", "all", "inan:\n  screen:\n    runs: [{variant: al, tag: x, overrides: {tua: 5}}]\n",
     ["tua"]),
    ("inan-beta-above-one", "results/inan/subspace/zero_w_sgd/tau10_beta1.5.json", None,
     ["beta=1.5", "a number from 0 to 1"]),
    ("inan-unknown-reading", "results/inan/subspace/zero_w_sdg/tau10_beta0.5.json", None,
     ["unknown reading 'zero_w_sdg'", "'zero_w_sgd'"]),
    ("scale-fraction-above-100", "results/scale/runs/ptb/p150_h200_tied_drop0/seed1/summary.json", None,
     ["scale run ptb/p150_h200_tied_drop0/seed1", "pct=150", "an integer from 1 to 100"]),
    ("scale-unknown-std", "results/scale/transformer/tied_stdbig_lr0.003/seed1/summary.json", None,
     ["std='big'", "inv_sqrt_d"]),
    ("sweep-width-in-path", "results/initial_loss/runs/d1000000.csv", None,
     ["sweep point d=1000000", "width=1000000", "an integer from 2 to 65536"]),
    ("sweep-width-huge", "all", "initial_loss:\n  widths: [100000000]\n",
     ["SettingError", "initial_loss.widths.0=100000000", "an integer from 2 to 65536"]),
    ("config-misspelt-key", "all", "press_wolf:\n  overrides: {epoch: 3}\n",
     ["unknown key 'press_wolf.overrides.epoch' (did you mean 'epochs'?)"]),
    ("sweep-out-of-memory", "all", "initial_loss:\n  widths: [64, 32768]\n",
     ["sweep point d=32768", "estimated memory", f"over max_job_memory_gib = {machine_memory_gib()} GiB"]),
    ("sweep-odd-heads", "results/initial_loss/runs/d130.csv", None, ["width 130 does not split into 2 heads"]),
    ("pw-nan-lr", PW.format("small@lr=nan"), None, ["lr=nan is not allowed: nan is not a finite number"]),
    ("pw-key-twice", PW.format("small@lr=0.5@lr=2"), None, ["lr is given twice"]),
    ("pw-whitespace", PW.format("small@lr=1 @bptt=3"), None, ["contains whitespace"]),
    ("config-nan", "all", "press_wolf:\n  overrides: {lr: .nan}\n", ["press_wolf.overrides.lr=nan", "not a finite"]),
    ("config-yaml-string", "all", "press_wolf:\n  overrides: {lr: 1.0e6}\n", ["'1.0e6' is a string", "YAML 1.1"]),
    ("config-no-cells", "all", "press_wolf:\n  cells: []\n", ["which neither press_wolf.cells nor press_wolf.ablations trains"]),
    ("no-rule-seed", "results/press_wolf/small/seed-1/metrics.json", None, ["rule press_wolf_train", "seed='-1'"]),
    ("no-rule-variant", "results/inan/table1/ptb/small_all/metrics.json", None, ["variant='all'", "'al'"]),
]


@pytest.mark.parametrize("case_id,target,overlay,words", PLAN_REFUSALS, ids=[c[0] for c in PLAN_REFUSALS])
def test_bad_value_refused_at_plan_time(workflow_dir, case_id, target, overlay, words):
    args = ["-n", target]
    if overlay is not None:
        (workflow_dir / "overlay.yaml").write_text(overlay)
        args += ["--configfile", "config/config.yaml", "overlay.yaml"]
    proc = run_snakemake(args, cwd=workflow_dir, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"{case_id}: not refused:\n{out[-3000:]}"
    for word in words:
        assert word in out, f"{case_id}: {word!r} not in the error:\n{out[-3000:]}"
    assert "Job stats" not in out, f"{case_id}: a plan was made before the refusal"
    assert not (workflow_dir / "results").exists(), f"{case_id}: a refused plan wrote results/"


def test_bad_override_starts_no_job(workflow_dir):
    """The issue's command, for real (no -n): refused before the data stage or any job starts."""
    proc = run_snakemake(["--cores", "1", PW.format("small@hidden_size=-5")], cwd=workflow_dir, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "hidden_size=-5" in out and "from 1 to 16384" in out
    assert "rule fetch_data" not in out and not (workflow_dir / "results").exists()


def test_more_seeds_of_the_cells_do_not_retrain_an_ablation(workflow_dir):
    """Table 6 with press_wolf.seeds [1, 2]: seeds 1 and 2 of the four cells, the ablation row at its own
    ablation_seeds (seed 1) only; ablation_seeds [1, 2] adds its seed 2."""
    def planned(overlay: str) -> list[str]:
        (workflow_dir / "overlay.yaml").write_text(overlay)
        out = run_snakemake(["-n", "-p", "--forceall", "results/tables/press_wolf_table6.csv", "--configfile",
                             "config/config.yaml", "overlay.yaml"], cwd=workflow_dir).stdout
        return sorted(set(re.findall(r"replicate train press_wolf (\S+) ", out)))

    cells = ["small", "small_pr", "small_wt", "small_wt_pr"]
    ablation = "small_wt_pr@pr_form=squared@epochs=4"
    assert planned("press_wolf:\n  seeds: [1, 2]\n") == sorted(
        [f"{c}/seed{s}" for c in cells for s in (1, 2)] + [f"{ablation}/seed1"])
    assert f"{ablation}/seed2" in planned("press_wolf:\n  seeds: [1, 2]\n  ablation_seeds: [1, 2]\n")


def test_valid_values_in_paths_are_planned(workflow_dir):
    """The checks refuse only what is wrong: in-range values from paths plan as before."""
    targets = [PW.format("small_wt_pr@pr_lambda=0.05@max_batches=null"),
               "results/inan/ablation/ptb/small_real_tau2.5_gamma0/metrics.json",
               "results/inan/subspace/zero_w_sgd/tau10_beta0.25.json",
               "results/scale/runs/ptb/p25_h400_tied_drop0/seed3/summary.json",
               "results/scale/transformer/tied_stdinv_sqrt_d_lr0.003/seed1/summary.json",
               "results/initial_loss/runs/d96.csv"]
    out = run_snakemake(["-n", *targets], cwd=workflow_dir).stdout
    for rule in ("press_wolf_train", "inan_ablation_train", "inan_subspace_point", "scale_train",
                 "scale_transformer", "initial_loss_sweep"):
        assert rule in out


def test_missing_local_data_names_fix(workflow_dir, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_snakemake(["--cores", "1", f"{SMOKE_RESULTS}/data/ptb/stats.json", "--configfile", "config/smoke.yaml"],
                         cwd=workflow_dir, env={"REPLICATE_DATA_DIR": str(empty)}, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "local data file missing" in out and "ptb.train.txt" in out and "REPLICATE_DATA_DIR" in out
    assert not (workflow_dir / SMOKE_RESULTS / "data/raw/ptb").exists(), "failed fetch must not leave an output"


@pytest.mark.slow
def test_smoke_data_stage(smoke_run):
    stats = json.loads((smoke_run / SMOKE_RESULTS / "data/ptb/stats.json").read_text())
    assert stats["tokens"]["train"] == 929_589
    assert stats["provenance"]["config"] == {"dataset": "ptb"}
    assert "git" in stats["provenance"] and "packages" in stats["provenance"]
    summary = (smoke_run / SMOKE_RESULTS / "data/summary.md").read_text()
    assert "| ptb | 10,000 | 929,589 |" in summary and "| wikitext2 | 33,278 |" in summary


@pytest.mark.slow
def test_smoke_runs_keep_every_attempt_log_and_drop_finished_checkpoints(smoke_run):
    """config/smoke.yaml sets keep_final_checkpoint: false: no finished run keeps its weights but the Inan
    screen runs (their soft-target analysis reads them); every engine run folder (Press & Wolf, Inan,
    scale) has its train.log with one finished attempt."""
    root = smoke_run / SMOKE_RESULTS
    logs = sorted(root.rglob("train.log"))
    kinds = {p.relative_to(root).parts[0] for p in logs}
    assert {"press_wolf", "inan", "scale"} <= kinds, kinds
    assert len(logs) >= 4 + 4  # the four Table 6 cells, the four Table 1 rows, and the scale runs
    for log in logs:
        text = log.read_text()
        assert text.count("=== attempt 1 started ") == 1 and "=== attempt 1 ended" in text and ": finished" in text
    kept = {p.relative_to(root).parent.as_posix() for p in root.rglob("checkpoint.pt")}
    assert all(run.startswith("inan/screen/") for run in kept), kept  # the soft-target analysis reads those
    assert not any((log.parent / "checkpoint.pt").exists() for log in logs if "inan/screen/" not in log.as_posix())

def _finished_press_wolf_run(workflow_dir, target="results/press_wolf/small/seed1/metrics.json"):
    """A finished run of the default preset's small cell (its settings, a perplexity), written without training."""
    from replicate.press_wolf.cells import cell_settings

    run = workflow_dir / target
    run.parent.mkdir(parents=True)
    run.write_text(json.dumps({"settings": cell_settings("small", {}, seed=1), "valid_ppl": 120.0}))
    (run.parent / "history.csv").write_text("epoch,valid_ppl\n1,120.0\n")
    return target


@pytest.mark.slow
def test_a_training_run_reruns_when_its_corpus_changes_not_when_the_data_code_does(workflow_dir, tmp_path):
    """An edit reruns the rules whose version it changes, and no other: the data rules' version is what decides
    their bytes (the corpus's pinned digest), and a training run reads its corpus by content. The data stage runs
    with a copy of the package; a finished training run is recorded beside it (--touch: Snakemake's record of the
    job, no training); then the copy, and the corpus, are changed. Also: a run that ends names the report."""
    package = tmp_path / "code"
    shutil.copytree(REPO_ROOT / "replicate", package / "replicate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "workflow" / "schemas", package / "workflow" / "schemas")  # beside it, as in the repo
    env = {"PYTHONPATH": str(package)}
    summary, report = "results/data/summary.md", workflow_dir / "results/report/index.html"
    report.parent.mkdir(parents=True)
    report.write_text("<html></html>")  # a report of an earlier run: a run that ends names it
    ran = run_snakemake(["--cores", "1", summary], cwd=workflow_dir, env=env)
    assert f"Report: {report}" in ran.stdout + ran.stderr
    run = _finished_press_wolf_run(workflow_dir)
    run_snakemake(["--cores", "1", "--touch", "--force", run], cwd=workflow_dir, env=env)

    def planned() -> dict[str, int]:
        return job_counts(run_snakemake(["-n", run, summary], cwd=workflow_dir, env=env).stdout)

    def edit(module, old="", new="# an edit\n"):
        path = package / "replicate" / module
        path.write_text(path.read_text().replace(old, new) if old else path.read_text() + new)

    assert planned() == {}
    edit("initial_loss/theory.py")  # code no rule here computes with
    edit("data.py")  # the data code, the same corpus
    edit("data.py", "could not download", "no mirror gave")
    assert planned() == {}
    edit("data_cli.py")  # the summary's code
    assert planned() == {"data_summary": 1}
    pin = data.DATASETS["ptb"].corpus
    edit("data.py", pin, "0" * 64)  # a preparation that writes another corpus (its new pin)
    assert planned() == {"prepare_data": 1, "press_wolf_train": 1, "data_summary": 1}
    edit("data.py", "0" * 64, pin)
    corpus = workflow_dir / "results/data/ptb/corpus.pt"
    kept = shutil.copy2(corpus, tmp_path / "kept.pt")
    shutil.copy(workflow_dir / "results/data/wikitext2/corpus.pt", corpus)  # other bytes in the corpus's place
    assert planned() == {"press_wolf_train": 1, "data_summary": 1}
    shutil.copy2(kept, corpus)
    corpus.touch()  # the same corpus, written again
    assert planned() == {"data_summary": 1}


def test_an_overlay_never_overwrites_a_finished_run(workflow_dir):
    """A finished run whose settings differ from the plan's stops the plan before any job, naming the folder,
    the setting (recorded -> wanted) and the ways on; the same plan without the overlay, or with --forcerun
    on that run, goes ahead."""
    target = _finished_press_wolf_run(workflow_dir)
    run = workflow_dir / target
    (workflow_dir / "overlay.yaml").write_text("press_wolf:\n  overrides: {epochs: 3}\n")
    overlay = ["--configfile", "config/config.yaml", "overlay.yaml"]
    proc = run_snakemake(["--cores", "1", target, *overlay], cwd=workflow_dir, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "results/press_wolf/small/seed1 holds a finished run" in out
    assert "epochs: its preset's -> 3" in out and "--forcerun results/press_wolf/small/seed1/metrics.json" in out
    assert "rule fetch_data" not in out and json.loads(run.read_text())["valid_ppl"] == 120.0
    run_snakemake(["-n", target], cwd=workflow_dir)  # the run's own settings: nothing to refuse
    forced = run_snakemake(["-n", target, "--forcerun", target, *overlay], cwd=workflow_dir).stdout
    assert "rule press_wolf_train:" in forced


@pytest.mark.parametrize("command", [["--unlock"], ["--cleanup-metadata", "results/data/ptb/corpus.pt"]])
def test_commands_without_cores_work(workflow_dir, command):
    """Snakemake's housekeeping commands take no --cores; the workflow must load without one."""
    proc = run_snakemake(command, cwd=workflow_dir, check=False)
    out = proc.stdout + proc.stderr
    assert "number of cores" not in out, out[-2000:]
    assert proc.returncode == 0 or "metadata was not present" in out, out[-2000:]  # a fresh folder has none
