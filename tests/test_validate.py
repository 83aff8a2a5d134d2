"""Plan-time checks (replicate/validate.py): schema nodes, messages that name key, value and range."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from support.workflow import REPO_ROOT
from replicate.lstm.config import (DROPOUT, GATE_BIAS, PR_FORMS, SCHEDULES, TYING, VARIATIONAL_MASKS, ModelConfig,
                                    TrainConfig)
from replicate.press_wolf.cells import CELL_KEYS
from replicate.validate import Schemas, SettingError, check_memory, describe, nearest, parse_text

SCHEMAS = Schemas(REPO_ROOT / "workflow" / "schemas")


def test_engine_schema_has_exactly_the_overridable_keys():
    """lstm.schema.yaml describes every engine key a run may override, and no other (seed: the folder)."""
    with open(REPO_ROOT / "workflow/schemas/lstm.schema.yaml") as fh:
        keys = set(yaml.safe_load(fh)["properties"])
    assert keys == set(CELL_KEYS)
    assert "seed" not in keys and "vocab_size" not in keys


def test_engine_schema_has_no_defaults():
    """A default in lstm.schema.yaml would be written into every run's overrides (and change its spec)."""
    assert all("default" not in node for node in SCHEMAS.node("lstm.schema.yaml")["properties"].values())


ENGINE_FIELDS = {f.name: f for cls in (ModelConfig, TrainConfig) for f in dataclasses.fields(cls) if f.name in CELL_KEYS}
ENGINE_CHOICES = {"tying": TYING, "dropout": DROPOUT, "gate_bias": GATE_BIAS, "variational_masks": VARIATIONAL_MASKS,
                  "schedule": SCHEDULES, "pr_form": tuple(PR_FORMS)}


@pytest.mark.parametrize("key", sorted(ENGINE_FIELDS))
def test_engine_schema_agrees_with_the_dataclass_field(key):
    """Each engine key's node in lstm.schema.yaml has its dataclass field's type (null where the field may be
    None), its choices, and bounds that allow its default."""
    field = ENGINE_FIELDS[key]
    node = SCHEMAS.node(f"lstm.schema.yaml#/properties/{key}")
    types = [{"int": "integer", "float": "number", "bool": "boolean", "str": "string", "None": "null"}[t]
             for t in field.type.split(" | ")]
    assert node["type"] == (types if len(types) > 1 else types[0])
    assert node.get("enum") == (list(ENGINE_CHOICES[key]) if key in ENGINE_CHOICES else None)
    SCHEMAS.check(field.default, f"lstm.schema.yaml#/properties/{key}", key=key, where="default", fix="-")


def test_experiment_engine_keys_refer_to_the_engine_schema():
    """An engine key in Inan's size block or section 6.2 settings takes its type and range from lstm.schema.yaml
    (by $ref), and the size block's defaults are the dataclass's, but for Inan's own schedule."""
    with open(REPO_ROOT / "workflow/schemas/inan.schema.yaml") as fh:
        inan = yaml.safe_load(fh)
    for block in (inan["$defs"]["size"], inan["properties"]["subspace"]):
        for key, node in block["properties"].items():
            assert (node.get("$ref") == f"lstm.schema.yaml#/properties/{key}") == (key in CELL_KEYS), key
            assert "type" not in node or key not in CELL_KEYS, f"{key}: its type is lstm.schema.yaml's"
    defaults = {k: n["default"] for k, n in inan["$defs"]["size"]["properties"].items() if k in CELL_KEYS and "default" in n}
    assert defaults == {**{k: ENGINE_FIELDS[k].default for k in defaults}, "schedule": "later"}


def test_engine_schema_is_json():
    """lstm.schema.yaml is written as JSON (which YAML reads too): Snakemake's validate reads the file again at
    every $ref it follows (~100 for one config, inan.schema.yaml's engine keys) and tries JSON first."""
    import json

    assert json.loads((REPO_ROOT / "workflow/schemas/lstm.schema.yaml").read_text())["properties"]


@pytest.mark.parametrize("raw,value", [("true", True), ("False", False), ("null", None), ("3", 3),
                                       ("0.05", 0.05), ("-5", -5), ("1e-3", 1e-3), ("none", "none"),
                                       ("fast", "fast")])
def test_parse_text(raw, value):
    assert parse_text(raw) == value and type(parse_text(raw)) is type(value)


@pytest.mark.parametrize("ref,words", [
    ("lstm.schema.yaml#/properties/hidden_size", "an integer from 1 to 16384"),
    ("lstm.schema.yaml#/properties/dropout_rate", "a number in [0, 1)"),
    ("lstm.schema.yaml#/properties/pr_lambda", "a number from 0 to 1000 (or null)"),
    ("lstm.schema.yaml#/properties/tying", "one of untied, tied, tied_nobias"),
    ("scale.schema.yaml#/properties/model/properties/hiddens/items", "an integer from 1 to 16384"),
    ("scale.schema.yaml#/properties/transformer/properties/stds/items",
     "a number in (0, 10] or one of inv_sqrt_d, log_n_over_d"),
])
def test_describe_follows_refs(ref, words):
    assert describe(SCHEMAS.node(ref)) == words


@pytest.mark.parametrize("value,key,words", [
    (-5, "hidden_size", ["run X", "hidden_size=-5", "less than the minimum of 1", "from 1 to 16384"]),
    (-0.1, "dropout_rate", ["dropout_rate=-0.1", "[0, 1)"]),
    ("fast", "lr", ["lr='fast'", "not of type 'number'", "a number in (0, 100]"]),
    ("wide", "tying", ["tying='wide'", "one of untied, tied, tied_nobias"]),
    (2.5, "epochs", ["epochs=2.5", "an integer"]),
])
def test_refusal_names_key_value_and_range(value, key, words):
    with pytest.raises(SettingError) as err:
        SCHEMAS.check(value, f"lstm.schema.yaml#/properties/{key}", key=key, where="run X", fix="do Y")
    message = str(err.value)
    for word in [*words, "fix: do Y"]:
        assert word in message, f"{word!r} not in {message!r}"


def test_unknown_key_suggests_the_nearest():
    with pytest.raises(SettingError, match=r"unknown key 'lamda' \(did you mean 'pr_lambda'\?\)"):
        SCHEMAS.check_mapping({"epochs": 2, "lamda": 1}, "lstm.schema.yaml", where="run X", fix="-")
    assert SCHEMAS.check_mapping({"epochs": 2, "pr_lambda": None}, "lstm.schema.yaml", where="X", fix="-")
    assert nearest("zzzz", ["epochs", "lr"]) == ""


def test_memory_limit():
    check_memory(2048, 2.0, where="run X", fix="-")  # exactly at the limit: allowed
    with pytest.raises(SettingError, match=r"run X: estimated memory 2\.5 GiB .* over max_job_memory_gib = 2\.0 GiB"):
        check_memory(2560, 2.0, where="run X", fix="-")


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "1e400"])
def test_non_finite_numbers_are_refused_by_name(raw):
    """JSON Schema's number lets nan and inf through; ours does not (1e400 reads as inf)."""
    with pytest.raises(SettingError, match=r"is not a finite number; lr must be a number in \(0, 100\]"):
        SCHEMAS.check(parse_text(raw), "lstm.schema.yaml#/properties/lr", key="lr", where="run X", fix="-")


def test_float_knobs_have_an_upper_bound():
    with pytest.raises(SettingError, match="1000000.0 is greater than the maximum of 100"):
        SCHEMAS.check(1e6, "lstm.schema.yaml#/properties/lr", key="lr", where="run X", fix="-")
    assert SCHEMAS.check(100, "lstm.schema.yaml#/properties/lr", key="lr", where="run X", fix="-") == 100


def test_config_with_nan_or_a_yaml_string_number_is_refused_by_name():
    with pytest.raises(SettingError, match=r"press_wolf\.overrides\.lr=nan is not allowed: nan is not a finite"):
        SCHEMAS.check_config({"overrides": {"lr": float("nan")}}, "press_wolf.schema.yaml", "press_wolf")
    overlay = yaml.safe_load("overrides: {lr: 1.0e6}")  # YAML 1.1: no dot-and-signed-exponent, so a string
    with pytest.raises(SettingError, match=r"lr='1\.0e6' is not allowed: '1\.0e6' is a string, not a number: YAML 1\.1"):
        SCHEMAS.check_config(overlay, "press_wolf.schema.yaml", "press_wolf")
    quoted = yaml.safe_load('overrides: {lr: "0.5"}')  # a number in quotes: no exponent to blame
    with pytest.raises(SettingError, match=r"'0\.5' is a string, not a number: it is quoted") as refused:
        SCHEMAS.check_config(quoted, "press_wolf.schema.yaml", "press_wolf")
    assert "exponent" not in str(refused.value)


def test_config_readme_states_the_engine_ranges_of_the_schema():
    """config/README.md's lstm table says what lstm.schema.yaml allows, bound for bound."""
    import re

    text = (REPO_ROOT / "config" / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## lstm"):text.index("## inan")]
    rows = dict(re.findall(r"^\| `(\w+)` \| (.+?) \| ", section, re.M))
    assert set(rows) == set(CELL_KEYS)
    for key, allowed in rows.items():
        assert allowed == describe(SCHEMAS.node(f"lstm.schema.yaml#/properties/{key}")), key
