"""The experiments the report shows, in its order: each one's claims (``replicate/<name>/claims.py``: ``CLAIMS``
and ``RESTS_ON``, the runs they rest on) and section (``section.py``: ``read(res)`` and ``section(ctx)``)."""

from __future__ import annotations

import re
from pathlib import Path

from replicate.inan import claims as inan_claims
from replicate.inan import section as inan_section
from replicate.initial_loss import claims as initial_loss_claims
from replicate.initial_loss import section as initial_loss_section
from replicate.press_wolf import claims as press_wolf_claims
from replicate.press_wolf import section as press_wolf_section
from replicate.reportkit import noise
from replicate.reportkit.sources import Results, load_benchmarks, load_provenance
from replicate.scale import claims as scale_claims
from replicate.scale import section as scale_section

SECTIONS = {"press_wolf": press_wolf_section, "inan": inan_section, "initial_loss": initial_loss_section,
            "scale": scale_section}
CLAIM_MODULES = (press_wolf_claims, inan_claims, initial_loss_claims, scale_claims)
CLAIMS = [claim for module in CLAIM_MODULES for claim in module.CLAIMS]
RESTS_ON = {pattern: ids for module in CLAIM_MODULES for pattern, ids in module.RESTS_ON.items()}


def load(root: str | Path = "results") -> Results:
    """Every result the report reads: each experiment's (its section's ``read``), then the benchmark files, the
    provenance blocks and the seed-noise pools."""
    res = Results(root=Path(root))
    for section in SECTIONS.values():
        section.read(res)
    res.benchmarks = load_benchmarks(res.root)
    res.provenance = load_provenance(res.root)
    res.pools = noise.scan(res.root)
    return res


def evaluate_all(results, tolerances: dict | None = None) -> list:
    """[(claim, verdict)] for every claim, in the report's order."""
    return [(c, c.evaluate(results, tolerances)) for c in CLAIMS]


def dirty_runs(results, claim_id: str) -> list[str]:
    """The runs (result paths) a claim rests on that were made from a tree with uncommitted changes."""
    pattern = re.compile("|".join(p for p, ids in RESTS_ON.items() if claim_id in ids) or "$^")
    return [p["path"] for p in results.provenance
            if pattern.search("/" + p["path"]) and (p["provenance"].get("git") or {}).get("dirty")]
