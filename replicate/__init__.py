"""Replication pipeline for tied input/output embeddings.

The package holds all the logic (data, models, training, analysis, report);
the Snakemake workflow only calls it through ``python -m replicate``.
"""

__version__ = "0.1.0"
