"""The experiment as the unit: each declares its training runs in ``replicate/<experiment>/runs.py`` (``KINDS``,
one rule each; ``runs(config) -> {run_id: Run}``; ``run(config, run_id) -> Run``); the config is read here as
Snakemake reads it, so the workflow, ``python -m replicate train`` and ``check-config`` agree."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import math
import os
import re
import shlex
from pathlib import Path
from typing import Any, Callable

import yaml

from replicate import paths, resources
from replicate.errors import ReplicateError
from replicate.lstm.config import PRESETS, resolve
from replicate.validate import CONFIG_SECTIONS, SCHEMA_DIR, Schemas, SettingError, check_memory, nearest, parse_text

# experiment -> its declaration module
DECLARATIONS = {experiment: f"replicate.{experiment}.runs"
                for experiment in ("press_wolf", "inan", "scale", "initial_loss")}
SCHEMAS = Schemas(SCHEMA_DIR)
ENGINE_FIX = ("change the value (a cell's @key=value, or the config's overrides); every engine key "
              "and its range: config/README.md, section lstm")
MEMORY_FIX = ("make the run smaller (hidden size, width, vocabulary, batch), or raise max_job_memory_gib "
              "(e.g. --config max_job_memory_gib=128; its default is this machine's memory) if the machine or "
              "cluster node has the memory")


def memory_limit_gib(config: dict[str, Any]) -> float:
    """The most memory one job may need: the config's ``max_job_memory_gib``, else this machine's."""
    return config.get("max_job_memory_gib") or resources.machine_memory_gib()


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of run, trained by the workflow rule ``rule``: a run id is ``pattern`` filled (its folder under
    ``<results_dir>/<experiment>/``, the rule's outputs its ``outputs`` suffixes; logs under ``log`` or the pattern)."""

    rule: str
    experiment: str
    pattern: str
    constraints: dict[str, str]
    code: tuple[str, ...]  # the modules whose version the rule's `code` param is (what its results record)
    outputs: dict[str, str] = dataclasses.field(default_factory=lambda: {"metrics": "/metrics.json"})
    keep_checkpoint: bool = False  # never --drop-checkpoint: an analysis reads its weights, or it keeps none
    attempt_log: bool = True  # an engine run: its folder's train.log records every attempt
    resources: tuple[str, ...] = ("mem_mb", "runtime", "one_thread_min")  # what the rule asks a cluster for
    # the job options that are also rerun triggers (params its results were recorded with; the others are not)
    triggers: tuple[str, ...] = ("device", "flags")
    log: str | None = None
    work: str | None = None  # a folder of the run's own beside its outputs (a 6.2 point's seeds), its work_dir param

    def run_id(self, wildcards) -> str:
        return self.pattern.format(**{k: getattr(wildcards, k) for k in self.constraints})

    def regex(self) -> re.Pattern:
        return re.compile(self.pattern.format(**{k: f"(?P<{k}>{v})" for k, v in self.constraints.items()}))


@dataclasses.dataclass(frozen=True)
class Run:
    """One run, resolved: its engine ``settings``, ``spec`` (rerun trigger), ``config`` (recorded), ``guarded`` (what a
    finished run in its folder must have trained with), ``cost(threads)`` (default: the engine's) x ``slowdown``."""

    kind: Kind
    run_id: str
    where: str  # how messages name it
    name: str  # the name its log lines and results give it
    dataset: str | None  # the corpus it reads
    spec: dict[str, Any]
    config: dict[str, Any]
    threads: int
    device: str
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    guarded: dict[str, Any] | None = None
    recorded: Callable[[dict], dict[str, Any]] = lambda metrics: metrics["settings"]
    slowdown: float = 1.0  # the measured time factor of its loss over the engine alone
    cost: Callable[[int], resources.Estimate] | None = None
    min_runtime: int | None = None  # a configured time limit that the estimate only raises
    repeats: int = 1  # models it trains one after another with ``settings`` (a 6.2 point's seeds)

    @property
    def experiment(self) -> str:
        return self.kind.experiment

    @property
    def spec_json(self) -> str:
        return spec_json(self.spec)

    @property
    def folder(self) -> str:
        return f"{self.experiment}/{self.run_id}"

    def estimate(self, threads: int | None = None) -> resources.Estimate:
        threads = int(threads or self.threads)
        if self.cost is not None:
            return self.cost(threads)
        est = lstm_estimate(json.dumps(self.settings, sort_keys=True), self.dataset, resources.device_kind(self.device),
                            threads)
        return dataclasses.replace(est, runtime_min=self.repeats * est.runtime_min,
                                   one_thread_hours=self.repeats * est.one_thread_hours)

    def resources(self, threads: int | None = None, attempt: int = 1) -> dict[str, int]:
        """threads, mem_mb and runtime (minutes, at ``threads``, x attempt), one_thread_min (expected, not a limit)."""
        threads = int(threads or self.threads)
        est = self.estimate(threads).for_attempt(attempt)
        one = math.ceil(60 * self.slowdown * self.estimate(1).one_thread_hours)
        runtime = math.ceil(self.slowdown * est.runtime_min)
        if self.min_runtime is not None:
            expected = resources.expected_wall_min(one, threads)
            runtime = attempt * max(self.min_runtime, math.ceil(resources.LIMIT_OVER_ESTIMATE * expected))
        return {"threads": threads, "mem_mb": est.mem_mb, "runtime": runtime, "one_thread_min": one}

    def check_memory(self, limit_gib: float, where: str) -> None:
        check_memory(self.estimate().mem_mb, limit_gib, where=where, fix=MEMORY_FIX)

    def refuse_to_overwrite(self, metrics: str | Path, forced: bool) -> None:
        """Stop the plan if ``metrics`` (this run's metrics.json) holds a finished run of other settings, naming each
        (recorded -> wanted) and the ways on; ``forced``: the command asked for it (--forcerun, -R, -f ...)."""
        if forced or self.guarded is None or not os.path.isfile(metrics):
            return
        try:
            with open(metrics, encoding="utf-8") as fh:
                old = self.recorded(json.load(fh))
        except (OSError, ValueError, KeyError, TypeError):
            return  # a result this cannot read is Snakemake's to judge (incomplete, corrupt: it reruns)

        def shown(d: dict, key: str) -> str:
            return repr(d[key]) if key in d else "its preset's"

        wanted = self.guarded
        changed = [f"{key}: {shown(old, key)} -> {shown(wanted, key)}"
                   for key in sorted(set(old) | set(wanted)) if old.get(key) != wanted.get(key)]
        if changed:
            raise SettingError(f"{self.where}: {os.path.dirname(metrics)} holds a finished run whose settings differ "
                               f"from this plan's ({'; '.join(changed)}); it would be overwritten",
                               "keep it and run the new settings beside it as an ablation cell (e.g. small@epochs=3) "
                               "or in another results folder (--config results_dir=results_mine); or replace it on "
                               f"purpose: snakemake --forcerun {metrics} (before --config/--configfile)")


def check_engine_settings(settings: dict[str, Any], where: str) -> dict[str, Any]:
    """Settings of one LSTM run: a known size preset, a seed >= 0, every other key in lstm.schema.yaml's range."""
    if settings.get("size") not in PRESETS:
        raise SettingError(f"{where}: size={settings.get('size')!r} is not a size preset",
                           f"use one of {', '.join(PRESETS)}")
    seed = settings.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SettingError(f"{where}: seed={seed!r} is not an integer >= 0", "give the run's seed as 0, 1, 2, ...")
    engine = {k: v for k, v in settings.items() if k not in ("size", "seed")}
    SCHEMAS.check_mapping(engine, "lstm.schema.yaml", where=where, fix=ENGINE_FIX)
    return settings


@functools.lru_cache(maxsize=None)
def lstm_estimate(settings_json: str, dataset: str, device_kind: str, threads: int) -> resources.Estimate:
    """The estimate of training one LSTM with these settings (cached: a plan asks for each run's often)."""
    shape = resources.corpus_shape(dataset)
    model, train = resolve(json.loads(settings_json), shape["vocab"])
    return resources.lstm_estimate(model, train, shape, device_kind, threads)


def declaration(experiment: str):
    """The declaration module of ``experiment`` (a SettingError names the experiments that have one)."""
    if experiment not in DECLARATIONS:
        raise SettingError(f"no experiment {experiment!r}{nearest(experiment, DECLARATIONS)}",
                           f"use one of {', '.join(DECLARATIONS)}")
    return importlib.import_module(DECLARATIONS[experiment])


def kinds() -> list[Kind]:
    return [kind for name in DECLARATIONS for kind in declaration(name).KINDS]


def resolve_run(config: dict[str, Any], experiment: str, run_id: str) -> Run:
    return declaration(experiment).run(config, run_id)


def canonical(raw: str, spell: Callable[[Any], str], what: str, where: str) -> Any:
    """The number ``raw`` (of a run id), refused unless ``raw`` is its one spelling ``spell(value)`` (``seed1``)."""
    value = parse_text(raw)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise SettingError(f"{where}: {what}={raw!r} is not a number", f"write e.g. {what}1")
    if spell(value) != raw:
        raise SettingError(f"{where}: {what}{raw} is not the one spelling of its value (one run, one folder)",
                           f"write {what}{spell(value)}")
    return value


def seed_of(raw: str, where: str) -> int:
    seed = canonical(raw, str, "seed", where)
    if not isinstance(seed, int) or seed < 0:
        raise SettingError(f"{where}: seed{raw} is not an integer >= 0", "write e.g. seed1")
    return seed


def spec_json(obj: Any) -> str:
    """A run spec as one line of JSON, keys sorted: a rule's rerun trigger (quote it with {params.spec:q})."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def run_config(config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The global keys a run depends on, plus ``extra``."""
    return {"protocol": config["protocol"], "device": config["device"], "allow_tf32": config["allow_tf32"], **extra}


def section_config(config: dict[str, Any], section: str) -> dict[str, Any]:
    """The global keys and one section: what a table or figure job of that experiment depends on."""
    return run_config(config, **{section: config[section]})


# ---- the config, read as `snakemake --configfile F ... --config K=V ...` reads it

DEFAULT_CONFIGFILE = "config/config.yaml"
PAPER_CONFIGFILE = "config/paper.yaml"  # the papers' full protocol


class DuplicateKey(yaml.YAMLError):
    def __init__(self, key: Any, first: int, second: int):
        super().__init__(f"key {key!r} is given twice in one mapping (lines {first} and {second})")


class _Loader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key given twice in one mapping (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # a merge (<<) is YAML's own way to give keys again
            key, line = self.construct_object(key_node), key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKey(key, seen[key], line)
            seen[key] = line
        return super().construct_mapping(node, deep)


def read_file(path: str | Path) -> dict[str, Any]:
    """One config file as a mapping, or a ReplicateError naming the file (and the line of a YAML error)."""
    fix = "check the path given to --configfile"
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except FileNotFoundError:
        raise ReplicateError(f"config file {path} does not exist", fix) from None
    except IsADirectoryError:
        raise ReplicateError(f"config file {path} is a folder, not a file", fix) from None
    except OSError as exc:
        raise ReplicateError(f"config file {path} cannot be read ({exc.strerror or exc})", fix) from None
    except (UnicodeDecodeError, yaml.reader.ReaderError):
        raise ReplicateError(f"config file {path} is not a text file (UTF-8 YAML)", fix) from None
    except DuplicateKey as exc:
        raise ReplicateError(f"{path}: {exc}; Snakemake would take the second silently",
                             "keep one of the two (or merge their values)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ReplicateError(f"{path}{at}: not valid YAML ({getattr(exc, 'problem', None) or exc})",
                             "fix the YAML there (an unclosed bracket or quote, tabs mixed with spaces)") from None
    if not isinstance(data, dict):
        raise ReplicateError(f"{path}: the top level is not a mapping of keys", "write key: value lines")
    return data


def parse_override(entry: str) -> dict[str, Any]:
    """One ``--config KEY=VALUE`` as Snakemake reads it: an int, a float, a boolean, else YAML (all strings)."""
    key, sep, raw = entry.partition("=")
    if not sep or not key:
        raise ReplicateError(f"--config {entry!r} is not KEY=VALUE", "write e.g. --config device=cpu")
    if raw == "":
        return {key: None}
    for cast in (int, float):
        try:
            return {key: cast(raw)}
        except ValueError:
            pass
    if raw in ("True", "False", "true", "false"):
        return {key: raw.lower() == "true"}
    return {key: yaml.load(raw, Loader=yaml.BaseLoader)}


def config_args(files, overrides) -> str:
    """``--configfile F ... [--config K=V ...]`` for a job's command line."""
    rel = [os.path.relpath(f) if str(os.path.abspath(f)).startswith(os.getcwd()) else str(f) for f in files]
    words = ["--configfile", *(rel or [DEFAULT_CONFIGFILE])] + (["--config", *overrides] if overrides else [])
    return " ".join(shlex.quote(str(w)) for w in words)


def load_config(files: list[str] | None = None, overrides: list[str] = ()) -> dict[str, Any]:
    """The config of ``snakemake --configfile FILES --config OVERRIDES`` (config/config.yaml without files),
    checked as the Snakefile checks it (``check_config``)."""
    from snakemake.utils import update_config  # Snakemake's own merge: nested keys merge, lists replace

    config: dict[str, Any] = {}
    for overlay in [*map(read_file, files or [DEFAULT_CONFIGFILE]), *map(parse_override, overrides)]:
        update_config(config, overlay)
    check_config(config)
    return config


def check_config(config: dict[str, Any]) -> dict[str, dict[str, Run]]:
    """Fill in the schemas' defaults and refuse what they do not allow, then resolve every configured run of every
    experiment (names, settings, memory): {experiment: {run_id: Run}}. The Snakefile and the CLI call it."""
    from snakemake.utils import validate  # the defaults, exactly as the Snakefile's `validate` fills them

    for name in CONFIG_SECTIONS:
        data = config if name == "config" else config.setdefault(name, {})
        try:
            validate(data, str(SCHEMA_DIR / f"{name}.schema.yaml"))
        finally:  # the short message of a refusal, and what JSON Schema lets through: nan, inf
            SCHEMAS.check_config(data, f"{name}.schema.yaml", "" if name == "config" else name)
    return {experiment: declaration(experiment).runs(config) for experiment in DECLARATIONS}


def report_config(config: dict[str, Any]) -> dict[str, Any]:
    """What the report depends on: the global keys, the ``report`` section, this config's experiment sections, and
    the same sections in config/paper.yaml (schema defaults filled), whose differences the report lists."""
    from snakemake.utils import validate

    paper = read_file(PAPER_CONFIGFILE)
    for section in paths.GROUPS:
        validate(paper.setdefault(section, {}), str(SCHEMA_DIR / f"{section}.schema.yaml"))
    return run_config(config, report=config["report"], sections={k: config[k] for k in paths.GROUPS},
                      full_protocol={k: paper[k] for k in ("protocol", *paths.GROUPS)})
