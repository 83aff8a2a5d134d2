"""Code versions: a module's source, and its C++ part beside it, make its hash."""

from __future__ import annotations

from replicate import provenance


def test_a_modules_cpp_part_counts_in_its_source_hash(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "PACKAGE_ROOT", tmp_path)
    (tmp_path / "kern.py").write_text("x = 1\n")
    alone = provenance.source_hash("kern")
    (tmp_path / "kern.cpp").write_text("int f() { return 1; }\n")
    with_cpp = provenance.source_hash("kern")
    (tmp_path / "kern.cpp").write_text("int f() { return 2; }\n")
    assert len({alone, with_cpp, provenance.source_hash("kern")}) == 3
    (tmp_path / "other.py").write_text("y = 2\n")
    assert provenance.source_hash("other") == provenance.source_hash("other")
