"""Provenance attached to every result: config, code version, packages, device, time."""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_ROOT.parent
_PACKAGES = ("torch", "numpy", "pandas", "seaborn", "matplotlib", "scipy", "snakemake")


def now() -> str:
    """Current UTC time, ISO 8601, second resolution."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def git_state(root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """Commit hash and dirty flag of the checkout the code runs from (None outside git)."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                 text=True, timeout=10, check=True)
            return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def diff_sha256(root: Path = PROJECT_ROOT) -> str | None:
    """sha256 of ``git diff HEAD --binary`` (the uncommitted changes to tracked files); None outside git."""
    try:
        out = subprocess.run(["git", "-C", str(root), "diff", "HEAD", "--binary"], capture_output=True,
                             timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return hashlib.sha256(out.stdout).hexdigest()


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    versions["python"] = platform.python_version()
    return versions


def device_info(device: str | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {"host": platform.node(), "machine": platform.machine(),
                            "cpu_count": os.cpu_count(), "device": device,
                            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        if device and device.startswith("cuda") and torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(torch.device(device))
        info["tf32"] = torch.backends.cuda.matmul.allow_tf32
    except ImportError:
        pass
    return info


def collect(config: Any, started: str, device: str | None = None, git: dict | None = None) -> dict[str, Any]:
    """The provenance block stored in (or beside) a result file; ``git``: the checkout's state when the job
    started (a long job's code is what it imported then, not what the checkout holds when it ends)."""
    return {
        "config": config,
        "git": git if git is not None else git_state(),
        "packages": package_versions(),
        "device": device_info(device),
        "started": started,
        "finished": now(),
    }


def source_hash(*modules: str) -> str:
    """Short sha256 over the source files of the named package modules or sub-packages.

    Rules pass this as a ``params`` value, so that editing the code a rule runs makes
    Snakemake (``--rerun-triggers params``, the default) rerun exactly those rules.
    ``modules`` are dotted names relative to the package, e.g. ``"lstm"`` or ``"data"``; a module's
    ``.cpp`` beside its ``.py`` counts with it.
    """
    digest = hashlib.sha256()
    for name in sorted(set(modules)):
        base = PACKAGE_ROOT.joinpath(*name.split("."))
        # a module's C++ part (``x.cpp`` beside ``x.py``, compiled by it) is part of its source
        files = (sorted(base.rglob("*.py")) if base.is_dir()
                 else [f for f in (base.with_suffix(".py"), base.with_suffix(".cpp")) if f.suffix == ".py" or f.exists()])
        for f in files:
            digest.update(str(f.relative_to(PACKAGE_ROOT)).encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:16]
