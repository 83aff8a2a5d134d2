"""The publish catalogue: which experiment owns a results file, derived from ``replicate.paths``."""

from __future__ import annotations

import pytest

from replicate import paths
from replicate.paths import GROUPS, path_constants, prefixes_of
from replicate.publish.catalogue import EXPERIMENTS, owner


def _files(group: str) -> list[str]:
    """Every path ``replicate.paths`` names for one experiment, wildcards filled, figures with a suffix."""
    out = [v.replace("{", "").replace("}", "") for v in path_constants(group)]
    return [v if "." in v.rpartition("/")[2] else f"{v}.png" for v in out]


@pytest.mark.parametrize("experiment", sorted(GROUPS))
def test_every_path_constant_is_owned_by_its_experiment(experiment):
    files = _files(GROUPS[experiment])
    assert files
    assert {f: owner(f) for f in files} == {f: experiment for f in files}
    assert list(EXPERIMENTS) == list(GROUPS)  # the catalogue's experiments are the owners, in the same order


def test_prefixes_are_derived_not_typed():
    assert prefixes_of("scale", "SCALE_") == ("scale/", "benchmarks/scale/", "tables/scale_", "figures/scale_")
    assert "tables/model_families" in prefixes_of("initial_loss", "IL_")
    assert owner("benchmarks/press_wolf/small/seed1.tsv") == "press_wolf"
    assert owner("benchmarks/scale/runs/ptb/p10_h200_tied/seed1.tsv") == "scale"


def test_the_old_embedding_analysis_names_are_owned_by_no_one():
    for rel in ("analysis/update_frequency.csv", "tables/embedding_similarity.csv",
                "figures/analysis_update_frequency.png"):
        assert owner(rel) is None, rel
