"""The experiments' run declarations (replicate/<experiment>/runs.py) and `python -m replicate train`: the same
runs, settings and checks as the JSON specs the training rules built before them, one spelling per run folder,
and one config loader for the Snakefile, the CLI and `check-config`."""

from __future__ import annotations

import functools
import hashlib
import json

import pytest

from support.workflow import REPO_ROOT
from replicate import cli, experiments
from replicate.validate import SettingError

# sha256[:16] of the --spec each old training rule printed (`snakemake -n -p --forceall press_wolf inan` and a few
# ablation cells; `... scale initial_loss inan` for the scale, sweep and section 6.2 runs; per preset), for every
# run folder (a sweep width's CSV and a 6.2 point's JSON without their suffix): the settings a run resolves now
# must be those, key for key, or a run in flight would not resume and a finished one would rerun (the spec is the
# rule's `spec` param).
OLD_SPECS = json.loads((REPO_ROOT / "tests" / "support" / "run_specs.json").read_text())


@functools.cache
def _config(preset: str) -> dict:
    return experiments.load_config([str(REPO_ROOT / preset)])


@pytest.mark.parametrize("preset", sorted(OLD_SPECS))
def test_runs_resolve_to_the_old_specs(preset):
    config = _config(preset)
    for folder, digest in OLD_SPECS[preset].items():
        experiment, run_id = folder.split("/", 1)
        run = experiments.resolve_run(config, experiment, run_id)
        assert hashlib.sha256(run.spec_json.encode()).hexdigest()[:16] == digest, folder
        assert run.config == run.spec.get("config", run.spec) and run.folder == folder
    configured = {f"{e}/{r}" for e, runs in experiments.check_config(config).items() for r in runs}
    assert configured and configured <= set(OLD_SPECS[preset])


def test_an_inan_run_records_the_engine_settings_and_the_augmented_loss():
    run = experiments.resolve_run(_config("config/config.yaml"), "inan", "table1/ptb/small_real")
    assert run.name == "inan/ptb/small_real" and run.settings["tying"] == "tied_nobias"
    assert run.guarded["tau"] == 10.0 and run.slowdown > 1  # the AL's settings guard a finished run's folder
    assert run.resources(threads=2, attempt=2)["mem_mb"] == 2 * run.resources(threads=2)["mem_mb"]


def test_a_section_6_2_point_costs_its_seeds_from_the_resource_table():
    """A 6.2 point trains the engine once per seed: the cost of each, from replicate/resources.py, x its seeds
    (measured here: about 4.4 one-thread minutes per 12-epoch seed of the compared readings)."""
    config = _config("config/config.yaml")
    three = experiments.resolve_run(config, "inan", "subspace/mean_loss_sgd_nobias/tau10_beta1")
    assert three.repeats == 3 and three.settings["max_train_tokens"] == config["inan"]["subspace"]["slice_words"]
    assert 3.5 < 60 * three.estimate(1).one_thread_hours / 3 < 5.5
    assert three.resources()["one_thread_min"] >= 3 * 4 and three.resources()["mem_mb"] > 0
    longer = experiments.resolve_run(config, "inan", "subspace/zero_w_sgd_long/tau10_beta1")  # 36 epochs, 1 seed
    assert longer.estimate(1).one_thread_hours > three.estimate(1).one_thread_hours / 3 * 2.5


@pytest.mark.parametrize("experiment,run_id,words", [
    ("inan", "ablation/ptb/small_real_tau5.0_gamma0.5", ["tau5.0 is not the one spelling", "write tau5"]),
    ("inan", "ablation/ptb/small_real_tau5_gamma.5", ["gamma.5 is not the one spelling", "write gamma0.5"]),
    ("inan", "ablation/ptb/small_real_tau0_gamma0.5", ["tau=0 is not allowed"]),
    ("press_wolf", "small/seed01", ["seed01 is not the one spelling", "write seed1"]),
    ("press_wolf", "small@lr=1.0/seed1", ["lr=1.0 is not the one spelling", "write lr=1"]),
    ("press_wolf", "smal/seed1", ["unknown Press & Wolf cell 'smal'", "did you mean 'small'"]),
    ("inan", "table1/ptb/small_xx", ["is not table1/<dataset>/<size>_<variant>"]),
    ("scale", "runs/ptb/p25_h400_tied_drop0.0/seed1", ["drop0.0 is not the one spelling", "write drop0"]),
    ("scale", "transformer/tied_std0.02_lr0.0030/seed1", ["lr0.0030 is not the one spelling", "write lr0.003"]),
    ("scale", "runs/ptb/p0_h400_tied_drop0/seed1", ["pct=0 is not allowed"]),
    ("initial_loss", "runs/d0512", ["d0512 is not the one spelling", "write d512"]),
    ("initial_loss", "runs/d130", ["width 130 does not split into 2 heads of even width"]),
    ("inan", "subspace/zero_w_sgd_long/tau10.0_beta1", ["tau10.0 is not the one spelling", "write tau10"]),
    ("inan", "subspace/zero_w_sgdd/tau10_beta1", ["unknown reading 'zero_w_sgdd'"]),
    ("nope", "x", ["no experiment 'nope'"]),
])
def test_a_run_id_in_another_spelling_is_refused_with_the_canonical_one(experiment, run_id, words):
    with pytest.raises(SettingError) as err:
        experiments.resolve_run(_config("config/config.yaml"), experiment, run_id)
    text = f"{err.value} {err.value.fix}"
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"


def _train(capsys, *argv, configfiles=(str(REPO_ROOT / "config" / "config.yaml"),)):
    code = cli.main(["train", *argv, "--configfile", *configfiles])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("experiment,run_id,words", [
    ("press_wolf", "small@hidden_size=-5/seed1", ["Press & Wolf run small@hidden_size=-5/seed1",
                                                  "an integer from 1 to 16384"]),
    ("press_wolf", "small@lr=nan/seed1", ["lr=nan", "not a finite number"]),
    ("press_wolf", "small@lr=1000000/seed1", ["greater than the maximum of 100"]),
    ("press_wolf", "small@lamda=1/seed1", ["unknown key 'lamda'", "'pr_lambda'"]),
    ("press_wolf", "small@hidden_size=16384/seed1", ["estimated memory", "over max_job_memory_gib"]),
    ("scale", "runs/ptb/p10_h0_tied_drop0/seed1", ["scale run ptb/p10_h0_tied_drop0/seed1: hidden=0 is not allowed"]),
    ("scale", "runs/ptb/p101_h200_tied_drop0/seed1", ["pct=101 is not allowed"]),
    ("scale", "transformer/tied_std0.02_lr2/seed1",
     ["scale transformer run tied_std0.02_lr2/seed1: lr=2 is not allowed"]),
    ("initial_loss", "runs/d0", ["initial-loss sweep point d=0: width=0 is not allowed", "less than the minimum of 2"]),
    ("initial_loss", "runs/d130", ["does not split into 2 heads of even width"]),
    ("inan", "subspace/zero_w_sgd_long/tau10_beta1.5", ["beta=1.5 is not allowed"]),
])
def test_train_refuses_a_bad_run_by_name_before_it_starts(capsys, tmp_path, monkeypatch, experiment, run_id, words):
    monkeypatch.chdir(tmp_path)  # nothing may be written, not even the run folder
    code, err = _train(capsys, experiment, run_id)
    assert code == 2 and "Traceback" not in err and "fix:" in err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"
    assert not list(tmp_path.iterdir())


def test_train_reads_the_config_as_snakemake_does(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    overlay = tmp_path / "inf.yaml"
    overlay.write_text("inan:\n  sizes:\n    small: {tau: .inf}\n")
    code, err = _train(capsys, "inan", "table1/ptb/small_al",
                       configfiles=(str(REPO_ROOT / "config" / "config.yaml"), str(overlay)))
    assert code == 2 and "tau=inf is not allowed: inf is not a finite number" in err
    code, err = _train(capsys, "press_wolf", "small/seed1", "--config", "max_job_memory_gib=0.1")
    assert code == 2 and "over max_job_memory_gib = 0.1 GiB" in err


def test_a_table_command_reads_the_config_its_rule_passes(capsys, tmp_path):
    """`inan ablation-table --configfile F --config K=V` (the rule's `args`) loads and checks the config itself, and
    its provenance records what the rule's `spec` param holds, keys sorted as there."""
    metrics = sorted(map(str, (REPO_ROOT / "paper/measured/inan/ablation/ptb").glob("*/metrics.json")))
    args = ["ablation-table", "--configfile", str(REPO_ROOT / "config/config.yaml"), "--config"]
    out = tmp_path / "ablation.csv"
    assert cli.main(["inan", *args, "device=cpu", "--out", str(out), *metrics]) == 0
    recorded = json.loads(out.with_name("ablation.csv.provenance.json").read_text())["provenance"]["config"]
    config = experiments.load_config([str(REPO_ROOT / "config/config.yaml")], ["device=cpu"])
    expected = experiments.spec_json(experiments.section_config(config, "inan"))
    assert json.dumps(recorded, separators=(",", ":")) == expected and recorded["device"] == "cpu"
    assert cli.main(["inan", *args, "device=tpu", "--out", str(tmp_path / "x.csv"), *metrics]) == 2
    assert "config: device='tpu' is not allowed" in capsys.readouterr().err and not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("text,words", [
    ("press_wolf:\n  cells: [small, smal]\n", ["unknown Press & Wolf cell 'smal'"]),
    ("press_wolf:\n  ablations: ['small@lr=1@clip=5', 'small@clip=5@lr=1']\n", ["are the same run"]),
    ("inan:\n  ablation:\n    taus: [5.0, 5]\n", []),  # one folder, tau5: a value, not a spelling
    ("max_job_memory_gib: 0.1\n", ["over max_job_memory_gib"]),
    ("scale:\n  lstm:\n    overrides: {lr: .nan}\n", ["lr=nan is not allowed: nan is not a finite number"]),
])
def test_check_config_refuses_what_snakemake_refuses(capsys, tmp_path, text, words):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(text)
    code = cli.main(["check-config", str(REPO_ROOT / "config" / "config.yaml"), str(overlay)])
    err = capsys.readouterr().err
    assert code == (2 if words else 0), err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"


@pytest.mark.parametrize("make", [lambda p: p.mkdir(), lambda p: p.write_bytes(b"\xff\xfe\x00binary")])
def test_check_config_names_a_folder_or_a_binary_file(capsys, tmp_path, make):
    path = tmp_path / "bad.yaml"
    make(path)
    assert cli.main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(path) in err
