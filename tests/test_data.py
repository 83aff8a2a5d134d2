"""Data stage: verified fetch (local or download), clear failures, known corpus figures."""

from __future__ import annotations

import dataclasses
import errno
import functools
import http.server
import io
import shutil
import socket
import tarfile
import threading
import zipfile

import pytest
import torch

from replicate import data
from replicate import io as rio
from replicate.errors import ReplicateError


def _local_copy(data_dir, tmp_path, dataset="ptb"):
    """A writable copy of one data set's folder, laid out like a local data folder."""
    folder = data.DATASETS[dataset].folder
    dest = tmp_path / "local"
    shutil.copytree(data_dir / folder, dest / folder)
    for f in (dest / folder).iterdir():
        f.chmod(0o644)
    return dest


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, data_dir):
    out = {}
    for name in ("ptb", "wikitext2"):
        d = tmp_path_factory.mktemp(name)
        data.fetch(name, d / "raw", local_dir=data_dir)
        stats = data.prepare(name, d / "raw", d / "corpus.pt", d / "stats.json")
        out[name] = (stats, data.load_corpus(d / "corpus.pt"), d / "corpus.pt")
    return out


def test_ptb_known_figures(prepared):
    stats, corpus, _ = prepared["ptb"]
    assert stats["tokens"] == {"train": 929_589, "valid": 73_760, "test": 82_430}
    assert stats["vocab_size"] == len(corpus.vocab) == 10_000
    assert corpus.train.numel() == 929_589 and corpus.train.dtype == torch.int64
    assert "<unk>" in corpus.vocab and data.EOS in corpus.vocab


def test_wikitext2_known_figures(prepared):
    stats, corpus, _ = prepared["wikitext2"]
    assert stats["tokens"] == {"train": 2_088_628, "valid": 217_646, "test": 245_569}
    assert stats["vocab_size"] == 33_278
    assert int(corpus.test.max()) < 33_278


def test_eos_after_every_line(prepared, data_dir):
    _, corpus, _ = prepared["ptb"]
    lines = (data_dir / "ptb" / "ptb.valid.txt").read_text().splitlines()
    eos = corpus.vocab.index(data.EOS)
    assert int((corpus.valid == eos).sum()) == len(lines)
    first = lines[0].split()
    assert [corpus.vocab[i] for i in corpus.valid[: len(first) + 1]] == first + [data.EOS]


def test_prepare_writes_the_pinned_corpus(prepared):
    """A data set pins the digest of its prepared corpus: the data stage's version, which the workflow compares
    with the corpus on disk to decide whether the runs that read it rerun (workflow/rules/common.smk)."""
    for name, (stats, _, path) in prepared.items():
        assert stats["corpus_digest"] == data.DATASETS[name].corpus == data.corpus_digest(path)
        assert data.holds_prepared(path, name)
    assert not data.holds_prepared(prepared["ptb"][2], "wikitext2")


def _rewritten(path, out, record, change):
    """A copy of the torch archive ``path`` whose record ``record`` (``version``, ``data/2``) passed ``change``."""
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            dst.writestr(info, change(body) if info.filename.partition("/")[2] == record else body)
    return out


def test_the_corpus_digest_reads_the_content_not_torchs_format_records(prepared, tmp_path):
    ptb = prepared["ptb"][2]
    other_format = _rewritten(ptb, tmp_path / "format.pt", "version", lambda b: b"9")
    assert rio.file_sha256(other_format) != rio.file_sha256(ptb)  # other bytes, the same corpus
    assert data.holds_prepared(other_format, "ptb")
    one_token = _rewritten(ptb, tmp_path / "token.pt", "data/2", lambda b: b[:-1] + bytes([b[-1] ^ 1]))
    assert not data.holds_prepared(one_token, "ptb")
    (tmp_path / "garbage.pt").write_bytes(b"\x00garbage")
    assert not data.holds_prepared(tmp_path / "garbage.pt", "ptb") and not data.holds_prepared(tmp_path / "no.pt", "ptb")


def test_a_preparation_that_writes_another_corpus_is_refused(data_dir, tmp_path, monkeypatch):
    """prepare refuses (and removes) a corpus that is not the pinned one, naming the pin to change."""
    data.fetch("ptb", tmp_path / "raw", local_dir=data_dir)
    monkeypatch.setattr(data, "EOS", "<end>")
    corpus = tmp_path / "corpus.pt"
    with pytest.raises(ReplicateError, match="not the pinned 5153395e") as exc:
        data.prepare("ptb", tmp_path / "raw", corpus, tmp_path / "stats.json")
    assert "replicate/data.py" in exc.value.fix
    assert not corpus.exists() and not rio.checksum_path(corpus).exists()


def test_local_missing_file_names_file_and_fix(data_dir, tmp_path):
    local = _local_copy(data_dir, tmp_path)
    (local / "ptb" / "ptb.valid.txt").unlink()
    with pytest.raises(ReplicateError) as err:
        data.fetch("ptb", tmp_path / "out", local_dir=local)
    assert "ptb.valid.txt" in str(err.value) and "REPLICATE_DATA_DIR" in str(err.value)


def test_checksum_mismatch_leaves_nothing(data_dir, tmp_path):
    local = _local_copy(data_dir, tmp_path)
    with open(local / "ptb" / "ptb.test.txt", "a") as fh:
        fh.write("tampered\n")
    with pytest.raises(ReplicateError) as err:
        data.fetch("ptb", tmp_path / "out", local_dir=local)
    assert "checksum mismatch for ptb.test.txt" in str(err.value)
    assert not (tmp_path / "out" / "ptb.test.txt").exists()
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")], "temp file left behind"


def test_a_full_disk_names_the_file_written_not_the_source(data_dir, tmp_path, monkeypatch):
    """shutil.copyfile's ENOSPC carries the source as its file name; the error names the destination."""
    local = _local_copy(data_dir, tmp_path)

    def full(src, dst):
        with open(dst, "wb") as fh:
            fh.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device", str(src), None, str(dst))

    monkeypatch.setattr(data.shutil, "copyfile", full)
    out = tmp_path / "out"
    with pytest.raises(rio.WriteError, match=rf"cannot write {out / 'ptb.train.txt'}: the disk is full") as err:
        data.fetch("ptb", out, local_dir=local)
    assert str(local) not in str(err.value)
    assert list(out.iterdir()) == []


def test_a_read_only_destination_folder_is_named(data_dir, tmp_path, monkeypatch):
    out = tmp_path / "raw"

    def refused(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(type(out), "mkdir", refused)
    with pytest.raises(rio.WriteError, match=rf"cannot write {out}: no permission to write there"):
        data.fetch("ptb", out, local_dir=data_dir)


def test_a_full_disk_during_a_download_stops_at_the_first_mirror(tmp_path, monkeypatch):
    """A write the disk refuses is not a network failure: the next mirror is not tried."""
    tried = []

    def full(url, known_hash, fname, path, downloader):
        tried.append(url)
        raise OSError(errno.ENOSPC, "No space left on device", str(path / "tmpd0wnl0ad"))

    _with_mirrors(monkeypatch, "ptb", ("raw", "http://one/"), ("raw", "http://two/"))
    monkeypatch.setattr(data.pooch, "retrieve", full)
    with pytest.raises(rio.WriteError, match=rf"cannot write {tmp_path / 'out' / 'tmpd0wnl0ad'}: the disk is full"):
        data.fetch("ptb", tmp_path / "out")
    assert tried == ["http://one/ptb.train.txt"]


def test_truncated_file_is_rejected(data_dir, tmp_path):
    local = _local_copy(data_dir, tmp_path)
    path = local / "ptb" / "ptb.train.txt"
    path.write_bytes(path.read_bytes()[: 100_000])
    with pytest.raises(ReplicateError) as err:
        data.fetch("ptb", tmp_path / "out", local_dir=local)
    assert "ptb.train.txt" in str(err.value) and "100000 bytes" in str(err.value)


def test_prepare_rejects_corrupt_raw(data_dir, tmp_path):
    data.fetch("ptb", tmp_path / "raw", local_dir=data_dir)
    (tmp_path / "raw" / "ptb.valid.txt").write_text("oops\n")
    with pytest.raises(ReplicateError, match="checksum mismatch for ptb.valid.txt"):
        data.prepare("ptb", tmp_path / "raw", tmp_path / "c.pt", tmp_path / "s.json")
    assert not (tmp_path / "c.pt").exists()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A local HTTP server over ``tmp_path/"www"``; returns (folder, base URL)."""
    www = tmp_path / "www"
    www.mkdir()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=www))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _with_mirrors(monkeypatch, name, *mirrors):
    src = dataclasses.replace(data.DATASETS[name], mirrors=mirrors)
    monkeypatch.setitem(data.DATASETS, name, src)
    return src


def _only_verified_files(src, out):
    """Nothing in ``out`` but files of ``src`` with the right sha256 (no temporary or partial file)."""
    for p in out.iterdir():
        assert p.name in src.sha256, f"unexpected file left behind: {p.name}"
        assert rio.file_sha256(p) == src.sha256[p.name], f"unverified file left at {p}"


def test_no_network_names_files_and_local_option(tmp_path, monkeypatch):
    """The real mirrors, with every connection refused (a proxy on a closed local port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(var, dead)
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ReplicateError) as err:
        data.fetch("wikitext2", tmp_path / "out", local_dir=None, timeout=5)
    msg = str(err.value)
    assert "wiki.train.tokens" in msg and "wikitext.smerity.com" in msg and "amazonaws.com" in msg
    assert "data.local_dir" in msg and "REPLICATE_DATA_DIR" in msg
    assert not list((tmp_path / "out").iterdir())


def test_download_of_wrong_bytes_is_rejected_then_next_mirror_used(data_dir, tmp_path, monkeypatch, mirror):
    """First mirror serves a truncated file and an HTML page, the second the right files."""
    www, base = mirror
    src = _with_mirrors(monkeypatch, "ptb", ("raw", base + "bad/"), ("raw", base + "good/"))
    (www / "bad").mkdir()
    shutil.copytree(data_dir / "ptb", www / "good")
    (www / "bad" / "ptb.train.txt").write_bytes((data_dir / "ptb" / "ptb.train.txt").read_bytes()[:100_000])
    for f in ("ptb.valid.txt", "ptb.test.txt"):
        (www / "bad" / f).write_text("<html>not found</html>")
    out = tmp_path / "out"
    out.mkdir()
    (out / "ptb.valid.txt").write_text("half-written\n")  # a corrupt file from an earlier run is not reused
    origins = data.fetch("ptb", out)
    assert origins["ptb.train.txt"] == base + "good/ptb.train.txt"
    assert sorted(p.name for p in out.iterdir()) == sorted(src.sha256)
    _only_verified_files(src, out)


def test_all_mirrors_wrong_leaves_no_file(data_dir, tmp_path, monkeypatch, mirror):
    www, base = mirror
    _with_mirrors(monkeypatch, "ptb", ("raw", base + "bad/"), ("raw", base + "missing/"))
    (www / "bad").mkdir()
    for f in data.DATASETS["ptb"].files.values():
        (www / "bad" / f).write_text("<html>not found</html>")
    with pytest.raises(ReplicateError) as err:
        data.fetch("ptb", tmp_path / "out")
    msg = str(err.value)
    assert f"checksum mismatch for ptb.train.txt from {base}bad/ptb.train.txt" in msg
    assert f"{base}missing/ptb.train.txt" in msg and "404" in msg
    assert "data.local_dir" in msg and "REPLICATE_DATA_DIR" in msg
    assert not list((tmp_path / "out").iterdir()), "nothing may be left at the final paths"


def test_archive_mirrors(data_dir, tmp_path, monkeypatch, mirror):
    """PTB from a .tgz (only members under data/ count), WikiText-2 from a .zip after a failing mirror."""
    www, base = mirror
    ptb = _with_mirrors(monkeypatch, "ptb", ("tgz", base + "simple-examples.tgz"))
    with tarfile.open(www / "simple-examples.tgz", "w:gz") as tar:
        decoy = b"not the data\n"
        info = tarfile.TarInfo("simple-examples/models/ptb.train.txt")
        info.size = len(decoy)
        tar.addfile(info, io.BytesIO(decoy))
        for f in ptb.files.values():
            tar.add(data_dir / "ptb" / f, arcname=f"simple-examples/data/{f}")
    wiki = _with_mirrors(monkeypatch, "wikitext2", ("zip", base + "gone.zip"), ("zip", base + "wikitext-2-v1.zip"))
    with zipfile.ZipFile(www / "wikitext-2-v1.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for f in wiki.files.values():
            zf.write(data_dir / "wikitext-2" / f, arcname=f"wikitext-2/{f}")
    for name, src in (("ptb", ptb), ("wikitext2", wiki)):
        out = tmp_path / name
        origins = data.fetch(name, out)
        assert set(origins.values()) == {src.mirrors[-1][1]}
        assert sorted(p.name for p in out.iterdir()) == sorted(src.sha256)
        _only_verified_files(src, out)


def test_env_var_wins_over_config(monkeypatch, tmp_path):
    monkeypatch.setenv(data.ENV_LOCAL_DIR, str(tmp_path))
    assert data.resolve_local_dir("/somewhere/else") == tmp_path.resolve()
    monkeypatch.delenv(data.ENV_LOCAL_DIR)
    assert data.resolve_local_dir(None) is None


def test_unknown_dataset(capsys):
    from replicate import data_cli

    with pytest.raises(SystemExit):
        data_cli.main(["fetch", "--dataset", "c4", "--out", "raw"])
    assert "invalid choice: 'c4'" in capsys.readouterr().err


def test_load_corpus_corrupt_file(tmp_path):
    bad = tmp_path / "corpus.pt"
    bad.write_bytes(b"\x00garbage")
    with pytest.raises(ReplicateError, match="unreadable"):
        data.load_corpus(bad)
    with pytest.raises(ReplicateError, match="missing"):
        data.load_corpus(tmp_path / "nope.pt")
