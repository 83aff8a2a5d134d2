"""End to end: the initial-loss outputs of the shared smoke run (config/smoke.yaml)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from support.workflow import SMOKE_RESULTS

pytestmark = pytest.mark.slow


def check_initial_loss_outputs(root: Path) -> None:
    """Assertions on one finished run folder (also usable on a manual run)."""
    cfg = yaml.safe_load((root / "config" / "smoke.yaml").read_text())["initial_loss"]
    res = root / SMOKE_RESULTS
    tidy = pd.read_csv(res / "initial_loss" / "initial_loss.csv", dtype={"std": str})
    n_trunks = sum(math.prod(len(v) for v in t.values()) for t in cfg["trunks"])
    assert len(tidy) == len(cfg["widths"]) * len(cfg["seeds"]) * n_trunks * 6   # 6 default heads
    assert sorted(tidy["d"].unique()) == sorted(cfg["widths"])
    assert tidy["loss"].between(0, 1e3).all() and (tidy["protocol"] == "smoke").all()

    summary = pd.read_csv(res / "tables" / "initial_loss_summary.csv", dtype={"std": str})
    assert {"loss_mean", "reference_loss", "diff", "rel_diff", "protocol", "reference_kind"} <= set(summary.columns)
    assert {"theory", "theory_rescaled", "log_n"} <= set(summary["reference_kind"])
    rescaled = summary[summary["reference_kind"] == "theory_rescaled"]
    assert (rescaled["diff"].abs() < 0.2).all()           # the rescale brings the start back to ~log n

    theory = pd.read_csv(res / "tables" / "initial_loss_theory.csv")
    assert sorted(theory["d"].unique()) == sorted(cfg["theory_widths"])
    fam = pd.read_csv(res / "tables" / "model_families.csv")
    assert {"embedding_share", "pp_tied_grad_bytes_bf16", "source"} <= set(fam.columns)

    metrics = json.loads((res / "initial_loss" / "metrics.json").read_text())
    assert metrics["provenance"]["config"]["protocol"] == "smoke" and "findings" in metrics
    memory = json.loads((res / "initial_loss" / "memory_benchmark.json").read_text())
    assert memory["within_limit"] and memory["peak_rss_gib"] > 0.05

    for stem in ("initial_loss_vs_width", "initial_loss_standard_init", "embedding_share"):
        for ext in ("png", "svg"):
            assert (res / "figures" / f"{stem}.{ext}").stat().st_size > 5000, (stem, ext)
    for rule in ("sweep_d32", "sweep_d64", "memory"):
        assert (res / "benchmarks" / "initial_loss" / f"{rule}.tsv").is_file()


def test_initial_loss_smoke_outputs(smoke_run):
    check_initial_loss_outputs(smoke_run)
