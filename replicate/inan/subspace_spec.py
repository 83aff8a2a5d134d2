"""The ``--spec`` of ``inan subspace`` (one section 6.2 point), checked as the workflow checks the config and
the point's path: a bad tau, beta, seed list or setting is a named SettingError before anything runs, never a
traceback from inside the run. Apart from subspace_exp.py, whose bytes are in the 6.2 runs' code version."""

from __future__ import annotations

from typing import Any

from replicate.validate import SCHEMA_DIR, Schemas, SettingError

NODE = "inan.schema.yaml#/properties/subspace"
FIX = "pass the rule's --spec (inan_subspace_point), or change the value under inan.subspace (config/README.md)"


def check_point_spec(spec: dict[str, Any]) -> None:
    """Refuse a point's spec whose settings, tau, beta or seeds the inan.subspace schema does not allow."""
    where = f"inan subspace tau={spec.get('tau')!r} beta={spec.get('beta')!r}"
    settings = spec.get("subspace")
    if not isinstance(settings, dict) or "slice_words" not in settings:
        raise SettingError(f"{where}: --spec lacks the subspace settings (a mapping with slice_words)", FIX)
    schemas = Schemas(SCHEMA_DIR)
    schemas.check_mapping(settings, NODE, where=where, fix=FIX)
    for key, node in (("tau", "panel_b/properties/taus/items"), ("beta", "panel_a/properties/betas/items"),
                      ("seeds", "seeds")):
        schemas.check(spec.get(key), f"{NODE}/properties/{node}", key=key, where=where, fix=FIX)
