"""python -m replicate compare-results: two results trees compared, timings and provenance aside."""

from __future__ import annotations

import json

import torch

from replicate.compare import compare, main


def _tree(root, *, loss="2.5", commit="0123456789abcdef", seconds=1.0, extra=False):
    (root / "tables").mkdir(parents=True)
    (root / "logs").mkdir()
    (root / "tables" / "t.csv").write_text(f"d,loss,code_version,seconds\n64,{loss},{commit},{seconds}\n")
    (root / "run.json").write_text(json.dumps({"loss": float(loss), "provenance": {"git": commit}, "gap": float("nan"),
                                               "code_version": commit, "started": str(seconds)}))
    (root / "report.md").write_text(f"# Report\nbuilt 2026-01-0{int(seconds)}T10:00:00 from {commit}\nloss {loss}\n"
                                    f"## Compute\n| job | {seconds} s |\n## Claims\nholds\n")
    torch.save({"weights": torch.tensor([float(loss), float("nan")]), "history": [{"seconds": seconds}]},
               root / "checkpoint.pt")
    (root / "logs" / "job.log").write_text(f"took {seconds} s\n")
    (root / "fig.png").write_bytes(b"\x89PNG" + loss.encode())
    if extra:
        (root / "tables" / "more.csv").write_text("a\n1\n")
    return root


def test_same_results_with_other_timings_and_provenance(tmp_path, capsys):
    a = _tree(tmp_path / "a")
    b = _tree(tmp_path / "b", commit="fedcba9876543210", seconds=7.0)
    assert compare(a, b) == []
    assert main([str(a), str(b)]) == 0
    assert "same: 5 files" in capsys.readouterr().out


def test_every_kind_of_difference_is_reported(tmp_path, capsys):
    a = _tree(tmp_path / "a")
    b = _tree(tmp_path / "b", loss="2.6", extra=True)
    lines = compare(a, b)
    assert f"only in {b}: tables/more.csv" in lines
    assert {line.split(":")[1].strip() for line in lines if line.startswith("differs")} == {
        "checkpoint.pt", "fig.png", "report.md", "run.json", "tables/t.csv"}
    assert main([str(a), str(b)]) == 1
    assert "differs: tables/t.csv: CSV differs from row 1" in capsys.readouterr().out
