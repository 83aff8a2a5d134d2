"""The speed benchmark records the machine load, warns when it is not idle, and writes its JSON and table
(no timing asserted)."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from replicate.press_wolf import bench


def test_benchmark_records_load_and_warns_when_busy(monkeypatch, capsys):
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (3.5, 2.0, 1.0))
    monkeypatch.setattr(bench, "matmul_gflops", lambda: (100.0, 100.0))
    monkeypatch.setattr(bench, "ours_tok_s", lambda *a, **k: (2000.0, 2000.0))
    monkeypatch.setattr(bench, "plain_loop_tok_s", lambda *a, **k: (1000.0, 1000.0))
    result = bench.run(threads=1, sizes=["small"], batches=1, repeats=1, vocab=100)
    assert result["load_start"]["loadavg"][0] == 3.5 and result["load_start"]["idle"] is False
    assert "load_end" in result and result["sizes"]["small"]["wall"]["ratio"] == 2.0
    assert "not idle" in capsys.readouterr().err


def test_idle_machine_counts_as_idle(monkeypatch):
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (0.1, 0.2, 0.3))
    assert bench.load_state()["idle"] is True


def test_table_and_json_carry_the_load_and_the_ratio(monkeypatch, tmp_path):
    """--out / --table: one row per size and clock; 'idle' is the start's (the end's load includes the benchmark)."""
    loads = iter([(0.1, 0.2, 0.3), (1.7, 0.9, 0.5)])
    monkeypatch.setattr(bench.os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(bench, "matmul_gflops", lambda: (100.0, 50.0))
    monkeypatch.setattr(bench, "ours_tok_s", lambda *a, **k: (3000.0, 1500.0))
    monkeypatch.setattr(bench, "plain_loop_tok_s", lambda *a, **k: (2000.0, 1200.0))
    args = argparse.Namespace(threads=2, sizes="small", batches=1, repeats=1, vocab=100,
                              out=str(tmp_path / "bench_speed.json"), table=str(tmp_path / "speed.csv"))
    assert bench.main(args) == 0
    table = pd.read_csv(args.table)
    assert table[["size", "clock"]].values.tolist() == [["small", "wall"], ["small", "cpu"]]
    assert table["ratio"].tolist() == [1.5, 1.25]
    assert table["load_1min_start"].tolist() == [0.1, 0.1] and table["load_1min_end"].tolist() == [1.7, 1.7]
    assert table["idle"].all()
    assert json.loads((tmp_path / "bench_speed.json").read_text())["code_version"]


def test_readme_block_shows_the_published_speed_table(tmp_path):
    """The README's generated block lists the speed table beside Press & Wolf, load and idle flag included."""
    from replicate.publish import readme

    (tmp_path / "tables").mkdir()
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"experiments": {"press_wolf": {"protocol": "reduced"}}}))
    pd.DataFrame([{"size": "small", "clock": "wall", "threads": 2, "load_1min_start": 0.12, "load_1min_end": 1.9,
                   "idle": False, "ours_tok_s": 7381.0, "plain_tok_s": 6839.0, "ratio": 7381 / 6839}]).to_csv(
        tmp_path / "tables/press_wolf_speed.csv", index=False)
    block = readme.render(tmp_path, "paper/measured")
    assert "From `paper/measured/tables/press_wolf_speed.csv`:" in block
    assert "| small | wall | 2 | 0.12 | 1.9 | False | 7381 | 6839 | 107.9 % |" in block  # the ratio as %
