"""Atomic file output (a temporary file beside the target, then a rename: a kill leaves the old file or the new one,
never a truncated one); a write the disk refuses is a ``WriteError`` naming the file; JSON strictly finite;
``torch_save`` also writes ``<file>.sha256``, which ``checksum_status`` checks before a load."""

from __future__ import annotations

import contextlib
import errno
import glob
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from replicate.errors import ReplicateError
from replicate.finite import not_finite

CHECKSUM_SUFFIX = ".sha256"
STALE_SECONDS = 3600  # a temporary this old is a killed write's leftover (no write of ours takes an hour)
_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: mkstemp makes 0600 files, results are made as open() would (0644 under umask 022)

# the errors that mean "this place takes no more bytes", whichever file they name
_DISK_REFUSED = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
                 errno.EFBIG: "the file is larger than the file system allows",
                 errno.EROFS: "the file system is read-only"}
_NOT_PERMITTED = {errno.EACCES: "no permission to write there", errno.EPERM: "no permission to write there"}


class WriteError(ReplicateError):
    """A file could not be written (full disk, quota, read-only folder, no permission); names the file."""


def write_fault(path: str | os.PathLike, exc: OSError) -> WriteError | None:
    """The named error for ``exc`` raised while writing ``path``, or None if it is no write the disk refused (a
    permission error counts only when it names ``path``, its temporary or a folder above it)."""
    reason = _DISK_REFUSED.get(exc.errno)
    if reason is None and exc.errno in _NOT_PERMITTED:
        named = Path(os.path.abspath(exc.filename)) if exc.filename else None
        target = Path(os.path.abspath(path))
        if named is None or named.parent == target.parent or target.is_relative_to(named):
            reason = _NOT_PERMITTED[exc.errno]
    if reason is None:
        return None
    folder = Path(path).parent
    fix = (f"make {folder} writable (or choose another results_dir)" if exc.errno in _NOT_PERMITTED
           else f"free space on the disk that holds {folder} (df -h {folder}), or choose another results_dir")
    return WriteError(f"cannot write {path}: {reason} ({exc.strerror or exc}); files written through "
                      "replicate/io.py keep their previous version (a checkpoint, a result), none is truncated",
                      f"{fix}, then rerun the same command or target: training resumes from its last checkpoint")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``, renamed onto it on success (removed either way); a write the disk
    refuses, here or in the caller's block, is a ``WriteError`` naming ``path``."""
    path, tmp = Path(path), None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temporaries(path)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(name)
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except OSError as exc:
        fault = write_fault(path, exc)
        if fault is None:
            raise
        raise fault from exc
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def make_folder(folder: str | os.PathLike) -> Path:
    """``folder`` and the folders above it; a refusal is a ``WriteError`` naming it."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise (write_fault(folder, exc) or exc) from exc
    return folder


def _remove_stale_temporaries(path: Path) -> None:
    """Delete the temporaries that killed writes of ``path`` left (older than ``STALE_SECONDS``)."""
    cutoff = time.time() - STALE_SECONDS
    for old in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < cutoff:
                old.unlink()


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | os.PathLike, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """``obj`` as strict JSON: a non-finite number is a ReplicateError naming the file and the key; nothing written."""
    try:
        text = json.dumps(obj, indent=2, sort_keys=False, default=_jsonable, allow_nan=False)
    except ValueError:
        bad = nonfinite(obj)
        if not bad:
            raise
        raise ReplicateError(
            f"{path}: non-finite number{'s' if len(bad) > 1 else ''} at {', '.join(bad[:5])}"
            f"{f' and {len(bad) - 5} more' if len(bad) > 5 else ''}; nothing written",
            "a result must be finite: find where the value diverged (for a training run, lower the learning rate "
            "or the clip value); write a value that is undefined on purpose as null (None)") from None
    write_text(path, text + "\n")


def nonfinite(obj: Any, where: str = "") -> list[str]:
    """Key paths (``history[3].valid_ppl``) of the non-finite numbers in a JSON-like ``obj``."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in nonfinite(v, f"{where}.{k}" if where else str(k))]
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in nonfinite(v, f"{where}[{i}]")]
    if hasattr(obj, "tolist") and getattr(obj, "ndim", 0):  # an array
        return nonfinite(obj.tolist(), where)
    return [f"{where or '(top level)'} = {obj}"] if not_finite(obj) else []


def replace_block(path: str | os.PathLike, begin: str, end: str, text: str | None, fix: str) -> None:
    """Write ``text`` between the lines ``begin`` and ``end`` of the file ``path`` (None: only check they are there)."""
    old = Path(path).read_text(encoding="utf-8")
    head, found_begin, rest = old.partition(begin)
    _, found_end, tail = rest.partition(end)
    if not (found_begin and found_end):
        raise ReplicateError(f"{path} has no {begin} ... {end} block", fix)
    if text is not None:
        write_text(path, f"{head}{begin}\n{text}{end}{tail}")


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_csv(path: str | os.PathLike, frame) -> None:
    """Write a pandas DataFrame as CSV atomically (no index column)."""
    write_text(path, frame.to_csv(index=False))


def torch_save(path: str | os.PathLike, obj: Any) -> None:
    """``torch.save`` atomically through an open file (the same object, the same bytes), and ``<path>.sha256`` in two
    steps (the new checksum with the replaced file's, the file, the new one alone): a kill leaves a pair that checks."""
    import torch

    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            try:
                torch.save(obj, fh)
            except RuntimeError as exc:  # torch's archive writer, when a write of its own came up short
                if "inline_container" not in str(exc):
                    raise
                fh.flush()  # the file's own error (ENOSPC, ...) names the fault when it has one
                raise WriteError(f"cannot write {path}: torch's archive writer failed ({exc})",
                                 f"check the disk that holds {path.parent} (df -h {path.parent}), then rerun") from exc
        new = file_sha256(tmp)
        _write_checksum(path, new, file_sha256(path) if path.is_file() else None)
    _write_checksum(path, new, None)


def checksum_path(path: str | os.PathLike) -> Path:
    return Path(f"{path}{CHECKSUM_SUFFIX}")


def file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_checksum(path: Path, sha: str, replaces: str | None) -> None:
    write_json(checksum_path(path), {"file": path.name, "sha256": sha, "replaces": replaces})


def checksum_status(path: str | os.PathLike) -> bool | None:
    """Whether the file at ``path`` has the checksum recorded beside it or the one it replaces (None: none recorded)."""
    if not checksum_path(path).is_file():
        return None
    try:
        record = read_json(checksum_path(path))
        recorded = {record.get("sha256"), record.get("replaces")}
    except (OSError, ValueError, AttributeError):  # unreadable: nothing matches
        recorded = set()
    return file_sha256(path) in recorded - {None}


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
