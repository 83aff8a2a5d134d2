"""`python -m replicate check-config`: the config errors Snakemake's loader leaves unnamed, named."""

from __future__ import annotations

import pytest

from support.workflow import REPO_ROOT
from replicate import cli
from replicate.experiments import merge

PRESET = str(REPO_ROOT / "config" / "config.yaml")


@pytest.mark.parametrize("text,words", [
    (None, ["does not exist"]),
    ("protocol: reduced\npress_wolf:\n  overrides: {lr: 1.0\n", ["overlay.yaml, line 4, column 1: not valid YAML"]),
    ("press_wolf:\n  overrides: {lr: 1e6}\n", ["lr='1e6'", "is a string, not a number: YAML 1.1"]),
    ("press_wolf:\n  overrides: {lr: .inf}\n", ["lr=inf is not allowed: inf is not a finite number"]),
    ("- a list\n", ["the top level is not a mapping"]),
])
def test_a_bad_config_file_is_named(capsys, tmp_path, text, words):
    overlay = tmp_path / "overlay.yaml"
    if text is not None:
        overlay.write_text(text)
    assert cli.main(["check-config", PRESET, str(overlay)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "fix:" in err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"


def test_the_presets_pass(capsys):
    for preset in ("config.yaml", "paper.yaml", "smoke.yaml"):
        assert cli.main(["check-config", str(REPO_ROOT / "config" / preset)]) == 0
    assert "config valid" in capsys.readouterr().out


def test_merge_as_snakemake_nested_keys_merge_lists_replace():
    assert merge({"a": {"b": 1, "c": [1, 2]}}, {"a": {"c": [3]}}) == {"a": {"b": 1, "c": [3]}}
