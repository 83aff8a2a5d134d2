"""The experiments the report shows, in its order, each found by its name: ``replicate/<name>/claims.py`` (its
claims, ``CLAIMS``, and the runs they rest on, ``RESTS_ON``) and ``replicate/<name>/section.py`` (its section,
``section(ctx)``, filling the template's ``{{<name>}}``). Found by name, not imported by the kit: the
experiments import the kit, so it stays below them."""

from __future__ import annotations

import importlib
import re
from types import ModuleType

NAMES = ("press_wolf", "inan", "initial_loss", "scale")


def parts(kind: str) -> dict[str, ModuleType]:
    """{experiment: its ``replicate.<experiment>.<kind>`` module}, in the report's order."""
    return {name: importlib.import_module(f"replicate.{name}.{kind}") for name in NAMES}


CLAIMS = [claim for module in parts("claims").values() for claim in module.CLAIMS]
RESTS_ON = {pattern: ids for module in parts("claims").values() for pattern, ids in module.RESTS_ON.items()}


def evaluate_all(results, tolerances: dict | None = None) -> list:
    """[(claim, verdict)] for every claim, in the report's order."""
    return [(c, c.evaluate(results, tolerances)) for c in CLAIMS]


def dirty_runs(results, claim_id: str) -> list[str]:
    """The runs (result paths) a claim rests on that were made from a tree with uncommitted changes."""
    pattern = re.compile("|".join(p for p, ids in RESTS_ON.items() if claim_id in ids) or "$^")
    return [p["path"] for p in results.provenance
            if pattern.search("/" + p["path"]) and (p["provenance"].get("git") or {}).get("dirty")]
