"""Plan-time checks of user-supplied values: against the config's JSON Schemas (workflow/schemas/; numbers finite),
a run's memory estimate against the limit, and a target path no rule writes. Each refusal is a ``SettingError``
naming where the value came from, the key, the value, what is allowed and the fix. Imports nothing heavy."""

from __future__ import annotations

import difflib
import functools
import math
import re
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlparse
from urllib.request import url2pathname

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from replicate.errors import ReplicateError


class SettingError(ReplicateError):
    """A user-supplied value the schemas, or the memory limit, do not allow."""


SCHEMA_DIR = Path(__file__).resolve().parent.parent / "workflow" / "schemas"  # the Snakefile names its own
CONFIG_SECTIONS = ("config", "data", "press_wolf", "inan", "initial_loss", "scale", "report")


def _finite_number(checker, instance) -> bool:
    number = jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(instance, "number")
    return number and not (isinstance(instance, float) and not math.isfinite(instance))


# Draft 2020-12 whose ``number`` (and so ``integer``) is finite: nan, inf and 1e400 (= inf) are refused.
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("number", _finite_number))


def reason(error: jsonschema.ValidationError) -> str:
    """Why a value was refused: jsonschema's message, or a non-finite number, or a number YAML 1.1 read as text."""
    value = error.instance
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number"
    if error.validator == "type" and isinstance(value, str) and isinstance(parse_text(value), (int, float)):
        if isinstance(yaml.safe_load(value), (int, float)):  # YAML reads it as a number: it was quoted
            return f"{value!r} is a string, not a number: it is quoted (write it without quotes)"
        return (f"{value!r} is a string, not a number: YAML 1.1 reads a number with an exponent as text unless "
                f"it has a dot and a signed exponent (write 1.0e+6, not 1e6 or 1.0e6)")
    return error.message


def parse_text(raw: str) -> Any:
    """A value written in a path or a cell name: true/false, null, an int, a float, else the string."""
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "null":
        return None
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw


def nearest(key: str, choices) -> str:
    """' (did you mean X?)' for the closest of ``choices``, or '' when none is close."""
    close = difflib.get_close_matches(key, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def describe(node: dict[str, Any]) -> str:
    """What a (resolved) schema node allows, in words: 'an integer from 1 to 16384', 'one of a, b'."""
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(describe(n) for n in node.get("oneOf", node.get("anyOf")))
    if "enum" in node:
        return "one of " + ", ".join(str(v) for v in node["enum"])
    types = node.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    nullable = "null" in types
    types = [t for t in types if t != "null"]
    words = {"integer": "an integer", "number": "a number", "boolean": "true or false", "string": "a string",
             "array": "a list", "object": "a mapping"}
    text = " ".join(filter(None, [" or ".join(words.get(t, t) for t in types) or "a value", _bounds(node)]))
    return text + (" (or null)" if nullable else "")


def _bounds(node: dict[str, Any]) -> str:
    lo, hi = node.get("minimum"), node.get("maximum")
    xlo, xhi = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if lo is not None and hi is not None:
        return f"from {lo} to {hi}"
    if lo is not None and xhi is not None:
        return f"in [{lo}, {xhi})"
    if xlo is not None and hi is not None:
        return f"in ({xlo}, {hi}]"
    parts = [f">= {lo}" if lo is not None else "", f"> {xlo}" if xlo is not None else "",
             f"<= {hi}" if hi is not None else "", f"< {xhi}" if xhi is not None else ""]
    return " and ".join(p for p in parts if p)


class Schemas:
    """The schema files of one folder, addressed as ``'file.schema.yaml#/json/pointer'`` (``$ref`` followed)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory).resolve()
        files = [(path.as_uri(), self._retrieve(path.as_uri())) for path in sorted(self.directory.glob("*.yaml"))]
        self.registry = Registry(retrieve=self._retrieve).with_resources(files).crawl()

    def _retrieve(self, uri: str) -> Resource:
        # without its "$schema": validated by ``Validator`` (finite numbers), not the dialect's stock validator
        contents = {k: v for k, v in _load(url2pathname(urlparse(uri).path)).items() if k != "$schema"}
        return Resource.from_contents(contents, default_specification=DRAFT202012)

    def _uri(self, ref: str) -> str:
        name, _, pointer = ref.partition("#")
        return (self.directory / name).as_uri() + "#" + pointer

    def node(self, ref: str) -> dict[str, Any]:
        """The schema node at ``ref`` (for messages), ``$ref`` hops followed and merged."""
        name, _, pointer = ref.partition("#")
        contents, resolver = {"$ref": self._uri(name)}, self.registry.resolver()
        for step in [*filter(None, pointer.split("/")), None]:  # None: the node itself
            while (step is None or step not in contents) and "$ref" in contents:
                inner, outer = resolver.lookup(contents["$ref"]), {k: v for k, v in contents.items() if k != "$ref"}
                contents, resolver = {**inner.contents, **outer}, inner.resolver
            contents = contents if step is None else contents[int(step) if isinstance(contents, list) else step]
        return dict(contents)

    def check(self, value: Any, ref: str, *, key: str, where: str, fix: str) -> Any:
        """``value`` if the node at ``ref`` allows it, else a SettingError naming key, value and range."""
        validator = Validator({"$ref": self._uri(ref)}, registry=self.registry)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is not None:
            node = self.node(ref)
            first_clause = node.get("description", "").split(";")[0].split(". ")[0].rstrip(".")
            meaning = f" ({first_clause})" if first_clause else ""
            raise SettingError(f"{where}: {key}={value!r} is not allowed: {reason(error)}; "
                               f"{key} must be {describe(node)}{meaning}", fix)
        return value

    def check_config(self, data: dict[str, Any], name: str, prefix: str = "") -> None:
        """Refuse a config (section) that the schema file ``name`` does not allow, naming key path, value, range."""
        validator = Validator({"$ref": self._uri(name)}, registry=self.registry)
        error = jsonschema.exceptions.best_match(validator.iter_errors(data))
        if error is None:
            return
        path = ".".join([prefix, *map(str, error.absolute_path)]).strip(".")
        fix = "change it in your config file (or --config); every key: config/README.md"
        if error.validator == "additionalProperties":
            known = error.schema.get("properties", {})
            key = next(k for k in error.instance if k not in known)
            raise SettingError(f"config: unknown key {'.'.join(filter(None, [path, key]))!r}{nearest(key, known)}",
                               f"use one of {', '.join(sorted(known))}")
        if error.validator == "required":
            raise SettingError(f"config: {path or 'top level'}: {error.message}", fix)
        if error.validator == "not":  # propertyNames: a key set elsewhere (see the section's description)
            raise SettingError(f"config: key {path}.{error.instance} is not allowed here", fix)
        schema_path = list((error.parent or error).absolute_schema_path)  # of a oneOf: all its branches
        raise SettingError(f"config: {path}={error.instance!r} is not allowed: {reason(error)}; {path} must be "
                           f"{describe(self.node(name + '#/' + '/'.join(map(str, schema_path[:-1]))))}", fix)

    def check_mapping(self, values: dict[str, Any], ref: str, *, where: str, fix: str) -> dict[str, Any]:
        """``values`` if each key is a property of the object node at ``ref`` and each value allowed by its node."""
        known = self.node(ref).get("properties", {})
        for key, value in values.items():
            if key not in known:
                raise SettingError(f"{where}: unknown key {key!r}{nearest(key, known)}",
                                   f"use one of {', '.join(sorted(known))}")
            self.check(value, f"{ref.rstrip('/')}{'' if '#' in ref else '#'}/properties/{key}", key=key,
                       where=where, fix=fix)
        return values


@functools.cache
def _load(path: str) -> dict[str, Any]:
    with open(path) as fh:
        return yaml.safe_load(fh)


def check_memory(mem_mb: int, limit_gib: float, *, where: str, fix: str) -> None:
    """Refuse a run whose estimated memory (MB) is above the limit."""
    if mem_mb > limit_gib * 1024:
        raise SettingError(f"{where}: estimated memory {mem_mb / 1024:.1f} GiB (replicate/resources.py) is over "
                           f"max_job_memory_gib = {limit_gib} GiB", fix)


# ---- a target path that no rule writes: the rule whose output pattern it resembles, and the part that does not fit

WILDCARD = re.compile(r"\{(\w+)(?:,((?:[^{}]|\{[^{}]*\})*))?\}")
WORDS = re.compile(r"[\w.]+(\|[\w.]+)+")  # a constraint that lists its values: ptb|wikitext2


def plain(pattern: str) -> str:
    """The pattern as a user reads it: ``{name}`` without the constraint."""
    return WILDCARD.sub(lambda m: "{" + m.group(1) + "}", pattern)


def wildcard_values(target: str, pattern: str) -> dict[str, tuple[str, str]] | None:
    """{name: (value, constraint)} when ``target`` has the pattern's fixed parts, whatever its values; else None."""
    regex, constraints, pos = "", {}, 0
    for match in WILDCARD.finditer(pattern):
        name = match.group(1)
        regex += re.escape(pattern[pos:match.start()])
        regex += f"(?P={name})" if name in constraints else f"(?P<{name}>[^/]*?)"
        constraints.setdefault(name, match.group(2) or ".+")
        pos = match.end()
    found = re.fullmatch(regex + re.escape(pattern[pos:]), target)
    if found is None:
        return None
    return {name: (found.group(name), constraint) for name, constraint in constraints.items()}


def allowed(constraint: str, value: str) -> str:
    """What a constraint allows, in words (with the nearest listed value)."""
    if constraint == r"\d+":
        return "digits only, e.g. 1"
    if WORDS.fullmatch(constraint):
        return "one of " + ", ".join(constraint.split("|")) + nearest(value, constraint.split("|"))
    return f"it must match {constraint}"


def _faults(values: dict[str, tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [(name, value, constraint) for name, (value, constraint) in values.items()
            if not re.fullmatch(constraint, value)]


def explain(target: str, outputs: Iterable[tuple[str, str]],
            checkers: dict[str, Callable[[str], object]] | None = None) -> SettingError:
    """The error for ``target``, which none of ``outputs`` ((rule, pattern) pairs) produces. ``checkers``:
    a function per wildcard name whose own SettingError says more than the constraint (a cell name)."""
    outputs = list(outputs)
    candidates = []
    for rule, pattern in outputs:
        values = wildcard_values(target, pattern)
        if values is not None:
            candidates.append((len(_faults(values)), rule, pattern, values))
    if not candidates:
        shapes = {plain(p): r for r, p in outputs}
        close = difflib.get_close_matches(target, list(shapes), n=1, cutoff=0.5)
        hint = f"; the closest path a rule writes is {close[0]} (rule {shapes[close[0]]})" if close else ""
        return SettingError(f"no rule writes {target}{hint}",
                            "ask for a path of results/ that a rule writes (docs/reproducibility.md#outputs)")
    _, rule, pattern, values = min(candidates, key=lambda c: c[0])
    where = f"{target} (rule {rule} writes {plain(pattern)})"
    for name, value, constraint in _faults(values):
        if not value:
            return SettingError(f"{where}: {name} is empty", f"write a {name} between its separators")
        if name in (checkers or {}):
            try:
                checkers[name](value)
            except SettingError as exc:
                return SettingError(f"{where}: {exc.cause}", exc.fix)
        return SettingError(f"{where}: {name}={value!r} is not allowed: {allowed(constraint, value)}",
                            f"change the {name} part of the path")
    return SettingError(f"no rule writes {target}, though it has the shape of {plain(pattern)} (rule {rule})",
                        "ask for the path as the rule writes it")
