"""`python -m replicate check-config`: the config errors Snakemake's loader leaves unnamed, named."""

from __future__ import annotations

import pytest

from support.workflow import REPO_ROOT
from replicate import cli

PRESET = str(REPO_ROOT / "config" / "config.yaml")


@pytest.mark.parametrize("text,words", [
    (None, ["does not exist"]),
    ("protocol: reduced\npress_wolf:\n  overrides: {lr: 1.0\n", ["overlay.yaml, line 4, column 1: not valid YAML"]),
    ("press_wolf:\n  overrides: {lr: 1e6}\n", ["lr='1e6'", "is a string, not a number: YAML 1.1"]),
    ("press_wolf:\n  overrides: {lr: .inf}\n", ["lr=inf is not allowed: inf is not a finite number"]),
    ("- a list\n", ["the top level is not a mapping"]),
    ("press_wolf:\n  overrides:\n    lr: 1.0\n    clip: 5\n    lr: 2.0\n",
     ["overlay.yaml: key 'lr' is given twice in one mapping (lines 3 and 5)"]),
    ("protocol: smoke\nprotocol: reduced\n", ["key 'protocol' is given twice in one mapping (lines 1 and 2)"]),
    ("folder", ["overlay.yaml is a folder, not a file"]),
    (b"PK\x03\x04\x00\xff\xfe binary", ["overlay.yaml is not a text file (UTF-8 YAML)"]),
    (b"a: 1\x00\x01", ["overlay.yaml is not a text file (UTF-8 YAML)"]),
])
def test_a_bad_config_file_is_named(capsys, tmp_path, text, words):
    overlay = tmp_path / "overlay.yaml"
    if text == "folder":
        overlay.mkdir()
    elif isinstance(text, bytes):
        overlay.write_bytes(text)
    elif text is not None:
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


def test_keys_repeated_apart_or_through_a_merge_are_not_duplicates(tmp_path):
    from replicate.experiments import read_file as load

    path = tmp_path / "c.yaml"
    path.write_text("base: &b {lr: 1.0, clip: 5}\na:\n  <<: *b\n  lr: 2.0\nb:\n  lr: 3.0\n")
    assert load(path) == {"base": {"lr": 1.0, "clip": 5}, "a": {"lr": 2.0, "clip": 5}, "b": {"lr": 3.0}}
