"""Figures are drawn at the width the report shows them, with readable text; a published bundle can be
rebuilt from itself (report, figures, manifest hashes) without a rerun."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from PIL import Image

from replicate import plotting
from replicate.publish.bundle import rebuild, sha256
from replicate.publish.readme import fmt

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "paper" / "measured"


def _three_panels():
    plotting.use_style()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax in axes:
        ax.plot([1, 2, 3], [3, 1, 2], label="a long legend entry")
        ax.legend(fontsize=6)
        ax.set_xlabel("x label", fontsize=7)
    fig.suptitle("A wide figure drawn for a large screen")
    return fig


def test_figure_drawn_at_display_width_with_readable_text(tmp_path):
    fig = _three_panels()
    plotting.fit_to_display(fig)
    sizes = [t.get_fontsize() for t in fig.findobj(plt.Text) if t.get_text()]
    assert min(sizes) >= plotting.MIN_FONT_PT
    png, _ = plotting.save_figure(fig, tmp_path / "wide")
    width = Image.open(png).size[0]
    assert plotting.DISPLAY_PX - plotting.SLACK_PX <= width <= plotting.DISPLAY_PX, width


def test_published_figures_are_drawn_at_display_width():
    """Every figure of the bundle except those its drawing code cannot redraw from an older table
    (replicate/publish/bundle.py names them) is at most the display width and not shrunk much below it."""
    from replicate.publish.bundle import _csv

    fig1 = _csv(BUNDLE, "tables/inan_figure1.csv")
    legacy = set() if fig1 is not None and "metric" in fig1.columns else {"inan_figure1"}
    for png in sorted((BUNDLE / "figures").glob("*.png")):
        if png.stem in legacy:
            continue
        width = Image.open(png).size[0]
        assert plotting.DISPLAY_PX - plotting.SLACK_PX <= width <= plotting.DISPLAY_PX, (png.name, width)


def test_readme_numbers_with_few_digits():
    assert fmt(0.30621) == "0.306" and fmt(6299.81) == "6299.8"
    assert fmt(36.6487) == "36.65" and fmt(13) == "13" and fmt(-0.000404) == "-0.000404"
    assert fmt(92.6) == "92.6" and fmt(2.5) == "2.5" and fmt(150.0001) == "150.0" and fmt(148.0) == "148"


@pytest.mark.skipif(not (BUNDLE / "MANIFEST.json").is_file(), reason="nothing published yet")
def test_rebuild_from_the_bundle_rehashes_only_what_it_rebuilt(tmp_path, monkeypatch):
    bundle = tmp_path / "paper" / "measured"
    shutil.copytree(BUNDLE, bundle)
    monkeypatch.chdir(tmp_path)
    (bundle / "report" / "index.html").write_text("stale")
    changed = rebuild(Path("paper/measured"))
    manifest = json.loads((bundle / "MANIFEST.json").read_text())
    assert "report/index.html" in changed and manifest["rebuilt"]["files"] == changed
    assert all(sha256(bundle / rel) == e["sha256"] for rel, e in manifest["files"].items())
    # a result table changed behind the manifest's back is not re-hashed: publish owns it
    (bundle / "tables" / "press_wolf_table6.csv").write_text("cell,row\n")
    with pytest.raises(Exception, match="not rebuilt from the bundle"):
        rebuild(Path("paper/measured"))


@pytest.mark.skipif(not (BUNDLE / "report" / "report.md").is_file(), reason="nothing published yet")
def test_published_report_reads_without_raw_names():
    """The bundle's report names columns and values in words (the CSVs keep their names) and formats
    settings as written (tau 5, not 5.00)."""
    from replicate.reportkit import labels

    md = (BUNDLE / "report" / "report.md").read_text(encoding="utf-8")
    body = md.split("## Provenance")[0]  # run configs quote the config files verbatim
    for raw in ("params_m_ours", "tied_pr_vs_untied_input", "log_n_over_d", "inv_sqrt_d", "rel_gain_mean"):
        assert raw not in body, raw
    assert "| 5.00 |" not in body and "Table 6; no published number" not in body
    assert all(f"`{name}`" not in body for name in labels.COLUMNS if "_" in name)
