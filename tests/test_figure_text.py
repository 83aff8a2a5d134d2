"""No text of a published figure overlaps another as drawn (model names, tick labels, titles, legends): every
figure the bundle's own tables redraw, checked just before it is saved."""

from __future__ import annotations

import shutil
from pathlib import Path

import matplotlib.figure
import matplotlib.pyplot as plt
import pytest

from support.figure_text import overlapping_texts
from support.workflow import REPO_ROOT

BUNDLE = REPO_ROOT / "paper" / "measured"


def test_the_check_sees_two_labels_drawn_on_one_another_and_a_hidden_tick_label_not():
    fig, ax = plt.subplots()
    ax.set_xlim(0, 1)
    assert overlapping_texts(fig) == []
    ax.annotate("Llama-2-7b", (0.5, 0.5))
    ax.annotate("gemma-7b", (0.52, 0.5))
    assert overlapping_texts(fig) == [("Llama-2-7b", "gemma-7b")]
    plt.close(fig)


@pytest.mark.skipif(not (BUNDLE / "MANIFEST.json").is_file(), reason="nothing published yet")
def test_no_text_of_a_redrawn_bundle_figure_overlaps_another(tmp_path, monkeypatch):
    from replicate.publish.bundle import redraw_figures as redraw

    copy = tmp_path / "measured"
    shutil.copytree(BUNDLE, copy, ignore=shutil.ignore_patterns("report"))
    save, found = matplotlib.figure.Figure.savefig, {}

    def checked(fig, fname, *args, **kwargs):
        if isinstance(fname, (str, Path)):
            found[Path(fname).name.split(".")[1]] = overlapping_texts(fig)
        return save(fig, fname, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", checked)
    redraw(copy)
    assert len(found) >= 10 and "embedding_share" in found, sorted(found)
    assert not {name: pairs for name, pairs in found.items() if pairs}
