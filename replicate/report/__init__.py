"""The report: claims checked against our results, every table and figure beside the papers'.

``python -m replicate report`` (replicate/report/cli.py) -> results/report/{report.md,index.html}.
experiments (each experiment's claims and section, ``replicate/<experiment>/{claims,section}.py``, built with
the kit ``replicate.reportkit``), summary (the first screen and the verdict table), compute (Compute and
Provenance), build (the template filled -> report.md), render (report.md -> one self-contained HTML page),
figures (report-owned figures).
"""
