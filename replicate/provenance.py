"""Provenance attached to every result: config, code version, packages, device, time."""

from __future__ import annotations

import ast
import datetime as _dt
import functools
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
    """The provenance block stored in (or beside) a result file; ``git``: the checkout's state when the job started."""
    return {
        "config": config,
        "git": git if git is not None else git_state(),
        "packages": package_versions(),
        "device": device_info(device),
        "started": started,
        "finished": now(),
    }


def source_hash(*modules: str) -> str:
    """Short sha256 over the source of the named package modules or sub-packages (``"lstm.train"``, ``"lstm"``), a
    module's ``.cpp`` beside its ``.py`` included."""
    digest = hashlib.sha256()
    for name in sorted(set(modules)):
        base = PACKAGE_ROOT.joinpath(*name.split("."))
        files = (sorted(base.rglob("*.py")) if base.is_dir()
                 else [f for f in (base.with_suffix(".py"), base.with_suffix(".cpp")) if f.suffix == ".py" or f.exists()])
        for f in files:
            digest.update(str(f.relative_to(PACKAGE_ROOT)).encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def code_modules(*roots: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(math, kernels): the roots and what they import all the way down, but faces and the torch-free top-level kit;
    ``kernels`` (fast paths proven equal to the math) apart."""
    names = {(getattr(r, "__module__", None) or getattr(r, "__name__", r)).removeprefix("replicate.") for r in roots}
    todo, reached = list(names), {}
    while todo:
        if (name := todo.pop()) not in reached:
            if not (path := _module_file(name)):
                raise ValueError(f"no module replicate.{name} under {PACKAGE_ROOT}")
            reached[name] = _parsed(path, path.stat().st_mtime_ns, path.stat().st_size)
            todo += reached[name][0]
    math = {m for m, (_, torch, face) in reached.items() if m in names or not face and ("." in m or torch)}
    fast = {m for m in math if m.rpartition(".")[2] == "kernels"}
    return tuple(sorted(math - fast)), tuple(sorted(fast))


def code_version(*roots: Any, kernels: bool = False) -> str:
    """``source_hash`` of the math of ``code_modules(*roots)`` (``kernels``: and of its kernels: a speed figure's)."""
    math, fast = code_modules(*roots)
    return source_hash(*math, *(fast if kernels else ()))


def _module_file(name: str) -> Path | None:
    base = PACKAGE_ROOT.joinpath(*name.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


@functools.cache
def _parsed(path: Path, mtime_ns: int, size: int) -> tuple[tuple[str, ...], bool, bool]:
    """(the package modules it imports, whether it imports torch when loaded, whether it is a face)."""
    tree, imported = ast.parse(path.read_bytes()), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [a.name.removeprefix("replicate.") for a in node.names if a.name.startswith("replicate.")]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "replicate":
            base = node.module.removeprefix("replicate").lstrip(".")
            subs = [f"{base}.{a.name}".lstrip(".") for a in node.names]  # from replicate.lstm import kernels
            imported += [sub if _module_file(sub) else base for sub in subs]
    torch = any(isinstance(n, ast.Import) and any(a.name.split(".")[0] == "torch" for a in n.names)
                or isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "torch" for n in tree.body)
    return tuple(imported), torch, path.name == "__init__.py"
