"""The speed benchmark records the machine load, warns when it is not idle, and writes its JSON and table
(no timing asserted)."""

from __future__ import annotations

import argparse
import json

import pandas as pd
import pytest

from replicate.errors import ReplicateError
from replicate.press_wolf import bench


def test_benchmark_records_load_and_warns_when_busy(monkeypatch, capsys):
    monkeypatch.setattr("os.getloadavg", lambda: (3.5, 2.0, 1.0))
    monkeypatch.setattr(bench, "matmul_gflops", lambda: (100.0, 100.0))
    monkeypatch.setattr(bench, "ours_tok_s", lambda *a, **k: (2000.0, 2000.0))
    monkeypatch.setattr(bench, "plain_loop_tok_s", lambda *a, **k: (1000.0, 1000.0))
    monkeypatch.setattr(bench, "eval_tok_s", lambda *a, **k: 4000.0)
    result = bench.run(threads=1, cells=["small"], batches=1, repeats=1, vocab=100)
    assert result["load_start"]["loadavg"][0] == 3.5 and result["load_start"]["idle"] is False
    assert "load_end" in result and result["cells"]["small"]["wall"]["ratio"] == 2.0
    assert "not idle" in capsys.readouterr().err


def test_idle_machine_counts_as_idle(monkeypatch):
    monkeypatch.setattr("os.getloadavg", lambda: (0.1, 0.2, 0.3))
    assert bench.load_state()["idle"] is True


def test_table_and_json_carry_the_load_and_the_ratio(monkeypatch, tmp_path):
    """--out / --table: one row per size and clock; 'idle' is the start's (the end's load includes the benchmark)."""
    loads = iter([(0.1, 0.2, 0.3), (1.7, 0.9, 0.5)])
    monkeypatch.setattr("os.getloadavg", lambda: next(loads))
    monkeypatch.setattr(bench, "matmul_gflops", lambda: (100.0, 50.0))
    monkeypatch.setattr(bench, "ours_tok_s", lambda *a, **k: (3000.0, 1500.0))
    monkeypatch.setattr(bench, "plain_loop_tok_s", lambda *a, **k: (2000.0, 1200.0))
    monkeypatch.setattr(bench, "eval_tok_s", lambda *a, **k: 4000.0)
    args = argparse.Namespace(threads=2, cells="small", batches=1, repeats=1, vocab=100, breakdown=False,
                              default_allocator=True, out=str(tmp_path / "bench_speed.json"),
                              table=str(tmp_path / "speed.csv"))
    assert bench.main(args) == 0
    table = pd.read_csv(args.table)
    assert table[["cell", "clock"]].values.tolist() == [["small", "wall"], ["small", "cpu"]]
    assert table["ratio"].tolist() == [1.5, 1.25]
    assert table["load_1min_start"].tolist() == [0.1, 0.1] and table["load_1min_end"].tolist() == [1.7, 1.7]
    assert table["idle"].all()
    saved = json.loads((tmp_path / "bench_speed.json").read_text())
    assert saved["code_version"] and saved["allocator"] == "the C library's default"


@pytest.mark.parametrize("fused", [True, False])
def test_inan_step_breakdown_parts_add_up(fused):
    """Every part of an +REAL window is timed; the element-wise share is the whole output layer minus its
    products (a benchmark's bookkeeping, not its speed)."""
    from replicate.press_wolf import bench

    parts = bench.inan_step_breakdown("inan_real", fused=fused, vocab=60, repeats=1)
    assert all(v > 0 for k, v in parts.items() if not k.startswith("loss element-wise"))
    assert parts["loss element-wise (output layer minus its products)"] == pytest.approx(
        parts["output layer + loss, whole"] - parts["output GEMMs (3)"] - parts["soft-target product(s)"])


def test_readme_block_is_compact_table6_and_verdicts_without_the_speed_table(tmp_path):
    """The README's generated block shows Table 6 and the report's Press & Wolf verdicts; the speed table
    lives in docs/reproducibility.md and the report, not on the front page."""
    from replicate.publish import readme

    (tmp_path / "tables").mkdir()
    (tmp_path / "report").mkdir()
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"experiments": {"press_wolf": {"protocol": "reduced"}}}))
    pd.DataFrame([{"cell": "small", "clock": "wall", "ours_tok_s": 7381.0}]).to_csv(
        tmp_path / "tables/press_wolf_speed.csv", index=False)
    pd.DataFrame([{"cell": "small", "valid_ours": 122.3, "valid_paper": 120.7, "params_m_ours": 4.65}]).to_csv(
        tmp_path / "tables/press_wolf_table6.csv", index=False)
    pd.DataFrame([{"section": "press_wolf", "claim": "Tying helps.", "ours": "3.47 ± 1.31 ppl", "paper": "3.2 ppl",
                   "verdict": "reproduced"},
                  {"section": "inan", "claim": "AL helps.", "ours": "1", "paper": "6.3", "verdict": "x"}]).to_csv(
        tmp_path / "report/claims.csv", index=False)
    block = readme.render(tmp_path, "paper/measured")
    assert "press_wolf_speed" not in block and "7381" not in block and "params_m_ours" not in block
    assert "| small | 122.3 | 120.7 |" in block
    assert "| Tying helps. | 3.47 ± 1.31 ppl | 3.2 ppl | reproduced |" in block and "AL helps" not in block


def test_projection_adds_every_epoch_and_every_evaluation_of_the_row():
    """13 epochs of PTB small (2,323 windows of 20 x 20 tokens) at 1,000 tok/s, valid (20 streams) at 2,000 and
    test (one stream) at 500 tok/s: worked out by hand."""
    rates = {20: 2000.0, 1: 500.0}
    hours = bench.projected_hours({"size": "small"}, 13, 1000.0, rates.get)
    epoch = 2323 * 400 / 1000 + 73_760 / 2000
    final = 929_589 / 2000 + 73_760 / 2000 + 82_430 / 500
    assert hours == pytest.approx((13 * epoch + final) / 3600)


def test_inan_cells_are_the_default_presets_table1_rows():
    settings, al, epochs = bench.inan_cell("inan_real")
    assert (settings["tying"], settings["dropout"], epochs) == ("tied_nobias", "inan", 40)
    assert al is not None and al.soft_target_grad is True  # the preset's +REAL: gradient into y~
    settings, al, _ = bench.inan_cell("inan_vd")
    assert settings["tying"] == "untied" and al is None


def test_bd_cell_is_timed_against_the_reference_kernels_and_small_against_stock_modules():
    assert bench.cell("bd")[3] == "reference kernels" and bench.cell("small")[3] == "stock modules"
    with pytest.raises(ReplicateError, match="unknown bench cell"):
        bench.cell("huge")
