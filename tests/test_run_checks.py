"""The run declarations' shared checks (replicate/experiments.py) and `python -m replicate` naming a full disk
without a traceback (a bad run typed by hand: tests/test_experiments.py)."""

from __future__ import annotations

import errno

import pytest

from replicate import cli
from replicate.experiments import check_engine_settings
from replicate.validate import SettingError


def _run(capsys, *argv):
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


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
