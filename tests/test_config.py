"""Config validation: every preset is valid; bad configs fail with a message naming the cause."""

from __future__ import annotations

import copy

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from support.workflow import REPO_ROOT
from replicate.validate import Schemas, SettingError

SECTIONS = ("data", "press_wolf", "inan", "initial_loss", "scale", "report")
PRESETS = ("config.yaml", "paper.yaml", "smoke.yaml")


def load(name: str) -> dict:
    with open(REPO_ROOT / "config" / name) as fh:
        return yaml.safe_load(fh)


def validate_all(cfg: dict) -> dict:
    """Exactly what the Snakefile does: top-level schema, then each section's schema."""
    validate(cfg, str(REPO_ROOT / "workflow/schemas/config.schema.yaml"))
    for section in SECTIONS:
        validate(cfg[section], str(REPO_ROOT / f"workflow/schemas/{section}.schema.yaml"))
    return cfg


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_are_valid(preset):
    cfg = validate_all(load(preset))
    assert cfg["protocol"] in {"smoke", "reduced", "full"}
    assert cfg["data"]["download_timeout"] > 0  # default filled in


def test_protocol_labels():
    assert load("config.yaml")["protocol"] == "reduced"
    assert load("paper.yaml")["protocol"] == "full"
    assert load("smoke.yaml")["protocol"] == "smoke"


def _mutate(path: tuple, value, delete: bool = False):
    def apply(cfg):
        node = cfg
        for key in path[:-1]:
            node = node.setdefault(key, {})
        if delete:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value
        return cfg
    return apply


BAD_CASES = [
    # (id, mutation, words that the error must contain)
    ("unknown-top-key", _mutate(("epochs",), 3), ["epochs"]),
    ("unknown-data-key", _mutate(("data", "local_dri"), "/x"), ["local_dri"]),
    ("protocol-missing", _mutate(("protocol",), None, delete=True), ["protocol"]),
    ("protocol-unknown", _mutate(("protocol",), "quick"), ["quick"]),
    ("device-bad", _mutate(("device",), "gpu0"), ["gpu0"]),
    ("device-wrong-type", _mutate(("device",), 0), ["0", "string"]),
    ("dataset-unknown", _mutate(("data", "datasets"), ["ptb", "c4"]), ["c4"]),
    ("datasets-not-list", _mutate(("data", "datasets"), "ptb"), ["ptb", "array"]),
    ("timeout-negative", _mutate(("data", "download_timeout"), -5), ["-5"]),
    ("local-dir-wrong-type", _mutate(("data", "local_dir"), 42), ["42"]),
    ("tf32-wrong-type", _mutate(("allow_tf32",), "yes"), ["yes", "boolean"]),
    ("memory-limit-zero", _mutate(("max_job_memory_gib",), 0), ["0", "max_job_memory_gib"]),
    # sweep sizes have bounds (whether a point fits in memory is checked when the DAG is built)
    ("sweep-width-huge", _mutate(("initial_loss", "widths"), [100000000]), ["100000000", "maximum of 65536"]),
    ("sweep-vocab-huge", _mutate(("initial_loss", "vocab_size"), 10**9), ["1000000000", "maximum"]),
    ("sweep-layers-negative", _mutate(("initial_loss", "n_layers"), -1), ["-1", "minimum"]),
    ("sweep-seq-len-zero", _mutate(("initial_loss", "seq_len"), 0), ["0", "minimum"]),
    ("sweep-batch-huge", _mutate(("initial_loss", "batch_size"), 10**6), ["1000000", "maximum"]),
    ("ablation-zero-tau", _mutate(("inan", "ablation", "taus"), [0, 10]), ["0", "minimum"]),
    ("data-fraction-above-100", _mutate(("scale", "data", "pcts"), [10, 150]), ["150", "maximum of 100"]),
    ("scale-hidden-huge", _mutate(("scale", "model", "hiddens"), [200, 100000]), ["100000", "maximum of 16384"]),
    ("transformer-std-unknown", _mutate(("scale", "transformer", "stds"), ["big"]), ["big"]),
    # engine overrides of a preset: the same schema as a cell's @key=value (lstm.schema.yaml)
    ("override-negative-dropout", _mutate(("press_wolf", "overrides", "dropout_rate"), -0.1), ["-0.1", "minimum"]),
    ("override-unknown-key", _mutate(("press_wolf", "overrides", "lamda"), 1), ["lamda"]),
    ("override-seed", _mutate(("press_wolf", "overrides", "seed"), 3), ["seed"]),
    ("scale-override-grid-key", _mutate(("scale", "lstm", "overrides", "hidden_size"), 400), ["hidden_size"]),
    ("scale-override-non-numeric", _mutate(("scale", "lstm", "overrides", "lr"), "fast"), ["fast", "number"]),
]


@pytest.mark.parametrize("case_id,mutate,words", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_config_names_the_cause(case_id, mutate, words):
    cfg = mutate(copy.deepcopy(load("config.yaml")))
    with pytest.raises(WorkflowError) as err:
        validate_all(cfg)
    message = str(err.value)
    for word in words:
        assert word in message, f"{case_id}: {word!r} not in error message:\n{message}"


@pytest.mark.parametrize("section,mutate,message", [
    ("config", _mutate(("protocl",), "reduced"), "unknown key 'protocl' (did you mean 'protocol'?)"),
    ("press_wolf", _mutate(("press_wolf", "overrides", "epoch"), 3),
     "unknown key 'press_wolf.overrides.epoch' (did you mean 'epochs'?)"),
    ("initial_loss", _mutate(("initial_loss", "widths"), [64, 100000000]),
     "initial_loss.widths.1=100000000 is not allowed: 100000000 is greater than the maximum of 65536; "
     "initial_loss.widths.1 must be an integer from 2 to 65536"),
    ("scale", _mutate(("scale", "transformer", "stds"), ["big"]),
     "must be a number in (0, 10] or one of inv_sqrt_d, log_n_over_d"),
    ("scale", _mutate(("scale", "lstm", "overrides", "hidden_size"), 400),
     "key scale.lstm.overrides.hidden_size is not allowed here"),
    # an engine key that Inan narrows (lstm.schema.yaml: 0 to 10000) is described with both bounds
    ("inan", _mutate(("inan", "sizes", "small", "max_epoch"), 0), "inan.sizes.small.max_epoch must be an integer from 1 to 10000"),
    ("inan", _mutate(("inan", "screen", "overrides", "max_epoch"), 20000), "max_epoch must be an integer from 1 to 10000"),
])
def test_config_refusal_is_short_and_named(section, mutate, message):
    """What the Snakefile raises after a failed validation: the key path, the value, the range, a near key."""
    cfg = mutate(copy.deepcopy(load("config.yaml")))
    schemas = Schemas(REPO_ROOT / "workflow" / "schemas")
    with pytest.raises(SettingError) as err:
        data = cfg if section == "config" else cfg[section]
        schemas.check_config(data, f"{section}.schema.yaml", "" if section == "config" else section)
    assert message in str(err.value)


@pytest.mark.parametrize("preset", PRESETS)
def test_config_check_passes_the_presets(preset):
    cfg, schemas = load(preset), Schemas(REPO_ROOT / "workflow" / "schemas")
    schemas.check_config(cfg, "config.schema.yaml")
    for section in SECTIONS:
        schemas.check_config(cfg.get(section, {}), f"{section}.schema.yaml", section)


def test_every_schema_key_is_described_and_typed():
    """Each property in every schema has a description and a type (or enum/const), or a $ref to a node with them."""
    def walk(node, where):
        for key, sub in (node.get("properties") or {}).items():
            here = f"{where}.{key}"
            assert "description" in sub or "$ref" in sub, f"{here} lacks a description"
            assert any(k in sub for k in ("type", "enum", "const", "$ref", "oneOf", "anyOf")), f"{here} lacks a type"
            walk(sub, here)
            if isinstance(sub.get("items"), dict):
                walk(sub["items"], here + "[]")
        if node.get("type") == "object" and "properties" in node:
            assert node.get("additionalProperties") is False, f"{where}: unknown keys must be errors"

    for section in ("config", "lstm") + SECTIONS:
        with open(REPO_ROOT / f"workflow/schemas/{section}.schema.yaml") as fh:
            walk(yaml.safe_load(fh), section)


def test_every_float_knob_has_a_documented_upper_bound():
    """A number without a maximum lets lr=1e40 reach torch; every one has a bound (config/README.md)."""
    def walk(node, where):
        if isinstance(node, dict):
            types = node.get("type", [])
            if "number" in ([types] if isinstance(types, str) else types):
                assert "maximum" in node or "exclusiveMaximum" in node, f"{where} has no upper bound"
            for key, sub in node.items():
                walk(sub, f"{where}/{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{where}/{i}")

    for path in sorted((REPO_ROOT / "workflow" / "schemas").glob("*.schema.yaml")):
        with open(path) as fh:
            walk(yaml.safe_load(fh), path.name)
