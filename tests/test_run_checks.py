"""`python -m replicate <command>` typed by hand: the values the workflow refuses at plan time are refused
the same way (replicate/run_checks.py), with a named message and no traceback (`train`: tests/test_experiments.py)."""

from __future__ import annotations

import errno
import json

import pytest

from replicate import cli
from replicate.run_checks import check_engine_settings
from replicate.validate import SettingError


def _run(capsys, *argv):
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("width,words", [("-5", "less than the minimum of 2"), ("0", "less than the minimum of 2"),
                                         ("130", "does not split into 2 heads of even width")])
def test_initial_loss_sweep_refuses_a_bad_width(capsys, tmp_path, width, words):
    spec = json.dumps({"initial_loss": {"head_dim": 64}})
    code, err = _run(capsys, "initial-loss", "sweep", "--spec", spec, "--width", width, "--out", str(tmp_path / "x.csv"))
    assert code == 2 and words in err and "initial-loss sweep point d=" in err


def test_engine_settings_pass_the_presets_own_values():
    assert check_engine_settings({"size": "small", "seed": 3, "tying": "tied", "lr": 1}, "run")["seed"] == 3
    with pytest.raises(SettingError, match="seed=-1 is not an integer >= 0"):
        check_engine_settings({"size": "small", "seed": -1}, "run")


def test_a_full_disk_is_named_without_a_traceback(capsys, monkeypatch):
    def full(argv):
        raise OSError(errno.ENOSPC, "No space left on device", "results/press_wolf/small/seed1/checkpoint.pt")

    monkeypatch.setattr("replicate.data_cli.main", full)
    code, err = _run(capsys, "data", "summary")
    assert code == 2 and "no space left on the device writing results/press_wolf/small/seed1/checkpoint.pt" in err
    assert "keeps its previous version" in err and "Traceback" not in err


def test_scale_commands_refuse_a_bad_spec(capsys, tmp_path):
    train = {"name": "scale/ptb/p10_h200_tied/seed1", "pct": 10, "hidden": -5, "variant": "tied", "seed": 1,
             "record": False, "lstm": {"size": "small", "overrides": {}}}
    code, err = _run(capsys, "scale", "train", "--spec", json.dumps(train), "--corpus", "x", "--out-dir", str(tmp_path))
    assert code == 2 and "hidden=-5 is not allowed" in err
    code, err = _run(capsys, "scale", "train", "--spec", json.dumps({**train, "hidden": 200, "record": "yes"}),
                     "--corpus", "x", "--out-dir", str(tmp_path))
    assert code == 2 and "record='yes' is not true or false" in err and "pass the rule's --spec" in err
    code, err = _run(capsys, "scale", "train", "--spec", json.dumps({**train, "hidden": 200, "lstm": {
        "size": "small", "overrides": {"lr": float("nan")}}}), "--corpus", "x", "--out-dir", str(tmp_path))
    assert code == 2 and "lr=nan is not allowed: nan is not a finite number" in err
    transformer = {"name": "scale/transformer/tied_std0.02/seed1", "lr": float("inf"), "std": "0.02"}
    code, err = _run(capsys, "scale", "transformer", "--spec", json.dumps(transformer), "--corpus", "x",
                     "--out-dir", str(tmp_path))
    assert code == 2 and "lr=inf is not allowed" in err
