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
# ablation cells, per preset), for every run folder: the settings a run resolves now must be those, key for key,
# or a run in flight would not resume and a finished one would rerun (the spec is the rule's `spec` param).
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
        assert run.config == run.spec["config"] and run.folder == folder
    configured = {f"{e}/{r}" for e, runs in experiments.check_config(config).items() for r in runs}
    assert configured and configured <= set(OLD_SPECS[preset])


def test_an_inan_run_records_the_engine_settings_and_the_augmented_loss():
    run = experiments.resolve_run(_config("config/config.yaml"), "inan", "table1/ptb/small_real")
    assert run.name == "inan/ptb/small_real" and run.settings["tying"] == "tied_nobias"
    assert run.guarded["tau"] == 10.0 and run.slowdown > 1  # the AL's settings guard a finished run's folder
    assert run.resources(threads=2, attempt=2)["mem_mb"] == 2 * run.resources(threads=2)["mem_mb"]


@pytest.mark.parametrize("experiment,run_id,words", [
    ("inan", "ablation/ptb/small_real_tau5.0_gamma0.5", ["tau5.0 is not the one spelling", "write tau5"]),
    ("inan", "ablation/ptb/small_real_tau5_gamma.5", ["gamma.5 is not the one spelling", "write gamma0.5"]),
    ("inan", "ablation/ptb/small_real_tau0_gamma0.5", ["tau=0 is not allowed"]),
    ("press_wolf", "small/seed01", ["seed01 is not the one spelling", "write seed1"]),
    ("press_wolf", "small@lr=1.0/seed1", ["lr=1.0 is not the one spelling", "write lr=1"]),
    ("press_wolf", "smal/seed1", ["unknown Press & Wolf cell 'smal'", "did you mean 'small'"]),
    ("inan", "table1/ptb/small_xx", ["is not table1/<dataset>/<size>_<variant>"]),
    ("scale", "x", ["no experiment 'scale'"]),
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


@pytest.mark.parametrize("cell,words", [
    ("small@hidden_size=-5", ["Press & Wolf run small@hidden_size=-5/seed1", "an integer from 1 to 16384"]),
    ("small@lr=nan", ["lr=nan", "not a finite number"]),
    ("small@lr=1000000", ["greater than the maximum of 100"]),
    ("small@lamda=1", ["unknown key 'lamda'", "'pr_lambda'"]),
    ("small@hidden_size=16384", ["estimated memory", "over max_job_memory_gib"]),
])
def test_train_refuses_a_bad_run_by_name_before_it_starts(capsys, tmp_path, monkeypatch, cell, words):
    monkeypatch.chdir(tmp_path)  # nothing may be written, not even the run folder
    code, err = _train(capsys, "press_wolf", f"{cell}/seed1")
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


@pytest.mark.parametrize("text,words", [
    ("press_wolf:\n  cells: [small, smal]\n", ["unknown Press & Wolf cell 'smal'"]),
    ("press_wolf:\n  ablations: ['small@lr=1@clip=5', 'small@clip=5@lr=1']\n", ["are the same run"]),
    ("inan:\n  ablation:\n    taus: [5.0, 5]\n", []),  # one folder, tau5: a value, not a spelling
    ("max_job_memory_gib: 0.1\n", ["over max_job_memory_gib"]),
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
