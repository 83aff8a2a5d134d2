"""Atomic outputs: no temporary file is left behind, and torch_save of the same object gives the same bytes."""

from __future__ import annotations

import torch

from replicate import io as rio


def test_torch_save_is_byte_reproducible_and_leaves_no_temp_file(tmp_path):
    obj = {"vocab": ["a", "b"], "train": torch.arange(10)}
    rio.torch_save(tmp_path / "one.pt", obj)
    rio.torch_save(tmp_path / "two.pt", obj)
    assert (tmp_path / "one.pt").read_bytes() == (tmp_path / "two.pt").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.pt", "one.pt.sha256", "two.pt", "two.pt.sha256"]
    assert torch.equal(torch.load(tmp_path / "one.pt", weights_only=True)["train"], obj["train"])


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "t.json"
    rio.write_json(path, {"v": 1})
    try:
        with rio.atomic_path(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    except RuntimeError:
        pass
    assert rio.read_json(path) == {"v": 1} and sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]
