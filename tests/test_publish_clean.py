"""``python -m replicate publish`` refuses a working tree with uncommitted changes unless told otherwise,
and then records the hash of the diff (fast: no smoke run)."""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path

from replicate import cli, provenance
from replicate.publish import bundle


def _publish(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main(["publish", "--no-readme", *args])
    return rc, out.getvalue()


def test_a_dirty_tree_is_refused_unless_allowed(monkeypatch, tmp_path):
    monkeypatch.setattr(provenance, "git_state", lambda root=None: {"commit": "c0ffee", "dirty": True})
    rc, out = _publish("--rebuild", "--bundle", str(tmp_path / "none"))
    assert rc == 2 and "uncommitted changes" in out and "--allow-dirty" in out
    rc, out = _publish("--rebuild", "--bundle", str(tmp_path / "none"), "--allow-dirty")
    assert rc == 2 and "no MANIFEST.json" in out  # got past the refusal: the empty bundle is the next error
    monkeypatch.setattr(provenance, "git_state", lambda root=None: {"commit": "c0ffee", "dirty": False})
    rc, out = _publish("--rebuild", "--bundle", str(tmp_path / "none"))
    assert rc == 2 and "no MANIFEST.json" in out


def test_the_manifest_stamp_records_the_diff_hash_of_a_dirty_tree(monkeypatch):
    monkeypatch.setattr(provenance, "diff_sha256", lambda root=None: "d1ff")
    monkeypatch.setattr(provenance, "git_state", lambda root=None: {"commit": "c0ffee", "dirty": True})
    assert bundle.tree_stamp() == {"commit": "c0ffee", "dirty": True, "diff_sha256": "d1ff"}
    monkeypatch.setattr(provenance, "git_state", lambda root=None: {"commit": "c0ffee", "dirty": False})
    assert bundle.tree_stamp()["diff_sha256"] is None


def test_diff_hash_follows_the_diff(tmp_path: Path):
    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (tmp_path / "f.txt").write_text("one\n")
    git("add", "f.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    clean = provenance.diff_sha256(tmp_path)
    (tmp_path / "f.txt").write_text("two\n")
    first = provenance.diff_sha256(tmp_path)
    (tmp_path / "f.txt").write_text("three\n")
    assert len({clean, first, provenance.diff_sha256(tmp_path)}) == 3
    assert provenance.diff_sha256(tmp_path / "no-such-folder") is None


def test_readme_block_names_the_diff_of_a_dirty_publish():
    from replicate.publish.readme import dirty_note

    assert dirty_note({"dirty": False, "diff_sha256": None}) == ""
    assert dirty_note({"dirty": True, "diff_sha256": "0123456789abcdef"}) == \
        " (uncommitted changes, diff sha256 `0123456789`)"
    assert dirty_note({"dirty": True}) == " (uncommitted changes, diff not recorded)"  # published before the hash
