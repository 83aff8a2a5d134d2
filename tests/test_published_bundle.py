"""The repository's own published bundle (paper/measured) and the README block generated from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replicate.publish.bundle import sha256
from replicate.publish.catalogue import files_under, owner
from replicate.publish.readme import BEGIN, END, render

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "paper" / "measured"

pytestmark = pytest.mark.skipif(not (BUNDLE / "MANIFEST.json").is_file(), reason="nothing published yet")


def test_every_bundle_file_matches_its_manifest_hash():
    manifest = json.loads((BUNDLE / "MANIFEST.json").read_text(encoding="utf-8"))
    listed = set(manifest["files"])
    present = set(files_under(BUNDLE)) - {"MANIFEST.json"}
    assert listed == present, (sorted(listed - present), sorted(present - listed))
    for rel, entry in manifest["files"].items():
        assert sha256(BUNDLE / rel) == entry["sha256"], rel


def test_readme_block_is_what_publish_writes_from_the_bundle():
    """Every measured number in the README comes from the bundle: the block equals a fresh render."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    assert block == "\n" + render(BUNDLE, "paper/measured")


def test_every_bundle_file_is_owned_by_the_experiment_its_manifest_names():
    manifest = json.loads((BUNDLE / "MANIFEST.json").read_text(encoding="utf-8"))
    recorded = {rel: entry["experiment"] for rel, entry in manifest["files"].items()}
    assert {rel: owner(rel) for rel in recorded} == recorded


def test_no_published_source_comes_from_a_tree_with_uncommitted_changes():
    """Every run and every table the report reads was computed from committed code: no manifest run, metrics file
    or table provenance in the bundle records a dirty tree (a superseded one leaves with publish --retire)."""
    manifest = json.loads((BUNDLE / "MANIFEST.json").read_text(encoding="utf-8"))
    dirty = [run for e in manifest["experiments"].values() for run, r in e["runs"].items() if r.get("dirty")]
    dirty += [rel for rel in manifest["files"] if rel.endswith(".json") and not rel.startswith("report/")
              and '"dirty": true' in (BUNDLE / rel).read_text(encoding="utf-8")]
    assert not dirty, dirty
