"""The initial-loss sweep's runs: one per width, run id ``runs/d<width>`` (all seeds, trunks and heads of the
``initial_loss`` section at that width: ``runs/d<width>.csv`` and its provenance sidecar)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from replicate import devices, provenance, resources
from replicate.experiments import SCHEMAS, Kind, Run, canonical, memory_limit_gib, run_config
from replicate.validate import SettingError

SWEEP = Kind("initial_loss_sweep", "initial_loss", "runs/d{width}", {"width": r"\d+"}, code=("initial_loss.sweep",),
             outputs={"csv": ".csv", "provenance": ".csv.provenance.json"}, keep_checkpoint=True, attempt_log=False,
             log="sweep_d{width}", triggers=())
KINDS = [SWEEP]
# What a sweep job depends on (figure/table settings stay out, so editing them reruns no sweep).
SWEEP_KEYS = ("vocab_size", "n_layers", "head_dim", "seeds", "batch_size", "seq_len", "token_distributions",
              "zipf_exponent", "chunk_tokens", "trunks", "heads")


def runs(config: dict[str, Any]) -> dict[str, Run]:
    """One run per width of ``initial_loss.widths``."""
    ids = [SWEEP.pattern.format(width=width) for width in config["initial_loss"]["widths"]]
    return {run_id: run(config, run_id) for run_id in ids}


def run(config: dict[str, Any], run_id: str) -> Run:
    match = SWEEP.regex().fullmatch(run_id)
    if not match:
        raise SettingError(f"initial-loss run {run_id!r} is not runs/d<width>", "write e.g. runs/d512")
    il = config["initial_loss"]
    where = f"initial-loss sweep point d={match['width']}"
    width = check_width(canonical(match["width"], str, "d", where), il["head_dim"], where)
    record = run_config(config, initial_loss={k: il[k] for k in SWEEP_KEYS})
    result = Run(SWEEP, run_id, where, name=f"d{width}", dataset=None, spec=record, config=record, threads=2,
                 device=config["device"], cost=lambda threads: resources.sweep_estimate(il, width, threads))
    result.check_memory(memory_limit_gib(config), where)
    return result


def memory_benchmark_config(config: dict[str, Any]) -> dict[str, Any]:
    """What the memory benchmark depends on: the global keys, the sweep's keys and ``memory_benchmark``."""
    il = config["initial_loss"]
    return run_config(config, initial_loss={k: il[k] for k in (*SWEEP_KEYS, "memory_benchmark")})


def check_width(width: Any, head_dim: int, where: str) -> int:
    """A width of the sweep: in range, and split into heads of even width (``replicate.llama.ModelConfig``)."""
    width = SCHEMAS.check(width, "initial_loss.schema.yaml#/$defs/width", key="width", where=where,
                          fix="use a width from 2 to 65536 (results/initial_loss/runs/d<width>.csv, "
                              "initial_loss.widths)")
    heads = max(1, width // head_dim)
    if width % heads or (width // heads) % 2:
        raise SettingError(f"{where}: width {width} does not split into {heads} heads of even width "
                           f"(initial_loss.head_dim = {head_dim})",
                           "use a multiple of head_dim, or change initial_loss.head_dim")
    return width


def train(run: Run, corpus, results: Path, log, threads: int, device: str, allow_tf32: bool) -> None:
    """One width: every seed, trunk and head -> the tidy CSV and its provenance sidecar."""
    from replicate.cli import write_csv_with_provenance
    from replicate.initial_loss.sweep import run_width

    started, width, out = provenance.now(), int(run.run_id.removeprefix("runs/d")), f"{results / run.folder}.csv"
    devices.setup(threads, allow_tf32)
    device = devices.resolve_device(device)
    t0 = time.perf_counter()
    frame = run_width(run.spec["initial_loss"], width, device, log=log)
    frame["protocol"] = run.spec["protocol"]
    write_csv_with_provenance(out, frame, run.spec, started, str(device), width=width,
                              seconds=time.perf_counter() - t0, code_version=provenance.code_version(run_width))
    log(f"d={width}: {len(frame)} rows in {time.perf_counter() - t0:.1f}s -> {out}")
