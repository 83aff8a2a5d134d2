"""Device and thread selection shared by every training or sweep command."""

from __future__ import annotations

import os

from replicate.errors import ReplicateError


def resolve_device(name: str = "auto"):
    """``auto`` -> CUDA when visible (respecting CUDA_VISIBLE_DEVICES), else CPU."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ReplicateError(f"device {name!r} requested but CUDA is not available "
                                 f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})",
                                 "set device: auto or cpu in the config, or run on a GPU node")
        dev = torch.device(name)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ReplicateError(f"device {name!r} does not exist ({torch.cuda.device_count()} GPUs visible)",
                                 "use cuda or cuda:0 and select GPUs with CUDA_VISIBLE_DEVICES")
        return dev
    if name == "cpu":
        return torch.device("cpu")
    raise ReplicateError(f"unknown device {name!r}", "use auto, cpu, cuda or cuda:N")


def setup(threads: int | None = None, allow_tf32: bool = False):
    """Set torch's intra-op threads (the rule's `threads`) and the TF32 policy (off = fp32 fidelity)."""
    import torch

    if threads:
        torch.set_num_threads(int(threads))
    torch.backends.cuda.matmul.allow_tf32 = bool(allow_tf32)
    torch.backends.cudnn.allow_tf32 = bool(allow_tf32)
