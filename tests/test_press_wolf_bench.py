"""The speed benchmark records the machine load and warns when it is not idle (no timing asserted)."""

from __future__ import annotations

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
