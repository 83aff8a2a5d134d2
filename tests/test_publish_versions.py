"""Code versions in a publish: ``--replace-runs`` ships and checks only the named kinds' runs and the files built
from them; the README names beside each table the code version of the runs behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replicate.errors import ReplicateError
from replicate.publish import bundle as bundle_mod
from replicate.publish.readme import render

PROTOCOL = {"config": {"protocol": "test"}}  # a label that names no preset: its settings are not rebuilt


def _write(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def _table1(root: Path, version: str, variants=("vd", "al")) -> None:
    """Finished Inan Table 1 runs of one code version, and the table built from them."""
    for v in variants:
        _write(root / f"inan/table1/ptb/small_{v}/metrics.json",
               {"valid_ppl": 100.0, "test_ppl": 95.0, "code_version": version, "provenance": PROTOCOL})
        (root / f"benchmarks/inan/table1/ptb/small_{v}.tsv").parent.mkdir(parents=True, exist_ok=True)
        (root / f"benchmarks/inan/table1/ptb/small_{v}.tsv").write_text("s\n1\n")
    lines = ["dataset,size,variant,valid_ppl,protocol"] + [f"ptb,small,{v},100.0,test" for v in variants]
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "tables/inan_table1.csv").write_text("\n".join(lines) + "\n")


def _point(root: Path, reading: str, version: str) -> None:
    """A finished section 6.2 point whose seed ran under ``version``, and the table built from the points."""
    _write(root / f"inan/subspace/{reading}/tau10_beta1.json",
           {"distance_mean": 0.1, "runs": [{"code_version": version}], "provenance": PROTOCOL})
    _write(root / f"inan/subspace/runs/{reading}/tau10_beta1/seed1.json", {"code_version": version})
    (root / "tables/inan_figure1.csv").write_text("tau,beta,distance,protocol\n10,1,0.1,test\n")


@pytest.fixture
def folders(tmp_path) -> tuple[Path, Path]:
    """results: Table 1 rerun under code version b, section 6.2 points of two code versions (c and d);
    bundle: Table 1 runs of version a (one more variant than the rerun) and a point of version c."""
    results, bundle = tmp_path / "results", tmp_path / "bundle"
    _table1(results, "b" * 16)
    _point(results, "zero_w", "c" * 16)
    _point(results, "zero_w_nobias", "d" * 16)
    _table1(bundle, "a" * 16, ("vd", "al", "re"))
    _point(bundle, "zero_w", "c" * 16)
    return results, bundle


def test_replace_runs_checks_only_what_it_ships(folders):
    results, bundle = folders
    with pytest.raises(ReplicateError, match="subspace runs of 2 code versions"):
        bundle_mod.plan(results, bundle, ["inan"])  # the whole experiment: its points are mixed
    plan = bundle_mod.plan(results, bundle, ["inan"], replace_runs=["inan/table1"])
    shipped = plan.scans["inan"]
    assert {r.kind for r in shipped.runs} == {"table1"} and shipped.versions() == {
        "table1": {"b" * 16: ["inan/table1/ptb/small_al", "inan/table1/ptb/small_vd"]}}
    assert "tables/inan_table1.csv" in shipped.files and "tables/inan_figure1.csv" not in shipped.files
    assert sorted(plan.held_back) == ["inan/subspace/zero_w/tau10_beta1", "inan/subspace/zero_w_nobias/tau10_beta1"]
    # the bundle's Table 1 runs (a re the rerun lacks included), their benchmarks and table give way; its point stays
    assert "inan/table1/ptb/small_re/metrics.json" in plan.dropped and "tables/inan_table1.csv" in plan.dropped
    assert "benchmarks/inan/table1/ptb/small_re.tsv" in plan.dropped
    assert not [f for f in plan.dropped if "subspace" in f or "figure1" in f]


def test_replace_runs_still_refuses_a_mixed_table(folders):
    results, bundle = folders
    _write(results / "inan/table1/ptb/small_al/metrics.json",
           {"valid_ppl": 100.0, "test_ppl": 95.0, "code_version": "e" * 16, "provenance": PROTOCOL})
    with pytest.raises(ReplicateError, match=r"table1 runs of 2 code versions"):
        bundle_mod.plan(results, bundle, ["inan"], replace_runs=["inan/table1"])
    with pytest.raises(ReplicateError, match="pass one of the two"):
        bundle_mod.plan(results, bundle, ["inan"], replace=True, replace_runs=["inan/table1"])


def test_the_readme_names_each_tables_own_code_version(tmp_path):
    runs = {"inan/table1/ptb/small_vd": {"kind": "table1", "code_version": "b" * 16},
            "inan/ablation/ptb/small_real_tau5_gamma0.5": {"kind": "ablation", "code_version": "a" * 16},
            "inan/subspace/zero_w/tau10_beta1": {"kind": "subspace", "code_version": "c" * 16}}
    _write(tmp_path / "MANIFEST.json", {"experiments": {"inan": {"protocol": "test", "runs": runs}}})
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables/inan_table1.csv").write_text("dataset,size,model,valid_ppl\nptb,small,VD-LSTM,100.0\n")
    text = render(tmp_path, "bundle")
    assert f"From `bundle/tables/inan_table1.csv` (code version `{'b' * 16}`):" in text, text
    assert "a" * 16 not in text and "c" * 16 not in text, text
