"""``python -m replicate publish``: the bundle made from the smoke run (session fixture ``smoke_run``), its
manifest, the README block against the bundle's CSVs, the rebuilt report, the refusals, unfinished runs."""

from __future__ import annotations

import contextlib
import decimal
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from replicate import cli, provenance

from support.workflow import SMOKE_RESULTS

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[1]
BUNDLE = "paper/measured"
LIMIT = 20_000_000


def publish(base: Path, *args: str) -> tuple[int, str]:
    """Run the publish command in ``base`` (bundle paper/measured, README.md there); (exit code, output)."""
    out = io.StringIO()
    with contextlib.chdir(base), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main(["publish", "--bundle", BUNDLE, "--readme", "README.md", "--allow-dirty", *args])
    return rc, out.getvalue()


def files_of(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def manifest(base: Path) -> dict:
    return json.loads((base / BUNDLE / "MANIFEST.json").read_text())


def results_copy(smoke_run: Path, dest: Path) -> Path:
    """An editable copy of the smoke results (no corpora, logs or checkpoints)."""
    shutil.copytree(smoke_run / SMOKE_RESULTS, dest, ignore=shutil.ignore_patterns("data", "logs", "*.pt"))
    return dest


def edit_json(path: Path, change) -> None:
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


def new_base(tmp_path: Path, bundle_from: Path | None = None) -> Path:
    """A folder with a copy of the README and, if given, of a published bundle."""
    base = tmp_path / "checkout"
    base.mkdir()
    shutil.copy(REPO_ROOT / "README.md", base / "README.md")
    if bundle_from is not None:
        shutil.copytree(bundle_from / BUNDLE, base / BUNDLE)
    return base


@pytest.fixture(scope="module")
def published(smoke_run, tmp_path_factory) -> Path:
    """The smoke run published into an empty bundle; returns the folder holding paper/measured and README.md."""
    base = new_base(tmp_path_factory.mktemp("publish"))
    rc, out = publish(base, "--results", str(smoke_run / SMOKE_RESULTS))
    assert rc == 0, out
    return base


def test_bundle_holds_the_small_outputs_only(published, smoke_run):
    results, bundle = smoke_run / SMOKE_RESULTS, published / BUNDLE
    files = files_of(bundle)
    assert not [f for f in files if f.endswith(".pt") or "checkpoint" in f or f.startswith(("data/", "logs/"))]
    assert sum((bundle / f).stat().st_size for f in files) <= LIMIT
    for table in (results / "tables").glob("*.csv"):
        assert (bundle / "tables" / table.name).read_bytes() == table.read_bytes(), table.name
    expected = {p.relative_to(results).as_posix() for pattern in ("figures/*.png", "figures/*.svg", "benchmarks/**/*.tsv",
                                                                  "press_wolf/*/seed*/metrics.json",
                                                                  "press_wolf/*/seed*/history.csv",
                                                                  "scale/**/summary.json", "tables/*.provenance.json")
                for p in results.glob(pattern)}
    assert expected and not expected - files
    assert {"report/index.html", "report/report.md", "MANIFEST.json"} <= files


def test_manifest_lists_every_file_with_its_hash(published):
    bundle, record = published / BUNDLE, manifest(published)
    assert set(record["files"]) == files_of(bundle) - {"MANIFEST.json"}
    for rel, info in record["files"].items():
        data = (bundle / rel).read_bytes()
        assert info["sha256"] == hashlib.sha256(data).hexdigest() and info["bytes"] == len(data), rel
    assert record["commit"] == provenance.git_state()["commit"]
    assert set(record["experiments"]) == {"press_wolf", "inan", "initial_loss", "scale"}
    for name, entry in record["experiments"].items():
        assert entry["protocol"] == "smoke" and entry["runs"], name
        assert entry["code_versions"] and all(entry["code_versions"].values()), (name, entry["code_versions"])


def _cell_equals(cell: str, value) -> bool:
    """A README cell shows ``value``: the same text, or the number rounded to the digits shown."""
    if cell == "—":
        return pd.isna(value) or value == "—"
    if cell.replace("\\|", "|") == str(value):
        return True
    if cell.endswith(" %"):  # a ratio shown as a percentage
        cell, value = cell[:-2], float(value) * 100
    try:
        shown, number = decimal.Decimal(cell), float(value)
    except (decimal.InvalidOperation, TypeError, ValueError):
        return False
    exponent = shown.as_tuple().exponent
    if exponent >= 0 and "e" not in cell.lower():
        return number == float(shown)
    return abs(number - float(shown)) <= 0.5 * 10.0 ** exponent * (1 + 1e-9) + 1e-12


def _block_sections(readme: Path) -> list[dict]:
    """Per experiment of the generated block: protocol and tables (source CSV, header, rows)."""
    text = readme.read_text()
    block = text[text.index("<!-- measured:begin -->"):text.index("<!-- measured:end -->")]
    sections: list[dict] = []
    for line in block.splitlines():
        if line.startswith("#### "):
            sections.append({"title": line[5:], "protocol": None, "tables": []})
        elif line.startswith("Protocol `"):
            sections[-1]["protocol"] = re.match(r"Protocol `([^`]*)`", line)[1]
        elif m := re.match(r"From `([^`]+\.csv)`(?: \(code versions? ([^)]*)\))?:", line):
            sections[-1]["tables"].append({"csv": m[1], "versions": m[2], "header": None, "rows": []})
        elif line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            table = sections[-1]["tables"][-1]
            if table["header"] is None:
                table["header"] = cells
            else:
                table["rows"].append(cells)
    return sections


def test_readme_block_numbers_equal_the_bundle_csvs(published):
    sections = _block_sections(published / "README.md")
    experiments = manifest(published)["experiments"]
    assert len(sections) == len(experiments) == 4
    for section in sections:
        assert section["tables"], section["title"]
        for table in section["tables"]:
            if table["versions"]:  # the code version of the table's own runs
                assert table["versions"].strip("`") in {v for e in experiments.values()
                                                        for v in e["code_versions"].values()}, table
            frame = pd.read_csv(published / table["csv"], dtype={"std": str})
            labels = {str(p).split()[0] for p in frame.get("protocol", pd.Series(dtype=str)).dropna()}
            assert labels <= {section["protocol"]}, (table["csv"], labels)
            assert table["rows"], table["csv"]
            for row in table["rows"]:
                assert any(all(_cell_equals(cell, csv_row[col]) for col, cell in zip(table["header"], row))
                           for _, csv_row in frame.iterrows()), (table["csv"], row)


def test_bundle_report_is_a_fresh_report_build(published, tmp_path):
    copy = tmp_path / BUNDLE
    shutil.copytree(published / BUNDLE, copy)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-m", "replicate", "report", "build", "--results", BUNDLE,
                    "--md", f"{BUNDLE}/report/report.md", "--html", f"{BUNDLE}/report/index.html",
                    "--template", str(REPO_ROOT / "paper" / "report_template.md"),
                    "--captions", str(REPO_ROOT / "workflow" / "report")],
                   cwd=tmp_path, env=env, check=True, capture_output=True)
    for name in ("index.html", "report.md"):
        fresh, kept = ((root / "report" / name).read_text() for root in (copy, published / BUNDLE))
        assert re.sub(r"Built \S+", "Built", fresh) == re.sub(r"Built \S+", "Built", kept), name


def _other_code_version(results: Path, value: str = "f" * 16, runs: str = "*") -> None:
    for path in results.glob(f"press_wolf/{runs}/seed*/metrics.json"):
        edit_json(path, lambda r: r.update(code_version=value))


def _other_protocol(results: Path) -> None:
    for path in results.glob("press_wolf/*/seed*/metrics.json"):
        edit_json(path, lambda r: r["provenance"]["config"].update(protocol="reduced"))
    table = results / "tables" / "press_wolf_table6.csv"
    frame = pd.read_csv(table)
    frame["protocol"] = "reduced"
    frame.to_csv(table, index=False)


@pytest.mark.parametrize("change, word", [(_other_code_version, "code version"), (_other_protocol, "protocol")])
def test_a_mix_with_the_bundle_is_refused_and_replace_drops_the_old_files(published, smoke_run, tmp_path,
                                                                           change, word):
    base = new_base(tmp_path, bundle_from=published)
    results = results_copy(smoke_run, tmp_path / "results")
    change(results)
    before = (base / BUNDLE / "MANIFEST.json").read_bytes()
    rc, out = publish(base, "--results", str(results), "--experiment", "press_wolf")
    assert rc == 2 and word in out and "press_wolf/small/seed1" in out and "--replace" in out, out
    assert (base / BUNDLE / "MANIFEST.json").read_bytes() == before
    rc, out = publish(base, "--results", str(results), "--experiment", "press_wolf", "--replace")
    if change is _other_protocol:  # smoke runs relabelled: their settings are not those of the preset named
        assert rc == 2 and "press_wolf/small/seed1 is labelled reduced but did not train with config/config.yaml" \
            in out and "engine.train.epochs: 2 -> 13" in out, out
        assert (base / BUNDLE / "MANIFEST.json").read_bytes() == before
        return
    assert rc == 0, out
    old, new = json.loads(before)["experiments"], manifest(base)["experiments"]
    assert new["inan"] == old["inan"] and new["scale"] == old["scale"]
    runs = new["press_wolf"]["runs"].values()
    assert {r["code_version"] for r in runs} == {new["press_wolf"]["code_versions"]["lstm"]}
    assert {r["protocol"] for r in runs} == {new["press_wolf"]["protocol"]}
    assert new["press_wolf"] != old["press_wolf"]


def test_replace_runs_swaps_one_run_kind_and_keeps_the_experiments_others(published, smoke_run, tmp_path):
    """A rerun of Table 1 under new code replaces the bundle's Table 1 runs only: the other inan kinds
    stay as published and are still checked; a Table 1 run the rerun lacks leaves the bundle."""
    base = new_base(tmp_path, bundle_from=published)
    results = results_copy(smoke_run, tmp_path / "results")
    for path in results.glob("inan/table1/*/*/metrics.json"):
        edit_json(path, lambda r: r.update(code_version="a" * 16))
    shutil.rmtree(results / "inan/table1/ptb/small_real")
    (results / "benchmarks/inan/table1/ptb/small_real.tsv").unlink()
    for kept in ("ablation", "screen", "subspace"):   # only Table 1 reaches the bundle
        shutil.rmtree(results / "inan" / kept)
    before = manifest(base)
    rc, out = publish(base, "--results", str(results), "--experiment", "inan")
    assert rc == 2 and "code version" in out and "inan/table1/ptb/small_vd" in out, out
    assert "--replace-runs inan/table1" in out, out

    rc, out = publish(base, "--results", str(results), "--experiment", "inan", "--replace-runs", "inan/table1")
    assert rc == 0, out
    runs = manifest(base)["experiments"]["inan"]["runs"]
    table1 = {i: r for i, r in runs.items() if r["kind"] == "table1"}
    assert set(table1) == {f"inan/table1/ptb/small_{v}" for v in ("vd", "al", "re")}
    assert {r["code_version"] for r in table1.values()} == {"a" * 16}
    old = before["experiments"]["inan"]["runs"]
    assert {i: r for i, r in runs.items() if r["kind"] != "table1"} == {
        i: r for i, r in old.items() if r["kind"] != "table1"}
    files = files_of(base / BUNDLE)
    assert not [f for f in files if "small_real" in f and "table1" in f]
    assert any(f.startswith("inan/subspace/") for f in files)

    # runs of other kinds in the results (here of another code version) are held back, not checked or shipped
    shutil.copytree(smoke_run / SMOKE_RESULTS / "inan/screen", results / "inan/screen", ignore=shutil.ignore_patterns("*.pt"))
    for path in results.glob("inan/screen/*/*/metrics.json"):
        edit_json(path, lambda r: r.update(code_version="c" * 16))
    rc, out = publish(base, "--results", str(results), "--experiment", "inan", "--replace-runs", "inan/table1")
    assert rc == 0 and "held back (of a kind --replace-runs does not name)" in out, out
    assert {i: r for i, r in manifest(base)["experiments"]["inan"]["runs"].items() if r["kind"] == "screen"} == {
        i: r for i, r in old.items() if r["kind"] == "screen"}
    rc, out = publish(base, "--results", str(results), "--experiment", "inan", "--replace-runs", "inan/tabel1")
    assert rc == 2 and "no such run kind" in out and "inan/table1" in out, out


def test_retire_drops_the_bundle_files_a_glob_names_with_nothing_in_their_place(published, smoke_run, tmp_path):
    """--retire takes a superseded result out of the bundle (its runs, table and benchmarks), the report and the
    manifest with it; a glob that matches nothing, or a file the same publish ships, is refused."""
    base = new_base(tmp_path, bundle_from=published)
    results = results_copy(smoke_run, tmp_path / "results")
    for kept in ("ablation", "screen", "subspace"):
        shutil.rmtree(results / "inan" / kept)
        shutil.rmtree(results / "benchmarks/inan" / kept, ignore_errors=True)
    screen = ["inan/screen/*", "tables/inan_screen.csv*", "benchmarks/inan/screen/*"]
    assert any(f.startswith("inan/screen/") for f in files_of(base / BUNDLE))
    rc, out = publish(base, "--results", str(results), "--experiment", "inan", "--replace-runs", "inan/table1",
                      "--retire", *screen)
    assert rc == 0, out
    files = files_of(base / BUNDLE)
    assert not [f for f in files if "inan/screen/" in f or f.startswith("tables/inan_screen")], files
    assert any(f.startswith("inan/subspace/") for f in files) and any(f.startswith("inan/table1/") for f in files)
    assert not [i for i, r in manifest(base)["experiments"]["inan"]["runs"].items() if r["kind"] == "screen"]
    assert not [f for f in manifest(base)["files"] if "inan/screen/" in f]
    assert "inan/screen/" not in (base / BUNDLE / "report/report.md").read_text()
    rc, out = publish(base, "--results", str(results), "--experiment", "inan", "--replace-runs", "inan/table1",
                      "--retire", "inan/scren/*")
    assert rc == 2 and "--retire inan/scren/*: no file" in out, out
    rc, out = publish(base, "--results", str(results), "--experiment", "inan", "--replace-runs", "inan/table1",
                      "--retire", "inan/table1/*")
    assert rc == 2 and "which this publish also ships" in out, out


def test_a_mix_within_the_results_is_refused_even_with_replace(published, smoke_run, tmp_path):
    base = new_base(tmp_path, bundle_from=published)
    results = results_copy(smoke_run, tmp_path / "results")
    _other_code_version(results, "e" * 16, runs="small_wt")
    rc, out = publish(base, "--results", str(results), "--replace")
    assert rc == 2 and "2 code versions" in out and "press_wolf/small_wt/seed1" in out, out


def test_unfinished_runs_are_skipped_and_experiments_merge_one_by_one(smoke_run, tmp_path):
    base = new_base(tmp_path)
    results = results_copy(smoke_run, tmp_path / "results")
    edit_json(results / "press_wolf/small_wt/seed1/metrics.json", lambda r: r.pop("test_ppl"))
    (results / "press_wolf/small_new/seed1").mkdir(parents=True)
    (results / "press_wolf/small_new/seed1/checkpoint.pt").write_bytes(b"weights")
    rc, out = publish(base, "--results", str(results), "--experiment", "press_wolf")
    assert rc == 2 and "tables/press_wolf_table6.csv has a row of press_wolf/small_wt/seed1, which is skipped" in out, out
    assert not (base / BUNDLE).exists()  # never a table built from a run the bundle does not hold
    table = results / "tables/press_wolf_table6.csv"
    frame = pd.read_csv(table)
    frame[frame["cell"] != "small_wt"].to_csv(table, index=False)  # the table built again without it
    rc, out = publish(base, "--results", str(results), "--experiment", "press_wolf")
    assert rc == 0, out
    assert "press_wolf/small_wt/seed1" in out and "press_wolf/small_new/seed1" in out
    files = files_of(base / BUNDLE)
    assert not [f for f in files if f.startswith(("press_wolf/small_wt/", "press_wolf/small_new/"))]
    assert "benchmarks/press_wolf/small_wt/seed1.tsv" not in files
    assert "press_wolf/small/seed1/metrics.json" in files
    first = manifest(base)
    assert set(first["experiments"]) == {"press_wolf"}

    rc, out = publish(base, "--results", str(results), "--experiment", "initial_loss")
    assert rc == 0, out
    second = manifest(base)
    assert set(second["experiments"]) == {"press_wolf", "initial_loss"}
    assert second["experiments"]["press_wolf"] == first["experiments"]["press_wolf"]
    assert all(second["files"][f] == info for f, info in first["files"].items() if f.startswith("press_wolf/"))
    assert [s["title"] for s in _block_sections(base / "README.md")] == ["Press & Wolf 2017",
                                                                          "Transformer initial loss"]
