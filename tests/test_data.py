"""Data stage: verified fetch (local or download), clear failures, known corpus figures."""

from __future__ import annotations

import dataclasses
import shutil
import urllib.error

import pytest
import torch

from replicate import data
from replicate.errors import ReplicateError


def _local_copy(shared_data, tmp_path, dataset="ptb"):
    """A writable copy of one data set's folder, laid out like ../shared/data."""
    folder = data.DATASETS[dataset].folder
    dest = tmp_path / "local"
    shutil.copytree(shared_data / folder, dest / folder)
    for f in (dest / folder).iterdir():
        f.chmod(0o644)
    return dest


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, shared_data):
    out = {}
    for name in ("ptb", "wikitext2"):
        d = tmp_path_factory.mktemp(name)
        data.fetch(name, d / "raw", local_dir=shared_data)
        stats = data.prepare(name, d / "raw", d / "corpus.pt", d / "stats.json")
        out[name] = (stats, data.load_corpus(d / "corpus.pt"))
    return out


def test_ptb_known_figures(prepared):
    stats, corpus = prepared["ptb"]
    assert stats["tokens"] == {"train": 929_589, "valid": 73_760, "test": 82_430}
    assert stats["vocab_size"] == len(corpus.vocab) == 10_000
    assert corpus.train.numel() == 929_589 and corpus.train.dtype == torch.int64
    assert "<unk>" in corpus.vocab and data.EOS in corpus.vocab


def test_wikitext2_known_figures(prepared):
    stats, corpus = prepared["wikitext2"]
    assert stats["tokens"] == {"train": 2_088_628, "valid": 217_646, "test": 245_569}
    assert stats["vocab_size"] == 33_278
    assert int(corpus.test.max()) < 33_278


def test_eos_after_every_line(prepared, shared_data):
    _, corpus = prepared["ptb"]
    lines = (shared_data / "ptb" / "ptb.valid.txt").read_text().splitlines()
    eos = corpus.vocab.index(data.EOS)
    assert int((corpus.valid == eos).sum()) == len(lines)
    first = lines[0].split()
    assert [corpus.vocab[i] for i in corpus.valid[: len(first) + 1]] == first + [data.EOS]


def test_local_missing_file_names_file_and_fix(shared_data, tmp_path):
    local = _local_copy(shared_data, tmp_path)
    (local / "ptb" / "ptb.valid.txt").unlink()
    with pytest.raises(ReplicateError) as err:
        data.fetch("ptb", tmp_path / "out", local_dir=local)
    assert "ptb.valid.txt" in str(err.value) and "REPLICATE_DATA_DIR" in str(err.value)


def test_checksum_mismatch_leaves_nothing(shared_data, tmp_path):
    local = _local_copy(shared_data, tmp_path)
    with open(local / "ptb" / "ptb.test.txt", "a") as fh:
        fh.write("tampered\n")
    with pytest.raises(ReplicateError) as err:
        data.fetch("ptb", tmp_path / "out", local_dir=local)
    assert "checksum mismatch for ptb.test.txt" in str(err.value)
    assert not (tmp_path / "out" / "ptb.test.txt").exists()
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")], "temp file left behind"


def test_truncated_file_is_rejected(shared_data, tmp_path):
    local = _local_copy(shared_data, tmp_path)
    path = local / "ptb" / "ptb.train.txt"
    path.write_bytes(path.read_bytes()[: 100_000])
    with pytest.raises(ReplicateError) as err:
        data.fetch("ptb", tmp_path / "out", local_dir=local)
    assert "ptb.train.txt" in str(err.value) and "100000 bytes" in str(err.value)


def test_prepare_rejects_corrupt_raw(shared_data, tmp_path):
    data.fetch("ptb", tmp_path / "raw", local_dir=shared_data)
    (tmp_path / "raw" / "ptb.valid.txt").write_text("oops\n")
    with pytest.raises(ReplicateError, match="checksum mismatch for ptb.valid.txt"):
        data.prepare("ptb", tmp_path / "raw", tmp_path / "c.pt", tmp_path / "s.json")
    assert not (tmp_path / "c.pt").exists()


def test_no_network_names_files_and_local_option(tmp_path, monkeypatch):
    def refuse(url, timeout):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(data, "_download", refuse)
    with pytest.raises(ReplicateError) as err:
        data.fetch("wikitext2", tmp_path / "out", local_dir=None)
    msg = str(err.value)
    assert "wiki.train.tokens" in msg and "wikitext.smerity.com" in msg
    assert "data.local_dir" in msg and "REPLICATE_DATA_DIR" in msg


def test_download_of_wrong_bytes_is_rejected_then_next_mirror_used(shared_data, tmp_path, monkeypatch):
    """First mirror serves garbage (rejected by sha256), the second serves the right files."""
    good = {f: (shared_data / "ptb" / f).read_bytes() for f in data.DATASETS["ptb"].files.values()}
    src = dataclasses.replace(data.DATASETS["ptb"], mirrors=(("raw", "http://bad/"), ("raw", "http://good/")))
    monkeypatch.setitem(data.DATASETS, "ptb", src)

    def fake(url, timeout):
        name = url.rsplit("/", 1)[-1]
        return b"<html>not found</html>" if url.startswith("http://bad/") else good[name]

    monkeypatch.setattr(data, "_download", fake)
    origins = data.fetch("ptb", tmp_path / "out")
    assert origins["ptb.train.txt"] == "http://good/ptb.train.txt"
    assert data.sha256_of(tmp_path / "out" / "ptb.train.txt") == src.sha256["ptb.train.txt"]


def test_env_var_wins_over_config(monkeypatch, tmp_path):
    monkeypatch.setenv(data.ENV_LOCAL_DIR, str(tmp_path))
    assert data.resolve_local_dir("/somewhere/else") == tmp_path.resolve()
    monkeypatch.delenv(data.ENV_LOCAL_DIR)
    assert data.resolve_local_dir(None) is None


def test_unknown_dataset():
    with pytest.raises(ReplicateError, match="unknown data set 'c4'"):
        data.source("c4")


def test_load_corpus_corrupt_file(tmp_path):
    bad = tmp_path / "corpus.pt"
    bad.write_bytes(b"\x00garbage")
    with pytest.raises(ReplicateError, match="unreadable"):
        data.load_corpus(bad)
    with pytest.raises(ReplicateError, match="missing"):
        data.load_corpus(tmp_path / "nope.pt")
