"""Ctrl-C in a job: one line (where it stopped, how to resume), exit status 130, no traceback."""

from __future__ import annotations

import sys
import types

from replicate import cli


def test_interrupt_prints_one_line_with_the_last_log_line(monkeypatch, capsys):
    def main(argv):
        cli.log("[small/seed1] epoch 2/13 batch 300/1327 loss 5 ppl 150 lr 1 1700 tok/s ETA 1h (training only)")
        raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "fake_train_cli", types.SimpleNamespace(main=main))
    monkeypatch.setitem(cli.COMMANDS, "fake-train", ("fake_train_cli", "a command that is interrupted"))
    assert cli.main(["fake-train", "train", "small/seed1"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "python -m replicate fake-train train stopped at: [small/seed1] epoch 2/13 batch 300/1327" in err
    assert "run the same snakemake command again" in err


def test_interrupt_before_any_log_line_says_so(monkeypatch):
    monkeypatch.setattr(cli, "_last_logged", [""])
    assert "stopped at: before its first log line" in cli.interrupted_line(["data", "prepare"])
