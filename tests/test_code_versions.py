"""Code versions come from the imports (``replicate.provenance.code_modules``), not from lists of names: the rule
on a made-up package, the real imports against Python's, and the versions the published bundle and the runs in
flight recorded against the current ones. Also: the import graph has no circle, so its layers exist."""

from __future__ import annotations

import json
import modulefinder
from pathlib import Path

import pytest

from replicate import provenance
from replicate.provenance import code_modules, code_version, source_hash

REPO = Path(__file__).resolve().parents[1]
BUNDLE = REPO / "paper" / "measured"
SCIENCE = ("lstm", "inan", "initial_loss", "scale", "press_wolf")

FAKE = {  # a package laid out like replicate/: a top-level kit and model, an engine, an experiment
    "__init__.py": "",
    "errors.py": "",
    "io.py": "from replicate.errors import Oops\n\n\ndef save():\n    import torch\n",
    "widths.py": "",
    "model.py": "import torch\n\nfrom replicate import widths\n",
    "eng/__init__.py": "from replicate.eng import train\n",
    "eng/train.py": "from replicate import io\nfrom replicate.eng import kernels\n\n\ndef fit():\n"
                    "    from replicate.eng.late import step\n",
    "eng/kernels.py": "from replicate.eng.reference import lstm\n",
    "eng/reference.py": "",
    "eng/late.py": "import replicate.eng.deep\n",
    "eng/deep.py": "",
    "eng/unused.py": "",
    "exp/__init__.py": "",
    "exp/run.py": "from replicate import model\nfrom replicate.eng.train import fit\n",
}


@pytest.fixture
def fake(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "replicate"
    for rel, text in FAKE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.setattr(provenance, "PACKAGE_ROOT", root)
    return root


def test_the_rule_on_a_made_up_package(fake):
    """Imports at the top, inside a function and as ``import replicate.x`` are followed; faces and the top-level
    kit (errors, io, the torch-free widths) are not counted; a top-level torch model is; kernels apart."""
    math, kernels = code_modules("exp.run")
    assert math == ("eng.deep", "eng.late", "eng.reference", "eng.train", "exp.run", "model")
    assert kernels == ("eng.kernels",)
    assert code_modules("replicate.exp.run") == code_modules("exp.run")  # the package's name may be given
    assert code_version("exp.run", kernels=True) == source_hash(*math, *kernels)


@pytest.mark.parametrize("rel", sorted(FAKE))
def test_an_edit_changes_the_version_exactly_when_the_root_computes_with_it(fake, rel):
    before = code_version("exp.run"), code_version("exp.run", kernels=True)
    with (fake / rel).open("a") as fh:
        fh.write("# an edit\n")
    after = code_version("exp.run"), code_version("exp.run", kernels=True)
    math = rel in ("eng/deep.py", "eng/late.py", "eng/reference.py", "eng/train.py", "exp/run.py", "model.py")
    assert (after[0] != before[0], after[1] != before[1]) == (math, math or rel == "eng/kernels.py"), rel


def test_a_new_import_joins_the_version(fake):
    """What a root computes with can not be left out: an import added anywhere below it is counted."""
    before = code_modules("exp.run")[0]
    with (fake / "eng/deep.py").open("a") as fh:
        fh.write("\n\ndef later():\n    from replicate.eng import unused\n")
    assert code_modules("exp.run")[0] == tuple(sorted((*before, "eng.unused")))


@pytest.mark.parametrize("root", ["exp.rum", "eng.train.fit", "replicate.nothing"])
def test_a_misspelt_root_is_refused(fake, root):
    with pytest.raises(ValueError, match="no module"):
        code_version(root)


def test_an_import_of_a_missing_module_is_refused(fake):
    (fake / "eng/deep.py").write_text("from replicate.eng.tarin import fit\n")
    with pytest.raises(ValueError, match="no module replicate.eng.tarin"):
        code_version("exp.run")


def test_the_imports_found_are_pythons():
    """Against the standard library's own reading of the imports (``modulefinder``: at module level and inside
    functions), for every module of the science packages as root: the package modules it reaches, faces and
    top-level modules aside, are exactly those in its code version and its kernel version."""
    root, problems = provenance.PACKAGE_ROOT, {}
    for path in sorted(p for package in SCIENCE for p in (root / package).glob("*.py") if p.name != "__init__.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        finder = modulefinder.ModuleFinder(path=[str(root.parent)])
        finder.run_script(str(path))
        found = {m.removeprefix("replicate.") for m in finder.modules if m.startswith("replicate.")}
        found = {m for m in found if "." in m and not (root / m.replace(".", "/")).is_dir()} - {name}
        math, kernels = code_modules(name)
        if found != {m for m in (*math, *kernels) if "." in m} - {name}:
            problems[name] = found.symmetric_difference(m for m in (*math, *kernels) if "." in m and m != name)
    assert not problems


def _recorded(pattern: str) -> set[str]:
    files = sorted(BUNDLE.glob(pattern))
    assert files, pattern
    return {json.loads(f.read_text())["code_version"] for f in files}


def test_the_bundle_was_computed_by_the_current_code():
    """The published runs' recorded code versions are the ones their jobs compute now (each from the objects the
    job computes with), so that the bundle stays valid and a rerun would be skipped, not redone."""
    from replicate.initial_loss.sweep import run_width, streamed_losses
    from replicate.lstm.train import Trainer
    from replicate.scale import TRANSFORMER_RUN_MATH, embeddings, stopping

    engine = code_version(Trainer)  # lstm/runner.py: every engine run's metrics.json
    assert engine == "6ecdd3f44c73c3ce"
    assert _recorded("press_wolf/*/seed*/metrics.json") == {engine}
    assert _recorded("scale/runs/*/*/seed*/metrics.json") == {engine}
    assert _recorded("scale/runs/*/*/seed*/summary.json") == {code_version(embeddings, stopping)}  # scale/cli.py
    assert _recorded("scale/transformer/*/seed*/summary.json") == {source_hash(*TRANSFORMER_RUN_MATH)}
    assert source_hash(*TRANSFORMER_RUN_MATH) == code_version("scale.transformer")  # scale/transformer.py's list
    assert _recorded("initial_loss/runs/*.provenance.json") == {code_version(run_width)}  # initial_loss/cli.py
    assert _recorded("initial_loss/memory_benchmark.json") == {code_version(streamed_losses)}


def test_the_versions_of_the_runs_in_flight():
    """The Inan runs resume only under these (their checkpoints and seed records hold them); the bundle's Inan
    runs are older. inan/subspace_exp.py hashes its own list (its bytes are in the version, so it stays as it is):
    the imports reach two modules more, the readings' label format and the engine's runner."""
    from replicate.inan import subspace_exp
    from replicate.inan.train import run_settings
    from replicate.inan.trainer import AugmentedTrainer

    assert code_version(run_settings, AugmentedTrainer) == "76ed14a799d43a0d"  # inan/runs.py
    assert source_hash(*subspace_exp.MATH_MODULES) == "b358ea61349895b3"
    reached = set(code_modules(subspace_exp)[0])
    assert set(subspace_exp.MATH_MODULES) <= reached
    assert reached - set(subspace_exp.MATH_MODULES) == {"inan.readings", "lstm.runner"}


def _graph(packages: bool) -> dict[str, set[str]]:
    """Who imports whom in replicate/ (inside functions too); ``packages``: a sub-package is one node."""
    root = provenance.PACKAGE_ROOT

    def node(name: str) -> str:
        first = name.split(".")[0]
        return f"{first}/" if packages and (root / first).is_dir() else name

    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        name = node(".".join(p for p in path.relative_to(root).with_suffix("").parts if p != "__init__"))
        stat = path.stat()
        graph[name] = graph.get(name, set()) | {node(m) for m in provenance._parsed(path, stat.st_mtime_ns,
                                                                                    stat.st_size)[0]} - {name}
    return graph


@pytest.mark.parametrize("packages", [False, True], ids=["modules", "packages"])
def test_no_import_circle(packages):
    """No module imports one that imports it back, even through others; nor does a package: the packages have an
    order in which every import points down (e.g. inan/bench.py imported press_wolf/bench.py, which imports inan;
    report/compute.py imported the publish catalogue, which sits above the report)."""
    graph, done, path = _graph(packages), set(), []

    def visit(n: str) -> None:
        if n in path:
            raise AssertionError(f"import circle: {' -> '.join(path[path.index(n):] + [n])}")
        if n not in done:
            path.append(n)
            for m in sorted(graph.get(n, ())):
                visit(m)
            path.pop()
            done.add(n)

    for n in sorted(graph):
        visit(n)
